"""Django projects run their tests with Django's own runner (manage.py test),
and a test that fails for want of something in its environment (Django's
settings, a package, a database service) is a setup problem, counted and
named, never a finding to act on; the project's own broken import stays one."""

from __future__ import annotations

from pathlib import Path

import pytest

from superqode_ls.qe.roles import _unit_django as dj
from superqode_ls.qe.roles._unit_env import environment_problem
from tests.pyenv_helpers import run_unit_cli

MANAGE = '''#!/usr/bin/env python
import os
import sys

# os.environ.setdefault("DJANGO_SETTINGS_MODULE", "wrong.settings")


def main():
    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "site_conf.settings")
    from django.core.management import execute_from_command_line
    execute_from_command_line(sys.argv)


if __name__ == "__main__":
    main()
'''

SETTINGS = '''SECRET_KEY = "test-only"
INSTALLED_APPS = ["django.contrib.contenttypes", "django.contrib.auth", "shop"]
DATABASES = {"default": {"ENGINE": "django.db.backends.sqlite3", "NAME": "db.sqlite3"}}
USE_TZ = True
DEFAULT_AUTO_FIELD = "django.db.models.AutoField"
TEST_RUNNER = "site_conf.runner.ProjectRunner"
'''

# The project's own runner sets what its tests need (healthchecks' sets its
# mail backends): SuperQode's runner builds on it.
RUNNER = '''from django.conf import settings
from django.test.runner import DiscoverRunner


class ProjectRunner(DiscoverRunner):
    def __init__(self, *args, **kwargs):
        settings.SHOP_READY = True
        super().__init__(*args, **kwargs)
'''

MODELS = '''from django.db import models


class Item(models.Model):
    name = models.CharField(max_length=20)

    def label(self):
        return self.name.upper()
'''

# Django's discovery (test*.py) finds tests.py, which pytest would not.
TESTS = '''from django.test import TestCase

from shop.models import Item


class ItemTest(TestCase):
    def test_saved(self):
        Item.objects.create(name="a")
        self.assertEqual(Item.objects.count(), 1)

    def test_label(self):
        self.assertEqual(Item(name="b").label(), "b")

    def test_the_projects_runner_ran(self):
        from django.conf import settings
        self.assertTrue(settings.SHOP_READY)
'''

BROKEN_OWN = '''from django.test import TestCase

from shop.helpers import nothing_here


class HelperTest(TestCase):
    def test_helper(self):
        self.assertTrue(nothing_here)
'''


def django_project(make_repo, extra: dict[str, str] | None = None):
    files = {"manage.py": MANAGE, "site_conf/__init__.py": "",
             "site_conf/settings.py": SETTINGS, "site_conf/runner.py": RUNNER,
             "shop/__init__.py": "",
             "shop/models.py": MODELS, "shop/tests.py": TESTS, **(extra or {})}
    return make_repo(files)


def test_the_settings_module_is_read_as_manage_py_sets_it(tmp_path):
    (tmp_path / "manage.py").write_text(MANAGE)
    assert dj.settings_module(tmp_path) == "site_conf.settings"  # not the comment's
    (tmp_path / "manage.py").write_text(
        'import os\nos.environ["DJANGO_SETTINGS_MODULE"] = "conf.test"\n')
    assert dj.settings_module(tmp_path) == "conf.test"
    (tmp_path / "manage.py").write_text('import os\nos.environ.setdefault("OTHER", "x.y")\n')
    assert dj.settings_module(tmp_path) is None
    (tmp_path / "manage.py").write_text("def broken(:\n")
    assert dj.settings_module(tmp_path) is None


def test_pytest_django_projects_keep_pytest(tmp_path):
    (tmp_path / "manage.py").write_text(MANAGE)
    assert dj.django_runner(tmp_path) == "site_conf.settings"
    (tmp_path / "requirements.txt").write_text("Django>=4.2\npytest-django==4.9\n")
    assert dj.django_runner(tmp_path) is None
    assert dj.pytest_settings(tmp_path) == "site_conf.settings"  # none in its ini
    (tmp_path / "pytest.ini").write_text("[pytest]\nDJANGO_SETTINGS_MODULE = site_conf.test\n")
    assert dj.django_runner(tmp_path) is None
    assert dj.pytest_settings(tmp_path) is None  # its ini's wins
    (tmp_path / "requirements.txt").write_text("Django>=4.2\n")
    assert dj.django_runner(tmp_path) is None  # the ini alone says pytest


