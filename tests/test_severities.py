"""Severities a user can trust: one line flagged by two tools keeps the higher
severity and both rule ids; a hard-coded secret in the code is high; findings
in tests, fixtures and docs are shown one level lower with the reason (never
dropped); an ``assert`` outside tests is low and never fails a run; masking
hides the secret's value and nothing else. Real bandit and the real secrets
scan on small projects."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from superqode_ls.cli import main
from superqode_ls.config import Config
from superqode_ls.models import Finding, Range, Severity
from superqode_ls.qe.noise import FileLines, deduplicate, filter_findings, path_class
from superqode_ls.qe.roles import _secrets
from superqode_ls.qe.roles.base import tool_path
from superqode_ls.qe.roles.security import SecurityTester
from tests.role_helpers import make_ctx, run_role

needs_bandit = pytest.mark.skipif(tool_path("bandit") is None, reason="bandit not installed")

KEY = (
    "-----BEGIN RSA PRIVATE KEY-----\n"
    "MIIBOgIBAAJBAKj34GkxFhD90vcNLYLInFEX6Ppy1tPf9Cnzj4p4WGeKLs1Pt8Qu\n"
    "-----END RSA PRIVATE KEY-----\n"
)
PROJECT = {
    "app/__init__.py": "",
    "app/settings.py": (
        'DB_PASSWORD = "hunter2-prod-db"\n'
        'pwd = "a"\n'
        'password = "pass"\n'
        "\n\ndef check(x):\n    assert x > 0\n    return x\n"
    ),
    "tests/__init__.py": "",
    "tests/conftest.py": f'FIXTURE_KEY = """{KEY}"""\n',
    "tests/test_app.py": "def test_x():\n    assert 1 == 1\n",
    "docs/config.rst": 'Set it::\n\n    SECRET_KEY = "q8F!x2@Lm9#Vt4$Rz7%"\n',
}


def _by(findings, rule, file):
    return [f for f in findings if (f.rule_id == rule or rule in f.related_rules) and f.file == file]


@needs_bandit
def test_bandit_and_secrets_on_one_line_keep_high_and_both_ids(make_repo):
    repo = make_repo(PROJECT)
    out = run_role(SecurityTester(), make_ctx(repo))
    assert out.status == "ok", out.reason
    (pw,) = [f for f in out.findings if f.file == "app/settings.py" and f.range.start_line == 1]
    # bandit's "low B105" and the scan's high secret-generic: one finding, high.
    assert pw.rule_id == "B105" and pw.related_rules == ["secret-generic"]
    assert pw.severity is Severity.high and "at least high" in pw.severity_reason
    # Masking: the value only, the words of the message intact.
    assert pw.message.endswith("Possible hardcoded password: '***************'")
    assert pw.title == "Possible hardcoded password: '***************'"
    assert pw.evidence[0].snippet == 'DB_PASSWORD = "***************"'
    dump = "".join(f.model_dump_json() for f in out.findings)
    assert "hunter2" not in dump

    (short,) = [f for f in out.findings if f.file == "app/settings.py" and f.range.start_line == 2]
    assert short.title == "Possible hardcoded password: '*'"  # not "h*rdcoded p*ssword"
    (word,) = [f for f in out.findings if f.file == "app/settings.py" and f.range.start_line == 3]
    assert word.title == "Possible hardcoded password: '****'"  # not "hardcoded ****word"
    assert word.evidence[0].snippet == 'password = "****"'
    # too short and plain to be a real secret: bandit's own severity stands
    assert short.severity is Severity.low and word.severity is Severity.low

    (b101,) = _by(out.findings, "B101", "app/settings.py")
    assert b101.severity is Severity.low
    assert not _by(out.findings, "B101", "tests/test_app.py")  # asserts are how tests check


@needs_bandit
def test_path_classes_lower_tests_and_docs_with_the_reason(make_repo):
    repo = make_repo(PROJECT)
    out = run_role(SecurityTester(), make_ctx(repo))
    result = filter_findings(out.findings, read_line=FileLines(repo), threshold=0.0,
                             path_classes=Config().qe.path_classes)
    (key,) = _by(result.findings, "secret-private-key", "tests/conftest.py")
    assert key.severity is Severity.high  # the scan says critical: a fixture, not critical
    assert key.severity_reason == "in tests ('tests/'): shown one level lower than critical"
    assert "path:tests" in key.tags
    (doc,) = _by(result.findings, "secret-generic", "docs/config.rst")
    assert doc.severity is Severity.medium and doc.severity_reason.startswith("in docs ('docs/')")
    # source findings keep their severity and say nothing about paths
    (pw,) = [f for f in _by(result.findings, "B105", "app/settings.py") if f.range.start_line == 1]
    assert pw.severity is Severity.high and "path:" not in " ".join(pw.tags)
    # configurable: with no path classes the fixture key is critical again
    raw = filter_findings(out.findings, read_line=FileLines(repo), threshold=0.0, path_classes={})
    (key,) = _by(raw.findings, "secret-private-key", "tests/conftest.py")
    assert key.severity is Severity.critical and key.severity_reason is None
    assert len(raw.findings) == len(result.findings)  # lowered, never dropped


@pytest.mark.parametrize(
    ("path", "cls"),
    [
        ("tests/unit/test_a.py", "tests"),
        ("pkg/tests/helpers.py", "tests"),
        ("pkg/test_models.py", "tests"),
        ("pkg/models_test.py", "tests"),
        ("conftest.py", "tests"),
        ("src/fixtures/key.pem", "fixtures"),
        ("docs/conf.py", "docs"),
        ("README.md", "docs"),
        ("pkg/guide.rst", "docs"),
        ("examples/shop/app.py", "examples"),
        ("pkg/testing_utils.py", None),
        ("pkg/contests.py", None),
        ("src/app/models.py", None),
    ],
)
def test_default_path_classes(path, cls):
    hit = path_class(path, Config().qe.path_classes)
    assert (hit[0] if hit else None) == cls


def test_custom_path_class_and_whole_path_patterns():
    classes = {"vendored": ["third_party/", "src/gen/*.py"]}
    assert path_class("a/third_party/x.py", classes) == ("vendored", "third_party/")
    assert path_class("src/gen/api.py", classes) == ("vendored", "src/gen/*.py")
    assert path_class("src/app.py", classes) is None
    cfg = Config.model_validate({"qe": {"path_classes": classes}})
    assert cfg.qe.path_classes == classes


def mk(rule, tool, sev, line=4, file="app/x.py", role="security_tester", category="security",
       **kw) -> Finding:
    return Finding(role=role, tool=tool, rule_id=rule, title=rule, message=rule, severity=sev,
                   confidence=0.8, category=category, file=file,
                   range=Range(start_line=line), snippet=f"line {line}", **kw).with_stable_id()


def test_a_failing_test_in_tests_is_not_lowered(tmp_path):
    failing = mk("test-failure", "pytest", Severity.high, file="tests/test_app.py",
                 role="unit_tester", category="tests")
    lint = mk("F401", "ruff", Severity.low, file="tests/test_app.py", role="lint_tester",
              category="lint")
    out = filter_findings([failing, lint], read_line=FileLines(tmp_path), threshold=0.0).findings
    # the failure is about the product code; the unused import is about the test file
    assert [(f.rule_id, f.severity, f.severity_reason is None) for f in out] == [
        ("test-failure", Severity.high, True), ("F401", Severity.info, False)]


def test_dedupe_across_roles_keeps_highest_severity_and_every_rule_id():
    bandit = mk("B105", "bandit", Severity.low)
    secret = mk("secret-generic", "superqode-secrets", Severity.high)
    ruff = mk("S105", "ruff", Severity.medium, role="lint_tester", fix_patch_id="p1")
    elsewhere = mk("secret-generic", "superqode-secrets", Severity.high, line=9)
    out, dropped = deduplicate([bandit, secret, ruff, elsewhere])
    assert dropped == 2 and len(out) == 2
    kept = out[0]
    # ruff's report has the fix and leads, but the severity is the highest
    assert kept.rule_id == "S105" and kept.fix_patch_id == "p1"
    assert kept.severity is Severity.high
    assert sorted(kept.related_rules) == ["B105", "secret-generic"]
    assert "superqode-secrets secret-generic" in kept.severity_reason
    assert out[1] == elsewhere  # another line: another problem


def test_mask_helpers():
    assert _secrets.mask("hunter2") == "*******"
    assert _secrets.mask("AKIAQ7XKZ3M5VR2N4WHT") == "AKIA" + "*" * 16
    assert _secrets.mask_quoted("Possible hardcoded password: 'a'", "a") == (
        "Possible hardcoded password: '*'")
    assert _secrets.mask_quoted('x = "pass" + pass', "pass") == 'x = "****" + pass'
    assert _secrets.mask_quoted("no quotes pass", "pass") is None
    assert _secrets.plausible("hunter2") and _secrets.plausible("hunter2-prod-db")
    for weak in ("", "a", "pass", "bearer", "changeme", "MY_ENV_VAR", "12345678", "two words",
                 "https://auth.example.org/oauth/token"):
        assert not _secrets.plausible(weak), weak
    assert _secrets.plausible("https://u:hunter2@db.example.org")  # credentials in the URL
    # names that hold about a secret, not the secret (bandit still flags them: stays low)
    assert not _secrets.plausible("csrf-header-x", 'TOKEN_HEADER = "csrf-header-x"')
    assert not _secrets.plausible("pw_input", "self.password_field = 'pw_input'")
    assert _secrets.plausible("hunter2-prod-db", 'DB_PASSWORD = "hunter2-prod-db"')
    assert _secrets.plausible("hunter2-prod-db", 'if password == "hunter2-prod-db":')


@needs_bandit
def test_run_fails_on_high_for_a_password_in_source_not_for_test_fixtures(make_repo, capsys):
    source = make_repo({"app/__init__.py": "", "app/db.py": 'DB_PASSWORD = "hunter2-prod-db"\n'})
    sarif = source.parent / "out.sarif"
    code = main(["run", str(source), "-r", "security_tester", "--fail-on", "high", "--jsonl",
                 "--sarif", str(sarif)])
    events = [json.loads(line) for line in capsys.readouterr().out.splitlines()]
    assert code == 1 and events[-1]["data"]["verdict"] == "fail"
    report = json.loads(Path(events[-1]["data"]["report"]).read_text())
    (pw,) = report["findings"]
    assert pw["severity"] == "high" and pw["related_rules"] == ["secret-generic"]
    md = Path(events[-1]["data"]["markdown"]).read_text()
    assert "**Also reported as** `secret-generic`" in md and "- **Severity** high: " in md
    assert "hunter2" not in md and "hunter2" not in sarif.read_text()
    (result,) = [r for run in json.loads(sarif.read_text())["runs"] for r in run["results"]]
    assert result["properties"]["relatedRuleIds"] == ["secret-generic"]
    assert "at least high" in result["properties"]["severityReason"]

    fixtures = make_repo({"tests/__init__.py": "", "tests/conftest.py": f'K = """{KEY}"""\n',
                          "lib.py": "def f(x):\n    assert x\n    return x\n"})
    code = main(["run", str(fixtures), "-r", "security_tester", "--fail-on", "critical", "--jsonl"])
    events = [json.loads(line) for line in capsys.readouterr().out.splitlines()]
    report = json.loads(Path(events[-1]["data"]["report"]).read_text())
    assert code == 0, report["findings"]
    sev = {f["rule_id"]: f["severity"] for f in report["findings"]}
    assert sev == {"secret-private-key": "high", "B101": "low"}
    # --fail-on low: neither the assert nor a key in test data (key material
    # made for the tests: noise) is a reason to fail
    code = main(["run", str(fixtures), "-r", "security_tester", "--fail-on", "low", "--jsonl"])
    capsys.readouterr()
    assert code == 0
    lib_only = make_repo({"lib.py": "def f(x):\n    assert x\n    return x\n"})
    code = main(["run", str(lib_only), "-r", "security_tester", "--fail-on", "low", "--jsonl"])
    events = [json.loads(line) for line in capsys.readouterr().out.splitlines()]
    # an assert is bandit's advisory: noise, so nothing needs a look
    assert code == 0 and events[-1]["data"]["verdict"] == "pass"
