"""lint_tester on small real repositories: ruff findings at the right place,
fixes as patches git accepts, the sandbox left alone."""

from __future__ import annotations

import asyncio

import pytest

from superqode_ls.qe.roles._patches import TextEdit, edits_diff, unified_diff
from superqode_ls.qe.roles.lint import LintTester, ruff_severity
from tests.role_helpers import at, git_apply, git_apply_check, make_ctx, run_role, tree_state

RUFF_CONFIG = '[tool.ruff.lint]\nselect = ["E", "F"]\n'


def test_findings_patches_and_untouched_sandbox(make_repo):
    repo = make_repo(
        {
            "pyproject.toml": RUFF_CONFIG,
            "pkg/__init__.py": "",
            # non-ASCII before the flagged name: columns are code points
            "pkg/mod.py": 'import os\nimport sys\n\n\ndef f():\n    s = "żółw"; unused = 1\n    return s, sys.argv\n',
            "pkg/crlf.py": "import json\r\n\r\nX = 1\r\n",
            "pkg/nonl.py": "import re",
        }
    )
    before = tree_state(repo)
    out = run_role(LintTester(), make_ctx(repo))
    assert out.status == "ok"
    assert tree_state(repo) == before  # no .ruff_cache, no edits

    (f401,) = at(out.findings, "F401", "pkg/mod.py", 1)
    assert f401.snippet == "import os" and f401.range.start_col == 8
    # ruff's own words once; the code is the rule id, the rule page the link.
    assert f401.title == f401.message == "`os` imported but unused"
    assert f401.help_uri and f401.help_uri.rstrip("/").endswith("/unused-import")
    (f841,) = at(out.findings, "F841", "pkg/mod.py", 6)
    assert f841.range.start_col == 17  # after 'żółw' counted as 4 characters
    assert f841.snippet == '    s = "żółw"; unused = 1'
    assert at(out.findings, "F401", "pkg/crlf.py", 1)
    assert at(out.findings, "F401", "pkg/nonl.py", 1)
    assert len({f.id for f in out.findings}) == len(out.findings)

    patches = {p.id: p for p in out.patches}
    for f in out.findings:
        if f.rule_id == "E702":  # ruff offers no fix for this one
            assert f.fix_patch_id is None
            continue
        assert f.fix_patch_id in patches, f
        patch = patches[f.fix_patch_id]
        assert patch.finding_ids == [f.id] and patch.files == [f.file]
        check = git_apply_check(repo, patch.diff)
        assert check.returncode == 0, (patch.diff, check.stderr)
    assert "unsafe" in patches[f841.fix_patch_id].description

    # Applying the fixes and re-checking those files: the problems are gone
    # and the CRLF file kept its line endings.
    for pid in {f401.fix_patch_id, at(out.findings, "F401", "pkg/crlf.py", 1)[0].fix_patch_id}:
        git_apply(repo, patches[pid].diff)
    again = asyncio.run(LintTester().recheck(make_ctx(repo), ["pkg/mod.py", "pkg/crlf.py"]))
    assert not at(again, "F401", "pkg/mod.py", 1)
    assert not [f for f in again if f.file == "pkg/crlf.py"]
    assert (repo / "pkg/crlf.py").read_bytes() == b"\r\nX = 1\r\n"
    assert {f.file for f in again} <= {"pkg/mod.py", "pkg/crlf.py"}


def test_ids_survive_code_moving(make_repo):
    repo = make_repo({"a.py": "import os\n"})
    first = run_role(LintTester(), make_ctx(repo))
    (repo / "a.py").write_text('"""Doc."""\n\n\nimport os\n')
    second = run_role(LintTester(), make_ctx(repo))
    assert [f.id for f in first.findings if f.rule_id == "F401"] == [
        f.id for f in second.findings if f.rule_id == "F401"
    ]


def test_files_restrict_and_skips(make_repo, tmp_path):
    repo = make_repo({"a.py": "import os\n", "b.py": "import sys\n", "notes.txt": "x\n"})
    out = run_role(LintTester(), make_ctx(repo, files=["b.py", "missing.py"]))
    assert {f.file for f in out.findings} == {"b.py"}
    out = run_role(LintTester(), make_ctx(repo, files=["notes.txt"]))
    assert out.status == "skipped" and "Python" in out.reason
    empty = make_repo({"README.md": "nothing to lint\n"})
    out = run_role(LintTester(), make_ctx(empty))
    assert out.status == "skipped" and out.reason


