"""Two findings on one line: applying one fix leaves the other's finding id
and fix id as they were, and the other fix still applies by its id (CLI),
re-derived on the line as the first left it (``qe.rebase``), where the two
changes do not meet. Real ruff, real repositories, the real CLI."""

from __future__ import annotations

import json

import pytest

from superqode_ls.qe.roles.base import tool_path
from superqode_ls.qe.roles.lint import LintTester
from tests.cli_helpers import superqe
from tests.role_helpers import git_apply, make_ctx, run_role

needs_ruff = pytest.mark.skipif(not tool_path("ruff"), reason="needs ruff")

# Two F541 on line 2 (two f-strings without placeholders), each with its own
# safe fix inside the line; and a finding with no fix on that line (F821).
TWO = 'import json\nprint(f"a", f"b", undefined_name)\nprint(json)\n'
CONFIG = '[tool.ruff.lint]\nselect = ["F541", "F821"]\n'


def test_merge_replays_a_change_beside_another_and_refuses_when_they_meet():
    from superqode_ls.qe.rebase import merge

    base = 'print(f"a", f"b")\n'
    assert merge(base, 'print("a", f"b")\n', 'print(f"a", "b")\n') == 'print("a", "b")\n'
    assert merge(base, 'print(f"a", "b")\n', 'print("a", f"b")\n') == 'print("a", "b")\n'
    assert merge(base, 'print("a", f"b")\n', base) == 'print("a", f"b")\n'
    # The same characters changed otherwise, or changes that touch: refused.
    assert merge(base, 'print("a", f"b")\n', 'print(g"a", f"b")\n') is None
    assert merge("ab", "aXb", "aYb") is None
    assert merge("abc", "aXc", "abY") is None  # touching: which goes first is unknown


@needs_ruff
def test_a_same_line_neighbours_fix_leaves_the_other_ids_alone(make_repo):
    repo = make_repo({"pyproject.toml": CONFIG, "m.py": TWO})
    first = run_role(LintTester(), make_ctx(repo))
    f541 = sorted((f for f in first.findings if f.rule_id == "F541"), key=lambda f: f.range.start_col)
    assert len(f541) == 2 and all(f.fix_patch_id for f in f541)
    assert len({f.id for f in f541}) == 2 and not any(f.id.endswith("-2") for f in f541)
    f821 = next(f for f in first.findings if f.rule_id == "F821")
    git_apply(repo, next(p for p in first.patches if p.id == f541[0].fix_patch_id).diff)
    assert (repo / "m.py").read_text().splitlines()[1] == 'print("a", f"b", undefined_name)'
    second = run_role(LintTester(), make_ctx(repo))
    left = [f for f in second.findings if f.rule_id == "F541"]
    assert [(f.id, f.fix_patch_id) for f in left] == [(f541[1].id, f541[1].fix_patch_id)]
    # The finding without a fix on that line keeps its id too.
    assert [f.id for f in second.findings if f.rule_id == "F821"] == [f821.id]


# Two rules on one line, each fix inside it (ruff marks both unsafe: named
# by their id they apply).
COND = "def f(a, b):\n    if a == None and b == True:\n        return 1\n"
COND_CONFIG = '[tool.ruff.lint]\nselect = ["E711", "E712"]\n'


def _fixes(repo) -> list[str]:
    """The fixes of the newest report's findings, left to right."""
    report = json.loads(max((repo / ".superqode" / "qe-artifacts" / "qr").glob("qr-*.json")).read_text())
    found = sorted(report["findings"], key=lambda f: f["range"]["start_col"])
    return [f["fix_patch_id"] for f in found]


@needs_ruff
def test_the_other_same_line_fix_applies_by_its_id_after_the_first(make_repo, capsys):
    repo = make_repo({"pyproject.toml": COND_CONFIG, "m.py": COND})
    superqe(capsys, "run", str(repo), "-r", "lint_tester")
    left, right = _fixes(repo)
    code, out, err = superqe(capsys, "suggestions", "-C", str(repo), "apply", right)
    assert code == 0 and "applied" in out, err
    assert (repo / "m.py").read_text() == COND.replace("b == True", "b")
    # The other fix was made on the line before this change: it is made on
    # the line as it is now, from its own (sealed) diff.
    code, out, err = superqe(capsys, "suggestions", "-C", str(repo), "apply", left)
    assert code == 0 and "applied" in out, err
    assert (repo / "m.py").read_text() == COND.replace("b == True", "b").replace("a == None", "a is None")
    # Again: its change is in the code already; said, nothing written.
    code, out, _ = superqe(capsys, "suggestions", "-C", str(repo), "apply", left)
    assert code == 0 and "in the code already" in out


@needs_ruff
def test_after_one_same_line_fix_a_new_run_names_the_other_as_before(make_repo, capsys):
    repo = make_repo({"pyproject.toml": COND_CONFIG, "m.py": COND})
    superqe(capsys, "run", str(repo), "-r", "lint_tester")
    left, right = _fixes(repo)
    assert superqe(capsys, "suggestions", "-C", str(repo), "apply", left)[0] == 0
    # (the first report goes: two runs in one second would sort either way)
    for old in (repo / ".superqode" / "qe-artifacts" / "qr").glob("qr-*"):
        old.unlink()
    superqe(capsys, "run", str(repo), "-r", "lint_tester")
    assert _fixes(repo) == [right]
    code, out, err = superqe(capsys, "suggestions", "-C", str(repo), "apply", right)
    assert code == 0 and "applied" in out, err
    assert (repo / "m.py").read_text() == COND.replace("b == True", "b").replace("a == None", "a is None")


@needs_ruff
def test_a_same_line_fix_whose_characters_the_user_changed_is_refused(make_repo, capsys):
    repo = make_repo({"pyproject.toml": COND_CONFIG, "m.py": COND})
    superqe(capsys, "run", str(repo), "-r", "lint_tester")
    left, _ = _fixes(repo)
    edited = COND.replace("a == None", "a != None")
    (repo / "m.py").write_text(edited)
    code, _, err = superqe(capsys, "suggestions", "-C", str(repo), "apply", left)
    assert code == 1 and "no longer fits the code" in err and err.strip().count("\n") == 0
    assert (repo / "m.py").read_text() == edited


@needs_ruff
def test_two_same_line_fixes_apply_together(make_repo, capsys):
    repo = make_repo({"pyproject.toml": COND_CONFIG, "m.py": COND})
    superqe(capsys, "run", str(repo), "-r", "lint_tester")
    left, right = _fixes(repo)
    code, out, err = superqe(capsys, "suggestions", "-C", str(repo), "apply", left, right)
    assert code == 0 and "refused" not in out + err, out + err
    assert (repo / "m.py").read_text() == COND.replace("b == True", "b").replace("a == None", "a is None")
    # And with --all (both are unsafe: --unsafe takes them).
    repo2 = make_repo({"pyproject.toml": COND_CONFIG, "m.py": COND})
    superqe(capsys, "run", str(repo2), "-r", "lint_tester")
    code, out, err = superqe(capsys, "suggestions", "-C", str(repo2), "apply", "--all", "--unsafe")
    assert code == 0, out + err
    assert (repo2 / "m.py").read_text() == COND.replace("b == True", "b").replace("a == None", "a is None")
