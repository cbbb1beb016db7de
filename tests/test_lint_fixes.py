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


@st.composite
def several(draw):
    """A file and a few fixes to it (each one or more edits)."""
    rel, text, first = draw(case())
    fixes = [first] + [draw(case())[2] for _ in range(draw(st.integers(0, 3)))]
    return rel, text, fixes


def test_diffs_read_after_the_unread_lines_are_let_go():
    # Once a file's fixes are named the role lets go of the lines no diff
    # reads (``release``): every diff read afterwards is still the whole
    # file's, near the file's edges, across lines, past line ends (there
    # the whole file is kept).
    @settings(max_examples=600, deadline=None, derandomize=True)
    @given(several())
    def check(c):
        rel, text, fixes = c
        held = FileFixes(rel, text, text.split("\n"))
        made = []
        for edits in fixes:
            try:
                got = held.fix("lint-x", [_json(e) for e in edits])
            except ValueError:
                continue
            if got is not None:
                made.append((got, _whole(rel, text, edits)))
        held.release()
        for got, want in made:
            assert _made(got) == want, (text, fixes)

    check()


def test_a_files_fixes_keep_only_the_lines_their_diffs_read():
    # 400 lines, two one-line fixes and an import block: the lines far from
    # them are let go of once the fixes are named; the diffs are the same.
    text = "import sys\nimport os\n" + "".join(f"v{i} = {i}\n" for i in range(400))
    held = FileFixes("m.py", text, text.split("\n"))
    edits = [[TextEdit(1, 1, 3, 1, "import os\nimport sys\n")], [TextEdit(100, 1, 100, 3, "w")],
             [TextEdit(402, 6, 402, 9, "0")]]
    made = [held.fix("lint-x", [_json(e) for e in fix]) for fix in edits]
    held.release()
    kept = [i for i, line in enumerate(held.pieces) if line is not None]
    assert kept == [*range(6), *range(96, 103), *range(398, 403)], kept
    assert [_made(m) for m in made] == [_whole("m.py", text, fix) for fix in edits]


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


def test_the_role_makes_no_diff_until_one_is_read(make_repo, monkeypatch):
    # Fixes are named without their diffs (a large tree offers 15,000, most
    # never read): none is made by the role; reading a patch's diff makes
    # it, the same as the diff a patch holding it as text serialises to.
    from superqode_ls.models import Patch
    from superqode_ls.qe.roles.lint import LintTester
    from tests.role_helpers import git_apply_check, make_ctx, run_role

    made = []
    line_diff, whole_diff = FileFixes._one_line, FileText.diff
    monkeypatch.setattr(FileFixes, "_one_line", lambda self, e: made.append(e) or line_diff(self, e))
    monkeypatch.setattr(FileText, "diff", lambda self, *a: made.append(a) or whole_diff(self, *a))
    repo = make_repo({
        "pyproject.toml": '[tool.ruff.lint]\nselect = ["F401", "UP", "I"]\n',
        "a.py": "import sys\nimport os\nimport json\n\nprint(os, sys, json)\nprint((1))\n",
    })
    out = run_role(LintTester(), make_ctx(repo))
    assert len(out.patches) >= 2 and made == []
    for p in out.patches:
        text = p.diff
        assert text.startswith("diff --git a/a.py b/a.py\n")
        assert git_apply_check(repo, text).returncode == 0
        eager = Patch(**{**p.model_dump(), "diff": text})
        assert p.model_dump_json() == eager.model_dump_json() and p == eager
        assert p.model_copy(update={"verified": True}).diff == text
    assert made


def test_made_diffs_are_held_up_to_a_bound(monkeypatch):
    # A diff read twice is made once while it is among the most recently
    # made ones that fit MEMO_CHARS; older ones are let go and made again.
    from superqode_ls.qe.roles import _patches

    text = "".join(f"v{i} = {i}\n" for i in range(50))
    fixes = FileFixes("m.py", text, text.split("\n"))
    lazy = [fixes.fix("lint-x", [_json(TextEdit(i, 1, i, 2, "w"))])[0] for i in range(1, 40)]
    made = []
    monkeypatch.setattr(FileFixes, "diff", lambda self, edits: made.append(edits) or f"{edits[0].start_line:04d}" * 25)
    monkeypatch.setattr(_patches, "MEMO_CHARS", 500)
    monkeypatch.setattr(_patches, "_MEMO", type(_patches._MEMO)())
    monkeypatch.setattr(_patches, "_memo_size", 0)
    firsts = [d.text() for d in lazy]
    assert len(made) == len(lazy) and len(_patches._MEMO) == 5 and _patches._memo_size == 500
    assert [d.text() for d in lazy[-5:]] == firsts[-5:] and len(made) == len(lazy)  # held
    assert lazy[0].text() == firsts[0] == "0001" * 25 and len(made) == len(lazy) + 1  # made again


def test_a_files_fixes_hold_its_lines_not_a_second_copy_of_its_text():
    """A file's fixes are held until their diffs are read (a large tree:
    20 MB of text): only its split is kept, and a diff that needs the whole
    file (an edit across lines) is the one the whole text gives."""
    import gc

    text = "import os\nimport sys\n\nx = 1\n" * 50
    held = FileFixes("p/f.py", text, text.split("\n"))
    assert not any(r is text for r in gc.get_referents(held))
    edits = [TextEdit(1, 1, 3, 1, "import sys\nimport os\n")]
    got = held.fix("lint-x", [_json(e) for e in edits])
    assert _made(got) == _whole("p/f.py", text, edits)
