"""Applying suggested fixes to the user's files, several at once
(``superqe suggestions apply ID... | --all``).

Every fix was made against the files as the session found them. Each hunk is
anchored on the file as it is now: its removed lines and context must appear
verbatim near the recorded line; when a neighbouring fix already applied
changed a context line, the context is trimmed (the removed lines must still
match), as ``patch`` does with fuzz; when it changed other characters of the
removed lines themselves (two findings on one line), the fix's own change is
made on those lines as they are now, if the two changes do not meet
(``rebase``). The fixes are then taken in order; one
whose changed lines touch those of a fix already taken is refused with one
line (applied together they may form code neither was checked as, e.g. an
emptied import), unless the two change the same lines in characters that do
not meet (two findings on one line): then both changes are made. Each file
is written whole and atomically (a temporary file renamed over it); a fix is
applied to all its files or to none, and the files are re-read just before
writing: if one changed meanwhile, nothing is written.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path, PurePosixPath

from unidiff import PatchSet
from unidiff.errors import UnidiffParseError

from ..errors import EXIT_FINDINGS, SuperQodeError
from ..models import Patch
from ..workspace.artifacts import atomic_write
from .rebase import merge, relocate
from .roles._patches import split_lines
from .verify_copies import Change, fits, merged


class ApplyConflict(SuperQodeError):
    """A file changed between planning and writing: nothing was written."""

    exit_code = EXIT_FINDINGS


@dataclass
class ApplyOutcome:
    applied: list[str] = field(default_factory=list)
    already: list[str] = field(default_factory=list)  # their change is in the file already
    refused: list[tuple[str, str]] = field(default_factory=list)  # (patch id, one-line reason)
    files: list[str] = field(default_factory=list)


class _Refused(Exception):
    pass


class _Already(Exception):
    pass


def _safe_rel(project: Path, rel: str) -> bool:
    """A project file: no way out (``..``, absolute, a link on the way) and
    not git's own folder (a hook written there would run later)."""
    p = PurePosixPath(rel)
    if not rel or p.is_absolute() or ".." in p.parts or "\\" in rel or "\0" in rel:
        return False
    if any(part.lower() in (".git", ".superqode") for part in p.parts):
        return False
    root = project.resolve()
    return (project / rel).resolve().is_relative_to(root) and (project / rel).resolve() == root / rel


def _strip(name: str) -> str:
    return name[2:] if name.startswith(("a/", "b/")) else name


def _sides(hunk) -> list[list[str]]:
    """[[type, value], ...] of a hunk, "\\ No newline" folded into the line before."""
    items: list[list[str]] = []
    for ln in hunk:
        if ln.line_type == "\\":
            if items:
                items[-1][1] = items[-1][1].removesuffix("\n")
            continue
        if ln.line_type in (" ", "-", "+"):
            items.append([ln.line_type, ln.value])
    return items


def _find(lines: list[str], block: list[str], expected: int) -> int | None:
    """Nearest index to ``expected`` where ``block`` occurs verbatim."""
    n, k = len(lines), len(block)
    for dist in range(n + 1):
        for i in (expected - dist, expected + dist) if dist else (expected,):
            if 0 <= i and i + k <= n and lines[i:i + k] == block:
                return i
        if expected - dist < 0 and expected + dist + k > n:
            break
    return None


def _anchor(lines: list[str], hunk, drift: int) -> tuple[Change, int]:
    """The hunk as a change of ``lines`` (outer context left out), and the
    drift for the next hunk; raises _Refused / _Already."""
    items = _sides(hunk)
    lead = next((i for i, (t, _) in enumerate(items) if t != " "), len(items))
    trail = next((i for i, (t, _) in enumerate(reversed(items)) if t != " "), 0)
    core = items[lead:len(items) - trail]
    expected = (hunk.source_start - 1 if hunk.source_length else hunk.source_start) + drift
    new_core = tuple(v for t, v in core if t != "-")
    # Most context first: all of it, then one line less on either side...
    trims = sorted(((le, ri) for le in range(lead + 1) for ri in range(trail + 1)),
                   key=lambda lr: (-(lr[0] + lr[1]), -min(lr)))
    for left, right in trims:
        if left + right == 0 and lead + trail:
            break  # at least one line of context, as patch's default fuzz keeps
        part = items[lead - left:len(items) - trail + right]
        old = [v for t, v in part if t != "+"]
        at = _find(lines, old, expected + (lead - left))
        if at is not None:
            start = at + left
            end = at + len(old) - right
            return Change(start, end, new_core), start - lead - (expected - drift)
    # Not there: is its result there instead (applied before)? Only said,
    # never a reason to write; the same trimming of context as above.
    for left, right in trims:
        part = items[lead - left:len(items) - trail + right]
        new = [v for t, v in part if t != "-"]
        if left + right and new and _find(lines, new, expected + (lead - left)) is not None:
            raise _Already()
    # A neighbouring fix applied since changed other characters of these
    # lines (two findings on one line): the same change made on them as
    # they are, from this diff's own lines (``rebase``).
    before, after = [v for _, v in items[:lead]], [v for _, v in items[len(items) - trail:]]
    old_core = [v for t, v in core if t != "+"]
    moved = relocate(lines, before, old_core, list(new_core), after, expected, "".join, split_lines)
    if moved is not None:
        start, end, made = moved
        return Change(start, end, tuple(made)), start - lead - (expected - drift)
    # ... or it is there, beside such a change (undoing it alone is possible).
    if relocate(lines, before, list(new_core), old_core, after, expected, "".join, split_lines):
        raise _Already()
    raise _Refused(f"no longer fits the code: the code near line {hunk.source_start} changed since the run")


