"""Verified means verified: a fix is "verified" only when the tool no longer
reports it, nothing new appears AND the project's tests that import the
changed code pass in the sandbox; without such tests it is "tool-verified
only"; a patch that silences a finding (usedforsecurity=False) is a labelled
suppression, never a fix. Real ruff, bandit and pytest on a real repository."""

from __future__ import annotations

import asyncio

import pytest

from superqode_ls.qe.covering import module_names
from superqode_ls.qe.fix_judge import suppression_reason
from superqode_ls.qe.pipeline import QERequest, QESession
from superqode_ls.qe.roles.base import tool_path
from tests.conftest import run_git

pytestmark = pytest.mark.skipif(
    not (tool_path("ruff") and tool_path("bandit")), reason="needs ruff and bandit"
)

FILES = {
    "pyproject.toml": '[project]\nname = "demo"\nversion = "0"\n\n[tool.ruff.lint]\nselect = ["F401"]\n',
    "pkg/__init__.py": "",
    # An unused import whose removal keeps its tests green.
    "pkg/calc.py": "import os\n\n\ndef add(a, b):\n    return a + b\n",
    # "Unused" to ruff, but its test reaches it through the module: removing
    # it breaks that test.
    "pkg/fragile.py": "import json\n\n\ndef one():\n    return 1\n",
    # No test imports this module.
    "pkg/lonely.py": "import sys\n\n\ndef two():\n    return 2\n",
    # bandit B324; the offered change (usedforsecurity=False) only silences it.
    "pkg/sign.py": "import hashlib\n\n\ndef sign(data):\n    return hashlib.sha1(data).hexdigest()\n",
    "tests/__init__.py": "",
    "tests/test_calc.py": "from pkg.calc import add\n\n\ndef test_add():\n    assert add(1, 2) == 3\n",
    # a read no static check sees (fragile.json would be: verify_exports), so
    # only the covering test's run can tell the fix breaks it
    "tests/test_fragile.py": (
        "from pkg import fragile\n\n\ndef test_json_reachable():\n"
        "    assert getattr(fragile, 'js' + 'on').dumps(1) == '1'\n"
    ),
}


def _run(repo, trusted=True):
    req = QERequest(repo, roles=["lint_tester", "security_tester"], trusted=trusted)
    session = QESession(req)
    report = asyncio.run(session.run())
    by_file = {}
    for f in report.findings:
        if f.fix_patch_id:
            by_file.setdefault((f.file, f.rule_id), session.patches[f.fix_patch_id])
    return report, by_file


def test_verified_only_with_covering_tests_passing(make_repo):
    repo = make_repo(FILES)
    report, fixes = _run(repo)

    calc = fixes[("pkg/calc.py", "F401")]
    assert calc.verified and calc.verified_by == "tests" and calc.label == "verified"
    assert "covering tests pass: tests/test_calc.py" in calc.verification

    fragile = fixes[("pkg/fragile.py", "F401")]
    assert not fragile.verified and fragile.label == "not verified"
    assert "tests fail after the fix (tests/test_fragile.py)" in fragile.verification

    lonely = fixes[("pkg/lonely.py", "F401")]
    assert not lonely.verified and lonely.label == "tool-verified only"
    assert "no tests import the changed code" in lonely.verification

    sign = fixes[("pkg/sign.py", "B324")]
    assert sign.kind == "suppression" and sign.label == "suppression" and not sign.verified
    assert "usedforsecurity" in sign.description and sign.verification.startswith("suppression")
    # Findings carry "verified" only for the fully verified fix.
    verified = {f.file for f in report.findings if f.verified}
    assert verified == {"pkg/calc.py"}
    assert run_git(repo, "status", "--porcelain") == ""


def test_deep_mode_whole_suite_verifies_only_fixes_that_tests_import(make_repo):
    """In deep mode the whole suite is re-run after the fixes; a green suite
    says nothing of a module no test imports, so that fix stays tool-verified
    only, as in quick mode."""
    repo = make_repo(FILES)
    req = QERequest(repo, mode="deep", roles=["lint_tester", "unit_tester"], trusted=True)
    session = QESession(req)
    asyncio.run(session.run())
    fixes = {p.files[0]: p for p in session.patches.values() if p.kind == "fix"}
    calc, lonely = fixes["pkg/calc.py"], fixes["pkg/lonely.py"]
    assert calc.verified and calc.verified_by == "tests", calc.verification
    assert "tests re-run" in calc.verification
    assert not lonely.verified and lonely.label == "tool-verified only", lonely.verification
    assert "no tests import the changed code" in lonely.verification
    assert run_git(repo, "status", "--porcelain") == ""


def test_untrusted_folder_fixes_are_tool_verified_only(make_repo):
    repo = make_repo(FILES)
    _, fixes = _run(repo, trusted=False)
    calc = fixes[("pkg/calc.py", "F401")]
    assert not calc.verified and calc.verified_by == "tool"
    assert "not trusted" in calc.verification


def test_suppression_reason_and_module_names():
    diff = ("--- a/m.py\n+++ b/m.py\n@@ -1 +1 @@\n-h = hashlib.md5(x)\n"
            "+h = hashlib.md5(x, usedforsecurity=False)\n")
    assert suppression_reason(diff) == "adds 'usedforsecurity=False'"  # as written, valid Python
    assert suppression_reason(diff.replace("usedforsecurity=False", "y")) is None
    nosec = "--- a/m.py\n+++ b/m.py\n@@ -1 +1 @@\n-x = 1\n+x = 1  # nosec\n"
    assert suppression_reason(nosec)
    # An existing silencer kept as it was is not added by the patch.
    kept = "--- a/m.py\n+++ b/m.py\n@@ -1 +1 @@\n-import os  # noqa\n+import sys  # noqa\n"
    assert suppression_reason(kept) is None
    assert module_names("src/pkg/mod.py") >= {"src.pkg.mod", "pkg.mod", "mod"}
    assert module_names("pkg/__init__.py") == {"pkg"}
    assert module_names("README.md") == set()
