"""An import only a module's docstring examples read is used where the
project runs its doctests (glom imports ``pprint`` for its ``>>> pprint(...)``
examples and runs ``pytest --doctest-modules``): its F401 is noise and no fix
removing it is verified; a fix of a module whose doctests the project runs is
"verified" only if those doctests ran. Where the project runs no doctests,
nothing changes. Real ruff and pytest on real repositories."""

from __future__ import annotations

import ast
import asyncio

import pytest

from superqode_ls.qe.doctests import (
    doctest_names,
    drops_doctest_import,
    runs_doctests,
    untested_doctests,
    unused_import_names,
)
from superqode_ls.qe.pipeline import QERequest, QESession
from superqode_ls.qe.roles.base import tool_path
from tests.cli_helpers import superqe

needs_ruff = pytest.mark.skipif(not tool_path("ruff"), reason="needs ruff")

PYPROJECT = ('[project]\nname = "d"\nversion = "0"\nrequires-python = ">=3.10"\n\n'
             '[tool.ruff.lint]\nselect = ["F401"]\n')
# pprint and sep are read only by the docstring's examples; os and join by
# nothing at all. ruff's fix of join rewrites its line without sep too.
SHOW = ('"""Shapes.\n\n>>> pprint(shape(2))\n{\'n\': 2}\n>>> sep in "a/b"\nTrue\n"""\n\n'
        "import os\nfrom pprint import pprint\n\nfrom os.path import join, sep\n\n\n"
        "def shape(n):\n    return {'n': n}\n")
DOCTESTS = {"pytest.ini": "[pytest]\naddopts = --doctest-modules\n"}
# The old view: in the default one every unused import is an advisory; here
# a plain one is shown, to tell it from those the doctests read.
VIEW_ALL = {"superqode.yaml": "qe:\n  default_view: all\n"}


def _fixes(repo, trusted=False):
    # A budget that a loaded machine's slow pytest start cannot use up.
    session = QESession(QERequest(repo, roles=["lint_tester"], trusted=trusted, timeout=300))
    report = asyncio.run(session.run())
    f401 = [f for f in report.findings if f.rule_id == "F401"]
    shown = {(f.file, (f.message or "").split("`")[1]): f for f in f401 if f.noise is None}
    noise = {(f.file, (f.message or "").split("`")[1]): f for f in f401 if f.noise is not None}
    return shown, noise, session.patches


@needs_ruff
@pytest.mark.parametrize("runs", [True, False])
def test_an_import_the_doctests_read_is_noise_and_its_removal_never_verified(make_repo, capsys, runs):
    repo = make_repo({"pyproject.toml": PYPROJECT, "pkg/__init__.py": "", "pkg/show.py": SHOW,
                      **VIEW_ALL, **(DOCTESTS if runs else {})})
    shown, noise, patches = _fixes(repo)
    plain = shown[("pkg/show.py", "os")]
    assert patches[plain.fix_patch_id].verified_by == "tool"  # untrusted: the tool's word
    if not runs:  # no doctests run: an unused import like any other
        f = shown[("pkg/show.py", "pprint.pprint")]
        assert patches[f.fix_patch_id].verified_by == "tool"
        return
    assert ("pkg/show.py", "pprint.pprint") not in shown
    f = noise[("pkg/show.py", "pprint.pprint")]
    assert "doctests, which the project runs (its pytest.ini)" in (f.noise or "")
    p = patches[f.fix_patch_id]  # still offered, for review: never verified
    assert not p.verified and p.verified_by is None
    assert p.verification.startswith("doctest (ruff): not verified -- it removes the import "
                                     "of 'pprint' from pkg/show.py, whose doctests read it")
    # join is unused indeed, but its fix drops sep with it
    join = patches[shown[("pkg/show.py", "os.path.join")].fix_patch_id]
    assert "-from os.path import join, sep" in join.diff and "+from os.path import sep" not in join.diff
    assert not join.verified and "the import of 'sep'" in join.verification
    # fix-all removes what nothing reads and keeps what the doctests read.
    code, _, err = superqe(capsys, "suggestions", "-C", str(repo), "apply", "--all")
    assert code == 0, err
    text = (repo / "pkg/show.py").read_text()
    assert "import os\n" not in text
    assert "from pprint import pprint" in text and "sep" in text


@needs_ruff
@pytest.mark.parametrize("runs", [True, False])
def test_covering_tests_pass_is_not_verified_where_the_doctests_did_not_run(make_repo, runs):
    # The fix (drop ``os``) is right either way; but where the project runs
    # the module's doctests, passing test files that import it do not show it.
    repo = make_repo({"pyproject.toml": PYPROJECT, "pkg/__init__.py": "",
                      "pkg/calc.py": '"""Sums.\n\n>>> add(1, 2)\n3\n"""\n\nimport os\n\n\n'
                                     "def add(a, b):\n    return a + b\n",
                      "tests/__init__.py": "",
                      "tests/test_calc.py": "from pkg.calc import add\n\n\n"
                                            "def test_add():\n    assert add(1, 2) == 3\n",
                      **VIEW_ALL, **(DOCTESTS if runs else {})})
    shown, _, patches = _fixes(repo, trusted=True)
    p = patches[shown[("pkg/calc.py", "os")].fix_patch_id]
    if not runs:
        assert p.verified and p.verified_by == "tests", p.verification
        return
    assert not p.verified and p.label == "tool-verified only", p.verification
    assert "the doctests of pkg/calc.py, which the project runs (its pytest.ini)" in p.verification


