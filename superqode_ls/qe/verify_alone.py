"""Judging fixes on copies of their files, without touching the sandbox
(verifier).

Fixes of one file that cannot be applied together in the sandbox (git finds
their hunks' context changed by a neighbour) or that, applied together, left
a finding none of them may leave alone used to cost one re-run of the tool
per fix, one after the other: a file with twenty fixes to one import block
was twenty rounds. A role that can check a text as if it were a file
(``recheck_text``: ruff reads it on stdin under the file's path, so the
project's configuration for that path applies) judges them on copies
instead: the fixes of a file whose changed lines do not overlap are merged
into one copy (their context lines are checked against the file, the changes
applied from the bottom up), every file's copy is checked at once, and a copy
whose fixes are not all cleared is split in two for the next round, down to
one fix alone -- a handful of rounds however many fixes a file has.

Nothing the tool does not answer is settled here: a diff whose context is not
exactly in the file, a copy the check does not answer, an empty answer where
the file had other findings (the check may have failed) all go to the careful
rounds in the sandbox.
"""

from __future__ import annotations

import asyncio
import os
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from pathlib import Path

from unidiff import PatchSet
from unidiff.errors import UnidiffParseError

from ..models import Finding
from .roles.base import Role, RoleContext

# Copies are checked at most this many at a time (ruff on one file is about a
# hundredth of a second; more at once only queue on the CPUs).
_AT_ONCE = max(2, os.cpu_count() or 2)


@dataclass(frozen=True)
class Change:
    """Lines ``start``..``end`` (0-based, end excluded) of the original file
    replaced by ``new`` (an insertion when start == end)."""

    start: int
    end: int
    new: tuple[str, ...]


def changes(lines: list[str], diff: str) -> list[Change] | None:
    """The changes a one-file unified diff makes to ``lines`` (the file split
    with line ends kept), or None when the diff is not one file's or its
    context and removed lines are not exactly there."""
    if "\\ No newline at end of file" in diff:
        return None  # git's marker: the exact last bytes are left to git apply
    try:
        ps = PatchSet(diff)
    except UnidiffParseError:
        return None
    if len(ps) != 1:
        return None
    out: list[Change] = []
    for hunk in ps[0]:
        at = hunk.source_start - 1 if hunk.source_length else hunk.source_start
        start: int | None = None
        added: list[str] = []
        for ln in [*hunk, None]:
            if ln is not None and (ln.is_removed or ln.is_added):
                if start is None:
                    start = at
                if ln.is_removed:
                    if at >= len(lines) or lines[at] != ln.value:
                        return None
                    at += 1
                else:
                    added.append(ln.value)
                continue
            if start is not None:
                out.append(Change(start, at, tuple(added)))
                start, added = None, []
            if ln is not None and ln.is_context:
                if at >= len(lines) or lines[at] != ln.value:
                    return None
                at += 1
    return out


def fits(taken: list[Change], new: list[Change]) -> bool:
    """Whether ``new`` changes no line ``taken`` changes nor one next to it:
    changes on neighbouring lines are mostly one statement (the names of one
    import), which fixes meant one at a time may empty together."""
    return not any(c.start <= t.end and t.start <= c.end for c in new for t in taken)


def merged(lines: list[str], parts: list[list[Change]]) -> str:
    """The file with all ``parts`` applied (they must fit each other)."""
    out = list(lines)
    for c in sorted((c for cs in parts for c in cs), key=lambda c: (c.start, c.end), reverse=True):
        out[c.start:c.end] = c.new
    return "".join(out)


async def check_texts(
    role: Role, ctx: RoleContext, copies: list[tuple[str, str]], out_of_time: Callable[[], bool],
) -> list[list[Finding] | None]:
    """What ``role`` reports on each (file, text), all at once (bounded); None
    where it could not tell (no answer, a crash, no time left)."""
    check: Callable[[RoleContext, str, str], Awaitable[list[Finding] | None]] = role.recheck_text  # type: ignore[attr-defined]
    sem = asyncio.Semaphore(_AT_ONCE)

    async def one(rel: str, text: str) -> list[Finding] | None:
        async with sem:
            if out_of_time():
                return None
            found = await check(ctx, rel, text)
        return None if found is None else [f.with_stable_id() for f in found]

    answers = await asyncio.gather(*(one(rel, text) for rel, text in copies),
                                   return_exceptions=True)
    # A check that crashed is one not told: the careful rounds take those fixes.
    return [a if not isinstance(a, BaseException) else None for a in answers]


def split_lines(text: str) -> list[str]:
    """Lines with their ends, split at "\\n" only (as diff and git do)."""
    parts = text.split("\n")
    return [p + "\n" for p in parts[:-1]] + ([parts[-1]] if parts[-1] else [])


def read_texts(root: Path, rels: set[str]) -> dict[str, str | None]:
    out: dict[str, str | None] = {}
    for rel in rels:
        try:
            with open(root / rel, encoding="utf-8", newline="") as fh:
                out[rel] = fh.read()
        except (OSError, UnicodeDecodeError):
            out[rel] = None
    return out
