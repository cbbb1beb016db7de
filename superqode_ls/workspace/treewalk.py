"""One walk of a folder tree for the fingerprints (files and git state), in
this thread or shared among threads."""

from __future__ import annotations

import os
import stat
from collections.abc import Callable, Iterator
from concurrent.futures import ThreadPoolExecutor
from typing import TypeVar

T = TypeVar("T")


def walk(root: str, skip: Callable[[str, str], bool]) -> Iterator[tuple[str, str, os.stat_result]]:
    """``(relative path, path, lstat)`` of every entry below ``root``, never
    through a link; ``skip(rel, name)`` true: neither yielded nor descended.
    Entries vanishing under the walk (a concurrent git, a removed sandbox's
    registration) are passed over."""
    stack = [(root, "")]
    while stack:
        d, rel = stack.pop()
        for r, path, st in _listing(d, rel, skip):
            yield r, path, st
            if stat.S_ISDIR(st.st_mode):
                stack.append((path, r + "/"))


def cpus() -> int:
    """The CPUs this process may run on."""
    try:
        return len(os.sched_getaffinity(0))
    except (AttributeError, OSError):
        return os.cpu_count() or 1


# Threads for :func:`collect`: one. About two thirds of a walk's CPU is the
# kernel's (lstat, getdents: 76 of 117 ms on 20,000 files), yet on a quiet
# 16-CPU machine seven threads made a next session 1.8x slower (0.75-0.81 s
# against 0.33-0.45 s, CPU 1.4-1.5 s against 0.6 s: the end's walk 0.33-0.38 s
# against 0.12-0.16 s), the threads taking turns at the interpreter lock for
# every entry's Python side. :func:`collect` keeps the shared walk for a
# caller that passes ``workers``.
_WORKERS = 1
_SPLIT_DEPTH = 3  # the folders handed out whole are at most this deep


def collect(root: str, skip: Callable[[str, str], bool],
            entry: Callable[[str, os.stat_result], T], workers: int | None = None) -> dict[str, T]:
    """``{relative path: entry(path, lstat)}`` of every entry :func:`walk`
    yields, the same entries whatever ``workers`` is. The first levels are
    listed here until there are enough folders to share; each is then
    walked whole by one of ``workers`` threads (1: this thread, as
    :func:`walk`). ``entry`` runs in those threads."""
    n = _WORKERS if workers is None else max(1, workers)
    out: dict[str, T] = {}
    if n == 1:
        for rel, path, st in walk(root, skip):
            out[rel] = entry(path, st)
        return out
    # Breadth first down to _SPLIT_DEPTH until 4 folders a thread are known.
    level = [(root, "")]
    for _ in range(_SPLIT_DEPTH):
        if len(level) >= 4 * n:
            break
        below = []
        for d, rel in level:
            for r, path, st in _listing(d, rel, skip):
                out[r] = entry(path, st)
                if stat.S_ISDIR(st.st_mode):
                    below.append((path, r + "/"))
        level = below
        if not level:
            return out

    def subtree(d: str, rel: str) -> list[tuple[str, T]]:
        got = []
        for r, path, st in walk(d, lambda r, name: skip(rel + r, name)):
            got.append((rel + r, entry(path, st)))
        return got

    with ThreadPoolExecutor(max_workers=n, thread_name_prefix="walk") as pool:
        for got in pool.map(lambda job: subtree(*job), level):
            out.update(got)
    return out


def _listing(d: str, rel: str, skip: Callable[[str, str], bool]) -> list[tuple[str, str, os.stat_result]]:
    """One folder's entries as :func:`walk` yields them, not descended."""
    got = []
    try:
        it = os.scandir(d)
    except (FileNotFoundError, NotADirectoryError, PermissionError):
        return got
    with it:
        for e in it:
            r = f"{rel}{e.name}"
            if skip(r, e.name):
                continue
            try:
                st = e.stat(follow_symlinks=False)
            except FileNotFoundError:
                continue
            got.append((r, e.path, st))
    return got