def test_bad_project_config_is_a_failed_role(make_repo):
    repo = make_repo({"pyproject.toml": "[tool.ruff]\nline-length = 'wide'\n", "a.py": "x = 1\n"})
    out = run_role(LintTester(), make_ctx(repo))
    assert out.status == "failed" and "ruff failed" in out.reason


def test_syntax_error_and_missing_ruff(make_repo, monkeypatch):
    repo = make_repo({"bad.py": "def f(:\n    pass\n"})
    out = run_role(LintTester(), make_ctx(repo))
    assert out.findings and out.findings[0].severity.value == "high"
    assert out.findings[0].category == "syntax" and out.findings[0].range.start_line == 1
    from superqode_ls.qe.roles import lint

    monkeypatch.setattr(lint, "tool_path", lambda name: None)
    out = run_role(LintTester(), make_ctx(repo))
    assert out.status == "skipped" and "ruff is not installed" in out.reason
    assert LintTester().unavailable() is not None


def test_severity_mapping():
    assert ruff_severity("F821").value == "high"
    assert ruff_severity("E999").value == "high"
    assert ruff_severity("B006").value == "medium"
    # idiom notes, often deliberate: low, after the likely bugs
    assert ruff_severity("B004").value == "low" and ruff_severity("B018").value == "low"
    assert ruff_severity("B023").value == "medium"  # a closure over a loop variable: a bug
    assert ruff_severity("F401").value == "low"
    # notes on annotations (ClassVar, implicit Optional), not on behaviour
    assert ruff_severity("RUF012").value == "low" and ruff_severity("RUF013").value == "low"
    assert ruff_severity("RUF006").value == "medium"  # a dangling asyncio task: a bug
    assert ruff_severity("E501").value == "info"
    # a % or .format that raises whenever the line runs: high, as a NameError
    for code in ("F501", "F502", "F503", "F505", "F506", "F507", "F508", "F509",
                 "F521", "F524", "F525"):
        assert ruff_severity(code).value == "high", code
    # arguments given and never used: the line runs
    for code in ("F504", "F522", "F523"):
        assert ruff_severity(code).value == "medium", code


def test_edits_and_diff_edge_cases():
    text = "a = 1\nb = 2"
    assert edits_diff("f.py", text, [TextEdit(2, 1, 2, 6, "b = 3")]) == unified_diff(
        "f.py", text, "a = 1\nb = 3")
    # edit reaching one past the last line means end of file
    assert edits_diff("f.py", "x\ny\n", [TextEdit(2, 1, 3, 1, "")]) == unified_diff(
        "f.py", "x\ny\n", "x\n")
    try:
        edits_diff("f.py", text, [TextEdit(1, 1, 1, 4, ""), TextEdit(1, 2, 1, 3, "")])
    except ValueError:
        pass
    else:
        raise AssertionError("overlapping edits must be refused")
    diff = unified_diff("f.py", "a\nb", "a\nc")
    assert diff.startswith("diff --git a/f.py b/f.py\n--- a/f.py\n+++ b/f.py\n")
    assert diff.count("\\ No newline at end of file") == 2
    assert unified_diff("f.py", "same", "same") == ""


BLIND = ("import os\n\n\ndef f(log):\n    try:\n        return os.getcwd()\n"
         "    except Exception:\n        log('no cwd')\n")


def test_style_rules_the_project_never_chose_are_noise_chosen_ones_stay(make_repo):
    # ruff's newer defaults run rules (BLE001, a blind except) that a project
    # configured only with extend-select never chose; its own rules stay.
    repo = make_repo({"pyproject.toml": '[tool.ruff.lint]\nextend-select = ["B"]\n',
                      "pkg/mod.py": BLIND + "import sys\n"})
    by_rule = {f.rule_id: f for f in run_role(LintTester(), make_ctx(repo)).findings}
    if "BLE001" not in by_rule:
        import pytest
        pytest.skip("this ruff does not run BLE001 by default")
    assert by_rule["BLE001"].noise and "not chosen" in by_rule["BLE001"].noise
    assert by_rule["F401"].noise is None  # F: ruff's classic defaults
    chose = make_repo({"pyproject.toml": '[tool.ruff.lint]\nselect = ["BLE", "F"]\n',
                       "pkg/mod.py": BLIND})
    (ble,) = [f for f in run_role(LintTester(), make_ctx(chose)).findings
              if f.rule_id == "BLE001"]
    assert ble.noise is None


