"""Findings a framework's convention or the test environment explains are
noise, each rule both ways (the red-team case beside it stays worth acting
on): graphene resolvers (PLW0211), a bare except that answers the error
(E722), a package the test environment lacks (collection-error), a behave
harness under features/, a message that a password rule takes for a
password. On real files, with real ruff and bandit where the rule is about
their output."""

from __future__ import annotations

import pytest

from superqode_ls.models import Evidence, Finding, Range, Severity
from superqode_ls.qe.noise import FileLines, filter_findings
from superqode_ls.qe.roles._secrets import not_a_secret
from superqode_ls.qe.roles._web import web_patterns
from superqode_ls.qe.roles.base import tool_path
from superqode_ls.qe.roles.lint import LintTester
from superqode_ls.qe.roles.security import SecurityTester
from tests.role_helpers import lint_finding, make_ctx, run_role

needs_ruff = pytest.mark.skipif(tool_path("ruff") is None, reason="ruff not installed")
needs_bandit = pytest.mark.skipif(tool_path("bandit") is None, reason="bandit not installed")


def _filtered(repo, findings):
    return filter_findings(findings, read_line=FileLines(repo)).findings


def _at(findings, file, line, rule):
    return [f for f in findings if f.file == file and f.range and f.range.start_line == line
            and (f.rule_id == rule or rule in f.related_rules)]


_finding = lint_finding


GRAPHENE = """import graphene


class UserObject(graphene.ObjectType):
    username = graphene.String()

    @staticmethod
    def resolve_username(self, info, **kwargs):
        return self.username


class Helper:
    @staticmethod
    def size(self):
        return len(self)
"""


@needs_ruff
def test_graphene_resolver_is_noise_and_another_static_self_stays(make_repo):
    repo = make_repo({"schema.py": GRAPHENE,
                      "pyproject.toml": "[tool.ruff.lint]\nselect = ['PLW0211']\n"})
    out = run_role(LintTester(), make_ctx(repo))
    got = _filtered(repo, out.findings)
    resolver = _at(got, "schema.py", 8, "PLW0211")
    other = _at(got, "schema.py", 14, "PLW0211")
    assert resolver and resolver[0].noise and "graphene" in resolver[0].noise
    assert other and other[0].noise is None


BARE = """import logging


def handler(data):
    try:
        return int(data)
    except:
        logging.exception("bad input")
        return None


def poll(queue):
    while True:
        try:
            queue.get()
        except:
            continue
"""


def test_bare_except_that_answers_is_noise_one_that_swallows_in_a_loop_stays(make_repo):
    repo = make_repo({"app.py": BARE})
    got = _filtered(repo, [_finding("E722", "app.py", 7, severity=Severity.low),
                           _finding("E722", "app.py", 16, severity=Severity.low)])
    assert _at(got, "app.py", 7, "E722")[0].noise
    assert _at(got, "app.py", 16, "E722")[0].noise is None


def _collection_error(module: str) -> Finding:
    msg = ("ImportError while importing test module '/x/tests/test_main.py'.\nTraceback:\n"
           f"tests/test_main.py:4: in <module>\n    from {module} import thing")
    return _finding("collection-error", "tests/test_main.py", 4, role="unit_tester",
                    tool="pytest", category="tests", severity=Severity.high, message=msg,
                    evidence=[Evidence(message=msg, file="tests/test_main.py", line=4)])


def test_missing_third_party_package_is_an_environment_problem_own_module_stays(make_repo):
    repo = make_repo({"app/__init__.py": "", "app/main.py": "x = 1\n",
                      "tests/test_main.py": "from fastapi.testclient import thing\n"})
    got = _filtered(repo, [_collection_error("fastapi.testclient")])
    assert got[0].noise and "fastapi" in got[0].noise and got[0].severity is Severity.info
    # the project's own module failing to import is about the code
    got = _filtered(repo, [_collection_error("app.helpers")])
    assert got[0].noise is None and got[0].severity is Severity.high


