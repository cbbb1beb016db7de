"""One walk of a folder tree for the fingerprints (files and git state)."""

from __future__ import annotations

import os
import stat
from collections.abc import Callable, Iterator


def walk(root: str, skip: Callable[[str, str], bool]) -> Iterator[tuple[str, str, os.stat_result]]:
    """``(relative path, path, lstat)`` of every entry below ``root``, never
    through a link; ``skip(rel, name)`` true: neither yielded nor descended.
    Entries vanishing under the walk (a concurrent git, a removed sandbox's
    registration) are passed over."""
    stack = [(root, "")]
    while stack:
        d, rel = stack.pop()
        try:
            it = os.scandir(d)
        except (FileNotFoundError, NotADirectoryError, PermissionError):
            continue
        with it:
            for e in it:
                r = f"{rel}{e.name}"
                if skip(r, e.name):
                    continue
                try:
                    st = e.stat(follow_symlinks=False)
                except FileNotFoundError:
                    continue
                yield r, e.path, st
                if stat.S_ISDIR(st.st_mode):
                    stack.append((e.path, r + "/"))
