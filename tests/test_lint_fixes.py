"""The lint role's fixes made from a file's lines (``_lint_fixes``): the
diffs ``FileText`` gives the whole file, made only when read, and ids made
from what each edit replaces and with what (``fix_id``), the same however
the fix is taken."""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

from superqode_ls.qe.roles import _lint_fixes
from superqode_ls.qe.roles._lint_fixes import FileFixes
from superqode_ls.qe.roles._patches import FileText, TextEdit, _line_starts, _offset, fix_id

LINES = ["x = 1", "", "    y", "z\r", "import os", "é", "-- g", "++ h", "a\x0c-b", "c\x0b+d"]
CONTENT = ["", "\n", "w", "x = 2", "-- k", "++ m", "p\r", "n\x0c+o",
           "a\nb\nc\nd\ne\nf\ng\nh\ni\nj\nk\nl\nm\nn\n"]


def _json(e: TextEdit) -> dict:
    """An edit as ruff's JSON spells it."""
    return {"content": e.content, "location": {"row": e.start_line, "column": e.start_col},
            "end_location": {"row": e.end_line, "column": e.end_col}}


def _whole(rel: str, text: str, edits: list[TextEdit]):
    """The whole file's diff, and the id of what each edit replaces (its
    offsets read from the file's lines here, in the file's order)."""
    diff = FileText(rel, text, text.split("\n")).diff(edits)
    if not diff:
        return None
    starts = _line_starts(text)
    spans = sorted((_offset(starts, text, e.start_line, e.start_col),
                    _offset(starts, text, e.end_line, e.end_col), e.content) for e in edits)
    return diff, fix_id("lint-x", [(text[a:b], c) for a, b, c in spans])


def _made(got):
    """A fix as ``FileFixes.fix`` gives it, its diff read."""
    return None if got is None else (got[0].text(), got[1])


@st.composite
def case(draw):
    lines = draw(st.one_of(st.lists(st.sampled_from(LINES), max_size=6),
                           st.lists(st.sampled_from(LINES), min_size=8, max_size=30)))
    text = "\n".join(lines) + draw(st.sampled_from(["", "\n", "\n", "\n"]))
    n = len(lines) + 1
    edits = []
    for _ in range(draw(st.sampled_from([1, 1, 1, 2, 3]))):
        # mostly inside the file and its lines (the fixes ruff offers),
        # sometimes past them
        sl = draw(st.one_of(st.integers(1, n), st.integers(1, n), st.integers(0, n + 1)))
        el = draw(st.sampled_from([sl, sl, sl, sl + 1, sl + 3]))
        sc = draw(st.one_of(st.integers(1, 5), st.integers(0, 9)))
        ec = draw(st.integers(sc - 1 if el == sl else 0, 10) if el != sl or sc > 5
                  else st.integers(sc, 6))
        edits.append(TextEdit(sl, sc, el, ec, draw(st.sampled_from(CONTENT[:7] * 3 + CONTENT))))
    return draw(st.sampled_from(["p/f.py", "p/\x0cf.py"])), text, edits


def test_line_fixes_are_the_whole_file_fixes(monkeypatch):
    # Through the file's edges, CRLF, a missing final newline, columns and
    # lines past their ends, overlapping edits, lines that read like diff
    # headers or hold breaks str.splitlines knows: the same diff and id, or
    # the same refusal; both ways of making them taken many times.
    taken = {"line": 0, "whole": 0}
    one_line, whole_of = FileFixes._one_line, FileText.diff

    def counted_line(self, *a):
        made = one_line(self, *a)
        taken["line"] += made is not None
        return made

    def counted_whole(self, edits, context=3):
        taken["whole"] += 1
        return whole_of(self, edits, context)

    monkeypatch.setattr(FileFixes, "_one_line", counted_line)
    monkeypatch.setattr(FileText, "diff", counted_whole)

    @settings(max_examples=1000, deadline=None, derandomize=True)
    @given(case())
    def check(c):
        rel, text, edits = c
        try:
            want = _whole(rel, text, edits)
        except ValueError:
            want = ValueError
        try:
            got = _made(FileFixes(rel, text, text.split("\n")).fix("lint-x", [_json(e) for e in edits]))
        except ValueError:
            got = ValueError
        assert got == want, (text, edits)

    check()
    assert taken["line"] > 50 and taken["whole"] > 1000, taken


def test_malformed_edits_are_refused_as_before():
    fixes = FileFixes("m.py", "x = 1\ny = 2\n", ["x = 1", "y = 2", ""])
    for bad in ({"location": {"row": 1}}, {"content": "z"}, "text",
                {"location": {"row": None, "column": 1}, "end_location": {"row": 1, "column": 2}},
                {"location": {"row": 1, "column": 1}, "end_location": {"row": 1, "column": 2},
                 "content": 5}):
        try:
            fixes.fix("lint-x", [bad])
        except (ValueError, KeyError, TypeError):
            continue
        raise AssertionError(f"accepted {bad!r}")


def test_a_part_of_the_file_names_the_files_lines():
    # A fix far down a file, across two lines: its hunk names the file's
    # lines, as the whole file's diff does.
    text = "".join(f"v{i} = {i}\n" for i in range(40))
    edit = TextEdit(30, 1, 31, 8, "joined = 1")
    got = _made(FileFixes("m.py", text, text.split("\n")).fix("lint-x", [_json(edit)]))
    assert got == _whole("m.py", text, [edit])
    assert "@@ -27,8 +27,7 @@" in got[0]
    assert _lint_fixes.CONTEXT == 3
