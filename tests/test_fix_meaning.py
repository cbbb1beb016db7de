"""Fixes that keep meaning: ruff's unsafe fixes are offered, never verified;
fixes respect the Python the project declares; a fix's id does not change
when a neighbouring fix moves or edits lines; several fixes apply together
(the incompatible ones refused, one line each, files written atomically).
Real ruff on real repositories."""

from __future__ import annotations

import ast
import asyncio

import pytest

from superqode_ls.models import Finding, Patch, Severity
from superqode_ls.qe.applying import apply_fixes
from superqode_ls.qe.pipeline import QERequest, QESession
from superqode_ls.qe.roles import _ghostwrite
from superqode_ls.qe.roles._patches import unified_diff
from superqode_ls.qe.roles._target import minimum_python, ruff_target
from superqode_ls.qe.roles.base import tool_path
from superqode_ls.qe.roles.lint import LintTester
from superqode_ls.qe.fix_judge import _really_new
from tests.cli_helpers import superqe
from tests.role_helpers import git_apply, make_ctx, run_role

needs_ruff = pytest.mark.skipif(not tool_path("ruff"), reason="needs ruff")

TYPED = "from typing import Optional\n\n\ndef f(x: Optional[int]) -> Optional[int]:\n    return x\n"


@needs_ruff
def test_unsafe_fix_is_offered_but_never_verified(make_repo, capsys):
    repo = make_repo({
        "pyproject.toml": '[project]\nname = "d"\nversion = "0"\n\n[tool.ruff.lint]\nselect = ["F401", "F841"]\n',
        # F401's fix is safe, F841's (drop an unused local) unsafe.
        "m.py": "import os\n\n\ndef f():\n    unused = 1\n    return 2\n",
    })
    report = asyncio.run(QESession(QERequest(repo, roles=["lint_tester"], trusted=False)).run())
    by_rule = {f.rule_id: f for f in report.findings}
    patches = {p.id: p for p in report.patches}
    unsafe = patches[by_rule["F841"].fix_patch_id]
    safe = patches[by_rule["F401"].fix_patch_id]
    assert "fix:unsafe" in by_rule["F841"].tags
    assert not unsafe.verified and unsafe.verified_by is None and unsafe.label == "not verified"
    assert unsafe.verification.startswith("unsafe (ruff): not verified")
    assert safe.verified_by == "tool"  # untrusted: no tests, the tool's word only
    # apply --all leaves the unsafe one out and says so; named, it applies.
    code, out, err = superqe(capsys, "suggestions", "-C", str(repo), "apply", "--all")
    assert code == 0, err
    text = (repo / "m.py").read_text()
    assert "import os" not in text and "unused = 1" in text
    assert "1 unsafe (--unsafe to include)" in out
    code, out, _ = superqe(capsys, "suggestions", "-C", str(repo), "apply", unsafe.id)
    assert code == 0 and "unused = 1" not in (repo / "m.py").read_text()


def test_minimum_python_from_declarations(tmp_path):
    assert minimum_python(">=3.6") == (3, 6)
    assert minimum_python(">=3.6.2,<4") == (3, 6)
    assert minimum_python("~=3.8") == (3, 8)
    assert minimum_python(">=3,!=3.0.*,!=3.1.*") == (3, 2)
    assert minimum_python(">2.7") == (2, 7)  # 2.7.1 is allowed
    assert minimum_python("3.9.18") == (3, 9)
    assert minimum_python("not a spec") is None
    (tmp_path / "setup.cfg").write_text("[options]\npython_requires = >=3.6\n")
    assert ruff_target(tmp_path) == "py37"  # ruff's oldest: closest to what is asked
    (tmp_path / "pyproject.toml").write_text('[project]\nname = "x"\nrequires-python = ">=3.9"\n')
    assert ruff_target(tmp_path) == "py39"  # pyproject first
    (tmp_path / "ruff.toml").write_text('target-version = "py311"\n')
    assert ruff_target(tmp_path) is None  # the project's ruff config decides


