"""Test and example code that no folder name gives away, proved by the
project's own files (qe/noise_testcode.py through the path classes): a
Django project the tests run in, factory_boy factories, a runnable example
that asserts its results. Each beside its twin that stays shown: the same
code with no proof, and a provider's token in the test code. Real security
role output on real files, the whole noise filter."""

from __future__ import annotations

from tests.test_noise_idioms import _at, needs_bandit
from tests.test_noise_project import _kept, _security

# modoboa's test_project: the Django project its tox.ini runs the tests in
SETTINGS = """SECRET_KEY = "!8o(-dbbl3e+*bh7nx-^xysdt)1gso*%@4ze4-9_9o+i&t--u_"
INSTALLED_APPS = ["app"]
AWS = "AKIAQ7XKZ3M5VR2N4WHT"
"""
MANAGE = """import os
import sys

if __name__ == "__main__":
    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "test_project.settings")
    from django.core.management import execute_from_command_line
    execute_from_command_line(sys.argv)
"""
TOX = """[tox]
envlist = py311

[testenv]
changedir = test_project
commands =
    python manage.py test app
"""


def _site(make_repo, **extra):
    return make_repo({"app/__init__.py": "", "app/models.py": "X = 1\n",
                      "test_project/manage.py": MANAGE,
                      "test_project/test_project/__init__.py": "",
                      "test_project/test_project/settings.py": SETTINGS, **extra})


@needs_bandit
def test_the_django_project_the_tests_run_in_is_test_code(make_repo):
    found = _security(_site(make_repo, **{"tox.ini": TOX}))
    for f in _at(found, "test_project/test_project/settings.py", 1, "B105"):
        assert f.noise and "in tests code: the Django project the tests run in" in f.noise, \
            f.noise
        assert "tox.ini's [testenv]" in f.noise and "path:tests" in f.tags
    # a provider's token stays shown in it
    _kept(found, "test_project/test_project/settings.py", 3, "secret-aws-access-key-id")


@needs_bandit
def test_a_django_project_no_test_configuration_runs_in_stays_shown(make_repo):
    bare = _security(_site(make_repo))
    _kept(bare, "test_project/test_project/settings.py", 1, "B105")
    # the shipped package imports it: it is the product's
    used = _security(_site(make_repo, **{
        "tox.ini": TOX, "app/models.py": "from test_project import settings\n"}))
    _kept(used, "test_project/test_project/settings.py", 1, "B105")


# modoboa's admin/factories.py: factory_boy factories and the test data they make
FACTORIES = """import factory

from . import models


class UserFactory(factory.django.DjangoModelFactory):
    class Meta:
        model = models.User

    username = factory.Sequence(lambda n: f"user{n}")


def populate_database():
    UserFactory(username="admin@test.com", password="Kq7wZr2mXp9Lv4")
"""
SEED = """from . import models


def populate_database():
    models.User(username="admin@test.com", password="Kq7wZr2mXp9Lv4")
"""


@needs_bandit
def test_factory_boy_factories_are_fixtures_a_seed_without_them_stays(make_repo):
    found = _security(make_repo({"app/__init__.py": "from flask import Flask\n",
                                 "app/models.py": "User = dict\n",
                                 "app/factories.py": FACTORIES, "app/seed.py": SEED}))
    hits = _at(found, "app/factories.py", 14, "B106")
    for f in hits:
        assert f.noise and "in fixtures code: factory_boy factories" in f.noise, f.noise
    _kept(found, "app/seed.py", 5, "B106")


# redis-py's doctests/: examples run against a local server, checking themselves
EXAMPLE = """import app

r = app.Client()
ok = r.auth(password="Kq7wZr2mXp9Lv4")
assert ok
"""


@needs_bandit
def test_a_runnable_example_that_asserts_is_example_code(make_repo):
    found = _security(make_repo({
        "app/__init__.py": "from flask import Flask\n\n\nclass Client:\n"
                           "    def auth(self, password):\n        return True\n",
        "doctests/cmds.py": EXAMPLE,
        # the same call in a script that checks nothing: an operator's script
        "scripts/login.py": EXAMPLE.replace("assert ok\n", "print(ok)\n")}))
    for f in _at(found, "doctests/cmds.py", 4, "B106"):
        assert f.noise and "in examples code: a runnable example in doctests/" in f.noise, f.noise
    _kept(found, "scripts/login.py", 4, "B106")


# celery's layout: pytest collects t/unit/, the t/ around it holds the
# integration tests and their helpers; the product never imports t.
HELPER = 'import subprocess\n\n\ndef start(cmd):\n    return subprocess.call(cmd, shell=True)\n'


def _collected(make_repo, testpaths, **extra):
    return make_repo({"pyproject.toml": f'[tool.pytest.ini_options]\ntestpaths = "{testpaths}"\n',
                      "mypkg/__init__.py": "", "mypkg/core.py": "X = 1\n",
                      "t/__init__.py": "", "t/unit/__init__.py": "",
                      "t/unit/conftest.py": "", "t/unit/test_core.py": "def test_x():\n    pass\n",
                      "t/integration/__init__.py": "",
                      "t/integration/test_run.py": "def test_y():\n    pass\n",
                      "t/integration/helpers.py": HELPER, **extra})


@needs_bandit
def test_the_tree_pytest_is_told_to_collect_is_test_code(make_repo):
    found = _security(_collected(make_repo, "t/unit/"))
    hits = _at(found, "t/integration/helpers.py", 5, "B602")
    assert hits
    for f in hits:
        assert f.noise and "in tests code: the folder of pytest's testpaths (t/unit)" in f.noise, \
            f.noise


@needs_bandit
def test_a_collected_tree_that_is_mostly_product_or_imported_stays_shown(make_repo):
    # tests kept beside the code: testpaths names the product package
    beside = _security(_collected(make_repo, "mypkg", **{
        "mypkg/helpers.py": HELPER, "mypkg/test_core.py": "def test_x():\n    pass\n",
        "mypkg/models.py": "Y = 2\n", "mypkg/views.py": "Z = 3\n"}))
    _kept(beside, "mypkg/helpers.py", 5, "B602")
    # the product imports the tree: it is the product's
    used = _security(_collected(make_repo, "t/unit/", **{
        "mypkg/core.py": "from t.integration import helpers\n"}))
    _kept(used, "t/integration/helpers.py", 5, "B602")
    # no testpaths: no proof
    bare = _security(_collected(make_repo, "t/unit/", **{"pyproject.toml": "[project]\nname = 'p'\n"}))
    _kept(bare, "t/integration/helpers.py", 5, "B602")