def test_behave_harness_is_test_code_a_features_module_of_the_product_is_not(make_repo):
    repo = make_repo({"features/steps/login.py": "x = 1\n", "features/environment.py": "y = 1\n",
                      "app/features/flags.py": "z = 1\n"})
    findings = [_finding("F811", "features/steps/login.py", 1, severity=Severity.low),
                _finding("B602", "features/environment.py", 1, category="security",
                         severity=Severity.high),
                _finding("F811", "app/features/flags.py", 1, severity=Severity.low)]
    got = _filtered(repo, findings)
    steps = _at(got, "features/steps/login.py", 1, "F811")[0]
    env = _at(got, "features/environment.py", 1, "B602")[0]
    product = _at(got, "app/features/flags.py", 1, "F811")[0]
    assert steps.noise and "tests" in steps.noise
    assert env.noise and env.severity is Severity.medium
    assert product.noise is None


def test_a_message_is_no_password_a_password_with_punctuation_is():
    assert not_a_secret("Updated.", "'Password': 'Updated.'")
    assert not_a_secret("Password changed!", "'password': 'Password changed!'")
    assert not_a_secret("hunter2!", "'password': 'hunter2!'") is None
    assert not_a_secret("S3cret.", "'password': 'S3cret.'") is None
    import ast
    source = "def f():\n    return {'Password': 'Updated.'}\ndb = {'password': 'Adm1n!'}\n"
    hits = [(r, n.lineno) for n, r, *_ in web_patterns(ast.parse(source), "app.py", source)]
    assert hits == [("hardcoded-db-password", 3)]


@needs_bandit
def test_security_role_response_message_is_noise(make_repo):
    source = ("def update(user):\n    user.save()\n"
              "    return {'status': 'success', 'Password': 'Updated.'}\n"
              "DB = {'password': 'Adm1n-2024'}\n")
    repo = make_repo({"users.py": source})
    got = _filtered(repo, run_role(SecurityTester(), make_ctx(repo)).findings)
    assert all(f.noise for f in got if f.range and f.range.start_line == 3)
    assert any(f.noise is None and f.severity.at_least(Severity.high)
               for f in got if f.range and f.range.start_line == 4)


ARGPARSE = """import argparse
import os

parser = argparse.ArgumentParser()
parser.add_argument('--port', type=int, default=os.getenv('PORT', 65413))
parser.add_argument('--ssl', action='store_true', default=os.getenv('SSL', 0))
"""


@needs_ruff
def test_argparse_converted_default_is_noise_a_store_true_one_stays(make_repo):
    repo = make_repo({"cli.py": ARGPARSE,
                      "pyproject.toml": "[tool.ruff.lint]\nselect = ['PLW1508']\n"})
    got = _filtered(repo, run_role(LintTester(), make_ctx(repo)).findings)
    converted = _at(got, "cli.py", 5, "PLW1508")
    kept = _at(got, "cli.py", 6, "PLW1508")
    assert converted and converted[0].noise and "argparse" in converted[0].noise
    assert kept and kept[0].noise is None


@needs_ruff
def test_startapp_stub_import_is_noise_another_unused_import_stays(make_repo):
    repo = make_repo({
        "shop/__init__.py": "",
        "shop/models.py": "from django.db import models\nimport os\n\n# Create your models here.\n",
        "shop/util.py": "from django.db import models\n",
        "pyproject.toml": "[tool.ruff.lint]\nselect = ['F401']\n",
    })
    got = _filtered(repo, run_role(LintTester(), make_ctx(repo)).findings)
    assert _at(got, "shop/models.py", 1, "F401")[0].noise
    assert _at(got, "shop/models.py", 2, "F401")[0].noise is None
    assert _at(got, "shop/util.py", 1, "F401")[0].noise is None


