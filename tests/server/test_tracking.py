"""server/tracking.py: findings follow edits (shift, stale) and re-anchor on their snippet."""

from __future__ import annotations

from superqode_ls.server import tracking
from tests.server.findings import tracked


def test_edit_above_shifts_edit_on_the_lines_marks_stale_edit_below_nothing():
    above, on, below = tracked(10), tracked(5), tracked(2)
    items = [above, on, below]
    # Insert two lines in the middle of line 5.
    assert tracking.apply_change(items, (5, 3), (5, 3), "x\ny\nz")
    assert on.stale and not above.stale and not below.stale
    assert above.sl == 12 and below.sl == 2


def test_whole_line_insert_and_delete_only_move():
    t = tracked(4)
    tracking.apply_change([t], (4, 0), (4, 0), "new line\n")  # insert above line 4
    assert (t.sl, t.stale) == (5, False)
    tracking.apply_change([t], (1, 0), (3, 0), "")  # delete lines 1-2
    assert (t.sl, t.stale) == (3, False)
    tracking.apply_change([t], (3, 0), (4, 0), "")  # delete the flagged line itself
    assert t.stale


def test_enter_at_the_end_of_a_flagged_line_keeps_it_and_moves_what_is_below():
    on = tracked(1, snippet="import os", ec=9)
    below = tracked(2, snippet="x = 1", ec=5)
    after = ["# top", "import os", "    ", "x = 1"]  # Enter (+ indent) typed after "import os"
    assert tracking.apply_change([on, below], (1, 9), (1, 9), "\n    ", after)
    assert (on.sl, on.stale) == (1, False)
    assert (below.sl, below.stale) == (3, False)
    # Enter in the middle of the flagged code does change it.
    mid = tracked(1, snippet="import os", ec=9)
    tracking.apply_change([mid], (1, 3), (1, 3), "\n", ["# top", "imp", "ort os", "x = 1"])
    assert mid.stale
    # Typing at its end changes the line; without the text after, no guess is made.
    typed = tracked(1, snippet="import os", ec=9)
    tracking.apply_change([typed], (1, 9), (1, 9), "x", ["# top", "import osx", "x = 1"])
    assert typed.stale
    blind = tracked(1, snippet="import os", ec=9)
    tracking.apply_change([blind], (1, 9), (1, 9), "\n")
    assert blind.stale


def test_exclusive_end_at_column_zero_does_not_cover_the_next_line():
    t = tracked(2, el=3, ec=0)
    tracking.apply_change([t], (3, 0), (3, 1), "X")
    assert not t.stale


def test_reanchor_moves_to_the_snippet_or_marks_stale():
    t = tracked(1, snippet="import os")
    assert tracking.reanchor([t], ["x = 1", "y = 2", "import os"], strict=True)
    assert t.sl == 2 and not t.stale
    gone = tracked(1, snippet="import os")
    tracking.reanchor([gone], ["x = 1", "import sys"], strict=True)
    assert gone.stale
    no_snippet = tracked(0)
    assert not tracking.reanchor([no_snippet], ["a"], strict=False) and not no_snippet.stale
    tracking.reanchor([no_snippet], ["a"], strict=True)
    assert no_snippet.stale