@needs_ruff
@pytest.mark.parametrize("declared, fixed", [
    ({"pyproject.toml": '[project]\nname = "o"\nversion = "0"\nrequires-python = ">=3.6"\n'}, False),
    ({"setup.cfg": "[metadata]\nname = o\n[options]\npython_requires = >=3.6\n"}, False),
    ({".python-version": "3.6.15\n"}, False),
    ({"pyproject.toml": '[project]\nname = "o"\nversion = "0"\nrequires-python = ">=3.10"\n'}, True),
])
def test_fixes_respect_the_declared_python(make_repo, declared, fixed):
    files = {"m.py": TYPED, "ruff.toml": '[lint]\nselect = ["UP"]\n', **declared}
    repo = make_repo(files)
    out = run_role(LintTester(), make_ctx(repo))
    assert out.status == "ok", out.reason
    modern = [f for f in out.findings if f.rule_id in ("UP007", "UP045")]
    assert bool(modern) is fixed, [f.rule_id for f in out.findings]
    assert all("| None" not in p.diff for p in out.patches) is not fixed


@needs_ruff
def test_a_fix_keeps_its_id_when_a_neighbour_is_applied(make_repo):
    body = "".join(f"def g{i}(x: Optional[int]) -> int:\n    return x or {i}\n\n\n" for i in range(3))
    repo = make_repo({
        "pyproject.toml": '[project]\nname = "n"\nversion = "0"\nrequires-python = ">=3.10"\n\n'
                          '[tool.ruff.lint]\nselect = ["UP045", "F401"]\n',
        "m.py": "import os\nfrom typing import Optional\n\n\n" + body,
    })
    first = run_role(LintTester(), make_ctx(repo))
    fixes = {f.snippet: f.fix_patch_id for f in first.findings}
    # The first line's fix removes a line: every fix below moves up by one.
    git_apply(repo, next(p for p in first.patches if p.finding_ids[0].startswith("f401")).diff)
    second = run_role(LintTester(), make_ctx(repo))
    after = {f.snippet: f.fix_patch_id for f in second.findings}
    moved = [s for s in after if s and "Optional[int]" in s]
    assert len(moved) == 3
    assert all(after[s] == fixes[s] for s in moved), (fixes, after)


def _finding(rule: str, id_: str, file: str = "m.py") -> Finding:
    return Finding(id=id_, role="r", tool="t", rule_id=rule, title="t", message="m",
                   severity=Severity.low, file=file)


def test_a_neighbour_renamed_by_a_fix_is_not_new():
    from collections import Counter

    before = [_finding("E1", "e1-aaaaaaaaaaaa"), _finding("F1", "f1-bbbbbbbbbbbb")]
    renamed = _finding("E1", "e1-cccccccccccc")  # same rule, its line's text edited
    fresh = _finding("W9", "w9-dddddddddddd")  # a rule that was not there: new
    assert _really_new(Counter({"e1-cccccccccccc": 1}), Counter({"e1-aaaaaaaaaaaa": 1}),
                       before, [renamed]) == []
    assert _really_new(Counter({"e1-cccccccccccc": 1, "w9-dddddddddddd": 1}),
                       Counter({"e1-aaaaaaaaaaaa": 1}), before, [renamed, fresh]) == ["w9-dddddddddddd"]
    # Nothing vanished: an id that appears is new whatever its rule.
    assert _really_new(Counter({"e1-cccccccccccc": 1}), Counter(), before, [renamed]) == ["e1-cccccccccccc"]


def _patch(pid: str, rel: str, old: str, new: str) -> Patch:
    return Patch(id=pid, description=pid, diff=unified_diff(rel, old, new), files=[rel])


BASE = "".join(f"line{i} = {i}\n" for i in range(1, 31))


def _edit(text: str, n: int, new: str) -> str:
    return text.replace(f"line{n} = {n}\n", new)


