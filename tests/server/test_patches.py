"""server/patches.py: a run's unified diffs as text edits on the text as it is now."""

from __future__ import annotations

import textwrap

import pytest

from superqode_ls.server import patches

SRC = "".join(f"line {i}\n" for i in range(1, 21))
DIFF = textwrap.dedent(
    """\
    --- a/m.py
    +++ b/m.py
    @@ -9,3 +9,3 @@
     line 9
    -line 10
    +LINE TEN
     line 11
    """
)


def _apply(text: str, diff: str) -> str:
    fes = patches.file_edits(diff, lambda rel: text)
    return patches.apply_to_text(text, fes[0])


def test_patch_applies_where_it_was_made():
    out = _apply(SRC, DIFF)
    assert "LINE TEN\n" in out and "line 10\n" not in out and out.count("\n") == 20


def test_patch_is_reanchored_when_lines_were_added_above():
    moved = "new 1\nnew 2\nnew 3\n" + SRC
    fe = patches.file_edits(DIFF, lambda rel: moved)[0]
    assert fe.edits[0].start == 8 + 3
    assert patches.apply_to_text(moved, fe) == moved.replace("line 10\n", "LINE TEN\n")


def test_patch_is_refused_when_its_code_changed_and_fits_a_neighbours_change():
    # One context line changed (a neighbouring fix applied first): it fits,
    # anchored by the rest.
    neighbour = SRC.replace("line 11", "line eleven")
    (fe,) = patches.file_edits(DIFF, lambda rel: neighbour)
    assert patches.apply_to_text(neighbour, fe) == neighbour.replace("line 10\n", "LINE TEN\n")
    # The line it removes, or all its context, changed: refused.
    for changed in (SRC.replace("line 10", "line ten"),
                    SRC.replace("line 11", "line eleven").replace("line 9", "line nine")):
        with pytest.raises(patches.PatchError, match="changed since the run"):
            patches.file_edits(DIFF, lambda rel, changed=changed: changed)


def test_patch_for_a_missing_or_non_utf8_file_is_refused_and_garbage_is_malformed():
    with pytest.raises(patches.PatchError, match="not found or not UTF-8"):
        patches.file_edits(DIFF, lambda rel: None)
    with pytest.raises(patches.PatchError):
        patches.file_edits("--- a/x\n+++ b/x\n@@ -1,2 +1,2 @@\n garbage\n", lambda rel: "x\n")


def test_patch_keeps_crlf_and_a_missing_final_newline():
    text = "a\r\nb\r\nc"
    diff = "--- a/m\n+++ b/m\n@@ -2,2 +2,2 @@\n b\n-c\n\\ No newline at end of file\n+C\n\\ No newline at end of file\n"
    fe = patches.file_edits(diff, lambda rel: text)[0]
    assert patches.apply_to_text(text, fe) == "a\r\nb\r\nC"
    rng = patches.text_edit_range(fe, fe.edits[0], len)
    assert rng == {"start": {"line": 1, "character": 0}, "end": {"line": 2, "character": 1}}


def test_split_lines_counts_like_lsp():
    assert patches.split_lines("a\x0cb\u2028c\r\nd\n") == ["a\x0cb\u2028c", "d"]
