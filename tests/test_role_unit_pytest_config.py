"""The unit role runs the suite as the project's own pytest configuration
says: its ``python_files`` and ``testpaths`` decide what is a test
(PyGithub's ``tests/*.py``: none is named test_*.py), and a configuration
that uses the cache plugin's options (flask-security's ``addopts =
--cache-clear``) runs with the plugin on, its cache in SuperQode's scratch."""

from __future__ import annotations

from pathlib import Path

from superqode_ls.qe.roles._pyenv import has_test_files
from superqode_ls.qe.roles._pytest_config import cache_args, project_test_files, python_files
from superqode_ls.qe.roles.unit import find_test_files
from tests.pyenv_helpers import run_unit_cli
from tests.test_project_env import write

CACHE_INI = """[pytest]
addopts = -rs --cache-clear --strict-markers
markers =
    slow: a slow test
"""

CACHE_TEST = '''import pytest


def test_runs_with_the_projects_addopts(request):
    assert request.config.getoption("cacheclear") is True


@pytest.mark.slow
def test_real_bug():
    assert 1 + 1 == 3
'''


def test_addopts_with_cache_clear_runs_the_suite_with_its_addopts(make_repo):
    """Before: ``-p no:cacheprovider`` made pytest stop ("unrecognized
    arguments: --cache-clear"): the project's environment failed the role,
    SuperQode's own dropped the project's addopts."""
    repo = make_repo({"pytest.ini": CACHE_INI, "tests/test_cache.py": CACHE_TEST})
    _, report, unit = run_unit_cli(repo)
    assert unit["status"] == "ok", unit
    assert "without the project's addopts" not in unit["reason"], unit["reason"]
    assert "2 test(s) run (1 passed, 1 failed" in unit["reason"], unit["reason"]
    titles = [f["title"] for f in report["findings"]]
    assert titles == ["Test fails: tests/test_cache.py::test_real_bug"], titles
    assert not (repo / ".pytest_cache").exists()


def test_cache_plugin_on_in_scratch_unless_the_project_turns_it_off(tmp_path: Path):
    scratch = tmp_path / "scratch"
    plain = write(tmp_path / "a", {"pytest.ini": "[pytest]\naddopts = -q\n"})
    assert cache_args(plain, scratch) == ["-o", f"cache_dir={scratch}"]
    assert cache_args(plain, scratch, {"PYTEST_ADDOPTS": "--lf"}) == [
        "-o", f"cache_dir={scratch}"]
    toml = write(tmp_path / "b", {"pyproject.toml": (
        '[tool.pytest.ini_options]\naddopts = ["--ff", "-q"]\n')})
    assert cache_args(toml, scratch) == ["-o", f"cache_dir={scratch}"]
    # The project turns the plugin off itself: nothing added (an unknown
    # cache_dir option would warn, an error under filterwarnings=error).
    off = write(tmp_path / "c", {"setup.cfg": "[tool:pytest]\naddopts = -p no:cacheprovider\n"})
    assert cache_args(off, scratch) == []
    # pytest.ini wins over pyproject.toml, as in pytest.
    both = write(tmp_path / "d", {"pytest.ini": "[pytest]\n", "pyproject.toml": (
        '[tool.pytest.ini_options]\naddopts = "--cache-clear"\n')})
    assert cache_args(both, scratch) == ["-o", f"cache_dir={scratch}"]


XPROCESS_CONFTEST = '''import pytest


@pytest.fixture(scope="session")
def server_state(request):
    # what pytest-xprocess does: its process registry lives in config.cache
    return request.config.cache.mkdir("xprocess")
'''


def test_a_fixture_that_reads_config_cache_runs(make_repo):
    """Before: ``-p no:cacheprovider`` took ``config.cache`` away: every test
    using such a fixture errored ("'Config' object has no attribute 'cache'",
    flask-caching's Redis tests through pytest-xprocess)."""
    repo = make_repo({"tests/conftest.py": XPROCESS_CONFTEST, "tests/test_srv.py": (
        "def test_srv(server_state):\n    assert server_state.is_dir()\n")})
    _, report, unit = run_unit_cli(repo)
    assert unit["status"] == "ok", unit
    assert "1 test(s) run (1 passed" in unit["reason"], unit["reason"]
    assert not (repo / ".pytest_cache").exists()