def test_labels_are_dotted_test_names():
    assert dj.label("shop/tests.py") == "shop.tests"
    assert dj.label("shop/tests/__init__.py") == "shop.tests"
    assert (dj.label("shop/tests/test_a.py::ItemTest::test_x [n=1]")
            == "shop.tests.test_a.ItemTest.test_x")


def test_environment_problems_are_told_from_the_codes(tmp_path):
    (tmp_path / "shop").mkdir()
    (tmp_path / "requirements.txt").write_text("redis==5.0\n")
    (tmp_path / "manage.py").write_text(MANAGE)

    def cause(text: str) -> str | None:
        return environment_problem({"message": text}, tmp_path)

    assert "DJANGO_SETTINGS_MODULE=site_conf.settings" in cause(
        "django.core.exceptions.ImproperlyConfigured: Requested setting INSTALLED_APPS, but "
        "settings are not configured. You must either define the environment variable ...")
    assert "settings are not loaded" in cause(
        "django.core.exceptions.AppRegistryNotReady: Apps aren't loaded yet.")
    assert cause("ModuleNotFoundError: No module named 'redis'") == (
        # (before: "not installed ... (the project declares it)", which read
        # as a contradiction)
        "package 'redis' is not in the test environment, which was made without it though "
        "the project declares it (redis, in requirements.txt): set roles.python to an "
        "environment that has it")
    assert "does not declare" in cause("ModuleNotFoundError: No module named 'yaml'")
    assert "PostgreSQL (port 5432)" in cause(
        'psycopg.OperationalError: connection failed: connection to server at "127.0.0.1", '
        "port 5432 failed: Connection refused")
    assert "Redis" in cause("redis.exceptions.ConnectionError: Error 111 connecting to "
                            "localhost:6379. Connection refused.")
    assert "MySQL" in cause("OperationalError: (2002, \"Can't connect to MySQL server on "
                            "'localhost' (111)\")")
    assert "needs an older Python" in cause(
        "ImportError: cannot import name 'Iterator' from 'collections' "
        "(/usr/lib/python3.11/collections/__init__.py)")
    # The neighbours that stay the code's: its own module, a name it lacks,
    # a local server of its own (any other port), a plain assertion.
    assert cause("ModuleNotFoundError: No module named 'shop.helpers'") is None
    assert cause("ImportError: cannot import name 'x' from 'shop.models'") is None
    assert cause("ImportError: cannot import name 'x' from 'shop.models' "
                 f"({tmp_path}/shop/models.py)") is None
    assert cause("ConnectionRefusedError: [Errno 111] Connection refused (localhost:8765)") is None
    assert cause("AssertionError: assert 2 == 3") is None


def test_a_django_project_runs_its_suite_with_manage_py_test(make_repo):
    pytest.importorskip("django")
    repo = django_project(make_repo, {"shop/test_helpers.py": BROKEN_OWN})
    proc, report, unit = run_unit_cli(repo)
    assert unit["status"] == "ok", unit
    assert "Django's runner (manage.py test, site_conf.settings)" in unit["reason"]
    # tests.py ran (pytest would not have collected it), under the settings.
    assert ("3 test(s) run (2 passed, 1 failed, 0 skipped, 1 test module(s) not imported)"
            in unit["reason"]), unit["reason"]
    # The failure re-ran with Django's runner (its label), and failed again.
    assert "1 failed test(s) re-run: 0 flaky" in unit["reason"]
    by_title = {f["title"]: f for f in report["findings"]}
    fail = by_title["Test fails: shop/tests.py::ItemTest::test_label"]
    assert fail["severity"] == "high" and fail["noise"] is None and fail["tool"] == "django"
    assert fail["file"] == "shop/tests.py" and fail["range"]["start_line"] == 12
    assert "AssertionError: 'B' != 'b'" in fail["message"]
    # The project's own module that is not there: a finding, not the environment's.
    broken = by_title["Tests cannot be collected: shop/test_helpers.py"]
    assert broken["severity"] == "high" and broken["noise"] is None, broken
    assert "shop.helpers" in broken["message"]
    assert not any("ImproperlyConfigured" in f["message"] for f in report["findings"])
    assert report["verdict"] == "fail"
    assert not (repo / "db.sqlite3").exists()  # the test database is Django's, in memory
    assert proc.returncode == 1, proc.stdout + proc.stderr


