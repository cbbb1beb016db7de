"""security_tester on small real repositories: bandit findings with mapped
severities, mechanical fixes that git applies and that make the finding go
away, the secrets scan (never leaking the secret), extra patterns."""

from __future__ import annotations

import asyncio

import pytest

from superqode_ls.qe.roles import _secrets, security
from superqode_ls.qe.roles.security import SecurityTester
from tests.role_helpers import at, git_apply, git_apply_check, make_ctx, run_role, tree_state

APP = """\
import hashlib
import subprocess

import yaml


def load(path):
    with open(path) as fh:
        return yaml.load(fh, Loader=yaml.Loader)


def key(name):
    return hashlib.md5(name.encode()).hexdigest()


def run(cmd):
    return subprocess.run(cmd, shell=True)
"""


def test_bandit_findings_and_fixes(make_repo):
    repo = make_repo({"app.py": APP, "tests/test_app.py": "def test_x():\n    assert 1\n"})
    before = tree_state(repo)
    out = run_role(SecurityTester(), make_ctx(repo))
    assert out.status == "ok" and out.tool == "bandit"
    assert tree_state(repo) == before

    (b506,) = at(out.findings, "B506", "app.py", 9)
    (b324,) = at(out.findings, "B324", "app.py", 13)
    (b602,) = at(out.findings, "B602", "app.py", 17)
    # bandit says high; a weak hash is medium (a secret in the code is at least
    # high, and MD5 must not outrank it), with the reason on the finding.
    assert b324.severity.value == "medium" and b324.confidence == 0.9
    assert b324.severity_reason.startswith("bandit rates it high")
    # One text, no "B324 (hashlib): " prefix: the rule id is the code.
    assert b324.message == b324.title or b324.message.startswith(b324.title)
    assert not b324.message.startswith("B324")
    assert b506.category == "security" and "CWE-20" in b506.tags
    assert b602.fix_patch_id is None  # no mechanical fix for shell=True
    assert b506.snippet == "        return yaml.load(fh, Loader=yaml.Loader)"
    # import notes are context, not problems; asserts in tests are not reported
    assert all(f.severity.value == "info" for f in out.findings if f.rule_id == "B404")
    assert not [f for f in out.findings if f.rule_id == "B101"]

    patches = {p.id: p for p in out.patches}
    fix_yaml = patches[b506.fix_patch_id]
    fix_md5 = patches[b324.fix_patch_id]
    assert "+        return yaml.safe_load(fh)\n" in fix_yaml.diff
    assert (
        "+    return hashlib.md5(name.encode(), usedforsecurity=False).hexdigest()\n"
        in fix_md5.diff
    )
    for p in (fix_yaml, fix_md5):
        assert git_apply_check(repo, p.diff).returncode == 0
    git_apply(repo, fix_yaml.diff)
    git_apply(repo, fix_md5.diff)
    again = asyncio.run(SecurityTester().recheck(make_ctx(repo), ["app.py"]))
    rules = {f.rule_id for f in again}
    assert "B506" not in rules and "B324" not in rules and "B602" in rules


def test_files_restrict(make_repo):
    repo = make_repo({"a.py": APP, "b.py": APP})
    out = run_role(SecurityTester(), make_ctx(repo, files=["b.py"]))
    assert {f.file for f in out.findings} == {"b.py"}


