"""A build step that failed because the disk is full, said as such.

uv reports a full disk as "Failed to extract archive" or "failed to write
... No space left on device (os error 28)", often several "Caused by" lines
below its first error line, which is all a one-line setup message keeps:
the user read an archive error with no hint that freeing space is the fix.

Also which lines of a failed step's output the one-line message keeps: the
error, not a build backend's deprecation warning printed before it
(setuptools' "... to avoid build errors in the future" on sqlalchemy).
"""

from __future__ import annotations

import errno
import re
import shutil
from collections.abc import Sequence
from pathlib import Path

# What uv, pip and Python print for ENOSPC / EDQUOT.
_FULL = re.compile(r"No space left on device|os error 28\b|Errno 28\b|ENOSPC|Disk quota exceeded",
                   re.IGNORECASE)
# uv's archive error without its cause: a full disk only when space is short now.
_EXTRACT = re.compile(r"Failed to extract archive", re.IGNORECASE)
_LOW = 1 << 30  # bytes: below this, a failed extraction is taken for a full disk
# An error line proper: "error: ...", "ERROR: ...", "ModuleNotFoundError: ...".
_ERROR_LINE = re.compile(r"^(?:error\b|(?:[\w.]+\.)?\w*Error:)", re.IGNORECASE)
_WORD_ERROR = re.compile(r"\berror\b", re.IGNORECASE)  # "returned an error", not "errors"
_WARNING = re.compile(r"warning|deprecat", re.IGNORECASE)


def _free(path: Path) -> int | None:
    for p in (path, *path.parents):
        try:
            return shutil.disk_usage(p).free
        except OSError:
            continue
    return None


def _size(n: int) -> str:
    for unit in ("B", "KiB", "MiB", "GiB"):
        if n < 1024 or unit == "GiB":
            return f"{n:.0f} {unit}" if unit == "B" else f"{n:.1f} {unit}"
        n /= 1024
    return f"{n} B"


def disk_full(output: str, what: str, paths: Sequence[Path]) -> str | None:
    """One line naming the full disk when ``output`` (a failed step's) says
    the disk was full, else None. ``paths``: the folders the step writes
    (the environment, its package cache, the build's copy); the one with the
    least space left is named."""
    said = _FULL.search(output) is not None
    if not said and _EXTRACT.search(output) is None:
        return None
    room = [(free, p) for p in paths if (free := _free(Path(p))) is not None]
    if not room:
        return (f"{what}: no space left on the disk; free some space and run again"
                if said else None)
    free, where = min(room, key=lambda fp: fp[0])
    if not said and free >= _LOW:
        return None  # a broken archive, not a full disk
    return (f"{what}: no space left on the disk holding {where} ({_size(free)} free now); "
            f"free some space there and run again")


def is_disk_full(exc: OSError) -> bool:
    return exc.errno in (errno.ENOSPC, errno.EDQUOT)


def failure_words(output: str) -> str:
    """The two lines of a failed step's ``output`` that say why: the first
    error line proper, else the first other line naming an error that is
    not a warning (uv's "returned an error" and its cause), else the last
    two lines."""
    lines = [ln.strip(" \u00d7\u2570\u251c\u2502\u2500\u25b6") for ln in output.splitlines()]
    lines = [ln for ln in lines if ln]
    for test in (_ERROR_LINE.match,
                 lambda ln: _WORD_ERROR.search(ln) and not _WARNING.search(ln)):
        first = next((i for i, ln in enumerate(lines) if test(ln)), None)
        if first is not None:
            return " ".join(lines[first:first + 2])[:400]
    return " ".join(lines[-2:])[:400]