def test_a_missing_database_service_is_one_setup_line(make_repo):
    pytest.importorskip("django")
    settings = SETTINGS.replace(
        '{"ENGINE": "django.db.backends.sqlite3", "NAME": "db.sqlite3"}',
        '{"ENGINE": "django.db.backends.sqlite3", "NAME": "db.sqlite3"}, "other": '
        '{"ENGINE": "site_conf.pgdown", "NAME": "x"}')
    # A backend that fails the way a PostgreSQL driver does when no server
    # listens (no driver needed here).
    backend = '''from django.db.backends.sqlite3.base import DatabaseWrapper as Base


class DatabaseWrapper(Base):
    def get_new_connection(self, conn_params):
        from django.db import OperationalError
        raise OperationalError('connection to server at "localhost" (127.0.0.1), '
                               'port 5432 failed: Connection refused')
'''
    multi = TESTS.replace("class ItemTest(TestCase):",
                          'class ItemTest(TestCase):\n    databases = {"default", "other"}\n')
    repo = django_project(make_repo, {"site_conf/settings.py": settings,
                                      "site_conf/pgdown/__init__.py": "",
                                      "site_conf/pgdown/base.py": backend,
                                      "shop/tests.py": multi})
    proc, report, unit = run_unit_cli(repo)
    assert unit["status"] == "skipped", unit
    assert unit["reason"].startswith(
        "setup: the tests need PostgreSQL (port 5432), which is not running"), unit["reason"]
    assert report["findings"] == []
    assert report["verdict"] != "fail"
    assert proc.returncode == 0, proc.stdout + proc.stderr


PLAIN_ENV = '''import package_the_env_lacks_xyz


def test_uses_it():
    assert package_the_env_lacks_xyz
'''

PLAIN_OWN = '''from mylib.missing_part import thing


def test_thing():
    assert thing
'''


def test_a_package_the_environment_lacks_is_not_a_finding(make_repo):
    """pytest, any project: a test module that cannot import a package the
    environment lacks is a setup problem; neighbour below keeps its own."""
    repo = make_repo({"mylib/__init__.py": "", "tests/test_env.py": PLAIN_ENV})
    proc, report, unit = run_unit_cli(repo)
    assert unit["status"] == "skipped", unit
    assert unit["reason"].startswith(
        "setup: 1 test module(s) cannot be imported here: package "
        "'package_the_env_lacks_xyz' is not installed in the test environment"), unit["reason"]
    (finding,) = report["findings"]
    assert finding["severity"] == "info" and finding["noise"], finding
    assert report["verdict"] != "fail"
    assert proc.returncode == 0, proc.stdout + proc.stderr


def test_a_broken_import_of_the_projects_own_module_stays_a_finding(make_repo):
    repo = make_repo({"mylib/__init__.py": "", "tests/test_env.py": PLAIN_ENV,
                      "tests/test_own.py": PLAIN_OWN})
    proc, report, _ = run_unit_cli(repo)
    by_file = {f["file"]: f for f in report["findings"]}
    own = by_file["tests/test_own.py"]
    assert own["rule_id"] == "collection-error" and own["severity"] == "high"
    assert own["noise"] is None
    assert by_file["tests/test_env.py"]["noise"]  # its neighbour: the environment's
    assert report["verdict"] == "fail"
    assert proc.returncode == 1, proc.stdout + proc.stderr


def test_a_django_tests_py_is_worth_building_an_environment_for(tmp_path):
    from superqode_ls.qe.roles._pyenv import has_test_files, wants_built_env

    (tmp_path / "shop").mkdir()
    (tmp_path / "shop" / "tests.py").write_text("from django.test import TestCase\n")
    assert not has_test_files(tmp_path)  # no manage.py: pytest would not collect it
    (tmp_path / "manage.py").write_text(MANAGE)
    assert has_test_files(tmp_path) and wants_built_env(["unit_tester"], tmp_path)


