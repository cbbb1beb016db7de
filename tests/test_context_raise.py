"""Context that proves a finding worse than its tool rated it, and the one
bug that hid nothing-secrets as findings: each rule both ways, with real
bandit on real files.

- eval/exec, pickle, yaml.load of web request data: high (bandit: medium);
  the same calls on a function's parameter or on the module's own code keep
  bandit's rating;
- a literal assigned to a signing key's setting (SECRET_KEY = "aaaaaaa") or
  a password compared against a literal: high, however weak the value looks;
  a name that holds *about* a key (SECRET_KEY_FILE) and a token type stay
  what they were;
- an empty value bandit calls a password (reset_token = ''): info noise; a
  value next to it stays shown.
"""

from __future__ import annotations

import pytest

from superqode_ls.models import Severity
from superqode_ls.qe.noise import FileLines, filter_findings
from superqode_ls.qe.report import compute_verdict
from superqode_ls.qe.roles._secrets import built_in_credential
from superqode_ls.qe.roles.base import tool_path
from superqode_ls.qe.roles.security import SecurityTester
from tests.role_helpers import make_ctx, run_role
from tests.test_findings_context import _at

needs_bandit = pytest.mark.skipif(tool_path("bandit") is None, reason="bandit not installed")


def found_by_security(repo, extra=()):
    """security_tester's findings on ``repo`` (and ``extra``) after the noise filter."""
    findings = [*run_role(SecurityTester(), make_ctx(repo)).findings, *extra]
    return filter_findings(findings, read_line=FileLines(repo)).findings


_found = found_by_security


@needs_bandit
def test_request_data_run_or_deserialised_is_high_and_a_parameter_keeps_its_rating(make_repo):
    repo = make_repo({
        "app/views.py": (
            "import base64\nimport pickle\n\nimport yaml\n\n\n"
            "def insec_des(request):\n"
            "    token = request.COOKIES.get('token')\n"
            "    token = base64.b64decode(token)\n"
            "    return pickle.loads(token)\n\n\n"  # 10
            "def cmd(request):\n"
            "    val = request.POST.get('val')\n"
            "    return eval(val)\n\n\n"  # 15
            "def upload(request):\n"
            "    f = request.FILES['file']\n"
            "    return yaml.load(f, yaml.Loader)\n\n\n"  # 20
            "def handler(handler):\n"
            "    params = handler.params\n"
            "    obj = params.get('object', '')[0]\n"
            "    return pickle.loads(base64.urlsafe_b64decode(obj))\n\n\n"  # 26
            "def load(target):\n"
            "    return eval(target)\n\n\n"  # 30
            "def restore(blob):\n"
            "    return pickle.loads(blob)\n\n\n"  # 34
            "def copy(request):\n"
            "    return pickle.loads(pickle.dumps(request))\n"  # 38
        ),
    })
    found = _found(repo)
    for line, rule in ((10, "B301"), (15, "B307"), (20, "B506"), (26, "B301")):
        (f,) = _at(found, "app/views.py", line, rule)
        assert f.severity is Severity.high and f.noise is None, (line, f)
        assert "request data" in (f.severity_reason or "")
    # A parameter is not request data: bandit's medium stands (bottle's
    # load("mod:obj") of an import string).
    (param,) = _at(found, "app/views.py", 30, "B307")
    assert param.severity is Severity.medium and "request data" not in (param.severity_reason or "")
    (blob,) = _at(found, "app/views.py", 34, "B301")
    assert blob.severity is Severity.medium
    # A round trip copies the program's own object (requests' and httpx's
    # tests pickle a Request): nothing was received.
    (copy,) = _at(found, "app/views.py", 38, "B301")
    assert copy.severity is Severity.medium
    assert compute_verdict(found) == "fail"


@needs_bandit
def test_a_literal_signing_key_or_compared_password_is_high(make_repo):
    repo = make_repo({
        "app/main.py": (
            "from flask import Flask\n\n"
            "app = Flask(__name__)\n"
            "app.config['SECRET_KEY'] = 'aaaaaaa'\n"  # 4
            "app.secret_key = 'your-secret-key-here'\n"  # 5
            "app.config['JWT_SECRET_KEY'] = 'dvga'\n"  # 6
            "SECRET_KEY_FILE = '/etc/app/secret.key'\n"  # 7
            'TOKEN_TYPE = "bearer"\n\n\n'  # 8
            "def login(username, password):\n"
            "    if username == 'admin' and password == 'admin_pass':\n"  # 12
            "        return True\n"
            "    return password == 'reaper'\n\n\n"  # 14
            "def render(pass_arg):\n"
            '    return pass_arg == "environment"\n'  # 18
        ),
    })
    found = _found(repo)
    for line in (4, 5, 6, 12, 14):
        (f,) = _at(found, "app/main.py", line, "B105")
        assert f.severity is Severity.high and f.noise is None, (line, f)
    # What holds about a key, a token type and "pass" the verb stay what
    # they were: not raised, not worth acting on.
    for line in (7, 8, 18):
        for f in _at(found, "app/main.py", line, "B105"):
            assert f.severity.rank < Severity.high.rank or f.noise, (line, f)
    (typ,) = _at(found, "app/main.py", 8, "B105")
    assert typ.noise
    assert compute_verdict(found) == "fail"


def test_built_in_credential_leaves_slots_and_about_names_alone():
    assert built_in_credential("${KEY}", "SECRET_KEY = '${KEY}'") is None
    assert built_in_credential("APP_KEY", "SECRET_KEY = 'APP_KEY'") is None  # a variable's name
    assert built_in_credential("x1", "bypass == 'x1'") is None  # "bypass" names no password
    assert built_in_credential("s3cr", "cookie_secret = 's3cr'")
    assert built_in_credential("hunter2", "if user_password != 'hunter2':")
    # httpx reads the password from stdin when it is "-": a marker
    assert built_in_credential("-", 'if password == "-":') is None
    assert built_in_credential("*", 'if password == "*":') is None


@needs_bandit
def test_an_empty_password_value_is_noise_and_a_real_one_beside_it_stays(make_repo):
    repo = make_repo({
        "app/reset.py": (
            "def reset(profile):\n"
            "    profile.reset_token = ''\n"  # 2
            "    profile.save()\n"
            "    reset_token = 'Zq8vN2kLp0Xw'\n"  # 4
            "    return reset_token\n"
        ),
    })
    found = _found(repo)
    (empty,) = _at(found, "app/reset.py", 2, "B105")
    assert empty.noise and "empty" in empty.noise and empty.severity is Severity.info
    (real,) = _at(found, "app/reset.py", 4, "B105")
    assert real.noise is None and real.severity is Severity.high
