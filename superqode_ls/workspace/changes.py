"""Change tracking between two snapshots, computed by git in the private store.

The unified diff is git's own (``--binary --full-index``): binary files,
missing newlines at end of file, mode changes and renames all come out in a
form ``git apply`` accepts on the user's tree.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass
from subprocess import CompletedProcess
from typing import Protocol

from ..models import Change, ChangeSet


class SnapshotStore(Protocol):
    """What is read here of :class:`gitsnapshot.SnapshotStore` (which imports
    this module, so it is not imported back)."""

    def run(self, args: list[str], **kw) -> CompletedProcess[bytes]: ...

_DIFF_OPTS = ["--no-ext-diff", "--no-textconv", "--no-color", "-M", "--full-index",
              "--src-prefix=a/", "--dst-prefix=b/"]
_KIND = {"A": "created", "M": "modified", "D": "deleted", "R": "renamed", "T": "type_changed",
         "C": "created"}


def _run(store: SnapshotStore, args: list[str]) -> bytes:
    return store.run(args).stdout


@dataclass
class RawEntry:
    old_mode: str
    new_mode: str
    old_sha: str
    new_sha: str
    letter: str  # A M D R C T
    path_a: str
    path_b: str


def iter_raw(raw: bytes) -> Iterator[RawEntry]:
    """Records of ``git diff-tree -r -z --raw`` output."""
    fields = raw.split(b"\0")
    i = 0
    while i < len(fields):
        meta = fields[i]
        if not meta.startswith(b":"):
            i += 1
            continue
        old_mode, new_mode, old_sha, new_sha, status = meta[1:].decode().split(" ")
        letter = status[0]
        path_a = fields[i + 1].decode("utf-8", "surrogateescape")
        if letter in "RC":
            path_b = fields[i + 2].decode("utf-8", "surrogateescape")
            i += 3
        else:
            path_b = path_a
            i += 2
        yield RawEntry(old_mode, new_mode, old_sha, new_sha, letter, path_a, path_b)


def changes_between(store: SnapshotStore, old: str, new: str) -> ChangeSet:
    raw = _run(store, ["diff-tree", "-r", "-z", "-M", "--raw", "--abbrev=40", "--no-commit-id", old, new])
    numstat = _run(store, ["diff-tree", "-r", "-z", "-M", "--numstat", "--no-commit-id", old, new])
    counts = _parse_numstat(numstat)
    changes: list[Change] = []
    for e in iter_raw(raw):
        old_mode, new_mode, old_sha, new_sha = e.old_mode, e.new_mode, e.old_sha, e.new_sha
        letter, path_a, path_b = e.letter, e.path_a, e.path_b
        adds, dels, binary = counts.get(path_b, (0, 0, False))
        zero = "0" * 40
        changes.append(
            Change(
                path=path_b,
                kind=_KIND.get(letter, "modified"),  # type: ignore[arg-type]
                old_path=path_a if letter in "RC" else None,
                old_hash=None if old_sha == zero else old_sha,
                new_hash=None if new_sha == zero else new_sha,
                old_mode=None if old_mode == "000000" else old_mode,
                new_mode=None if new_mode == "000000" else new_mode,
                additions=adds,
                deletions=dels,
                binary=binary,
            )
        )
    diff = b""
    if changes:
        diff = _run(store, ["diff", *_DIFF_OPTS, "--binary", old, new])
    return ChangeSet(changes=changes, diff=diff.decode("utf-8", "surrogateescape"))


def _parse_numstat(out: bytes) -> dict[str, tuple[int, int, bool]]:
    result: dict[str, tuple[int, int, bool]] = {}
    fields = out.split(b"\0")
    i = 0
    while i < len(fields):
        rec = fields[i]
        if not rec:
            i += 1
            continue
        parts = rec.split(b"\t")
        if len(parts) < 3:
            i += 1
            continue
        a, d = parts[0], parts[1]
        binary = a == b"-"
        if parts[2] == b"":  # rename: old and new names follow
            name = fields[i + 2]
            i += 3
        else:
            name = parts[2]
            i += 1
        result[name.decode("utf-8", "surrogateescape")] = (
            0 if binary else int(a), 0 if binary else int(d), binary)
    return result
