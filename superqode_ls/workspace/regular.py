"""A file read that a session cannot turn against SuperQode's own process.

The sandbox's files (and a project's, while a session may write beside it)
are read by SuperQode outside the barrier: a link swapped in after a walk
is never followed, a FIFO or a device neither blocks nor is read, and
nothing past the bound is read."""

from __future__ import annotations

import os
import stat
from pathlib import Path


def read_regular_bytes(path: Path | str, size: int | None) -> bytes | None:
    """At most ``size`` bytes (None: all) of ``path`` when it is a regular
    file reached without following a link, else None; never blocks."""
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC)
    except OSError:
        return None
    try:
        if not stat.S_ISREG(os.fstat(fd).st_mode):
            return None
        with os.fdopen(fd, "rb", closefd=False) as fh:
            return fh.read() if size is None else fh.read(size)
    except OSError:
        return None
    finally:
        os.close(fd)