def test_medium_rules_the_project_never_chose_are_noise_unless_likely_bugs(make_repo):
    # B008 (a call in a default: FastAPI's and typer's way to declare) and
    # PLW1510 (subprocess.run without check) are ruff defaults now, not rules
    # the project chose; B006 (a mutable default) is most often a bug: shown.
    code = ("import subprocess\n\n\ndef f(a=[], b=subprocess.list2cmdline([])):\n"
            "    subprocess.run(['true'])\n    return a, b\n")
    repo = make_repo({"pkg/mod.py": code})
    by_rule = {f.rule_id: f for f in run_role(LintTester(), make_ctx(repo)).findings}
    if "B008" not in by_rule:
        import pytest
        pytest.skip("this ruff does not run B008 by default")
    assert by_rule["B008"].noise and "not chosen" in by_rule["B008"].noise
    assert by_rule["B006"].noise is None and by_rule["B006"].severity.value == "medium"
    if "PLW1510" in by_rule:
        assert by_rule["PLW1510"].noise
    chose = make_repo({"pyproject.toml": '[tool.ruff.lint]\nextend-select = ["B"]\n', "pkg/mod.py": code})
    (b008,) = [f for f in run_role(LintTester(), make_ctx(chose)).findings if f.rule_id == "B008"]
    assert b008.noise is None


def test_chosen_rules_and_selectors(tmp_path):
    from superqode_ls.qe.roles.lint import chosen_rules, selected_by

    assert chosen_rules(tmp_path) == ("E4", "E7", "E9", "F")
    (tmp_path / "ruff.toml").write_text('[lint]\nextend-select = ["sim", "PL"]\n')
    assert chosen_rules(tmp_path)[-2:] == ("SIM", "PL")
    (tmp_path / "ruff.toml").write_text('select = ["E"]\n')
    assert chosen_rules(tmp_path) is None
    assert selected_by("B006", ("B",)) and not selected_by("BLE001", ("B",))
    assert selected_by("PLR1711", ("PL",)) and selected_by("E741", ("E7",))
    assert not selected_by("E501", ("E4", "E7", "E9"))


def _window_diff(rel, old, edits, context=3):
    """The diff as the role built it before FileText: the whole window of
    lines around the edits rebuilt as text and split again."""
    import bisect

    from superqode_ls.qe.roles._patches import _diff_lines, _line_starts, _spans, _splice, split_lines

    starts = _line_starts(old)
    spans = _spans(starts, old, edits)
    if not spans:
        return ""
    first = bisect.bisect_right(starts, spans[0][0]) - 1
    last = bisect.bisect_right(starts, max(end for _, end, _ in spans)) - 1
    w0, w1 = max(0, first - context), last + 1 + context
    a_s, a_e = starts[w0], starts[w1] if w1 < len(starts) else len(old)
    old_w, new_w = old[a_s:a_e], _splice(old, spans, a_s, a_e)
    if old_w == new_w:
        return ""
    return _diff_lines(rel, split_lines(old_w), split_lines(new_w), context, w0)


def test_one_pass_diffs_match_the_window_diffs():
    # FileText splits a file once for all its fixes; each diff must be the
    # one the whole-window rebuild gave (ids hash the diff), through the
    # file's edges, CRLF, a missing final newline, joined and deleted lines.
    from hypothesis import given, settings
    from hypothesis import strategies as st

    from superqode_ls.qe.roles._patches import FileText

    line = st.sampled_from(["x = 1", "", "    y", "z\r", "import os", "é"])
    content = st.sampled_from(["", "\n", "w", "x = 1\n", "a\nb\nc\nd\ne\nf\ng\nh\ni\nj\nk\nl\nm\nn\n"])

    @st.composite
    def case(draw):
        lines = draw(st.lists(line, min_size=0, max_size=30))
        text = "\n".join(lines) + draw(st.sampled_from(["", "\n"]))
        n = len(lines) + 1
        edits = []
        for _ in range(draw(st.integers(1, 3))):
            sl = draw(st.integers(1, n))
            el = draw(st.integers(sl, min(n, sl + 3)))
            sc = draw(st.integers(1, 8))
            ec = draw(st.integers(sc if el == sl else 1, 9))
            edits.append(TextEdit(sl, sc, el, ec, draw(content)))
        return text, edits

    @settings(max_examples=400, deadline=None)
    @given(case())
    def check(c):
        text, edits = c
        try:
            want = _window_diff("p/f.py", text, edits)
        except ValueError:
            want = ValueError
        try:
            got = FileText("p/f.py", text).diff(edits)
        except ValueError:
            got = ValueError
        assert got == want

    check()