def test_secrets_scan_masks_values(make_repo):
    token = "ghp_" + "a1B2c3D4e5F6g7H8i9J0k1L2m3N4o5P6q7R8"
    files = {
        "settings.py": f'GITHUB_TOKEN = "{token}"\n',
        "deploy/.env": "SLACK=xoxb-1234567890-abcdefghijklmnop\n",
        "conf.yaml": "api_key: 'Zq8#pL2@vR9!kX4$mT7'\n",
        "key.pem": "-----BEGIN OPENSSH PRIVATE KEY-----\nb3BlbnNzaC1rZXktdjEAAAA\n-----END OPENSSH PRIVATE KEY-----\n",
        "ok.py": 'password = "changeme"\nTOKEN = "${TOKEN}"\nsecret = "abc"  # nosec\n',
        "image.bin": b"\x00\x01AKIAQ7XKZ3M5VR2N4WHT",
    }
    repo = make_repo(files)
    out = run_role(SecurityTester(), make_ctx(repo))
    by_rule = {
        (f.rule_id, f.file, f.range.start_line)
        for f in out.findings
        if f.tool == "superqode-secrets"
    }
    assert ("secret-github-token", "settings.py", 1) in by_rule
    assert ("secret-slack-token", "deploy/.env", 1) in by_rule
    assert ("secret-generic", "conf.yaml", 1) in by_rule
    assert ("secret-private-key", "key.pem", 1) in by_rule
    assert not [r for r in by_rule if r[1] in ("ok.py", "image.bin")]
    dump = "".join(f.model_dump_json() for f in out.findings)
    assert token not in dump and "Zq8#pL2@vR9!kX4$mT7" not in dump
    (gh,) = [f for f in out.findings if f.rule_id == "secret-github-token"]
    assert gh.severity.value == "critical" and gh.snippet is None
    assert gh.evidence[0].snippet.startswith('GITHUB_TOKEN = "ghp_***')
    assert (gh.range.start_col, gh.range.end_col) == (17, 17 + len(token))


def test_a_hardcoded_password_reads_once_and_outranks_md5(make_repo):
    """What an editor shows (the server's diagnostic text is built from title
    and message): the problem once, no "title: B105 (name): title"; the secret
    masked; high (an error), above the weak hash beside it."""
    from superqode_ls.server.convert import diagnostic_message, lsp_severity

    src = 'import hashlib\n\nDB_PASSWORD = "hunter2-prod-db"\nkey = hashlib.md5(b"x").hexdigest()\n'
    repo = make_repo({"store.py": src})
    out = run_role(SecurityTester(), make_ctx(repo))
    (pw,) = at(out.findings, "B105", "store.py", 3)
    (md5,) = at(out.findings, "B324", "store.py", 4)
    text = diagnostic_message(pw)
    assert text.startswith("Possible hardcoded password: '***************'")
    assert text.count("Possible hardcoded password") == 1 and "B105" not in text
    assert "hunter2" not in text
    assert pw.severity.value == "high" and md5.severity.value == "medium"
    assert lsp_severity(pw.severity) < lsp_severity(md5.severity)  # LSP: 1 error, 2 warning
    assert diagnostic_message(md5).count(md5.title) == 1


def test_secret_ids_stable_and_distinct(make_repo):
    a, b = "xoxb-1111111111-abcdefghijklmnop", "xoxb-2222222222-qrstuvwxyzabcdef"
    repo = make_repo({"deploy/.env": f"A={a}\nB={b}\n"})
    first = run_role(SecurityTester(), make_ctx(repo))
    (repo / "deploy/.env").write_text(f"# moved\n\nB={b}\nA={a}\n")
    second = run_role(SecurityTester(), make_ctx(repo))
    ids = {f.evidence[0].snippet[:1]: f.id for f in first.findings}
    again = {f.evidence[0].snippet[:1]: f.id for f in second.findings}
    assert len(set(ids.values())) == 2 and ids == again


