"""The project's tests found and started the way its developers run them,
and a suite that did not start said so in one line (a setup problem: never
ok, never a finding): Django's ``tests_*.py`` under the settings its gulp
task names, a Flask app's ``manage.py`` that is no project of its own, a
``python -m pytest`` that ran the project's own ``pytest.py``, and a suite
that refuses to run as root."""

from __future__ import annotations

import os

import pytest

from superqode_ls.config import DEFAULT_PATH_CLASSES
from superqode_ls.qe.noise_paths import path_class
from superqode_ls.qe.roles import _unit_django as dj
from superqode_ls.qe.roles._unit_start import never_started, refuses_root
from superqode_ls.workspace.pyprojects import python_projects
from tests.pyenv_helpers import run_unit_cli

# babybuddy's manage.py: no default settings module; they come with the
# command its gulp task runs.
MANAGE = '''#!/usr/bin/env python
import sys

if __name__ == "__main__":
    from django.core.management import execute_from_command_line
    execute_from_command_line(sys.argv)
'''

SETTINGS = '''SECRET_KEY = "test-only"
INSTALLED_APPS = ["django.contrib.contenttypes", "django.contrib.auth", "shop"]
DATABASES = {"default": {"ENGINE": "django.db.backends.sqlite3", "NAME": ":memory:"}}
USE_TZ = True
DEFAULT_AUTO_FIELD = "django.db.models.AutoField"
'''

GULPFILE = '''function test(cb) {
  let command = [
    "run",
    "python",
    "manage.py",
    "test",
    "--settings=site_conf.settings_ci",
    "--parallel",
  ];
  spawn("pipenv", command, { stdio: "inherit" });
}
'''

TESTS = '''from django.test import SimpleTestCase


class LabelTest(SimpleTestCase):
    def test_upper(self):
        self.assertEqual("b".upper(), "b")

    def test_fine(self):
        self.assertTrue(True)
'''


def babybuddy_like(make_repo):
    return make_repo({"manage.py": MANAGE, "gulpfile.js": GULPFILE,
                      "requirements.txt": "django\n",
                      "site_conf/__init__.py": "", "site_conf/settings_ci.py": SETTINGS,
                      "shop/__init__.py": "", "shop/tests/__init__.py": "",
                      "shop/tests/tests_views.py": TESTS, "api/__init__.py": "",
                      "api/tests.py": "from django.test import SimpleTestCase\n"})


def test_the_settings_of_a_gulp_tasks_django_test_command_are_read(make_repo):
    repo = babybuddy_like(make_repo)
    assert dj.command_settings(repo) == "site_conf.settings_ci"
    assert dj.django_runner(repo) == "site_conf.settings_ci"
    assert dj.harness(repo) == "" and dj.runner_label(repo) == "manage.py test"
    assert "shop/tests/tests_views.py" in dj.find_tests(repo)
    assert dj.argv("py", [], repo)[:3] == ["py", "manage.py", "test"]


def test_a_django_apps_tests_py_files_are_test_code_for_the_path_classes():
    for path in ("api/tests.py", "babybuddy/tests/formats/tests_en.py"):
        assert path_class(path, DEFAULT_PATH_CLASSES)[0] == "tests", path
    assert path_class("api/views.py", DEFAULT_PATH_CLASSES) is None
    # a package's tests_helpers.py outside a tests folder is product code
    # (test_noise_library); a Django app's tests_views.py there is not told apart
    assert path_class("core/tests_views.py", DEFAULT_PATH_CLASSES) is None
    assert path_class("core/contests.py", DEFAULT_PATH_CLASSES) is None


def test_a_django_app_whose_tests_are_tests_star_py_runs_them(make_repo):
    pytest.importorskip("django")
    repo = babybuddy_like(make_repo)
    _proc, report, unit = run_unit_cli(repo)
    assert not unit["reason"].startswith("no tests"), unit
    assert "Django's runner (manage.py test, site_conf.settings_ci)" in unit["reason"], unit
    assert "2 test(s) run (1 passed, 1 failed" in unit["reason"], unit["reason"]
    titles = [f["title"] for f in report["findings"]]
    assert "Test fails: shop/tests/tests_views.py::LabelTest::test_upper" in titles, titles


FLASK_MANAGE = '''import click
from flask.cli import FlaskGroup


@click.group(cls=FlaskGroup)
def cli():
    """Manage the app."""
'''


def lemur_like(make_repo):
    # lemur: a Flask app whose package holds manage.py and an empty pytest.py;
    # its developers run pytest from the root, where its conftest needs a
    # package the environment lacks.
    return make_repo({"pyproject.toml": '[project]\nname = "app"\nversion = "1"\n',
                      "app/__init__.py": "", "app/manage.py": FLASK_MANAGE, "app/pytest.py": "",
                      "app/tests/__init__.py": "",
                      "app/tests/conftest.py": "import ldapzz_missing_here\n",
                      "app/tests/test_app.py": "def test_a():\n    assert True\n"})


def test_a_flask_manage_py_makes_no_project_of_its_package(make_repo):
    assert python_projects(lemur_like(make_repo)) == [""]