def test_apply_several_takes_compatible_refuses_the_rest_atomically(tmp_path):
    (tmp_path / "a.py").write_text(BASE)
    (tmp_path / "b.py").write_text(BASE)
    a2 = _patch("fix-a2", "a.py", BASE, _edit(BASE, 2, "line2 = 'two'\n"))
    a3 = _patch("fix-a3", "a.py", BASE, _edit(BASE, 3, ""))  # next to a2: refused with it
    a20 = _patch("fix-a20", "a.py", BASE, _edit(BASE, 20, "line20 = 'twenty'\n"))
    # One fix over two files, one of which moved on: applied to neither.
    both = Patch(id="fix-both", description="both", files=["a.py", "b.py"],
                 diff=unified_diff("a.py", BASE, _edit(BASE, 10, "x = 0\n"))
                 + unified_diff("b.py", BASE.replace("line10 = 10", "moved = 1"),
                                BASE.replace("line10 = 10", "moved = 2")))
    out = apply_fixes(tmp_path, [a2, a3, a20, both])
    assert out.applied == ["fix-a2", "fix-a20"]
    refused = dict(out.refused)
    assert set(refused) == {"fix-a3", "fix-both"}
    assert "fix-a2" in refused["fix-a3"] and "\n" not in refused["fix-a3"]
    assert "no longer fits" in refused["fix-both"]
    text = (tmp_path / "a.py").read_text()
    assert "line2 = 'two'" in text and "line20 = 'twenty'" in text and "line3 = 3" in text
    assert "line10 = 10" in text and (tmp_path / "b.py").read_text() == BASE
    assert not list(tmp_path.glob(".a.py.*"))  # no temporary file left
    # The refused neighbour applies now on its own: its context changed
    # (line 2), its removed line is still there.
    out = apply_fixes(tmp_path, [a3])
    assert out.applied == ["fix-a3"] and "line3 = 3" not in (tmp_path / "a.py").read_text()
    # Again: already in the code, nothing written.
    again = apply_fixes(tmp_path, [a2, a3])
    assert again.already == ["fix-a2", "fix-a3"] and not again.applied and not again.refused


def test_apply_refuses_links_and_paths_out(tmp_path):
    project = tmp_path / "p"
    project.mkdir()
    outside = tmp_path / "outside.py"
    outside.write_text(BASE)
    (project / "link.py").symlink_to(outside)
    (project / ".git").mkdir()
    (project / ".git" / "hook.py").write_text(BASE)
    patches = [_patch(f"fix-{i}", rel, BASE, _edit(BASE, 5, "evil()\n"))
               for i, rel in enumerate(["link.py", "../outside.py", ".git/hook.py"])]
    out = apply_fixes(project, patches)
    assert not out.applied and len(out.refused) == 3
    assert outside.read_text() == BASE and (project / ".git" / "hook.py").read_text() == BASE


def _why(source: str, name: str, tmp_path, sibling_files: dict[str, str] | None = None):
    pkg = tmp_path / "pkg"
    pkg.mkdir(exist_ok=True)
    (pkg / "__init__.py").write_text("")
    for rel, text in (sibling_files or {}).items():
        (pkg / rel).write_text(text)
    path = pkg / "mod.py"
    path.write_text(source)
    tree = ast.parse(source)
    defs = {n.name: n for n in tree.body if isinstance(n, ast.FunctionDef)}
    sibling = _ghostwrite._Siblings().checker(tree, str(path), "pkg.mod")
    return _ghostwrite._side_effect(_ghostwrite._reachable(defs[name], defs),
                                    _ghostwrite._aliases(tree), sibling)


def test_generated_tests_skip_what_launches_processes_by_call_not_name(tmp_path):
    # Names that say nothing; the calls say it all.
    assert _why("import click\n\ndef tidy(url: str):\n    click.launch(url)\n", "tidy", tmp_path)
    assert _why("import subprocess as sp\n\ndef tidy(x: str):\n    return sp.run(x)\n", "tidy", tmp_path)
    assert _why("from webbrowser import open as show\n\ndef tidy(u: str):\n    show(u)\n",
                "tidy", tmp_path)
    assert _why("from os import system\n\ndef tidy(c: str):\n    system(c)\n", "tidy", tmp_path)
    # Transitively: through a helper of the module, and through a sibling
    # module of the project (click's launch -> _termui_impl.open_url).
    assert _why("import webbrowser\n\ndef _h(u):\n    webbrowser.open(u)\n\n"
                "def tidy(u: str):\n    _h(u)\n", "tidy", tmp_path)
    why = _why("from ._impl import open_it\n\ndef tidy(u: str):\n    return open_it(u)\n", "tidy",
               tmp_path, {"_impl.py": "import subprocess\n\ndef open_it(u):\n"
                                      "    return subprocess.Popen(['xdg-open', u])\n"})
    assert why and "open_it" in why
    # A pure function, even one named like an action, is fuzzed.
    assert _why("def launch_count(n: int) -> int:\n    return n + 1\n", "launch_count", tmp_path) is None
    assert _why("from ._impl import add\n\ndef total(n: int):\n    return add(n)\n", "total",
                tmp_path, {"_impl.py": "def add(n):\n    return n + 1\n"}) is None