@pytest.mark.parametrize(
    "line,rule,min_conf",
    [
        ("AWS_KEY = 'AKIAQ7XKZ3M5VR2N4WHT'", "secret-aws-access-key-id", 0.8),
        (
            "aws_secret_access_key = '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'",
            "secret-aws-secret-key",
            0.8,
        ),
        (
            "url = 'https://hooks.slack.com/services/T0001/B0002/abcdefXYZ123'",
            "secret-slack-webhook",
            0.8,
        ),
        ("k = 'AIzaSyA1b2C3d4E5f6G7h8I9j0K1l2M3n4O5p6Q'", "secret-google-api-key", 0.8),
        ("stripe = 'sk_live_4eC39HqLyjWDarjtT1zdp7dc'", "secret-stripe-key", 0.9),
        ("client_secret = 'q8F!x2@Lm9#Vt4$Rz7%'", "secret-generic", 0.7),
    ],
)
def test_secret_rules(line, rule, min_conf):
    hits = _secrets.scan_text(line)
    assert [h.rule.id for h in hits] == [rule]
    assert hits[0].confidence >= min_conf


def test_key_material_on_the_marker_line_is_cut():
    line = '{"private_key": "-----BEGIN PRIVATE KEY-----\\nMIIEvQIBADANBgkqhkiG9w0BAQEFAASC\\n"}'
    (hit,) = _secrets.scan_text(line)
    assert hit.rule.id == "secret-private-key"
    assert "MIIEv" not in hit.masked_line and hit.masked_line.endswith("-----***")


def test_secret_confidence_lowered_for_examples_and_tests():
    (doc,) = _secrets.scan_text("key = 'AKIAIOSFODNN7EXAMPLE'")
    assert doc.confidence < 0.5
    (prod,) = _secrets.scan_text("client_secret = 'q8F!x2@Lm9#Vt4$Rz7%'")
    (test,) = _secrets.scan_text("client_secret = 'q8F!x2@Lm9#Vt4$Rz7%'", in_test=True)
    assert test.confidence < prod.confidence
    assert not _secrets.scan_text("password = 'aaaaaaaaaaaa'")  # no entropy
    # names of where a secret lives are not secrets
    assert not _secrets.scan_text('api_key_env = "SQ_MODEL_KEY"')
    assert not _secrets.scan_text('token_url = "https://auth.example.org/oauth"')
    (gh_prod,) = _secrets.scan_text("t = 'ghp_a1B2c3D4e5F6g7H8i9J0k1L2m3N4o5P6q7R8'")
    (gh_test,) = _secrets.scan_text("t = 'ghp_a1B2c3D4e5F6g7H8i9J0k1L2m3N4o5P6q7R8'", in_test=True)
    assert gh_test.confidence < gh_prod.confidence and gh_test.confidence >= 0.7
    assert not _secrets.scan_text("token = 'q8F!x2@Lm9#Vt4$Rz7%'  # pragma: allowlist secret")


def test_extra_patterns_bandit_misses(make_repo):
    code = (
        "import jwt, ssl, yaml\n"
        "a = yaml.unsafe_load(s)\n"
        "b = jwt.decode(t, k, options={'verify_signature': False})\n"
        "ctx = ssl.create_default_context()\n"
        "ctx.check_hostname = False\n"
        "c = jwt.decode(t, k, algorithms=['HS256'])\n"
    )
    repo = make_repo({"x.py": code})
    out = run_role(SecurityTester(), make_ctx(repo))
    found = {
        (f.rule_id, f.range.start_line) for f in out.findings if f.tool == "superqode-patterns"
    }
    assert found == {("yaml-unsafe-load", 2), ("jwt-no-verify", 3), ("tls-no-hostname-check", 5)}
    (unsafe,) = at(out.findings, "yaml-unsafe-load", "x.py", 2)
    patch = next(p for p in out.patches if p.id == unsafe.fix_patch_id)
    assert "+a = yaml.safe_load(s)\n" in patch.diff
    assert git_apply_check(repo, patch.diff).returncode == 0


def test_without_bandit_secrets_still_run(make_repo, monkeypatch):
    real = security.tool_path
    monkeypatch.setattr(security, "tool_path", lambda n: None if n == "bandit" else real(n))
    repo = make_repo({"a.py": APP + "K = 'AKIAQ7XKZ3M5VR2N4WHT'\n"})
    out = run_role(SecurityTester(), make_ctx(repo))
    assert out.status == "ok" and "bandit is not installed" in out.reason
    assert {f.tool for f in out.findings} == {"superqode-secrets"}


