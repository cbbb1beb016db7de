"""A fix after which the covering tests no longer start (a conftest or a
test module that stops importing) is not verified; it used to be
"tool-verified only" (pytest's usage error read as "the tests cannot run
here"), so ``apply --all`` took it. Real ruff, real pytest, real git."""

from __future__ import annotations

import asyncio

import pytest

from superqode_ls.qe.fix_tests import STOPPED
from superqode_ls.qe.pipeline import QERequest, QESession
from superqode_ls.qe.roles.base import tool_path

needs_ruff = pytest.mark.skipif(not tool_path("ruff"), reason="needs ruff")


@needs_ruff
def test_a_fix_that_stops_the_tests_is_not_verified(make_repo):
    repo = make_repo({
        "pyproject.toml": '[project]\nname = "pkg"\nversion = "0"\nrequires-python = ">=3.10"\n\n'
                          '[tool.ruff.lint]\nselect = ["F401"]\n',
        "pkg/__init__.py": "",
        # `loads` is read by name through getattr: no import statement says so.
        "pkg/compat.py": "from json import dumps, loads\n\n\ndef to_text(obj):\n    return dumps(obj)\n",
        "pkg/util.py": "import os\n\n\ndef twice(x):\n    return 2 * x\n",
        "tests/conftest.py": "import pkg.compat as c\n\nLOADS = getattr(c, 'lo' + 'ads')\n",
        "tests/test_compat.py": "from pkg.compat import to_text\n\n\n"
                                "def test_to_text():\n    assert to_text([1]) == '[1]'\n",
        "tests/test_util.py": "from pkg.util import twice\n\n\ndef test_twice():\n    assert twice(2) == 4\n",
    })
    # Twice: the first run's probe of the suite is kept for the unchanged
    # project's next run (it used to keep what it saw of the fixed tree).
    for _ in range(2):
        report = asyncio.run(QESession(QERequest(repo, roles=["lint_tester"], trusted=True,
                                                 timeout=300)).run())
        patches = {p.id: p for p in report.patches}
        fixes = {f.file: patches[f.fix_patch_id] for f in report.findings if f.fix_patch_id}
        compat, util = fixes["pkg/compat.py"], fixes["pkg/util.py"]
        # Before: "tool-verified only: ...; pytest usage or configuration error: ImportError
        # while loading conftest" (the suite probe, still loading the conftests
        # when the fixes were written, saw the fixed tree), every fix demoted with it.
        assert not compat.verified and compat.verified_by is None, compat.verification
        assert compat.verification.startswith(STOPPED) and "conftest" in compat.verification
        # The fix tried with it in one round is judged alone: its tests ran.
        assert util.verified and util.verified_by == "tests", util.verification
    assert (repo / "pkg/compat.py").read_text().startswith("from json import dumps, loads")
