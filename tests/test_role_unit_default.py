"""The suite a project's developers run by default, and the suites that need
a live service named for what they are.

python-gitlab's tox runs ``pytest tests/unit``; its ``tests/functional`` need
a GitLab that ``docker compose`` starts and are opt-in. Run whole, the suite
was 322 findings saying only that docker compose is not there. jira's suite
needs a live server named by ``CI_JIRA_URL``: its setUp catches the KeyError,
logs it and fails its own check, 155 times."""

from __future__ import annotations

import json
from pathlib import Path

from superqode_ls.config import Config
from superqode_ls.qe.roles import unit
from superqode_ls.qe.roles._unit_default import (
    default_suite,
    left_out_line,
    pytest_paths,
    pytest_selection,
)
from superqode_ls.qe.roles._unit_env import environment_problem, missing_service
from superqode_ls.qe.roles.unit import UnitTester, find_test_files
from tests.role_helpers import make_ctx, run_role

TOX = """[tox]
envlist = py314,py313,py312,py311,py310,black,mypy

[testenv]
deps = pytest
commands =
  pytest tests/unit {posargs}

[testenv:black]
commands = black .
"""

UNIT_TEST = "def test_ok():\n    assert 1 + 1 == 2\n"
# What pytest-docker's fixture raises where the docker CLI has no compose.
FUNCTIONAL_TEST = '''import pytest


@pytest.fixture
def gitlab():
    raise Exception(
        'Command docker compose -f "tests/functional/fixtures/docker-compose.yml" -p '
        '"pytest-python-gitlab" up --build --wait returned 125: """unknown shorthand flag: '
        "'f' in -f\\nUsage:  docker [OPTIONS] COMMAND [ARG...]\\n\\"\\"\\"")


def test_boards(gitlab):
    pass
'''


def test_the_default_command_is_read_from_tox_nox_and_the_ci(tmp_path):
    for rel in ("tests/unit/test_a.py", "tests/functional/test_b.py", "tests/smoke/test_c.py"):
        (tmp_path / rel).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / rel).write_text("def test_x():\n    pass\n")
    tests = find_test_files(tmp_path)
    assert pytest_paths("pytest tests/unit {posargs}", tmp_path) == ["tests/unit"]
    assert pytest_paths("{envpython} -m pytest --cov gitlab -k 'not slow' {posargs:tests/unit}",
                        tmp_path) == ["tests/unit"]
    assert pytest_paths("coverage run -m pytest", tmp_path) == []  # pytest's own selection
    assert pytest_paths("black .", tmp_path) is None
    assert pytest_paths("pytest ../outside /etc tests/nothere", tmp_path) == []
    assert pytest_selection("pytest -m 'not integration' tests/unit -k x", tmp_path) == (
        ["tests/unit"], ["-m", "not integration"])
    assert pytest_selection("python -m pytest -mslow", tmp_path) == ([], ["-m", "slow"])
    (tmp_path / "tox.ini").write_text(TOX)
    suite = default_suite(tmp_path, tests)
    assert suite is not None and suite.paths == ("tests/unit",), suite
    line = left_out_line(suite, tests, tmp_path)
    assert line.startswith("selected tests/unit, as the project's default test command does "
                           "(tox.ini (py3"), line
    assert line.endswith("pytest tests/unit); left out tests/functional, tests/smoke (2 test "
                         "module(s)), which that command does not run"), line
    # A default command that runs every test module leaves out nothing ...
    (tmp_path / "tox.ini").write_text(TOX.replace("pytest tests/unit", "pytest tests"))
    suite = default_suite(tmp_path, tests)
    assert suite is not None and left_out_line(suite, tests, tmp_path) is None
    # ... but the doctests of the package's modules where the configuration
    # collects them (dateparser: its date-dependent doctests, never run by its tox).
    (tmp_path / "pytest.ini").write_text("[pytest]\naddopts = --doctest-modules\n")
    assert left_out_line(suite, tests, tmp_path).endswith(
        "left out the doctests of the modules outside tests, which that command does not run")
    (tmp_path / "pytest.ini").unlink()
    (tmp_path / "tox.ini").write_text(TOX.replace("pytest tests/unit", "pytest ."))
    assert default_suite(tmp_path, tests) is None
    # nox: the sessions a plain nox runs, their literal arguments.
    (tmp_path / "tox.ini").unlink()
    (tmp_path / "noxfile.py").write_text(
        "import nox\n\nnox.options.sessions = ['tests']\n\n"
        "@nox.session(name='functional')\ndef func(session):\n"
        "    session.run('pytest', 'tests/functional')\n\n"
        "@nox.session(python=['3.11'])\ndef tests(session):\n"
        "    session.install('-e', '.')\n    session.run('pytest', 'tests/unit', *session.posargs)\n")
    suite = default_suite(tmp_path, tests)
    assert suite is not None and suite.paths == ("tests/unit",), suite
    assert suite.source == "noxfile.py (tests): pytest tests/unit"
    # The CI's test step, in a job that starts no service.
    (tmp_path / "noxfile.py").unlink()
    flows = tmp_path / ".github" / "workflows"
    flows.mkdir(parents=True)
    (flows / "test.yml").write_text(
        "jobs:\n  unit:\n    runs-on: ubuntu-latest\n    steps:\n"
        "      - run: |\n          pip install -e .\n          python -m pytest tests/unit -x\n"
        "  functional:\n    services:\n      gitlab:\n        image: gitlab/gitlab-ce\n"
        "    steps:\n      - run: pytest tests/functional\n")
    suite = default_suite(tmp_path, tests)
    assert suite is not None and suite.paths == ("tests/unit",), suite
    # A job that tests through a driver of its own (chalice: `make prcheck`,
    # beside a job running only its CDK tests): nothing is narrowed.
    (flows / "test.yml").write_text(
        "jobs:\n  prcheck:\n    steps:\n      - run: make prcheck\n"
        "  cdk:\n    steps:\n      - run: python -m pytest tests/functional\n")
    assert default_suite(tmp_path, tests) is None