def test_gc_pause_resumes_once_and_only_where_it_was_on():
    import gc

    from superqode_ls.qe.gc_pause import GcPause

    pause = GcPause()
    assert gc.isenabled()
    seen = []

    def inner():
        seen.append(gc.isenabled())
        return pause.run(lambda: seen.append(gc.isenabled()) or "done")

    assert pause.run(inner) == "done"
    assert seen == [False, False] and gc.isenabled()  # resumed after the outer one
    try:
        pause.run(lambda: 1 / 0)
    except ZeroDivisionError:
        pass
    assert gc.isenabled()  # resumed after a failure too
    gc.disable()
    try:
        pause.run(lambda: None)
        assert not gc.isenabled()  # it was off: left off
    finally:
        gc.enable()


def test_gc_pause_leaves_its_work_old_and_nothing_frozen():
    """What the paused work made goes to the oldest generation when the
    pause ends (the young collections after it would walk it all for
    nothing), yet nothing stays frozen: a cycle made under the pause is
    still collected, and a freeze made by someone else is left alone."""
    import gc
    import weakref

    from superqode_ls.qe.gc_pause import GcPause

    class Node:
        pass

    pause = GcPause()
    made: list = []
    # A freeze left in this process (superqe run's, on a cancel) would turn
    # the move off, as it should: start from none.
    gc.unfreeze()

    def work():
        for _ in range(2000):
            a, b = Node(), Node()
            a.other, b.other = b, a  # a cycle: only the collector frees it
            made.append(a)

    gc.collect()
    pause.run(work)
    assert gc.get_freeze_count() == 0
    young = {id(o) for o in gc.get_objects(generation=0)} | {
        id(o) for o in gc.get_objects(generation=1)}
    assert not any(id(a) in young or id(a.other) in young for a in made)
    assert id(made[0]) in {id(o) for o in gc.get_objects(generation=2)}
    gone = [weakref.ref(a) for a in made]
    made.clear()
    gc.collect()
    assert all(r() is None for r in gone)  # the cycles were collected
    keep = Node()
    gc.freeze()  # someone else's freeze (a pre-forking host)
    try:
        frozen = gc.get_freeze_count()
        pause.run(work)
        assert gc.get_freeze_count() == frozen and gc.isenabled()
    finally:
        gc.unfreeze()
        made.clear()
        del keep


def test_what_a_fix_changes_is_what_its_diff_changes():
    # A fix's id is made from FileText.changes, without its diff: it must
    # say "no change" exactly where the diff is empty, refuse exactly where
    # the diff does, and otherwise name each edit's replaced text and new
    # text in the file's order; through CRLF, breaks str.splitlines knows,
    # lines that read like diff headers, the file's edges.
    from hypothesis import given, settings
    from hypothesis import strategies as st

    from superqode_ls.qe.roles._patches import FileText

    plain = ["x = 1", "", "    y", "-- g", "++ h", "import os"]
    line = st.sampled_from([*plain * 6, "z\r", "a\x0c-b", "c\x0b+d", "e\u2028-f"])
    content = st.sampled_from(["", "\n", "w", "x = 2", "-- k", "++ m", "n\x0c+o", "p\r", "x"])

    @st.composite
    def case(draw):
        lines = draw(st.lists(line, min_size=1, max_size=20))
        text = "\n".join(lines) + draw(st.sampled_from(["", "\n"]))
        n = len(lines)
        edits = []
        for _ in range(draw(st.integers(1, 2))):
            sl = draw(st.integers(1, n))
            el = draw(st.sampled_from([sl, min(n + 1, sl + 1)]))
            sc = draw(st.integers(1, 6))
            ec = draw(st.integers(sc if el == sl else 1, 7))
            edits.append(TextEdit(sl, sc, el, ec, draw(content)))
        return text, edits

    seen = {"none": 0, "some": 0}

    @settings(max_examples=600, deadline=None, derandomize=True)
    @given(case())
    def check(c):
        text, edits = c
        try:
            want = _window_diff("p/f.py", text, edits)
        except ValueError:
            want = ValueError
        try:
            got = FileText("p/f.py", text, text.split("\n")).changes(edits)
        except ValueError:
            got = ValueError
        if want is ValueError or not want:
            assert got == (want if want is ValueError else None), (text, edits)
            seen["none"] += want is not ValueError
            return
        seen["some"] += 1
        lines = text.split("\n")

        def at(line, col):
            return min(len(text), sum(len(ln) + 1 for ln in lines[:line - 1]) + col - 1)

        spans = sorted((at(e.start_line, e.start_col), at(e.end_line, e.end_col), e.content)
                       for e in edits)
        assert got == [(text[i:j], new) for i, j, new in spans], (text, edits)

    check()
    assert seen["none"] > 5 and seen["some"] > 100, seen