@pytest.mark.parametrize("files, where", [
    ({"pytest.ini": "[pytest]\naddopts = -q --doctest-modules\n"}, "its pytest.ini"),
    ({"pytest.ini": "[pytest]\ndoctest_optionflags = ELLIPSIS\n"}, "its pytest.ini"),
    ({"tox.ini": "[testenv]\ncommands = pytest --doctest-modules {envsitepackagesdir}/p\n"}, "its tox.ini"),
    ({"setup.cfg": "[tool:pytest]\naddopts = --doctest-modules\n"}, "its setup.cfg"),
    # --doctest-glob runs text files, not the modules' docstrings
    ({"setup.cfg": "[tool:pytest]\naddopts = --doctest-glob='*.rst'\n"}, None),
    ({"pyproject.toml": '[tool.pytest.ini_options]\naddopts = ["--doctest-modules"]\n'},
     "its pyproject.toml"),
    ({"noxfile.py": 'def tests(s):\n    s.run("pytest", "--doctest-modules")\n'}, "its noxfile.py"),
    ({"docs/conf.py": 'extensions = ["sphinx.ext.autodoc", "sphinx.ext.doctest"]\n'},
     "Sphinx's doctest extension (docs/conf.py)"),
    ({"tests/test_docs.py": "import doctest\nimport p\n\n\ndef load_tests(l, t, i):\n"
                            "    t.addTests(doctest.DocTestSuite(p))\n    return t\n"},
     "its tests (tests/test_docs.py)"),
    # Configured for other things: no doctests run.
    ({"pytest.ini": "[pytest]\naddopts = -q\n", "tox.ini": "[testenv]\ncommands = pytest\n",
      "pyproject.toml": '[tool.pytest.ini_options]\naddopts = "-x"\n',
      "docs/conf.py": 'extensions = ["sphinx.ext.autodoc"]\n',
      "tests/test_x.py": "def test_x():\n    assert 'DocTestSuite'\n"}, None),
    ({"pyproject.toml": "not = [toml"}, None),  # unreadable: no claim
])
def test_where_a_project_runs_its_doctests(tmp_path, files, where):
    for rel, text in files.items():
        (tmp_path / rel).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / rel).write_text(text)
    assert runs_doctests(tmp_path) == where


def test_the_names_docstring_examples_read():
    source = (
        '"""\n>>> pprint(T)\n>>> from json import dumps\n>>> dumps(x)\n"""\n'
        "import json\n\n\n"
        "def f():\n"
        '    """Each docstring starts from the module\'s globals:\n\n'
        "    >>> for i in range(2):\n    ...     Val(i)\n    ...\n"
        '    """\n\n\n'
        '# >>> Comment(1) is no example; neither is a string: ">>> Str(2)"\n'
        'S = ">>> Str(2)"\n')
    names = doctest_names(source)
    assert {"pprint", "T", "x", "range", "Val"} <= names
    # bound by an earlier example of the same docstring; no docstring
    assert not {"dumps", "json", "i", "Comment", "Str"} & names
    assert doctest_names("def (:\n") == frozenset()


def test_the_name_an_unused_import_binds():
    assert unused_import_names("`pprint.pprint` imported but unused") == {"pprint"}
    assert unused_import_names("`a.b as c` imported but unused") == {"c"}
    tree = ast.parse("import os.path\nfrom glom.core import Val\n")
    assert unused_import_names("`os.path` imported but unused", tree, 1) == {"os"}
    assert unused_import_names("`glom.core.Val` imported but unused", tree, 2) == {"Val"}
    assert unused_import_names("something else") == frozenset()


def test_untested_doctests_names_the_module_only_where_they_run(tmp_path):
    (tmp_path / "m.py").write_text('"""\n>>> 1 + 1\n2\n"""\n')
    (tmp_path / "plain.py").write_text('"""No examples."""\n')
    assert untested_doctests(tmp_path, ["m.py"]) is None
    (tmp_path / "pytest.ini").write_text("[pytest]\naddopts = --doctest-modules\n")
    assert "the doctests of m.py" in (untested_doctests(tmp_path, ["plain.py", "m.py"]) or "")
    assert untested_doctests(tmp_path, ["plain.py"]) is None


def test_a_patch_drops_a_doctest_import_only_when_the_name_is_gone(tmp_path):
    (tmp_path / "pytest.ini").write_text("[pytest]\naddopts = --doctest-modules\n")
    (tmp_path / "m.py").write_text('"""\n>>> T\n1\n"""\nfrom c import (\n    A,\n    T,\n)\nimport b\n')
    where = runs_doctests(tmp_path)
    assert where == "its pytest.ini"
    head = "--- a/m.py\n+++ b/m.py\n"
    # only A's line goes: T stays
    assert drops_doctest_import(tmp_path, head + "@@ -5,4 +5,3 @@\n from c import (\n-    A,\n"
                                "     T,\n )\n", where) is None
    # a reorder removes T's line and writes it back elsewhere
    assert drops_doctest_import(tmp_path, head + "@@ -7,3 +7,3 @@\n-    T,\n )\n import b\n"
                                "+T = None\n", where) is None
    why = drops_doctest_import(tmp_path, head + "@@ -6,2 +6,0 @@\n-    A,\n-    T,\n", where)
    assert why == ("it removes the import of 'T' from m.py, whose doctests read it "
                   "(the project runs them: its pytest.ini)")