def test_only_the_suite_the_developers_run_by_default_runs(make_repo):
    repo = make_repo({"tox.ini": TOX, "tests/unit/test_unit.py": UNIT_TEST,
                      "tests/functional/test_boards.py": FUNCTIONAL_TEST})
    project = repo.parent / f"{repo.name}-project"  # make_ctx's
    # A last record of the whole suite, stopped at quick mode's cap (from a
    # run before the default command was read): not this selection's.
    out = run_role(UnitTester(), make_ctx(repo, mode="deep"))
    path = unit._durations_file(project)
    path.write_text(json.dumps({"seconds": 400.0, "stopped": "", "failures": 0,
                                "at": "2026-11-27 10:00 UTC"}))
    cfg = Config.model_validate({"qe": {"quick_unit_test_max_s": 120}})
    out = run_role(UnitTester(), make_ctx(repo, config=cfg, mode="quick"))
    assert out.status == "ok", out
    # Before: the functional test was run, a finding about docker compose.
    assert out.findings == [], out.findings
    assert "1 test(s) run (1 passed, 0 failed, 0 skipped)" in out.reason, out.reason
    assert ("left out tests/functional (1 test module(s)), which that command does not run"
            in out.reason), out.reason
    assert json.loads(path.read_text())["scope"] == ["tests/unit"]


def test_a_fixture_that_cannot_start_docker_compose_is_the_environment(make_repo):
    said = missing_service("Exception: Command docker compose -f \"x.yml\" up --wait returned "
                           "125: \"\"\"unknown shorthand flag: 'f' in -f")
    assert said is not None and "`docker compose`" in said
    # Without a default command that leaves them out: each error is the
    # environment's, counted in one line, none a finding to act on.
    repo = make_repo({"tests/unit/test_unit.py": UNIT_TEST,
                      "tests/functional/test_boards.py": FUNCTIONAL_TEST})
    out = run_role(UnitTester(), make_ctx(repo, mode="deep"))
    assert [f.noise is not None and f.severity.value == "info" for f in out.findings] == [True]
    assert ("1 failure(s) the environment's: the tests start their services with `docker "
            "compose`, which cannot run here") in out.reason, out.reason