def test_role_patch_ids_are_the_ids_of_their_edits(make_repo):
    # On a real ruff run each fix's id is its finding's and what ruff's
    # edits replace and with what (no positions, no context), and each
    # one-line fix's diff, made when read, is the one unified_diff makes of
    # the file and its fixed text; a form feed and a "\v" in context lines
    # (breaks str.splitlines knows) and lines that read like diff headers
    # included.
    import subprocess

    import pydantic_core

    from superqode_ls.qe.roles import lint
    from superqode_ls.qe.roles._patches import fix_id

    body = "".join(f"x{i} = {i}\n" for i in range(8))
    repo = make_repo({
        "pyproject.toml": '[tool.ruff.lint]\nselect = ["F401", "UP", "I"]\n',
        "pkg/__init__.py": "",
        "pkg/a.py": "import os\n" + body + "import sys\n" + body + "def f() -> 'int':\n    return 1\n",
        "pkg/ff.py": "print((1))\n\x0c\nx = 1  # a\x0b-b\nprint((2))\ny = -- 1\nprint((3))\n",
        "pkg/imports.py": "import sys\nimport os\nimport json\n\nprint(os, sys, json)\n",
    })
    ctx = make_ctx(repo)
    out = run_role(LintTester(), ctx)
    assert out.status == "ok"
    assert len([p for p in out.patches if p.files == ["pkg/ff.py"]]) == 3
    cmd = lint.ruff_command(lint.tool_path("ruff"), ctx.sandbox, ["."])
    data = pydantic_core.from_json(subprocess.run(cmd, cwd=ctx.sandbox, capture_output=True,
                                                  check=True).stdout)
    by_place = {(f.file, f.rule_id, f.range.start_line, f.range.start_col): f.id for f in out.findings}
    want = set()
    for d in data:
        if not (d.get("fix") or {}).get("edits"):
            continue
        rel = d["filename"][len(str(ctx.sandbox)) + 1:]
        text = (ctx.sandbox / rel).read_bytes().decode()
        lines = text.split("\n")

        def at(loc, lines=lines):
            return sum(len(ln) + 1 for ln in lines[:loc["row"] - 1]) + loc["column"] - 1

        edits = sorted((at(e["location"]), at(e["end_location"]), e["content"]) for e in d["fix"]["edits"])
        fid = by_place[(rel, d["code"], d["location"]["row"], d["location"]["column"])]
        want.add(fix_id(fid, [(text[i:j], new) for i, j, new in edits]))
    assert {p.id for p in out.patches} == want and len(want) == len(out.patches) > 5
    for p in out.patches:
        old = (repo / p.files[0]).read_bytes().decode()
        if p.diff.count("\n-") == 1 and p.diff.count("\n+") == 2:  # one line made another
            copy = repo.parent / "copy"
            copy.mkdir(exist_ok=True)
            (copy / "f.py").write_bytes(old.encode())
            git_apply(copy, p.diff.replace(f"a/{p.files[0]}", "a/f.py").replace(f"b/{p.files[0]}", "b/f.py"))
            new = (copy / "f.py").read_bytes().decode()
            assert unified_diff(p.files[0], old, new) == p.diff