def test_nothing_to_scan_is_skipped(make_repo):
    repo = make_repo({"logo.png": b"\x89PNG\x00\x00"})
    out = run_role(SecurityTester(), make_ctx(repo))
    assert out.status == "skipped" and out.reason


def test_a_translation_catalogs_labels_are_no_secrets_a_lone_config_file_keeps_them(tmp_path):
    # mealie's frontend/lang/messages/*.json: "user-password": "Benutzerpasswort"
    # is a label, in a file named for a locale beside other locales' files.
    messages = tmp_path / "lang" / "messages"
    messages.mkdir(parents=True)
    entry = '{\n  "user-password": "Benutzerpasswort9x",\n  "aws": "AKIAQWERTYUIOPASDFGH"\n}\n'
    for locale in ("de-DE", "ja-JP", "en-US"):
        (messages / f"{locale}.json").write_text(entry, encoding="utf-8")
    hits = _secrets.scan_file(messages / "de-DE.json")
    assert [h.rule.id for h in hits] == ["secret-aws-access-key-id"], hits  # a key format still counts
    # The same text in a file no catalog holds: the password stays a finding.
    (tmp_path / "settings.json").write_text(entry, encoding="utf-8")
    assert "secret-generic" in [h.rule.id for h in _secrets.scan_file(tmp_path / "settings.json")]
    # A locale-named file alone (one sibling) is no catalog.
    lone = tmp_path / "one"
    lone.mkdir()
    for locale in ("de", "fr"):
        (lone / f"{locale}.json").write_text(entry, encoding="utf-8")
    assert "secret-generic" in [h.rule.id for h in _secrets.scan_file(lone / "de.json")]


@pytest.mark.skipif(security.tool_path("bandit") is None, reason="bandit not installed")
def test_a_token_types_name_is_no_secret_where_bandit_names_the_defs_first_line(make_repo):
    # alembic's configure(..., upgrade_token: str = "upgrades", ...) over
    # several lines: bandit's B107 names the def's first line. oauthlib's
    # default_token="Bearer" is the token type's name.
    repo = make_repo({"lib/ops.py": (
        "def configure(\n"
        "    url,\n"
        '    upgrade_token: str = "upgrades",\n'
        "):\n"
        "    return url\n\n\n"
        "def connect(\n"
        "    url,\n"
        '    api_token: str = "q8F2xLm9Vt4Rz7aa",\n'
        "):\n"
        "    return url\n\n\n"
        "def endpoint(server):\n"
        '    return server(default_token="Bearer")\n')})
    found = run_role(SecurityTester(), make_ctx(repo)).findings
    by_rule = {}
    for f in found:
        if f.rule_id in ("B106", "B107"):
            by_rule.setdefault(f.rule_id, []).append(f)
    assert all(f.noise and "plain word" in f.noise for f in by_rule["B106"]), by_rule
    b107 = by_rule["B107"]
    assert sorted(bool(f.noise) for f in b107) == [False, True], [(f.message, f.noise) for f in b107]


def test_a_generic_secret_in_a_docstring_is_documentations_example(tmp_path):
    # oauthlib's RFC 6749 example response in a docstring
    (tmp_path / "params.py").write_text(
        'def parse(body):\n'
        '    """Parse the token response::\n\n'
        '        {"access_token": "2YotnFZFEjr1zCsicMWpAA"}\n'
        '    """\n'
        '    access_token = "tGzv3JOkF0XG5Qx2TlKWIA"\n'
        '    return body, access_token\n', encoding="utf-8")
    hits = {h.line: h for h in _secrets.scan_file(tmp_path / "params.py")}
    assert hits[4].confidence <= 0.3 and "docstring" in hits[4].note, hits
    assert hits[6].confidence >= 0.5 and "docstring" not in hits[6].note, hits