def test_editor_fix_still_fits_after_its_neighbour_was_applied():
    from superqode_ls.server.patches import apply_to_text, file_edits

    a2 = _patch("fix-a2", "a.py", BASE, _edit(BASE, 2, "line2 = 'two'\n"))
    a4 = _patch("fix-a4", "a.py", BASE, _edit(BASE, 4, ""))  # line 2 is in its context
    (fe,) = file_edits(a2.diff, lambda rel: BASE)
    after = apply_to_text(BASE, fe)
    (fe,) = file_edits(a4.diff, lambda rel: after)
    assert apply_to_text(after, fe) == _edit(_edit(BASE, 2, "line2 = 'two'\n"), 4, "")


@pytest.mark.skipif(not tool_path("mypy"), reason="needs mypy")
def test_the_projects_mypy_must_pass_no_worse(make_repo):
    from superqode_ls.qe.roles.types import TypeTester
    from superqode_ls.qe.type_gate import mypy_declared, type_gate

    m = "def f() -> int:\n    return 1\n"
    n = "def g() -> str:\n    return 'a'\n"
    repo = make_repo({"pyproject.toml": '[project]\nname = "t"\nversion = "0"\n\n[tool.mypy]\nstrict = true\n',
                      "m.py": m, "n.py": n})
    assert mypy_declared(repo)
    bad = _patch("fix-bad", "m.py", m, m.replace("return 1", "return 'one'"))
    good = _patch("fix-good", "n.py", n, n.replace("'a'", "'b'"))
    patches = {p.id: p.model_copy(update={"verified": True, "verified_by": "tests", "role": "lint_tester",
                                          "verification": "verified: fixes x"})
               for p in (bad, good)}
    role = TypeTester()
    ctx = make_ctx(repo)

    async def go(deadline_in):
        loop = asyncio.get_running_loop()
        todo = dict(patches)
        await type_gate(todo, list(todo), repo, role, ctx, loop.time() + deadline_in, role.check_files)
        return todo

    out = asyncio.run(go(600))
    assert not out["fix-bad"].verified and out["fix-bad"].verified_by is None
    assert "mypy" in out["fix-bad"].verification and "new errors" in out["fix-bad"].verification
    assert out["fix-good"].verified and out["fix-good"].verification.endswith("passes no worse")
    assert (repo / "m.py").read_text() == m  # put back
    # No time for it: said, and not verified.
    out = asyncio.run(go(0))
    assert all(not p.verified and p.verified_by == "tool" and "no time left" in p.verification
               for p in out.values())


@needs_ruff
def test_a_fix_id_of_the_old_form_is_no_such_suggestion(make_repo, capsys):
    # Fix ids were once hashed from the diff's lines; a stored one of that
    # form names no fix now: one line, exit 2, the file unchanged.
    from superqode_ls.qe.roles._patches import patch_id

    repo = make_repo({"pyproject.toml": '[tool.ruff.lint]\nselect = ["F401"]\n',
                      "m.py": "import os\n\nX = 1\n"})
    superqe(capsys, "run", str(repo), "-r", "lint_tester")
    code, out, _ = superqe(capsys, "suggestions", "-C", str(repo), "list")
    assert code == 0 and out.count("\n") == 1
    pid = out.split()[0]
    code, out, _ = superqe(capsys, "suggestions", "show", pid, "-C", str(repo))
    assert code == 0
    fid = pid[len("fix-"):-len("-123456")]
    old = patch_id(fid, out[out.index("diff --git"):])
    assert old != pid
    code, _, err = superqe(capsys, "suggestions", "-C", str(repo), "apply", old)
    assert code == 2 and "no suggestion" in err and err.strip().count("\n") == 0
    assert (repo / "m.py").read_text() == "import os\n\nX = 1\n"
    code, _, _ = superqe(capsys, "suggestions", "-C", str(repo), "apply", pid)
    assert code == 0 and (repo / "m.py").read_text() == "\nX = 1\n"


