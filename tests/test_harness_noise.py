"""Noise kinds set 4's judgement showed (after it, not tuned blind), each
both ways: an attack script of a vulnerable application is test code (the
application's own module of that name is not), a dotted path to where a
token is read is no secret (a password with a dot is), and a Python 2
file's syntax errors are one cause (a Python 3 file's all stay)."""

from __future__ import annotations

import functools

from superqode_ls.models import Severity
from superqode_ls.qe.noise import FileLines, filter_findings
from superqode_ls.qe.roles._secrets import not_a_secret
from tests.role_helpers import lint_finding


def _filtered(repo, findings):
    return filter_findings(findings, read_line=FileLines(repo)).findings


_finding = functools.partial(lint_finding, severity=Severity.high)


def _one(findings, file, line):
    return next(f for f in findings if f.file == file and f.range.start_line == line)


def test_an_exploit_script_is_test_code_the_apps_module_is_not(make_repo):
    repo = make_repo({"targets/web/exploits/exploit_all.py": "x = 1\n",
                      "poc/run.py": "x = 1\n", "python/Mako/exploit.py": "x = 1\n",
                      "app/exploitation.py": "x = 1\n", "traffic_generator.py": "x = 1\n",
                      "locustfile.py": "x = 1\n", "app/traffic.py": "x = 1\n"})
    sec = {"category": "security", "tool": "superqode-patterns", "role": "security_tester"}
    findings = [_finding("hardcoded-db-password", "targets/web/exploits/exploit_all.py", 1, **sec),
                _finding("hardcoded-db-password", "poc/run.py", 1, **sec),
                _finding("hardcoded-db-password", "python/Mako/exploit.py", 1, **sec),
                _finding("hardcoded-db-password", "app/exploitation.py", 1, **sec),
                _finding("hardcoded-db-password", "traffic_generator.py", 1, **sec),
                _finding("hardcoded-db-password", "locustfile.py", 1, **sec),
                _finding("hardcoded-db-password", "app/traffic.py", 1, **sec)]
    got = _filtered(repo, findings)
    for rel in ("targets/web/exploits/exploit_all.py", "poc/run.py", "python/Mako/exploit.py",
                "traffic_generator.py", "locustfile.py"):
        f = _one(got, rel, 1)
        assert f.noise and "tests" in f.noise and f.severity is Severity.medium
    assert _one(got, "app/exploitation.py", 1).noise is None
    assert _one(got, "app/traffic.py", 1).noise is None


def test_a_dotted_path_is_no_secret_a_dotted_password_may_be():
    assert not_a_secret("body.access_token", '"grace_token": "body.access_token"')
    assert not_a_secret("response.data.token", 'token = "response.data.token"')
    assert not_a_secret("Prod.Key9x7", '"api_key": "Prod.Key9x7"') is None
    assert not_a_secret("hunter2.secret", '"password": "hunter2.secret"') is None


PY2 = 'import os\n\nprint "start"\nprint "x"\nif os.name:\n    print os.name\n'
PY3 = "def f(:\n    pass\nx = = 1\n"


def test_a_python2_files_syntax_errors_are_one_a_python3_files_all_stay(make_repo):
    repo = make_repo({"tools/old.py": PY2, "app/broken.py": PY3})
    findings = [_finding("invalid-syntax", "tools/old.py", n, category="syntax") for n in (3, 4, 6)]
    findings += [_finding("invalid-syntax", "app/broken.py", n, category="syntax") for n in (1, 3)]
    got = _filtered(repo, findings)
    assert _one(got, "tools/old.py", 3).noise is None
    for n in (4, 6):
        f = _one(got, "tools/old.py", n)
        assert f.noise and "line 3" in f.noise and "Python 2" in f.noise
    assert all(_one(got, "app/broken.py", n).noise is None for n in (1, 3))


RUNS = """import subprocess


def grep(name):
    res = subprocess.run(["ps"], capture_output=True)
    return res.stdout


def fire(cmd):
    subprocess.run(cmd)


def keep(cmd):
    out = subprocess.run(cmd)
    return out
"""


def test_a_run_whose_result_is_read_is_style_a_dropped_one_stays(make_repo):
    repo = make_repo({"app/tools.py": RUNS})
    findings = [_finding("PLW1510", "app/tools.py", n, severity=Severity.medium)
                for n in (5, 10, 14)]
    got = _filtered(repo, findings)
    assert _one(got, "app/tools.py", 5).noise
    assert _one(got, "app/tools.py", 10).noise is None
    assert _one(got, "app/tools.py", 14).noise is None


# Round 5, tuned on set 4's radware-vulnerable-api-application (not blind).
def test_words_joined_by_dashes_are_a_label_a_passphrase_or_signing_key_is_not():
    from superqode_ls.qe.roles._secrets import scan_text
    assert not_a_secret("legacy-detour", '    "legacyToken": "legacy-detour"')
    assert not_a_secret("read-only-mode", 'api_token = "read-only-mode"')
    # a passphrase held by a password's name, a signing key, a generated token
    assert not_a_secret("correct-horse-battery-staple",
                        'password = "correct-horse-battery-staple"') is None
    assert not_a_secret("shared-signing-words",
                        'app.config["JWT_SECRET"] = "shared-signing-words"') is None
    assert not_a_secret("xoxb-legacy-4f9Qz", '"legacyToken": "xoxb-legacy-4f9Qz"') is None
    assert not_a_secret("k9x-detour-Q7", '"legacyToken": "k9x-detour-Q7"') is None
    assert scan_text('{\n  "legacyToken": "legacy-detour"\n}\n') == []
    hits = scan_text('{\n  "legacyToken": "Zq8-detour-w4PxL2"\n}\n')
    assert [h.rule.id for h in hits] == ["secret-generic"]


def test_recorded_traffic_is_test_data_a_provider_token_in_it_stays(make_repo):
    files = {"Flows/Legit/michael.flow.json": "{}\n", "Flows/Attack/BLA_Checkout.json": "{}\n",
             "captures/login.har": "{}\n", "api.postman_collection.json": "{}\n",
             "app/flows.json": "{}\n", "flows/engine.py": "x = 1\n", "prepopulated_data.json": "{}\n"}
    repo = make_repo(files)
    sec = {"category": "secrets", "tool": "superqode-secrets", "role": "security_tester"}
    findings = [_finding("secret-generic", rel, 1, **sec) for rel in files]
    findings.append(_finding("secret-github-token", "Flows/Legit/admin.flow.json", 1,
                             id="gh", **sec))
    got = _filtered(repo, findings)
    for rel in ("Flows/Legit/michael.flow.json", "Flows/Attack/BLA_Checkout.json",
                "captures/login.har", "api.postman_collection.json"):
        f = _one(got, rel, 1)
        assert f.noise and "tests" in f.noise and f.severity is Severity.medium
    # the app's own data and code named "flows" are not captures
    for rel in ("app/flows.json", "flows/engine.py", "prepopulated_data.json"):
        assert _one(got, rel, 1).noise is None
    token = _one(got, "Flows/Legit/admin.flow.json", 1)
    assert token.noise is None and token.severity is Severity.medium
