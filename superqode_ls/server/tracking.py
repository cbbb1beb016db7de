"""Keep findings on the code they flagged while the user types.

``follow`` compares the text before and after a change: a finding moves with
its own lines and goes stale (hidden, no fix offered) only when one of them
changed, so a fix that deletes the line next to a finding (ruff's F401 removing
an import) moves that finding instead of dropping it. ``apply_change`` is the
fallback when the text before is not known: it decides by line numbers alone
(a change touching a finding's lines marks it stale).
Only line numbers matter here, so client code units never need converting.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from difflib import SequenceMatcher

from .patches import PatchError, file_edits
from .store import Tracked

REANCHOR_WINDOW = 200


def apply_change(
    tracked: Iterable[Tracked], start: tuple[int, int], end: tuple[int, int], text: str,
    lines_after: Sequence[str] | None = None,
) -> bool:
    """Apply one incremental change (range in the text *before* it). Returns True
    when any finding moved or went stale.

    ``lines_after``, the text right after this change, lets a line break typed
    at the end of a flagged line (Enter) leave that finding where it is: the
    line still reads as the finding's snippet, only the lines below move."""
    s_line, s_char = start
    e_line, e_char = end
    added = text.count("\n")
    delta = added - (e_line - s_line)
    if s_char == 0 and e_char == 0 and (text == "" or text.endswith("\n")):
        # Whole lines replaced: lines [s, e) are gone, line e only moves.
        below_from = e_line
    else:
        below_from = e_line + 1
    first_edited = s_line
    intact = (
        lines_after is not None and start == end and text.startswith("\n")
        and s_line < len(lines_after)
    )
    changed = False
    for t in tracked:
        if t.stale:
            continue
        last = _last_line(t)
        if last < first_edited:
            continue
        if (intact and lines_after is not None and t.sl == last == s_line
                and _first_snippet_line(t) == _norm(lines_after[s_line])):
            continue  # a new line opened after it
        if t.sl >= below_from:
            if delta:
                t.sl += delta
                t.el += delta
                changed = True
            continue
        t.stale = True
        changed = True
    return changed


def _last_line(t: Tracked) -> int:
    # An exclusive end at column 0 of the next line does not cover that line.
    if t.el > t.sl and t.ec == 0:
        return t.el - 1
    return t.el


def _norm(s: str) -> str:
    return " ".join(s.split())


def _first_snippet_line(t: Tracked) -> str | None:
    for line in (t.finding.snippet or "").splitlines():
        if line.strip():
            return _norm(line)
    return None


def snippet_matches(t: Tracked, lines: Sequence[str], at: int) -> bool:
    snippet = t.finding.snippet
    if not snippet:
        return True
    want = [_norm(x) for x in snippet.splitlines() if x.strip()]
    if not want:
        return True
    for i, w in enumerate(want):
        idx = at + i
        if idx < 0 or idx >= len(lines) or _norm(lines[idx]) != w:
            return False
    return True


def reanchor(tracked: Iterable[Tracked], lines: Sequence[str], *, strict: bool) -> bool:
    """Check each finding against ``lines`` using its snippet: keep it, move it to
    the nearest matching line, or mark it stale. Findings without a snippet are
    kept unless ``strict`` (the text is known to have changed). Returns True when
    anything changed."""
    changed = False
    for t in tracked:
        if t.stale:
            continue
        if not t.finding.snippet:
            if strict:
                t.stale = True
                changed = True
            continue
        if snippet_matches(t, lines, t.sl):
            continue
        moved = False
        for dist in range(1, REANCHOR_WINDOW + 1):
            for cand in (t.sl - dist, t.sl + dist):
                if 0 <= cand < len(lines) and snippet_matches(t, lines, cand):
                    delta = cand - t.sl
                    t.sl += delta
                    t.el += delta
                    moved = True
                    break
            if moved:
                break
        if not moved:
            t.stale = True
        changed = True
    return changed


def follow(
    tracked: Iterable[Tracked], before: Sequence[str], after: Sequence[str],
    first: int | None = None, last: int | None = None,
) -> bool:
    """Move each finding to where its lines are in ``after``, or mark it stale
    when one of its lines changed. ``first``/``last`` bound the lines of
    ``before`` the change replaced (an incremental change); without them the
    unchanged lines at both ends are found by comparing. Returns True when any
    finding moved or went stale."""
    n_old, n_new = len(before), len(after)
    if first is None or last is None:
        first = 0
        limit = min(n_old, n_new)
        while first < limit and before[first] == after[first]:
            first += 1
        tail = 0
        while tail < limit - first and before[n_old - 1 - tail] == after[n_new - 1 - tail]:
            tail += 1
        last = n_old - 1 - tail
    delta = n_new - n_old
    old_region = before[first:last + 1]
    new_region = after[first:last + 1 + delta]
    mapped: dict[int, int] | None = None  # old line -> new line, inside the region
    changed = False
    for t in tracked:
        if t.stale:
            continue
        end = _last_line(t)
        if end < first:
            continue
        if t.sl > last:
            if delta:
                t.sl += delta
                t.el += delta
                changed = True
            continue
        if mapped is None:
            mapped = _equal_lines(old_region, new_region, first)
        lines = range(t.sl, end + 1)
        targets = [mapped.get(i) if i <= last else i + delta for i in lines]
        start = targets[0]
        if start is None or targets != list(range(start, start + len(targets))):
            if not (delta == 0 and t.sl == end and _beside(t, before[t.sl], after)):
                t.stale = True  # its own text changed
            changed = True
            continue
        if start != t.sl:
            shift = start - t.sl
            t.sl += shift
            t.el += shift
            changed = True
    return changed


def _beside(t: Tracked, old: str, after: Sequence[str]) -> bool:
    """Whether a one-line finding whose line changed still stands: its fix
    (two findings on one line: the user applied the other's) is still the
    same change on the line as it is now (``patches.file_edits``
    re-derives it); its columns then move with what changed before it."""
    if t.patch is None or t.patch.kind != "fix" or not 0 <= t.sl < len(after):
        return False
    try:
        file_edits(t.patch.diff, lambda _rel: "\n".join(after))
    except (PatchError, ValueError):
        return False
    new = after[t.sl]
    p = 0
    n = min(len(old), len(new))
    while p < n and old[p] == new[p]:
        p += 1
    s = 0
    while s < n - p and old[-1 - s] == new[-1 - s]:
        s += 1
    if len(old) - s <= t.sc:  # what changed ends before the finding starts
        t.sc += len(new) - len(old)
        t.ec += len(new) - len(old)
    elif p < t.ec:
        return False  # its own characters changed
    return True


def _equal_lines(old: Sequence[str], new: Sequence[str], base: int) -> dict[int, int]:
    out: dict[int, int] = {}
    matcher = SequenceMatcher(None, old, new, autojunk=False)
    for tag, i1, i2, j1, _ in matcher.get_opcodes():
        if tag == "equal":
            for k in range(i2 - i1):
                out[base + i1 + k] = base + j1 + k
    return out
