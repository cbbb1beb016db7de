"""mutation_tester runs the project's suite as its pytest configuration
says: an ``addopts`` that uses the cache plugin's options (flask-security's
``--cache-clear``) runs with the plugin on, its cache in the scratch and
cleared on every run (``--lf``/``--sw`` never select from another mutant's
failures). Real pytest and coverage runs, warm (fork server) and fresh."""

from __future__ import annotations

import asyncio
import os
from pathlib import Path

import pytest

from superqode_ls.qe.roles._pytest_config import isolated_cache_args
from superqode_ls.qe.roles.mutation import MutationTester
from superqode_ls.qe.roles.testgen import TestGenerator

from .deep_helpers import make_ctx, shared_pycache  # noqa: F401 (autouse fixture)
from .test_mutation import CALC
from .test_project_env import write

CACHE_INI = "[pytest]\naddopts = -rs --cache-clear --strict-markers\n"


@pytest.mark.slow  # real coverage/pytest runs
@pytest.mark.parametrize("fork_server", [True, False])
def test_addopts_with_cache_clear_runs_the_mutants(make_repo, fork_server):
    """Before: ``-p no:cacheprovider`` made every pytest start stop
    ("unrecognized arguments: --cache-clear"): the role failed with
    "could not run the project's tests under coverage"."""
    repo = make_repo({**CALC, "pytest.ini": CACHE_INI})
    role = MutationTester(workers=1, use_cache=False, fork_server=fork_server)
    out = asyncio.run(role.run(make_ctx(repo)))
    assert out.status == "ok", out.reason
    assert role.report.mutants_run > 0
    assert any(f.file == "calc.py" and f.range.start_line == 2 for f in out.findings)
    assert not (repo / ".pytest_cache").exists()


def test_isolated_runs_clear_the_cache_the_project_needs(tmp_path: Path):
    scratch = tmp_path / "scratch"
    plain = write(tmp_path / "a", {"pytest.ini": "[pytest]\naddopts = -q\n"})
    assert isolated_cache_args(plain, scratch) == ["-o", f"cache_dir={scratch}", "--cache-clear"]
    lf = write(tmp_path / "b", {"pytest.ini": "[pytest]\naddopts = --lf\n"})
    assert isolated_cache_args(lf, scratch) == ["-o", f"cache_dir={scratch}", "--cache-clear"]
    assert isolated_cache_args(plain, scratch, {"PYTEST_ADDOPTS": "--sw"}) == [
        "-o", f"cache_dir={scratch}", "--cache-clear"]
    off = write(tmp_path / "c", {"setup.cfg": "[tool:pytest]\naddopts = -p no:cacheprovider\n"})
    assert isolated_cache_args(off, scratch) == []


def test_generated_tests_run_under_a_callers_cache_options(make_repo):
    """The generated tests have their own ini; the caller's PYTEST_ADDOPTS
    (a CI's ``--cache-clear``) still reaches their pytest. Before: "unrecognized
    arguments" and no generated test ran."""
    repo = make_repo({"calc.py": "def double(x: int) -> int:\n    return 2 * x\n",
                      "pytest.ini": CACHE_INI})
    env = {**os.environ, "PYTEST_ADDOPTS": "--cache-clear"}
    gen = TestGenerator()
    out = asyncio.run(gen.run(make_ctx(repo, env=env)))
    assert out.status == "ok", out.reason
    logs = repo / ".superqode" / "qe-artifacts" / "logs"
    log = next(logs.glob("*test-generator.log")).read_text()
    assert "calc.py::double: passed" in log, log