def test_a_django_backend_in_a_subfolder_runs_from_there(make_repo):
    """A repository with ``backend/manage.py`` (and a ``frontend/``), its
    requirements at the root: the developers' ``cd backend && python
    manage.py test``. Its tests ran from the root, where pytest finds no
    ``tests.py`` and Django's runner no ``manage.py``."""
    pytest.importorskip("django")
    files = {"manage.py": MANAGE, "site_conf/__init__.py": "",
             "site_conf/settings.py": SETTINGS, "site_conf/runner.py": RUNNER,
             "shop/__init__.py": "", "shop/models.py": MODELS, "shop/tests.py": TESTS}
    repo = make_repo({"requirements.txt": "Django\n", "frontend/package.json": "{}\n",
                      **{f"backend/{rel}": text for rel, text in files.items()}})
    proc, report, unit = run_unit_cli(repo)
    assert unit["status"] == "ok", unit
    assert unit["reason"].startswith("backend/: 3 test(s) run (2 passed, 1 failed"), unit["reason"]
    assert "Django's runner (manage.py test, site_conf.settings)" in unit["reason"]
    (fail,) = [f for f in report["findings"] if f["role"] == "unit_tester"]
    assert fail["title"] == "Test fails: backend/shop/tests.py::ItemTest::test_label", fail
    assert fail["file"] == "backend/shop/tests.py" and fail["severity"] == "high"
    assert proc.returncode == 1, proc.stdout + proc.stderr


WORKFLOW = """name: CI
on: [push]
jobs:
  test:
    runs-on: ubuntu-latest
    env:
      DJANGO_SETTINGS_MODULE: site_conf.settings  # the suite's settings
    steps:
      - run: python manage.py test
"""
# manage.py's default needs a database server named in the environment
# (wger's settings.main): the suite cannot start under it.
SERVER_SETTINGS = '''from django.core.exceptions import ImproperlyConfigured
raise ImproperlyConfigured("Set the DJANGO_DB_ENGINE environment variable")
'''


def test_the_declared_test_settings_come_before_manage_pys_default(tmp_path):
    (tmp_path / "manage.py").write_text(MANAGE.replace("site_conf.settings", "site_conf.main"))
    for rel in ("site_conf/__init__.py", "site_conf/main.py", "site_conf/settings.py",
                "site_conf/tox.py", "site_conf/ini.py"):
        (tmp_path / rel).parent.mkdir(exist_ok=True)
        (tmp_path / rel).write_text("")
    assert dj.django_runner(tmp_path) == "site_conf.main"
    (tmp_path / ".github/workflows").mkdir(parents=True)
    (tmp_path / ".github/workflows/ci.yml").write_text(WORKFLOW)
    # Before: manage.py's default, whatever the project's CI tests with.
    assert dj.django_runner(tmp_path) == "site_conf.settings"
    (tmp_path / "tox.ini").write_text("[testenv]\nsetenv =\n    PYTHONPATH = {toxinidir}\n"
                                      "    DJANGO_SETTINGS_MODULE = site_conf.tox\n")
    assert dj.django_runner(tmp_path) == "site_conf.tox"  # tox's before CI's
    assert dj.pytest_settings(tmp_path) == "site_conf.tox"  # pytest without a manage.py too
    (tmp_path / "tox.ini").write_text("[testenv]\nsetenv = DJANGO_SETTINGS_MODULE = nowhere.x\n")
    assert dj.django_runner(tmp_path) == "site_conf.settings"  # not a module of the project
    (tmp_path / "pytest.ini").write_text("[pytest]\nDJANGO_SETTINGS_MODULE = site_conf.ini\n")
    assert dj.declared_settings(tmp_path) == "site_conf.ini"
    assert dj.pytest_settings(tmp_path) is None  # pytest-django reads its ini itself


def test_a_django_suite_runs_under_the_settings_its_ci_declares(make_repo):
    pytest.importorskip("django")
    repo = django_project(make_repo, {
        "manage.py": MANAGE.replace("site_conf.settings", "site_conf.main"),
        "site_conf/main.py": SERVER_SETTINGS, ".github/workflows/ci.yml": WORKFLOW})
    proc, report, unit = run_unit_cli(repo)
    # Before: manage.py test under site_conf.main, which cannot be imported.
    assert unit["status"] == "ok", unit
    assert "Django's runner (manage.py test, site_conf.settings)" in unit["reason"]
    assert "3 test(s) run (2 passed, 1 failed" in unit["reason"], unit["reason"]
    # The code's own failure stays a finding under the right settings.
    fail = {f["title"]: f for f in report["findings"]}["Test fails: shop/tests.py::ItemTest::test_label"]
    assert fail["severity"] == "high" and fail["noise"] is None
    assert not any("DJANGO_DB_ENGINE" in f["message"] for f in report["findings"])
    assert proc.returncode == 1, proc.stdout + proc.stderr