def _line_id(diff: str) -> str:
    """A diff-made fix's id (the security role's) as patch_id first defined
    it: its finding's id and the lines the diff removes and adds, as
    str.splitlines splits it. A faster reading must give the same ones."""
    import hashlib

    basis = "\x1f".join(
        ln for ln in diff.splitlines()
        if ln.startswith(("+", "-", "diff --git ")) and not ln.startswith(("+++ ", "--- "))
    )
    return f"fix-lint-x-{hashlib.sha256(basis.encode('utf-8', 'surrogateescape')).hexdigest()[:6]}"


def test_patch_ids_of_many_line_diffs_are_the_line_ids():
    # patch_id reads a diff with no odd line break in one regular-expression
    # pass: on import blocks, header-like lines ("--- x" removed, "+++ y"
    # added) and files without a final newline it gives the ids it gave.
    import random

    from superqode_ls.qe.roles._patches import patch_id

    pool = ["import a", "-- x", "++ y", "+", "-", "", "diff --git q", "  --- z", "c\r", "d\x0c"]
    rng = random.Random(3)
    seen = 0
    for _ in range(400):
        old = "\n".join(rng.choice(pool) for _ in range(rng.randint(1, 25))) + rng.choice(["", "\n"])
        lines = old.split("\n")
        for _ in range(rng.randint(1, 4)):
            lines.insert(rng.randint(0, len(lines)), rng.choice(pool))
        diff = unified_diff(rng.choice(["m.py", "p/x y.py"]), old, "\n".join(lines))
        if diff:
            seen += 1
            assert patch_id("lint-x", diff) == _line_id(diff), diff
    assert seen > 300


def test_findings_and_fixes_the_same_when_ruff_lists_a_file_twice(make_repo):
    # The role makes a file's patches once its findings are all made, and
    # lets its text go; ruff lists a file's diagnostics together. Were it
    # ever to list one in two places, the ids (numbered "-2" in line order
    # across the file) and the patches must be the same as listed together.
    import subprocess

    import pydantic_core

    from superqode_ls.qe.roles import lint

    dup = "import os\n"
    repo = make_repo({
        "pyproject.toml": '[tool.ruff.lint]\nselect = ["F401", "UP"]\n',
        "a.py": f"{dup}def f():\n    {dup}    return 1\n\n\ndef g():\n    {dup}    return '%s' % 1\n",
        "b.py": "import sys\nX = '%s' % 2\n",
    })
    ctx = make_ctx(repo)
    cmd = lint.ruff_command(lint.tool_path("ruff"), ctx.sandbox, ["."])
    data = pydantic_core.from_json(subprocess.run(cmd, cwd=ctx.sandbox, capture_output=True,
                                                  check=True).stdout)
    a = [d for d in data if d["filename"].endswith("a.py")]
    b = [d for d in data if d["filename"].endswith("b.py")]
    assert len(a) >= 4 and b
    role = LintTester()
    together = role._parse(ctx.sandbox, a + b)
    apart = role._parse(ctx.sandbox, [*a[:2], *b, *a[2:]])

    def key(out):
        return (sorted((f.id, f.file, f.range.start_line, f.fix_patch_id) for f in out.findings),
                sorted((p.id, p.diff) for p in out.patches))

    assert key(apart) == key(together)
    ids = [f.id for f in together.findings if f.rule_id == "F401" and f.file == "a.py"]
    assert len(ids) == 3 and ids[1] == ids[0] + "-2" and ids[2] == ids[0] + "-3"
    assert all(f.fix_patch_id for f in together.findings if f.file == "a.py")


def test_the_lint_parse_and_the_noise_filter_share_one_pause():
    """Two pauses with counters of their own could resume the collector
    under the other's work; there is one for the process."""
    from superqode_ls.qe import gc_pause, noise
    from superqode_ls.qe.roles import lint

    assert lint.PAUSE is noise.PAUSE is gc_pause.PAUSE


def test_ruffs_output_is_read_from_its_bytes_banner_and_bad_utf8_too():
    """The role parses ruff's stdout as bytes: what the text reader took
    (a banner line before the JSON, a byte that is not UTF-8) still reads,
    and what is not JSON is still refused."""
    from superqode_ls.qe.roles.lint import _load

    assert _load(b'[{"code": "F401", "message": "caf\xc3\xa9"}]') == [
        {"code": "F401", "message": "caf\u00e9"}]
    assert _load(b'warning: something\n[{"message": "x\xff"}]') == [{"message": "x\ufffd"}]
    with pytest.raises(ValueError):
        _load(b"ruff: not json at all")