# dvpwa's model: a NamedTuple whose field annotation is evaluated when the
# class is made; ``str | None`` there fails on any Python before 3.10.
ROW = ("from typing import NamedTuple, Optional\n\n\n"
       "class Row(NamedTuple):\n    id: int\n    note: Optional[str]\n")


@needs_ruff
@pytest.mark.parametrize("declared", [
    {},  # nothing: ruff's default target decides the rewrite
    {"sub/pyproject.toml": '[project]\nname = "s"\nversion = "0"\nrequires-python = ">=3.10"\n'},
])
def test_a_pyupgrade_rewrite_is_verified_only_for_a_declared_python(make_repo, capsys, declared):
    repo = make_repo({"sub/row.py": ROW, "ruff.toml": '[lint]\nselect = ["UP045"]\n', **declared})
    report = asyncio.run(QESession(QERequest(repo, roles=["lint_tester"], trusted=False)).run())
    finding = next(f for f in report.findings if f.rule_id == "UP045")
    patch = next(p for p in report.patches if p.id == finding.fix_patch_id)
    assert "str | None" in patch.diff
    code, out, err = superqe(capsys, "suggestions", "-C", str(repo), "apply", "--all")
    assert code == 0, err
    if declared:  # the project's own Python has the syntax: ruff's word stands
        assert patch.verified_by == "tool", patch.verification
        assert "str | None" in (repo / "sub/row.py").read_text()
        return
    assert not patch.verified and patch.verified_by is None
    assert patch.verification.startswith("pyupgrade (ruff): not verified -- the project declares no")
    # fix-all leaves it out (counted); the user's file keeps the old annotation.
    assert "1 not verified" in out
    assert "Optional[str]" in (repo / "sub/row.py").read_text()


@needs_ruff
def test_dropping_an_import_of_a_facade_module_is_never_verified(make_repo, capsys):
    # sqlalchemy/events.py's shape: only imports, the API's documented names
    # (sqlalchemy.events.PoolEvents); ruff's F401 fix there is "safe".
    repo = make_repo({
        "pyproject.toml": '[project]\nname = "p"\nversion = "0"\nrequires-python = ">=3.10"\n\n'
                          '[tool.ruff.lint]\nselect = ["F401"]\n',
        "pkg/__init__.py": "",
        "pkg/_impl.py": "class PoolEvents:\n    pass\n\n\nclass DDLEvents:\n    pass\n",
        "pkg/events.py": '"""Core event interfaces."""\n\nfrom __future__ import annotations\n\n'
                         "from ._impl import DDLEvents\nfrom ._impl import PoolEvents\n",
        # A module with code of its own: its unused import is just unused.
        "pkg/use.py": "import os\n\nfrom ._impl import PoolEvents\n\n\n"
                      "def make():\n    return PoolEvents()\n",
    })
    report = asyncio.run(QESession(QERequest(repo, roles=["lint_tester"], trusted=False)).run())
    patches = {p.id: p for p in report.patches}
    facade = [patches[f.fix_patch_id] for f in report.findings if f.file == "pkg/events.py"]
    plain = [patches[f.fix_patch_id] for f in report.findings if f.file == "pkg/use.py"]
    assert len(facade) == 2 and len(plain) == 1
    assert all(not p.verified and p.verified_by is None for p in facade)
    assert all(p.verification.startswith("re-export (ruff): not verified") for p in facade)
    assert plain[0].verified_by == "tool", plain[0].verification
    code, out, err = superqe(capsys, "suggestions", "-C", str(repo), "apply", "--all")
    assert code == 0, err
    assert "2 not verified" in out
    assert (repo / "pkg/events.py").read_text().count("import") == 3  # the API kept
    assert "import os" not in (repo / "pkg/use.py").read_text()