def _plan_patch(patch: Patch, read, project: Path) -> dict[str, list[Change]]:
    try:
        ps = PatchSet(patch.diff)
    except (UnidiffParseError, ValueError) as e:
        raise _Refused(f"malformed patch: {e}") from None
    if not len(ps):
        raise _Refused("the patch changes nothing")
    out: dict[str, list[Change]] = {}
    already = 0
    for pf in ps:
        if pf.is_added_file or pf.is_removed_file or _strip(pf.source_file) != _strip(pf.target_file):
            raise _Refused(f"{pf.path}: creating, deleting or renaming files is not applied here")
        rel = _strip(pf.source_file)
        if not _safe_rel(project, rel) or rel in out:
            raise _Refused(f"{rel}: not a file of the project")
        lines = read(rel)
        drift = 0
        cs: list[Change] = []
        try:
            for hunk in pf:
                c, drift = _anchor(lines, hunk, drift)
                if cs and c.start < cs[-1].end:
                    raise _Refused(f"{rel}: its hunks overlap")
                cs.append(c)
        except _Already:
            already += 1
            continue
        out[rel] = cs
    if already and out:
        raise _Refused("partly in the files already")
    if already:
        raise _Already()
    return out


def _joined(lines: list[str], theirs: list[Change], cs: list[Change]) -> tuple[int, Change] | None:
    """(which of ``theirs``, the change both make) where ``cs`` is one
    change of exactly the lines one of ``theirs`` changes, and the two
    change other characters of them; None otherwise."""
    if len(cs) != 1:
        return None
    c = cs[0]
    meet = [i for i, t in enumerate(theirs) if not fits([t], cs)]
    if len(meet) != 1:
        return None
    t = theirs[meet[0]]
    if (t.start, t.end) != (c.start, c.end) or t.start == t.end:
        return None
    made = merge("".join(lines[t.start:t.end]), "".join(c.new), "".join(t.new))
    if made is None:
        return None
    return meet[0], Change(t.start, t.end, tuple(split_lines(made)))


def plan(project: Path, patches: list[Patch]) -> tuple[ApplyOutcome, dict[str, str], dict[str, str]]:
    """(outcome, the files' texts now, their texts with the taken fixes)."""
    project = Path(project)
    texts: dict[str, str] = {}
    lines_of: dict[str, list[str]] = {}
    taken: dict[str, list[tuple[str, list[Change]]]] = {}
    out = ApplyOutcome()

    def read(rel: str) -> list[str]:
        if rel not in lines_of:
            path = project / rel
            if path.is_symlink() or not path.is_file():
                raise _Refused(f"{rel}: not a regular file in the project")
            try:
                with open(path, encoding="utf-8", newline="") as fh:
                    texts[rel] = fh.read()
            except (OSError, UnicodeDecodeError) as e:
                raise _Refused(f"{rel}: cannot be read ({e.__class__.__name__})") from None
            lines_of[rel] = split_lines(texts[rel])
        return lines_of[rel]

    seen: set[str] = set()
    for patch in patches:
        if patch.id in seen:
            continue
        seen.add(patch.id)
        joins: list[tuple[list[Change], int, Change]] = []  # (a taken fix's changes, which, made)
        try:
            changes = _plan_patch(patch, read, project)
            for rel, cs in changes.items():
                for other, theirs in taken.get(rel, []):
                    if fits(theirs, cs):
                        continue
                    # The same lines, other characters of them (two findings
                    # on one line): both changes made on them, if they do
                    # not meet (``rebase.merge``); any other touch, refused.
                    joined = _joined(lines_of[rel], theirs, cs)
                    if joined is None:
                        raise _Refused(f"touches the lines fix {other} changes in {rel}: "
                                       "apply it on its own afterwards")
                    joins.append((theirs, *joined))
                    changes[rel] = cs = []
        except _Already:
            out.already.append(patch.id)
            continue
        except _Refused as e:
            out.refused.append((patch.id, str(e)))
            continue
        for theirs, i, made in joins:
            theirs[i] = made
        for rel, cs in changes.items():
            if cs:
                taken.setdefault(rel, []).append((patch.id, cs))
        out.applied.append(patch.id)
    new_texts = {rel: merged(lines_of[rel], [cs for _, cs in parts]) for rel, parts in taken.items()}
    out.files = sorted(new_texts)
    return out, {rel: texts[rel] for rel in new_texts}, new_texts


def _write_atomic(path: Path, text: str) -> None:
    atomic_write(path, text, mode=path.stat().st_mode & 0o7777, sync=True)


def apply_fixes(project: Path, patches: list[Patch], *, dry_run: bool = False) -> ApplyOutcome:
    """Apply the fixes that go together; the others are refused, one reason
    each. Raises ApplyConflict (nothing written) when a file changed while
    this ran; an error writing one file puts back those already written."""
    project = Path(project)
    out, before, after = plan(project, patches)
    if dry_run or not after:
        return out
    for rel, text in before.items():
        try:
            with open(project / rel, encoding="utf-8", newline="") as fh:
                now = fh.read()
        except (OSError, UnicodeDecodeError):
            now = None
        if now != text:
            raise ApplyConflict(f"{rel} changed while the fixes were being applied; nothing was written")
    written: list[str] = []
    try:
        for rel, text in after.items():
            _write_atomic(project / rel, text)
            written.append(rel)
    except OSError as e:
        for rel in written:
            _write_atomic(project / rel, before[rel])
        raise ApplyConflict(f"could not write {rel} ({e.strerror or e}); nothing was changed") from None
    return out