def test_pyproject_is_read_again_once_it_changes(tmp_path):
    """pyproject.toml's parse is kept between the role's reads of it: an
    edit on disk (even one of the same size) must still be seen."""
    import os

    from superqode_ls.qe.roles._target import _toml, ruff_target
    from superqode_ls.qe.roles.lint import chosen_rules

    py = tmp_path / "pyproject.toml"
    py.write_text('[project]\nrequires-python = ">=3.8"\n[tool.ruff.lint]\nextend-select = ["B"]\n')
    assert ruff_target(tmp_path) == "py38" and chosen_rules(tmp_path)[-1] == "B"
    assert _toml(py) is _toml(py)  # kept while unchanged
    st = py.stat()
    py.write_text('[project]\nrequires-python = ">=3.9"\n[tool.ruff.lint]\nextend-select = ["C"]\n')
    os.utime(py, ns=(st.st_atime_ns, st.st_mtime_ns))  # same size, same time stamp
    assert ruff_target(tmp_path) == "py39" and chosen_rules(tmp_path)[-1] == "C"
    py.write_text("not toml [")
    assert _toml(py) == {} and chosen_rules(tmp_path) == ("E4", "E7", "E9", "F")


def test_past_its_deadline_the_role_returns_every_finding_without_fixes(make_repo):
    """Told to stop, the role keeps what ruff found: the findings all come
    back, the fixes (most of its time on a large tree) are not made, and
    its reason says so."""
    import json
    import subprocess
    import time

    from superqode_ls.qe.roles.base import tool_path
    from superqode_ls.qe.roles.lint import ruff_command

    repo = make_repo({
        "pyproject.toml": RUFF_CONFIG,
        "a.py": "import os\nimport sys\n\nprint(sys.argv)\n",
        "b.py": "import json\nimport re\n",
    })
    data = json.loads(subprocess.run(ruff_command(tool_path("ruff"), repo, ["."]), cwd=repo,
                                     capture_output=True, check=True).stdout)
    role = LintTester()
    full = role._parse(repo, json.loads(json.dumps(data)))
    late = role._parse(repo, data, patch_until=time.monotonic() - 1)
    assert full.patches and full.reason is None  # there were fixes to make
    assert [(f.id, f.rule_id, f.file) for f in late.findings] == [
        (f.id, f.rule_id, f.file) for f in full.findings]
    assert late.patches == [] and all(f.fix_patch_id is None for f in late.findings)
    assert late.reason and "no time left to make fixes" in late.reason


def test_the_role_lets_go_of_ruffs_json_as_it_reads_it(make_repo):
    """The role's own read of ruff's output lets go of each diagnostic once
    made into a finding (its memory then holds what is made next, not new
    pages): the list it read is left empty of them, and the findings and
    patches are those of a parse that keeps the list whole."""
    import json
    import subprocess

    from superqode_ls.qe.roles._lint_parse import parse
    from superqode_ls.qe.roles.base import tool_path
    from superqode_ls.qe.roles.lint import _Codes, ruff_command

    repo = make_repo({
        "pyproject.toml": RUFF_CONFIG,
        "a.py": "import os\nimport sys\n\nif sys.argv == None and os.sep == None:\n    pass\n",
        "b.py": "import json\nimport re\n",
    })
    raw = subprocess.run(ruff_command(tool_path("ruff"), repo, ["."]), cwd=repo,
                         capture_output=True, check=True).stdout
    kept = json.loads(raw)
    whole = parse(repo, kept, "lint_tester", _Codes(None).kind)
    data = json.loads(raw)
    eaten = parse(repo, data, "lint_tester", _Codes(None).kind, consume=True)
    assert len(kept) >= 4 and all(d is not None for d in kept)
    assert data == [None] * len(kept)
    assert [f.model_dump() for f in eaten.findings] == [f.model_dump() for f in whole.findings]
    assert [(p.id, str(p.diff)) for p in eaten.patches] == [(p.id, str(p.diff)) for p in whole.patches]
    assert eaten.patches
