"""File locks for branch worktrees: one per repository (creation), one for the
roots file; and tidying a repository's folder once only its lock is left."""

from __future__ import annotations

import fcntl
import os
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path


@contextmanager
def _flock(path: Path) -> Iterator[None]:
    while True:
        path.parent.mkdir(parents=True, exist_ok=True)
        fh = open(path, "a+")  # noqa: SIM115 - held across the yield below
        try:
            fcntl.flock(fh, fcntl.LOCK_EX)
            try:
                same = os.fstat(fh.fileno()).st_ino == os.stat(path).st_ino
            except FileNotFoundError:
                same = False
            if not same:
                # _tidy removed the lock file while we waited: lock the new one.
                continue
            try:
                yield
            finally:
                fcntl.flock(fh, fcntl.LOCK_UN)
            return
        finally:
            fh.close()


def _tidy(rec_dir: Path) -> None:
    """Drop ``branches/`` and ``<repo>-<hash8>/`` once nothing but the lock is left."""
    try:
        left = [p.name for p in rec_dir.iterdir()]
    except OSError:
        return
    if left and left != [".lock"]:
        return
    # Hold the lock while removing it so a concurrent creator is not split in two.
    try:
        with open(rec_dir / ".lock", "a+") as fh:
            try:
                fcntl.flock(fh, fcntl.LOCK_EX | fcntl.LOCK_NB)
            except OSError:
                return
            if [p.name for p in rec_dir.iterdir()] != [".lock"]:
                return
            (rec_dir / ".lock").unlink(missing_ok=True)
        rec_dir.rmdir()
        rec_dir.parent.rmdir()
    except OSError:
        pass