HARNESS_MANAGE = '''#!/usr/bin/env python3
import os
import sys

sys.path.insert(0, os.path.join(os.path.dirname(__file__), os.path.pardir))

if __name__ == "__main__":
    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "settings")
    from django.core.management import execute_from_command_line
    execute_from_command_line(sys.argv)
'''

HARNESS_SETTINGS = '''SECRET_KEY = "test-only"
INSTALLED_APPS = ["django.contrib.contenttypes", "django.contrib.auth", "core"]
DATABASES = {"default": {"ENGINE": "django.db.backends.sqlite3", "NAME": ":memory:"}}
USE_TZ = True
DEFAULT_AUTO_FIELD = "django.db.models.AutoField"
'''

HARNESS_TESTS = '''from django.test import TestCase

from core.models import Item
from shoplib.labels import label


class ItemTest(TestCase):
    def test_saved(self):
        Item.objects.create(name="a")
        self.assertEqual(Item.objects.count(), 1)

    def test_label(self):
        self.assertEqual(label("b"), "b")
'''


def test_a_librarys_test_harness_manage_py_runs_from_the_root(make_repo, tmp_path):
    """django-import-export keeps its test site in ``tests/`` (manage.py,
    settings, the ``core`` app) and tox runs ``tests/manage.py test core``
    from the root. Before: ``tests/`` was a project of its own, built and
    run apart from the library ("package 'import_export' is not installed")."""
    pytest.importorskip("django")
    files = {"pyproject.toml": '[project]\nname = "shoplib"\nversion = "1"\n',
             "shoplib/__init__.py": "", "shoplib/labels.py": "def label(s):\n    return s.upper()\n",
             "tests/manage.py": HARNESS_MANAGE, "tests/settings.py": HARNESS_SETTINGS,
             "tests/core/__init__.py": "", "tests/core/models.py": MODELS,
             "tests/core/tests/__init__.py": "", "tests/core/tests/test_items.py": HARNESS_TESTS,
             "tests/scripts/helper.py": ""}
    assert dj.harness(make_repo(files, name="peek")) == "tests"
    repo = make_repo(files)
    assert dj.argv("py", [], repo)[1:3] == ["tests/manage.py", "test"]
    assert dj.argv("py", [], repo)[-1] == "core"
    assert dj.argv("py", ["tests/core/tests/test_items.py::ItemTest::test_label"], repo)[-1] == (
        "core.tests.test_items.ItemTest.test_label")
    _, report, unit = run_unit_cli(repo)
    assert unit["status"] == "ok", unit
    assert unit["reason"].startswith("2 test(s) run (1 passed, 1 failed"), unit["reason"]
    assert "Django's runner (manage.py test, settings)" in unit["reason"]
    (fail,) = [f for f in report["findings"] if f["role"] == "unit_tester"]
    assert fail["title"] == "Test fails: tests/core/tests/test_items.py::ItemTest::test_label"
    assert fail["file"] == "tests/core/tests/test_items.py" and fail["severity"] == "high"


TOX_DJANGO = """[tox]
envlist = py311

[testenv]
deps = coverage
setenv =
    PYTHONWARNINGS=all
commands =
    coverage run -m django test --settings=tests.settings {posargs}
"""

LIB_SETTINGS = HARNESS_SETTINGS.replace('"core"', '"shoplib"')
LIB_TESTS = HARNESS_TESTS.replace("core.models", "shoplib.models")


def test_the_settings_of_the_django_test_command_tox_runs_are_read(tmp_path):
    (tmp_path / "tests").mkdir()
    (tmp_path / "tests" / "__init__.py").write_text("")
    (tmp_path / "tests" / "settings.py").write_text(LIB_SETTINGS)
    (tmp_path / "tox.ini").write_text(TOX_DJANGO)
    assert dj.command_settings(tmp_path) == "tests.settings"
    assert dj.django_runner(tmp_path) == "tests.settings"  # no manage.py: Django's own command
    assert dj.argv("py", ["tests/test_items.py::ItemTest::test_label"], tmp_path)[:4] == [
        "py", "-m", "django", "test"]
    assert dj.argv("py", ["tests/test_items.py::ItemTest::test_label"], tmp_path)[-1] == (
        "tests.test_items.ItemTest.test_label")
    (tmp_path / "tox.ini").write_text(TOX_DJANGO.replace("tests.settings", "nowhere.settings"))
    assert dj.django_runner(tmp_path) is None  # not a module of the project
    (tmp_path / "tox.ini").unlink()
    (tmp_path / "noxfile.py").write_text(
        'import nox\n\n@nox.session\ndef tests(session):\n'
        '    session.run("django-admin", "test", "--settings", "tests.settings")\n')
    assert dj.command_settings(tmp_path) == "tests.settings"
    (tmp_path / "noxfile.py").unlink()
    (tmp_path / "Makefile").write_text(
        "lint:\n\tpython -m django test --settings=nowhere.x\n\n"
        "test:\n\tDJANGO_SETTINGS_MODULE=tests.settings python -m django test\n")
    assert dj.command_settings(tmp_path) == "tests.settings"  # the test target's, not lint's
    (tmp_path / "pyproject.toml").write_text(
        '[project]\nname = "x"\nversion = "1"\ndependencies = ["pytest-django"]\n')
    assert dj.django_runner(tmp_path) is None  # pytest-django's projects keep pytest
    assert dj.pytest_settings(tmp_path) == "tests.settings"  # under the settings tox uses