JIRA_CONFTEST = '''import logging
import os
import unittest

import pytest

LOGGER = logging.getLogger(__name__)


class Manager:
    # jira's JiraTestManager: one shared state; a second try after a failed
    # one stops the session.
    _state = {}

    def __init__(self):
        self.__dict__ = self._state
        if self._state.get("tried"):
            pytest.exit("FATAL: not configured")
        self.tried = True
        self.url = os.environ["SQ_TEST_JIRA_URL"]


class JiraTestCase(unittest.TestCase):
    def setUp(self):
        initialized = False
        try:
            self.manager = Manager()
            initialized = True
        except Exception as e:
            LOGGER.exception(e)
        self.assertTrue(initialized, "Test Manager setUp failed")
'''

JIRA_TEST = '''from tests.conftest import JiraTestCase, Manager


def test_plain():
    assert 1 + 1 == 2


class IssueTests(JiraTestCase):
    def test_one(self):
        pass

    def test_two(self):
        pass

    def test_three(self):
        pass


def test_zz_direct():
    Manager()
'''


def test_a_suite_that_needs_an_unset_variable_is_the_environment(make_repo, monkeypatch):
    monkeypatch.delenv("SQ_TEST_JIRA_URL", raising=False)
    logged = ("ERROR    tests.conftest:conftest.py:69 'CI_JIRA_URL'\nTraceback (most recent call "
              "last):\n  File \"/s/tests/conftest.py\", line 198, in __init__\n    self.url = "
              "os.environ[\"CI_JIRA_URL\"]\n  File \"<frozen os>\", line 679, in __getitem__\n"
              "KeyError: 'CI_JIRA_URL'\n")
    record = {"message": "AssertionError: False is not true : Test Manager setUp failed",
              "logged": logged}
    said = environment_problem(record, Path(__file__).parent)
    assert said is not None and "environment variable CI_JIRA_URL, which is not set" in said
    # A KeyError of the project's own dict stays the code's.
    assert environment_problem({"message": "KeyError: 'CI_JIRA_URL'"}, Path("/nowhere")) is None
    repo = make_repo({"tests/__init__.py": "", "tests/conftest.py": JIRA_CONFTEST,
                      "tests/test_issue.py": JIRA_TEST})
    out = run_role(UnitTester(), make_ctx(repo, mode="deep"))
    # Before: "failed" (pytest was interrupted), one high test-failure at the
    # conftest's check, "Test Manager setUp failed", for every test. The
    # first test's log proves the cause; the others fail the same check the
    # same way, on the manager it left uninitialised.
    assert out.status == "skipped", out
    assert len(out.findings) == 3, out.findings
    assert all(f.noise and "SQ_TEST_JIRA_URL" in f.noise for f in out.findings), out.findings
    assert out.reason.startswith(
        "setup: 3 failure(s) the environment's: the tests need the environment variable "
        "SQ_TEST_JIRA_URL, which is not set here"), out.reason
    assert "the suite stopped before its end (FATAL: not configured), 1 test(s) passed" in (
        out.reason)


def test_messages_a_user_reads_are_balanced_and_not_contradictory(tmp_path):
    from superqode_ls.qe.roles._unit_records import clipped

    # umap: GDAL missing, said before as "(ImproperlyConfigured: Could not find
    # the GDAL library (tried "gdal", ... "gdal3.6.0); tests: ..." (cut open).
    gdal = ("django.core.exceptions.ImproperlyConfigured: Could not find the GDAL library (tried "
            + ", ".join(f'"gdal3.{n}.0"' for n in range(13, 0, -1))
            + "). Is GDAL installed? If it is, try setting GDAL_LIBRARY_PATH in your settings.")
    said = environment_problem({"message": gdal}, tmp_path)
    assert said == ("the GDAL system library is not installed here (Django's GIS needs it): "
                    "install it with the system's package manager"), said
    long = "Could not do it (tried " + ", ".join(f'"x{n}"' for n in range(60)) + ") at all"
    cut = clipped(long, 160)
    assert cut == "Could not do it...", cut
    assert clipped("x (a) y (b c d e) z", 12) == "x (a) y..."
    assert clipped('say "a (b" then more words', 14) == 'say "a (b"...'
    # modoboa: a package of the project's dev extra the environment lacks.
    (tmp_path / "pyproject.toml").write_text(
        '[project]\nname = "modo"\ndependencies = ["django"]\n\n'
        '[project.optional-dependencies]\ndev = ["django-extensions", "black"]\n'
        'ldap = ["python-ldap"]\n')
    said = environment_problem({"message": "No module named 'django_extensions'"}, tmp_path)
    assert said == ("package 'django_extensions' is not in the test environment, which was made "
                    "without it though the project declares it (django-extensions, in its `dev` "
                    "extra): set roles.python to an environment that has it"), said
    # PowerDNS-Admin: python-ldap provides `ldap` (before: "does not declare it").
    said = environment_problem({"message": "No module named 'ldap'"}, tmp_path)
    assert "declares it (python-ldap, in its `ldap` extra)" in said, said


