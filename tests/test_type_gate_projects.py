"""The type gate on fixes is per project: in a monorepo whose root declares
no mypy but whose ``api/`` does, api's fixes are checked with api's
configuration; fixes of a project that declares none are left alone."""

from __future__ import annotations

import asyncio

import pytest

from superqode_ls.models import Patch
from superqode_ls.qe.roles._patches import unified_diff
from superqode_ls.qe.roles.base import tool_path
from superqode_ls.qe.type_gate import mypy_projects
from superqode_ls.qe.verify_step import _type_check
from tests.role_helpers import make_ctx

M = "def f() -> int:\n    return 1\n"
N = "def g() -> str:\n    return 'a'\n"


def _accepted(pid: str, rel: str, old: str, new: str) -> Patch:
    return Patch(id=pid, description=pid, diff=unified_diff(rel, old, new), files=[rel],
                 verified=True, verified_by="tests", role="lint_tester", verification="verified: fixes x")


@pytest.mark.skipif(not tool_path("mypy"), reason="needs mypy")
def test_a_subproject_that_declares_mypy_gets_its_fixes_type_checked(make_repo):
    test = "def test_it():\n    pass\n"
    repo = make_repo({
        "README.md": "two projects\n",
        "api/pyproject.toml": '[project]\nname = "api"\nversion = "0"\n\n[tool.mypy]\nstrict = true\n',
        "api/m.py": M, "api/tests/test_m.py": test,
        "worker/pyproject.toml": '[project]\nname = "worker"\nversion = "0"\n',
        "worker/n.py": N, "worker/tests/test_n.py": test,
    })
    assert mypy_projects(repo) == ["api"]
    patches = {p.id: p for p in (
        _accepted("fix-api", "api/m.py", M, M.replace("return 1", "return 'one'")),
        _accepted("fix-worker", "worker/n.py", N, N.replace("'a'", "1")))}
    ctx = make_ctx(repo)

    async def go():
        loop = asyncio.get_running_loop()
        await _type_check(patches, list(patches.values()), {}, {"lint_tester": ctx}, repo,
                          loop.time() + 600, None, lambda *a, **k: None)

    asyncio.run(go())
    # Before: the root declares no mypy, so no fix was type-checked at all.
    api = patches["fix-api"]
    assert not api.verified and "mypy" in api.verification and "new errors" in api.verification
    # worker/ declares none: its fix keeps its verdict, no mypy run on it.
    assert patches["fix-worker"].verified and "mypy" not in patches["fix-worker"].verification
    assert (repo / "api" / "m.py").read_text() == M  # put back
