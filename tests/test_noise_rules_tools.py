"""Noise rules judged on tools and libraries (rich-cli, the full-stack
FastAPI template): each rule with the finding that must become noise and the
neighbour that must stay worth acting on, on real files and real bandit /
ruff output."""

from __future__ import annotations

import pytest

from superqode_ls.models import Severity
from superqode_ls.qe.noise import FileLines, filter_findings
from superqode_ls.qe.roles._secrets import built_in_credential, scan_text
from superqode_ls.qe.roles.base import tool_path
from superqode_ls.qe.roles.lint import LintTester
from superqode_ls.qe.roles.security import SecurityTester
from tests.role_helpers import make_ctx, run_role

needs_bandit = pytest.mark.skipif(tool_path("bandit") is None, reason="bandit not installed")
needs_ruff = pytest.mark.skipif(tool_path("ruff") is None, reason="ruff not installed")


def _filtered(repo, findings):
    return filter_findings(findings, read_line=FileLines(repo), threshold=0.7).findings


def _at(findings, file, line, rule):
    return [f for f in findings if f.file == file and f.range and f.range.start_line == line
            and (f.rule_id == rule or rule in f.related_rules)]


@needs_bandit
def test_eval_of_a_cli_commands_own_argument_is_noise_a_files_contents_stays(make_repo):
    # rich-cli's ``rich --inspect "EXPR"``: the tool's feature, like python -c.
    repo = make_repo({"tool/__main__.py": (
        "import click\n\n\n"
        "@click.command()\n"
        "@click.argument('resource')\n"
        "@click.option('--inspect', is_flag=True)\n"
        "def main(resource, inspect):\n"
        "    if inspect:\n"
        "        data = eval(resource)\n"
        "    else:\n"
        "        data = eval(open(resource).read())\n"
        "    print(data)\n\n\n"
        "def helper(expr):\n"
        "    return eval(expr)\n"
    )})
    found = _filtered(repo, run_role(SecurityTester(), make_ctx(repo)).findings)
    (own,) = _at(found, "tool/__main__.py", 9, "B307")
    assert own.noise and "operator already controls (a command-line command" in own.noise
    assert own.severity is Severity.low
    # a file's contents may come from anyone; a plain function's parameter
    # is whoever calls it: both stay
    (contents,) = _at(found, "tool/__main__.py", 11, "B307")
    assert contents.noise is None and contents.severity is Severity.medium
    (param,) = _at(found, "tool/__main__.py", 16, "B307")
    assert param.noise is None


@needs_ruff
def test_redefinition_of_an_unused_import_is_one_finding_a_redefined_function_stays(make_repo):
    repo = make_repo({"tool/cli.py": (
        "from operator import itemgetter\n"
        "import sys\n\n\n"
        "def rows(data):\n"
        "    from operator import itemgetter\n"
        "    return sorted(data, key=itemgetter(0))\n\n\n"
        "def render():\n"
        "    return sys.argv\n\n\n"
        "def render():\n"
        "    return sys.argv[1:]\n"
    )})
    found = _filtered(repo, run_role(LintTester(), make_ctx(repo)).findings)
    (unused,) = _at(found, "tool/cli.py", 1, "F401")
    assert unused.noise is None
    (again,) = _at(found, "tool/cli.py", 6, "F811")
    assert again.noise and "F401 on line 1" in again.noise and again.severity is Severity.info
    (func,) = _at(found, "tool/cli.py", 14, "F811")
    assert func.noise is None


def test_a_value_that_says_change_this_is_a_placeholder_a_signing_key_stays():
    # full-stack-fastapi-template's committed .env: the app refuses
    # "changethis" outside a local environment.
    assert scan_text("POSTGRES_PASSWORD=changethis\n", config=True) == []
    assert scan_text("POSTGRES_PASSWORD=change_this\n", config=True) == []
    # isso's shipped config: the value asks the admin to choose one.
    assert scan_text("password = please_choose_a_strong_password\n", config=True) == []
    assert scan_text("password = enter_your_password_here\n", config=True) == []
    (chosen,) = scan_text("password = choose_wisely_42\n", config=True)  # no article: a value
    assert chosen.rule.id == "secret-config-password"
    (real,) = scan_text("POSTGRES_PASSWORD=Zq8kChangeThisW4\n", config=True)
    assert real.rule.id == "secret-config-password"
    # Java's default keystore password is a real default, no placeholder
    (keystore,) = scan_text("DB_PASSWORD=changeit\n", config=True)
    assert keystore.rule.id == "secret-config-password"
    # a signing key's setting is the key the app signs with whatever it says
    assert built_in_credential("changethis", 'SECRET_KEY = "changethis"') is not None


@needs_ruff
def test_bare_raise_in_a_helper_called_only_from_handlers_is_noise_elsewhere_stays(make_repo):
    # httpie's main(): handle_generic_error(e) re-raises under --traceback
    repo = make_repo({"tool/core.py": (
        "def main(run, traceback):\n"
        "    def handle_error(e):\n"
        "        print(e)\n"
        "        if traceback:\n"
        "            raise\n\n"
        "    try:\n"
        "        run()\n"
        "    except KeyError as e:\n"
        "        handle_error(e)\n"
        "    except Exception as e:\n"
        "        handle_error(e)\n\n\n"
        "def check(value):\n"
        "    if not value:\n"
        "        raise\n\n\n"
        "def caller(v):\n"
        "    try:\n"
        "        check(v)\n"
        "    except ValueError:\n"
        "        check(None)\n"
    )})
    found = _filtered(repo, run_role(LintTester(), make_ctx(repo)).findings)
    (helper,) = _at(found, "tool/core.py", 5, "PLE0704")
    assert helper.noise and "only from except handlers" in helper.noise
    assert helper.severity is Severity.info
    # check() is also called outside a handler: the raise fails there
    (plain,) = _at(found, "tool/core.py", 17, "PLE0704")
    assert plain.noise is None and plain.severity is Severity.high
