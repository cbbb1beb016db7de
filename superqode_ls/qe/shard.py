"""``--shard K/N``: this run does the K-th of N shares of deep mode's work.

The unit of work is a file (a source file to mutate or to write tests for,
a test file to run), assigned by a stable hash of its project-relative path,
so every CI job computes the same split with no coordination and a file's
mutants stay together: its survived-mutant finding (one per line, naming the
other mutants on that line) is the same as in an unsharded run, and the
mutation cache, keyed by file content, serves each shard on its own.

Roles that are not split (the analyzers) run in every shard; ``superqe
merge`` keeps one copy of their findings.
"""

from __future__ import annotations

import hashlib
from collections.abc import Callable


def parse_shard(text: str) -> tuple[int, int]:
    """``"2/3"`` -> ``(2, 3)``; ValueError with one line otherwise."""
    k, sep, n = text.partition("/")
    try:
        if not sep:
            raise ValueError
        kn = (int(k), int(n))
    except ValueError:
        raise ValueError(f"--shard wants K/N, e.g. 2/3 (got {text!r})") from None
    if not 1 <= kn[0] <= kn[1]:
        raise ValueError(f"--shard {text}: K must be between 1 and N")
    return kn


def owner(key: str, n: int) -> int:
    """The shard (1..n) that does ``key``."""
    digest = hashlib.sha256(key.encode("utf-8", "surrogateescape")).digest()
    return int.from_bytes(digest[:8], "big") % n + 1


def selector(shard: tuple[int, int] | None) -> Callable[[str], bool] | None:
    """The role context's ``targets`` filter for ``shard`` (None: all)."""
    if shard is None or shard[1] == 1:
        return None
    k, n = shard

    def mine(key: str) -> bool:
        return owner(key, n) == k

    return mine
