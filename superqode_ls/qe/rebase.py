"""A fix re-derived on code a neighbouring fix already changed.

Two findings often share a line (``print(f"a", f"b")``: two F541; a
comparison to None and one to True in one condition): each fix was made
against the line as the session found it, so once one is applied the
other's removed line is no longer there, and a fix that is still the same
change would be refused. ``relocate`` finds the hunk by its unchanged
context and ``merge`` replays the fix's own change on the lines as they are
now, when the other change is elsewhere on them (not overlapping it, not
even touching it); anything else is refused as before. The change comes
from the fix's own diff (the one its seal names), never from the file.
"""

from __future__ import annotations

from collections.abc import Callable

# How many more or fewer lines the hunk's changed block may have now than
# when the fix was made (a neighbour split or joined a line).
SLACK = 3


def _span(base: str, other: str) -> tuple[int, int]:
    """(common prefix, common suffix) of ``base`` and ``other``, the suffix
    not reaching into the prefix: ``base[p:len(base)-s]`` is what changed."""
    n = min(len(base), len(other))
    p = 0
    while p < n and base[p] == other[p]:
        p += 1
    s = 0
    while s < n - p and base[-1 - s] == other[-1 - s]:
        s += 1
    return p, s


def merge(base: str, ours: str, theirs: str) -> str | None:
    """``theirs`` with the change ``base`` -> ``ours`` made on it too, when
    ``base`` -> ``theirs`` changed other characters, at least one character
    apart; None otherwise (the changes meet: which one wins is not known)."""
    if theirs == base:
        return ours
    p1, s1 = _span(base, ours)
    p2, s2 = _span(base, theirs)
    o_start, o_end = p1, len(base) - s1
    t_start, t_end = p2, len(base) - s2
    mid = ours[p1:len(ours) - s1]
    if o_end < t_start:  # ours before theirs: its offsets are the same in theirs
        return theirs[:o_start] + mid + theirs[o_end:]
    if t_end < o_start:  # theirs first: ours moves by what theirs added
        d = len(theirs) - len(base)
        return theirs[:o_start + d] + mid + theirs[o_end + d:]
    return None


def relocate(
    lines: list[str], before: list[str], old: list[str], new: list[str], after: list[str],
    expected: int, join: Callable[[list[str]], str], split: Callable[[str], list[str]],
) -> tuple[int, int, list[str]] | None:
    """Where a hunk (``before`` context, ``old`` -> ``new``, ``after``
    context) lands in ``lines`` whose changed block is no longer ``old``:
    (start, end, the new lines for ``lines[start:end]``), the hunk's change
    merged into the lines there (``merge``); None when its context is not
    found around a block the change can be merged into. At least one line
    of context must anchor it; the nearest place to ``expected`` (the
    context's first line) wins."""
    if not old or not (before or after):
        return None
    n, k_b, k_a = len(lines), len(before), len(after)
    base, ours = join(old), join(new)
    sizes = sorted(range(max(1, len(old) - SLACK), len(old) + SLACK + 1), key=lambda j: abs(j - len(old)))
    for dist in range(n + 1):
        for i in (expected - dist, expected + dist) if dist else (expected,):
            if i < 0 or i + k_b > n or lines[i:i + k_b] != before or (not before and i):
                continue  # no context before: the hunk starts the file
            start = i + k_b
            for j in sizes:
                end = start + j
                if end + k_a > n or lines[end:end + k_a] != after or (not after and end != n):
                    continue  # no context after: the hunk ends the file
                made = merge(base, ours, join(lines[start:end]))
                if made is not None:
                    return start, end, split(made)
        if expected - dist < 0 and expected + dist > n:
            break
    return None
