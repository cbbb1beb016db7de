"""A project's pytest addopts that pass a well-known plugin's options
(pyload's ``--cov pyload --cov-report term-missing``) without declaring the
plugin: the environment SuperQode builds installs it (its developers have
it); where it is not there, the suite runs without exactly those options and
the role says so, instead of pytest stopping at "unrecognized arguments"."""

from __future__ import annotations

import asyncio
import shlex
from pathlib import Path

import pytest

from superqode_ls.config import Config
from superqode_ls.qe.roles._pytest_config import missing_plugin_args
from superqode_ls.qe.roles.unit import UnitTester
from superqode_ls.workspace.pyenv_build import resolve_python
from superqode_ls.workspace.pyenv_plan import make_plan
from superqode_ls.workspace.pytest_addopts import (
    installed,
    plugins_needed,
    project_addopts,
    without_options,
)
from tests.pyenv_helpers import STUB, project_files, wheelhouse
from tests.role_helpers import make_ctx, run_role
from tests.test_project_env import make_venv, write

TESTS = {"tests/test_a.py": "def test_a():\n    pass\n\n\ndef test_b():\n    pass\n"}
# The plugin's options, and one of pytest's own that must still apply.
ADDOPTS = '[tool.pytest.ini_options]\naddopts = "--timeout 30 -k \'not test_b\'"\n'


def test_the_options_of_known_plugins_are_told_apart_from_pytests():
    words = shlex.split("--cov pyload --cov-report term-missing --verbose -n4 --dist loadfile "
                        "--timeout=30 --benchmark-skip --reruns 2 --doctest-glob *.rst -ra")
    assert plugins_needed(words) == ["pytest-cov", "pytest-xdist", "pytest-timeout",
                                     "pytest-benchmark", "pytest-rerunfailures"]
    keep, dropped = without_options(words, {"pytest-cov", "pytest-rerunfailures"})
    assert keep == ["--verbose", "-n4", "--dist", "loadfile", "--timeout=30",
                    "--benchmark-skip", "--doctest-glob", "*.rst", "-ra"]
    assert dropped == ["--cov", "pyload", "--cov-report", "term-missing", "--reruns", "2"]
    # --cov's value is optional: the next option is not it.
    assert without_options(["--cov", "-q"], {"pytest-cov"}) == (["-q"], ["--cov"])
    assert plugins_needed(["-q", "-p", "no:cacheprovider", "--strict-markers"]) == []


def test_addopts_is_read_from_the_file_pytest_reads(tmp_path):
    (tmp_path / "setup.cfg").write_text("[tool:pytest]\naddopts =\n    --cov pyload "
                                        "--cov-report term-missing\n    --verbose\n")
    assert project_addopts(tmp_path) == ["--cov", "pyload", "--cov-report", "term-missing",
                                         "--verbose"]
    (tmp_path / "pyproject.toml").write_text('[tool.pytest.ini_options]\naddopts = ["-n", "2"]\n')
    assert project_addopts(tmp_path) == ["-n", "2"]  # pyproject's comes first
    (tmp_path / "pytest.ini").write_text("[pytest]\n")
    assert project_addopts(tmp_path) == []  # pytest.ini, even empty, is the one


def test_the_plan_names_the_plugins_and_they_make_its_key(tmp_path):
    root = write(tmp_path / "p", {**project_files("mylib"), **TESTS})
    plain = make_plan(root)
    assert plain is not None and plain.plugins == ()
    (root / "pyproject.toml").write_text((root / "pyproject.toml").read_text() + ADDOPTS)
    plan = make_plan(root)
    assert plan is not None and plan.plugins == ("pytest-timeout",)
    assert "pytest plugins its addopts use pytest-timeout" in plan.describe()


def test_a_reused_venv_without_the_plugin_runs_without_its_options(make_repo):
    """Before: pytest stopped at "unrecognized arguments: --timeout 30" and
    the role failed with no test run (its re-run without addopts was for
    SuperQode's own interpreter only)."""
    repo = make_repo({"pyproject.toml": '[project]\nname = "mylib"\nversion = "1"\n' + ADDOPTS,
                      "mylib/__init__.py": "", **TESTS})
    venv = make_venv(repo / ".venv")  # pytest, no pytest-timeout
    assert installed(str(venv.parent.parent), ["pytest-timeout"]) == set()
    args, _ = missing_plugin_args(repo, str(venv.parent.parent))
    assert args == ["-o", "addopts=-k 'not test_b'"]
    out = run_role(UnitTester(), make_ctx(repo, repo))
    assert out.status == "ok", out
    # test_b deselected: the project's other options still apply.
    assert "(1 passed, 0 failed" in out.reason, out.reason
    assert ("ran without --timeout 30 from the project's addopts (pytest-timeout not installed "
            "in the test environment)") in out.reason


@pytest.fixture
def offline_with(tmp_path, monkeypatch):
    def use(*names: str) -> Path:
        wheels = wheelhouse(tmp_path / "wheels", ("pytest", *names))
        monkeypatch.setenv("UV_NO_INDEX", "1")
        # (uv 0.13 still reads PyPI with UV_NO_INDEX alone: an empty index)
        (tmp_path / "no-index").mkdir()
        monkeypatch.setenv("UV_DEFAULT_INDEX", (tmp_path / "no-index").as_uri())
        monkeypatch.setenv("UV_FIND_LINKS", str(wheels))
        return wheels
    return use


def _built(root: Path):
    py = asyncio.run(resolve_python(root, root, Config(), environ={"PATH": ""}))
    assert py.source == "built" and py.setup is None, py
    return py


def test_the_built_environment_has_the_plugin_its_addopts_uses(tmp_path, offline_with):
    offline_with("pytest-timeout")
    root = write(tmp_path / "p", {**project_files("mylib", deps=[STUB]), **TESTS})
    (root / "pyproject.toml").write_text((root / "pyproject.toml").read_text() + ADDOPTS)
    py = _built(root)
    # Before: nothing declares pytest-timeout, so it was not installed.
    assert installed(py.prefix, ["pytest-timeout"]) == {"pytest-timeout"}
    ctx = make_ctx(root, root)
    ctx.python = py
    out = run_role(UnitTester(), ctx)
    assert out.status == "ok" and "(1 passed, 0 failed" in out.reason, out
    assert "ran without" not in out.reason


def test_a_plugin_that_cannot_be_installed_leaves_the_build_standing(tmp_path, offline_with):
    offline_with()  # offline, and no pytest-timeout to be had
    root = write(tmp_path / "p", {**project_files("mylib", deps=[STUB]), **TESTS})
    (root / "pyproject.toml").write_text((root / "pyproject.toml").read_text() + ADDOPTS)
    py = _built(root)
    assert installed(py.prefix, ["pytest-timeout"]) == set()
    ctx = make_ctx(root, root)
    ctx.python = py
    out = run_role(UnitTester(), ctx)
    assert out.status == "ok" and "(1 passed, 0 failed" in out.reason, out
    assert "ran without --timeout 30 from the project's addopts" in out.reason