def test_a_library_whose_tox_runs_django_test_runs_its_suite(make_repo):
    """django-taggit: no manage.py; tox runs ``python -m django test
    --settings=tests.settings``. Before: pytest ran the suite without
    settings, every module "Django's settings are not loaded", nothing run."""
    pytest.importorskip("django")
    repo = make_repo({
        "pyproject.toml": '[project]\nname = "shoplib"\nversion = "1"\n',
        "tox.ini": TOX_DJANGO, "shoplib/__init__.py": "", "shoplib/models.py": MODELS,
        "shoplib/labels.py": "def label(s):\n    return s.upper()\n",
        "tests/__init__.py": "", "tests/settings.py": LIB_SETTINGS,
        "tests/test_items.py": LIB_TESTS})
    _, report, unit = run_unit_cli(repo)
    assert unit["status"] == "ok", unit
    assert unit["reason"].startswith("2 test(s) run (1 passed, 1 failed"), unit["reason"]
    assert "Django's runner (python -m django test, tests.settings)" in unit["reason"]
    (fail,) = [f for f in report["findings"] if f["role"] == "unit_tester"]
    assert fail["title"] == "Test fails: tests/test_items.py::ItemTest::test_label"
    assert fail["severity"] == "high" and fail["noise"] is None


def test_the_command_files_are_listed_and_read_once_a_run(tmp_path, monkeypatch):
    """The role asks for the runner, the settings, their label and the
    discovery pattern many times a run: before, each asked listed
    .github/workflows and read every command file again (twice in one
    declared_settings)."""
    (tmp_path / "tests").mkdir()
    (tmp_path / "tests" / "__init__.py").write_text("")
    (tmp_path / "tests" / "settings.py").write_text(LIB_SETTINGS)
    (tmp_path / "tox.ini").write_text(TOX_DJANGO)
    flows = tmp_path / ".github" / "workflows"
    flows.mkdir(parents=True)
    (flows / "ci.yml").write_text("env:\n  DJANGO_SETTINGS_MODULE: tests.settings\n")
    reads: list[str] = []
    listings: list[str] = []
    real_read, real_iterdir = dj.read_head, Path.iterdir
    # (tox.ini is also read for its [pytest] and setenv: those are other reads)
    commands = {"ci.yml", "Makefile", "justfile", "noxfile.py", "package.json", "gulpfile.js"}
    monkeypatch.setattr(dj, "read_head", lambda p, n: (
        reads.append(Path(p).name) if Path(p).name in commands else None) or real_read(p, n))
    monkeypatch.setattr(Path, "iterdir", lambda self: (
        listings.append(self.name) if self == flows else None) or real_iterdir(self))
    for _ in range(3):
        assert dj.django_runner(tmp_path) == "tests.settings"
        assert dj.declared_settings(tmp_path) == "tests.settings"
        assert dj.discovery_pattern(tmp_path) == "test*.py"
        assert dj.runner_label(tmp_path) == "python -m django test"
    assert listings == ["workflows"], listings
    assert sorted(reads) == sorted(commands), reads
    # A file changed since is read again (a sandbox is a checkout of another state).
    (tmp_path / "tox.ini").write_text(TOX_DJANGO.replace("tests.settings", "nowhere.settings"))
    (flows / "ci.yml").write_text("env:\n  DJANGO_SETTINGS_MODULE: nowhere.else\n")
    assert dj.command_settings(tmp_path) is None
    assert dj.declared_settings(tmp_path) is None
    assert sorted(reads) == sorted([*commands, *commands]), reads