def test_a_conftest_the_environment_cannot_import_is_a_setup_line_never_ok(make_repo):
    _proc, report, unit = run_unit_cli(lemur_like(make_repo))
    assert unit["status"] == "skipped", unit
    assert unit["reason"].startswith("setup: ") and "ldapzz_missing_here" in unit["reason"], unit
    # (what pytest said is kept, as the environment's noise: nothing to act on)
    assert all(f["noise"] for f in report["findings"]), report["findings"]
    assert report["verdict"] != "pass"


def test_a_pytest_py_of_the_project_that_ran_instead_of_pytest_is_no_pass(make_repo):
    repo = make_repo({"pytest.py": "", "test_a.py": "def test_a():\n    assert False\n"})
    _proc, report, unit = run_unit_cli(repo)
    assert unit["status"] == "skipped", unit
    assert unit["reason"].startswith(
        "setup: no test ran: `python -m pytest` ran the project's own pytest.py"), unit
    assert report["verdict"] != "pass"


def test_never_started_names_the_shadowing_module(tmp_path):
    assert "exited 0 without starting" in never_started(tmp_path, "pytest")
    (tmp_path / "pytest").mkdir()
    (tmp_path / "pytest" / "__init__.py").write_text("")
    assert "own pytest/__init__.py" in never_started(tmp_path, "pytest")


# ArchiveBox's refusal, as rich wraps it at 80 columns.
REFUSAL = ("[!] ArchiveBox should never be run as root!\n"
           "    For more information, see the security overview documentation:\n"
           "        https://github.com/ArchiveBox/ArchiveBox/wiki/Security-Overview#do-not-r\n"
           "un-as-root\n")


def test_a_refusal_to_run_as_root_is_named_as_the_environment():
    line = refuses_root(REFUSAL, as_root=True)
    assert line == ("the project's tests refuse to run as root, and SuperQode runs as root "
                    "(uid 0) here: run it as an ordinary user to run them")
    assert refuses_root(REFUSAL, as_root=False) is None
    assert refuses_root("Error: Running as root is not supported.", as_root=True)
    assert refuses_root("AssertionError: root user not found in table", as_root=True) is None




@pytest.mark.skipif(not hasattr(os, "geteuid") or os.geteuid() != 0, reason="runs as root only")
def test_a_suite_that_refuses_root_is_a_setup_line_uncut(make_repo):
    conftest = ("import os\nimport sys\n\nif os.geteuid() == 0:\n"
                f"    print({REFUSAL!r}, file=sys.stderr)\n    raise SystemExit(1)\n")
    repo = make_repo({"conftest.py": conftest, "test_a.py": "def test_a():\n    pass\n"})
    _proc, report, unit = run_unit_cli(repo)
    assert unit["status"] == "skipped", unit
    assert unit["reason"].startswith("setup: the project's tests refuse to run as root"), unit
    assert " | " not in unit["reason"].split(";")[0]
    assert all(f["noise"] for f in report["findings"]), report["findings"]


def test_django_tests_with_no_settings_declared_are_a_setup_line_not_no_tests(make_repo):
    repo = make_repo({"manage.py": MANAGE, "shop/__init__.py": "",
                      "shop/tests.py": TESTS})
    assert dj.django_runner(repo) is None
    _proc, _report, unit = run_unit_cli(repo)
    assert unit["status"] == "skipped", unit
    assert unit["reason"].startswith("setup: 1 Django test module(s) (test*.py, as "
                                     "shop/tests.py) and no settings module"), unit


def test_the_pattern_of_the_projects_django_test_command_finds_its_tests(make_repo):
    repo = make_repo({"manage.py": MANAGE, "site_conf/__init__.py": "",
                      "site_conf/settings_ci.py": SETTINGS, "shop/__init__.py": "",
                      "shop/model_checks.py": TESTS, "shop/test_data.py": "ROWS = []\n",
                      "tox.ini": "[testenv]\ncommands = python manage.py test "
                                 "--settings=site_conf.settings_ci -p '*_checks.py'\n"})
    assert dj.discovery_pattern(repo) == "*_checks.py"
    assert dj.find_tests(repo) == ["shop/model_checks.py"]
    cmd = dj.argv("py", [], repo)
    assert cmd[cmd.index("--pattern") + 1] == "*_checks.py"
    # Without one, Django's default; --parallel is no pattern.
    (repo / "tox.ini").write_text("[testenv]\ncommands = python manage.py test --parallel "
                                  "--settings=site_conf.settings_ci\n")
    assert dj.discovery_pattern(repo) == "test*.py" and "--pattern" not in dj.argv("py", [], repo)


def test_a_pytest_django_project_is_not_told_it_lacks_settings(tmp_path):
    (tmp_path / "manage.py").write_text(MANAGE)
    (tmp_path / "shop").mkdir()
    (tmp_path / "shop" / "tests.py").write_text(TESTS)
    assert dj.unrunnable_tests(tmp_path) is not None
    (tmp_path / "requirements.txt").write_text("django\npytest-django\n")
    assert dj.unrunnable_tests(tmp_path) is None
