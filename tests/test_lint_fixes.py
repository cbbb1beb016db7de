"""The lint role's fixes made from a file's lines (``_lint_fixes``) are the
diffs and ids ``FileText`` gives the whole file: ids are kept in reports and
seals, and a faster way of making them must not change one."""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

from superqode_ls.qe.roles import _lint_fixes
from superqode_ls.qe.roles._lint_fixes import FileFixes
from superqode_ls.qe.roles._patches import FileText, TextEdit, patch_id

LINES = ["x = 1", "", "    y", "z\r", "import os", "é", "-- g", "++ h", "a\x0c-b", "c\x0b+d"]
CONTENT = ["", "\n", "w", "x = 2", "-- k", "++ m", "p\r", "n\x0c+o",
           "a\nb\nc\nd\ne\nf\ng\nh\ni\nj\nk\nl\nm\nn\n"]


def _json(e: TextEdit) -> dict:
    """An edit as ruff's JSON spells it."""
    return {"content": e.content, "location": {"row": e.start_line, "column": e.start_col},
            "end_location": {"row": e.end_line, "column": e.end_col}}


def _whole(rel: str, text: str, edits: list[TextEdit]):
    """What the role gave before: the whole file's FileText."""
    diff, basis = FileText(rel, text, text.split("\n")).fix(edits)
    return (diff, patch_id("lint-x", diff, basis)) if diff else None


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
    taken = {"line": 0, "part": 0}
    one_line, whole_of = FileFixes._one_line, FileText.fix

    def counted_line(self, *a):
        made = one_line(self, *a)
        taken["line"] += made is not False
        return made

    def counted_part(self, edits, context=3):
        taken["part"] += self.line0 > 0
        return whole_of(self, edits, context)

    monkeypatch.setattr(FileFixes, "_one_line", counted_line)
    monkeypatch.setattr(FileText, "fix", counted_part)

    @settings(max_examples=1000, deadline=None, derandomize=True)
    @given(case())
    def check(c):
        rel, text, edits = c
        try:
            want = _whole(rel, text, edits)
        except ValueError:
            want = ValueError
        try:
            got = FileFixes(rel, text, text.split("\n")).fix("lint-x", [_json(e) for e in edits])
        except ValueError:
            got = ValueError
        assert got == want, (text, edits)

    check()
    assert taken["line"] > 100 and taken["part"] > 20, taken


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
    got = FileFixes("m.py", text, text.split("\n")).fix("lint-x", [_json(edit)])
    assert got == _whole("m.py", text, [edit])
    assert "@@ -27,8 +27,7 @@" in got[0]
    assert _lint_fixes.CONTEXT == 3
