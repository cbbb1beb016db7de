"""Whether the reaper is due: its stamp under ``working/``, claimed across
processes. Apart from the reaper because every CLI run and server start asks,
and the answer is "no" all but once an hour: the reaper's own imports (the
recovery scan, the sandbox teardown, the branch worktrees) are paid only
when there is something to reap."""

from __future__ import annotations

import fcntl
from collections.abc import Callable
from typing import TypeVar

from .paths import working_root

STAMP = ".reaper-stamp"
DEFAULT_INTERVAL_S = 3600.0

R = TypeVar("R")


def if_due(reap: Callable[[float], R], *, now: float, interval_s: float = DEFAULT_INTERVAL_S
           ) -> R | None:
    """``reap(now)`` unless another process reaped within ``interval_s`` or
    is reaping right now (None then), holding the stamp's lock while it runs.
    Nothing is created when there is no ``working/`` folder (no session was
    ever made: nothing to reap)."""
    root = working_root()
    if not root.is_dir():
        return None
    with open(root / STAMP, "a+") as fh:
        try:
            fcntl.flock(fh, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            return None  # another process is reaping right now
        try:
            fh.seek(0)
            try:
                last = float(fh.read().strip() or 0)
            except ValueError:
                last = 0.0
            if 0 <= now - last < interval_s:
                return None
            fh.seek(0)
            fh.truncate()
            fh.write(f"{now}\n")
            fh.flush()
            return reap(now)
        finally:
            fcntl.flock(fh, fcntl.LOCK_UN)