MARKED_TEST = """import pytest


def test_ok():
    assert True


@pytest.mark.service
def test_needs_the_service():
    raise ConnectionRefusedError(111, "Connection refused")
"""


def test_the_default_commands_marker_expression_is_run(make_repo):
    tox = TOX.replace("pytest tests/unit {posargs}", 'pytest -m "not service" {posargs}')
    repo = make_repo({"tox.ini": tox, "tests/test_marked.py": MARKED_TEST,
                      "pytest.ini": "[pytest]\nmarkers =\n    service: needs the service\n"})
    out = run_role(UnitTester(), make_ctx(repo, mode="deep"))
    # Before: the deselected test ran, a failure of the environment's.
    assert out.status == "ok" and out.findings == [], out
    assert "1 test(s) run (1 passed, 0 failed, 0 skipped)" in out.reason, out.reason
    assert ("; selected the tests pytest collects with -m 'not service', as the project's "
            "default test command does (tox.ini (py3") in out.reason, out.reason
    assert out.reason.endswith('): pytest -m "not service")'), out.reason


def test_quick_order_puts_last_failures_then_changed_then_untimed_first(tmp_path):
    from superqode_ls.models import Finding
    from superqode_ls.qe.roles import _unit_last

    project = tmp_path / "project"
    failing = Finding(id="x", role="unit_tester", tool="pytest", rule_id="test-failure",
                      severity="high", title="test-failure: tests/test_b.py::test_b",
                      message="m", file="tests/test_b.py")
    files = {"app/views.py": "1", "tests/test_a.py": "1", "tests/test_b.py": "1",
             "tests/test_c.py": "1", "tests/test_views.py": "1"}
    _unit_last.record(project, 23.4, "3 of 5 tests run", found=[failing], key="k",
                      modules={"tests/test_a.py": 9.0, "tests/test_b.py": 1.0,
                               "tests/test_c.py": 0.5, "tests/test_views.py": 2.0},
                      files=files)
    assert not _unit_last.fits(project, 20)
    # A stopped run's module times add to those known before.
    _unit_last.record(project, 23.4, "3 of 5 tests run", found=[failing], key="k",
                      modules={"tests/test_c.py": 0.25}, files=files)
    tests = ["tests/test_a.py", "tests/test_b.py", "tests/test_c.py", "tests/test_views.py",
             "tests/test_new.py"]
    order, said = _unit_last.quick_order(project, [], {**files, "app/views.py": "2"}, tests)
    assert order["first"] == ["tests/test_b.py"]
    assert order["changed"] == ["tests/test_views.py"]  # named after app/views.py, changed
    assert order["seconds"]["tests/test_c.py"] == 0.25 and order["seconds"]["tests/test_a.py"] == 9
    assert said == ("the suite did not fit quick mode's cap last time: it runs in this order: "
                    "1 module(s) with the last run's failures, 1 changed or covering a changed "
                    "file, 1 not timed yet, then the rest fastest first")
    # A run that fitted: its own order.
    _unit_last.record(project, 3.0, None, found=[], key="k", files=files)
    assert _unit_last.fits(project, 20)
