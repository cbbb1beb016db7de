"""Fixes that do not go together, judged on merged copies of their files
(verifier).

Fixes of one file that git cannot apply together (a neighbour changed their
hunks' context) or that, applied together, leave a finding behind used to
cost one re-run of the tool per fix, one after the other: a file with twenty
fixes to one import block was twenty rounds. Instead the fixes of a file whose
changed lines do not touch are merged into one copy of the file (each diff's
context and removed lines checked against the file, the changes applied from
the bottom up); a round writes one copy of every such file into the sandbox
and re-runs the tool once over all of them; a copy whose fixes are not all
cleared is split for a later round (the fix nearest each new finding alone,
the rest together), and a fix with a new finding on the very lines it wrote is
rejected there (``written_by``): a handful of rounds however many fixes a file
has. Where no test can run, or none imports the files, the copies take every
fix from the first round. Where no test judges a file's fixes, its later
copies go beside it (``beside``) in that first round's one re-run.

A diff that does not fit its file exactly (other context, no newline at the
end) is left to the careful rounds, one fix per file per round.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path, PurePosixPath

from unidiff import PatchSet
from unidiff.errors import UnidiffParseError

from ..models import Patch


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


def pack(
    lines: list[str], patches: list[Patch], copies: list[list[tuple[Patch, list[Change]]]] | None = None,
) -> tuple[list[list[tuple[Patch, list[Change]]]], list[Patch]]:
    """(copies, patches that cannot be copied): each patch goes in the first
    of ``copies`` it fits (a new one when none), down the file; the same diff
    twice (one fix offered for several findings) goes in once, in its twin's
    copy. A copy of one fix alone is kept alone (a suspect)."""
    placed: list[tuple[Patch, list[Change]]] = []
    left: list[Patch] = []
    for p in patches:
        cs = changes(lines, p.diff)
        if cs:
            placed.append((p, cs))
        else:
            left.append(p)
    placed.sort(key=lambda pc: pc[1][0].start)  # down the file, for split() below
    copies = list(copies or [])
    alone = [c for c in copies if len({p.diff for p, _ in c}) == 1]
    where: dict[str, list[tuple[Patch, list[Change]]]] = {p.diff: c for c in copies for p, _ in c}
    for p, cs in placed:
        copy = where.get(p.diff)
        if copy is None:
            copy = next((c for c in copies if not any(c is a for a in alone)
                         and fits([x for _, xs in c for x in xs], cs)), None)
        if copy is None:
            copy = []
            copies.append(copy)
        copy.append((p, cs))
        where[p.diff] = copy
    return copies, left


def _places(copy: list[tuple[Patch, list[Change]]]) -> list[tuple[int, int, int, str]]:
    """(first, last 0-based line in the copy, lines written, diff) per change."""
    out = []
    delta = 0
    parts = {p.diff: cs for p, cs in copy}
    for c, d in sorted(((c, d) for d, cs in parts.items() for c in cs), key=lambda cd: cd[0].start):
        out.append((c.start + delta, c.start + delta + max(len(c.new), 1) - 1, len(c.new), d))
        delta += len(c.new) - (c.end - c.start)
    return out


def written_by(copy: list[tuple[Patch, list[Change]]], lines: list[int]) -> dict[str, list[int]]:
    """The diffs that wrote a line among ``lines`` (1-based, of the copy), with
    those lines: a new finding on a line a fix wrote is that fix's (the other
    fixes of a copy change no line next to it)."""
    out: dict[str, list[int]] = {}
    for line in lines:
        for first, last, written, d in _places(copy):
            if written and first <= line - 1 <= last:
                out.setdefault(d, []).append(line)
    return out


def split(
    copy: list[tuple[Patch, list[Change]]], still: set[str], new_lines: list[int],
) -> list[list[tuple[Patch, list[Change]]]]:
    """A copy whose fixes were not all cleared, in parts for a later round:
    the suspects alone -- the diffs in ``still`` (their own finding stayed),
    the diff whose change is nearest each new finding (``new_lines``, 1-based
    lines of the copy) -- and the others together; every other fix down the
    file in two halves when that tells nothing. Twins (one diff) stay together."""
    diffs = list(dict.fromkeys(p.diff for p, _ in copy))
    suspects = set(still)
    places = _places(copy)
    for line in new_lines:
        if places:
            at = line - 1
            suspects.add(min(places, key=lambda pl: max(pl[0] - at, at - pl[1], 0))[3])
    if not suspects or len(suspects) >= len(diffs):
        first = set(diffs[::2])  # fixes of one statement that fail only all together are parted
        return [[pc for pc in copy if pc[0].diff in first], [pc for pc in copy if pc[0].diff not in first]]
    others = [pc for pc in copy if pc[0].diff not in suspects]
    return [*([pc for pc in copy if pc[0].diff == d] for d in diffs if d in suspects),
            *([others] if others else [])]


def beside(rel: str, n: int) -> list[str] | None:
    """``n`` names in ``rel``'s folder for copies of it checked in one run
    beside it (verifier._layers_at_once): each begins with the file's stem
    and ends with its name, so that patterns such as ``test_*.py`` and
    ``*_test.py`` still match; None for a name a tool treats by itself
    (``__init__.py``, ``conftest.py``)."""
    path = PurePosixPath(rel)
    if path.name.startswith("__") or path.name == "conftest.py" or not path.suffix:
        return None
    return [(path.parent / f"{path.stem}_sqcopy{k}_{path.name}").as_posix() for k in range(n)]


def read_texts(root: Path, rels: set[str]) -> dict[str, str | None]:
    out: dict[str, str | None] = {}
    for rel in rels:
        try:
            with open(root / rel, encoding="utf-8", newline="") as fh:
                out[rel] = fh.read()
        except (OSError, UnicodeDecodeError):
            out[rel] = None
    return out