GITHUB_TEST = '''import unittest


class Repository(unittest.TestCase):
    def testGetName(self):
        self.assertEqual("PyGithub", "pygithub")
'''


def test_python_files_of_the_project_decide_what_is_a_test(make_repo, tmp_path: Path):
    """Before: "no tests: no test files (test_*.py / *_test.py)", and the
    role never ran PyGithub's ~1000 tests."""
    files = {"pyproject.toml": ('[tool.pytest.ini_options]\npython_files = "tests/*.py"\n'),
             "tests/__init__.py": "", "tests/conftest.py": "", "tests/Repository.py": GITHUB_TEST,
             "github/__init__.py": ""}
    root = write(tmp_path / "gh", files)
    assert python_files(root) == ["tests/*.py"]
    assert has_test_files(root)
    assert find_test_files(root) == ["tests/Repository.py"]
    repo = make_repo(files)
    _, report, unit = run_unit_cli(repo)
    assert unit["status"] == "ok", unit
    titles = [f["title"] for f in report["findings"]]
    assert titles == ["Test fails: tests/Repository.py::Repository::testGetName"], titles


def test_testpaths_bound_the_tests(tmp_path: Path):
    root = write(tmp_path / "p", {"tox.ini": "[pytest]\ntestpaths = tests\n"
                                             "python_files = check_*.py test_*.py\n"})
    files = ["tests/check_a.py", "tests/sub/test_b.py", "docs/test_c.py", "tests/helper.py",
             "tests/conftest.py"]
    assert project_test_files(root, files) == ["tests/check_a.py", "tests/sub/test_b.py"]
    # No configuration: pytest's defaults.
    bare = write(tmp_path / "q", {"README": ""})
    assert project_test_files(bare, ["a/test_x.py", "a/x_test.py", "a/x.py"]) == [
        "a/test_x.py", "a/x_test.py"]


POSTGRES_CONFTEST = '''def pytest_sessionstart(session):
    # piccolo's engine connects when the suite starts
    raise ConnectionRefusedError("[Errno 111] Connect call failed ('127.0.0.1', 5432)")
'''


def test_a_service_missing_at_session_start_is_one_setup_line(make_repo):
    """piccolo's suite connects to PostgreSQL as it starts: pytest's
    internal error was the role's failure, not the environment's."""
    repo = make_repo({"tests/conftest.py": POSTGRES_CONFTEST,
                      "tests/test_db.py": "def test_query():\n    assert True\n"})
    _, report, unit = run_unit_cli(repo)
    assert unit["status"] == "skipped", unit
    assert unit["reason"].startswith(
        "setup: the tests need PostgreSQL (port 5432), which is not running"), unit["reason"]
    assert not [f for f in report["findings"] if f["role"] == "unit_tester"]


def test_a_vcs_versioned_project_gets_its_version_from_the_users_checkout(make_repo):
    """django-import-export's package asks setuptools-scm for its version
    when the generated _version.py (git-ignored) is not there, and
    setuptools-scm cannot read the sandbox's git: every import failed."""
    from superqode_ls.qe.roles._pyenv import scm_pretend
    from tests.conftest import run_git

    repo = make_repo({"pyproject.toml": '[build-system]\nrequires = ["setuptools-scm"]\n',
                      "pkg/__init__.py": ""})
    env: dict[str, str] = {}
    scm_pretend(env, repo, repo)
    assert env == {"SETUPTOOLS_SCM_PRETEND_VERSION": "0.0.0"}  # no tag yet
    run_git(repo, "tag", "v4.2.1")
    env = {}
    scm_pretend(env, repo, repo)
    assert env == {"SETUPTOOLS_SCM_PRETEND_VERSION": "4.2.1"}
    env = {"SETUPTOOLS_SCM_PRETEND_VERSION": "9"}  # the user's own setting stays
    scm_pretend(env, repo, repo)
    assert env == {"SETUPTOOLS_SCM_PRETEND_VERSION": "9"}
    plain = make_repo({"pyproject.toml": '[project]\nname = "p"\nversion = "1"\n'})
    env = {}
    scm_pretend(env, plain, plain)
    assert env == {}