def test_a_cut_traceback_still_names_the_missing_package_by_the_flagged_import(make_repo):
    """pytest's report of a conftest that fails to import may end inside
    importlib, before the ModuleNotFoundError: the flagged line names it."""
    repo = make_repo({"app/__init__.py": "", "app/db.py": "x = 1\n",
                      "app/tests/conftest.py": "import os\n\nfrom fastapi.testclient import C\n"
                                               "from app.db import x\n"})
    msg = ("/usr/lib/python3.11/importlib/__init__.py:126: in import_module\n"
           "<frozen importlib._bootstrap>:1147: in _find_and_load_unlocked")
    cut = _finding("collection-error", "app/tests/conftest.py", 3, role="unit_tester",
                   tool="pytest", category="tests", severity=Severity.high, message=msg)
    own = cut.model_copy(update={"id": "own", "range": Range(start_line=4, start_col=1)})
    got = {f.id: f for f in _filtered(repo, [cut, own])}
    assert got[cut.id].noise and "fastapi" in got[cut.id].noise
    assert got["own"].noise is None


FASTAPI = """from datetime import datetime

from fastapi import Depends, Query
from sqlalchemy.orm import Session


def get_db():
    return None


class RoleChecker:
    def __init__(self, roles):
        self.roles = roles


def items(
    db: Session = Depends(get_db),
    q: list = Query(None),
    auth=Depends(RoleChecker(["chef"])),
    when: datetime = datetime.now(),
):
    return [db, q, when]
"""


@needs_ruff
def test_fastapi_parameter_defaults_are_noise_another_call_stays(make_repo):
    repo = make_repo({"api.py": FASTAPI,
                      "pyproject.toml": "[tool.ruff.lint]\nselect = ['B008']\n"})
    got = _filtered(repo, run_role(LintTester(), make_ctx(repo)).findings)
    b008 = sorted((f.range.start_line, f.noise) for f in got if f.rule_id == "B008")
    assert len(b008) == 4
    assert b008[0][1] and b008[1][1] and b008[2][1] and b008[3][1] is None


def test_a_bound_query_parameter_is_no_connection_password():
    import ast
    source = ("def login(db, u, p):\n"
              "    return db.execute('SELECT * FROM users WHERE username=:username "
              "AND password=:password', {'username': u, 'password': p})\n"
              "DSN = 'host=db user=app password=hunter2-prod'\n")
    hits = [(r, n.lineno) for n, r, *_ in web_patterns(ast.parse(source), "app.py", source)]
    assert ("hardcoded-db-password", 2) not in hits
    assert ("hardcoded-db-password", 3) in hits


def test_an_import_of_a_name_the_installed_version_lacks_is_not_called_a_missing_package(
        make_repo):
    """``from wtforms import TextField`` under wtforms 3 (TextField was
    removed): the package is installed, so the failure is the code's (or its
    unpinned dependency's API change, which the unit role names): it stays a
    finding; a truly missing package keeps its setup label."""
    repo = make_repo({"tests/test_forms.py": "from wtforms import TextField\n",
                      "tests/test_mail.py": "import email_validator\n"})
    stale = _finding("collection-error", "tests/test_forms.py", 1, role="unit_tester",
                     tool="pytest", category="tests", severity=Severity.high,
                     message=("ImportError while importing test module\nE   ImportError: cannot "
                              "import name 'TextField' from 'wtforms' (/venv/wtforms/__init__.py)"))
    missing = _finding("collection-error", "tests/test_mail.py", 1, role="unit_tester",
                       tool="pytest", category="tests", severity=Severity.high,
                       message=("ImportError while importing test module\nE   "
                                "ModuleNotFoundError: No module named 'email_validator'"))
    got = {f.file: f for f in _filtered(repo, [stale, missing])}
    assert got["tests/test_forms.py"].noise is None
    assert "lacks the package 'email_validator'" in got["tests/test_mail.py"].noise
