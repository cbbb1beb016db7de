"""Findings a developer acts on: context that proves a rule wrong makes it
noise (and the real one next to it stays), sinks survive the confidence
threshold, one line is one diagnostic, the verdict rests on what is worth
acting on, most important first. Each rule in both directions, on real
files (and real bandit / ruff where the rule is about their output)."""

from __future__ import annotations

import pytest

from superqode_ls.models import Finding, QualityReport, Range, Severity
from superqode_ls.qe.display import summary_lines
from superqode_ls.qe.noise import FileLines, by_importance, filter_findings, merge_lines
from superqode_ls.qe.report import compute_verdict
from superqode_ls.qe.roles._secrets import not_a_secret
from superqode_ls.qe.roles.base import tool_path
from superqode_ls.qe.roles.lint import LintTester
from superqode_ls.qe.roles.security import SecurityTester
from tests.role_helpers import make_ctx, run_role

needs_bandit = pytest.mark.skipif(tool_path("bandit") is None, reason="bandit not installed")
needs_ruff = pytest.mark.skipif(tool_path("ruff") is None, reason="ruff not installed")


def _filtered(repo, findings, threshold=0.7):
    return filter_findings(findings, read_line=FileLines(repo), threshold=threshold).findings


def _at(findings, file, line, rule):
    return [f for f in findings if f.file == file and f.range and f.range.start_line == line
            and (f.rule_id == rule or rule in f.related_rules)]


@needs_bandit
def test_b701_with_autoescape_on_nearby_is_noise_and_off_stays(make_repo):
    repo = make_repo({
        "app/templating.py": (
            "import jinja2\n\n\n"
            "def env(**options):\n"
            "    options.setdefault('autoescape', True)\n"
            "    return jinja2.Environment(**options)\n\n\n"
            "def unsafe():\n"
            "    return jinja2.Environment(loader=None, autoescape=False)\n"
        ),
    })
    found = _filtered(repo, run_role(SecurityTester(), make_ctx(repo)).findings)
    (ok,) = _at(found, "app/templating.py", 6, "B701")
    assert ok.noise and "autoescape is turned on" in ok.noise and ok.severity is Severity.info
    (bad,) = _at(found, "app/templating.py", 10, "B701")
    assert bad.noise is None and bad.severity is Severity.high
    assert "template-autoescape-off" in (bad.rule_id, *bad.related_rules)
    assert compute_verdict(found) == "fail"


@needs_bandit
def test_b701_over_options_spread_from_a_dict_with_autoescape_on_is_noise(make_repo):
    # jupyterhub's init_tornado_settings: the options are made lines above
    filler = "".join(f"    step{i} = {i}\n" for i in range(8))
    repo = make_repo({
        "app/web.py": (
            "import jinja2\n\n\n"
            "def settings(loader, extra):\n"
            "    jinja_options = dict(autoescape=True, enable_async=True)\n"
            "    jinja_options.update(extra)\n"
            + filler +
            "    env = jinja2.Environment(loader=loader, **jinja_options)\n"  # 15
            "    other = dict(enable_async=True)\n"
            + filler +
            "    return env, jinja2.Environment(loader=loader, **other)\n"  # 25
        ),
        "app/views.py": "from flask import Flask\n",  # a web project: no library rule
    })
    found = _filtered(repo, run_role(SecurityTester(), make_ctx(repo)).findings)
    (ok,) = _at(found, "app/web.py", 15, "B701")
    assert ok.noise and "autoescape is turned on" in ok.noise
    (bad,) = _at(found, "app/web.py", 25, "B701")
    assert bad.noise is None


@needs_bandit
def test_password_names_with_values_that_are_no_secret_are_noise(make_repo):
    repo = make_repo({
        "lib/engine.py": (
            '_DEFAULT_TOKEN = "_sa_default"\n'
            'GRANT_TYPE_PASSWORD = "password"\n'
            'TOKEN_TYPE = "bearer"\n'
            'REFRESH_TOKEN = "refresh_token"\n'
            'DB_PASSWORD = "Xk29-prod!db"\n'
        ),
    })
    found = _filtered(repo, run_role(SecurityTester(), make_ctx(repo)).findings)
    for line in (1, 2, 3, 4):
        for f in _at(found, "lib/engine.py", line, "B105"):
            assert f.noise and "not a secret" in f.noise, f
            assert f.severity.rank < Severity.high.rank
    (real,) = _at(found, "lib/engine.py", 5, "B105")
    assert real.noise is None and real.severity is Severity.high
    assert compute_verdict(found) == "fail"  # the real one alone decides it


def test_not_a_secret_both_ways():
    assert not_a_secret("_sa_default", '_DEFAULT_TOKEN = "_sa_default"')
    assert not_a_secret("refresh_token", 'GRANT = "refresh_token"')
    assert not_a_secret("<your-password>", 'PASSWORD = "<your-password>"')
    assert not_a_secret("Password", 'PASSWORD = "Password"')
    assert not_a_secret("hunter2-prod-db", 'DB_PASSWORD = "hunter2-prod-db"') is None
    assert not_a_secret("postgres", 'password = "postgres"') is None
    assert not_a_secret("s3cr3t_Pw", 'password = "s3cr3t_Pw"') is None


@needs_ruff
def test_undefined_name_only_in_lazy_annotations_is_noise(make_repo):
    repo = make_repo({
        "pkg/lazy.py": (
            "from __future__ import annotations\n\n\n"
            "def f(x: Missing) -> Other:\n"
            "    return x\n"
        ),
        "pkg/strings.py": "def g(x: 'Missing') -> int:\n    return len(x)\n",
        "pkg/local.py": "def k(request):\n    app: Application = request.app\n    return app\n",
        "pkg/real.py": "def h(x: Missing) -> int:\n    return undefined_call(x)\n",
    })
    found = _filtered(repo, run_role(LintTester(), make_ctx(repo)).findings)
    lazy = [f for f in found if f.file == "pkg/lazy.py" and f.rule_id == "F821"]
    # two names on one line: one diagnostic
    assert len(lazy) == 1 and all(f.noise and "annotation" in f.noise for f in lazy)
    (string,) = [f for f in found if f.file == "pkg/strings.py" and f.rule_id == "F821"]
    assert string.noise and string.severity is Severity.info
    (local,) = [f for f in found if f.file == "pkg/local.py" and f.rule_id == "F821"]
    assert local.noise and "annotation" in local.noise  # PEP 526: never evaluated
    real = [f for f in found if f.file == "pkg/real.py" and f.rule_id == "F821"]
    # evaluated when the function is defined, and a call: both real, both high
    assert real and all(f.noise is None and f.severity is Severity.high for f in real)


@needs_bandit
def test_test_code_is_noise_but_a_real_token_in_it_is_not(make_repo):
    repo = make_repo({
        "tests/__init__.py": "",
        "tests/test_login.py": (
            'PASSWORD = "hunter2-prod-db"\n'
            "def test_x():\n    assert 1\n"
        ),
        "tests/conftest.py": 'AWS = "AKIAIOSFODNN7REALKEY"\n',
        "conftest.py": "import subprocess\n\n\ndef run(cmd):\n"
                       "    return subprocess.call(cmd, shell=True)\n",
    })
    found = _filtered(repo, run_role(SecurityTester(), make_ctx(repo)).findings)
    (pw,) = _at(found, "tests/test_login.py", 1, "B105")
    assert pw.noise == "in tests code" and pw.severity is Severity.medium
    (shell,) = _at(found, "conftest.py", 5, "B602")
    assert shell.noise == "in tests code"
    aws = [f for f in found if f.file == "tests/conftest.py" and f.rule_id.startswith("secret-aws")]
    assert aws and all(f.noise is None for f in aws)
    # the token decides the verdict (high after one level lower), not the test password
    assert compute_verdict([f for f in found if f not in aws]) != "fail"


@needs_bandit
def test_sinks_stay_whatever_the_tools_confidence(make_repo):
    repo = make_repo({
        "app/db.py": (
            "def find(cur, name):\n"
            "    q = \"SELECT * FROM users WHERE name = '%s'\" % name\n"
            "    cur.execute(q)\n\n\n"
            "def safe(cur, name):\n"
            "    cur.execute('SELECT * FROM users WHERE name = %s', (name,))\n\n\n"
            "def constant(cur):\n"
            "    q = 'SELECT * FROM users'\n"
            "    q += ' LIMIT 10'\n"
            "    cur.execute(q)\n\n\n"
            "def dump(table, values):\n"
            "    return 'INSERT INTO %s VALUES (%s);' % (table, values)\n"
        ),
    })
    out = run_role(SecurityTester(), make_ctx(repo)).findings
    # a threshold above every confidence: the sink still stands, at least high
    found = _filtered(repo, out, threshold=0.99)
    (sql,) = _at(found, "app/db.py", 2, "B608")
    assert sql.noise is None and sql.severity.at_least(Severity.high)
    assert {sql.rule_id, *sql.related_rules} >= {"B608", "sql-injection"}
    assert not [f for f in found if f.file == "app/db.py" and f.range.start_line > 3
                and f.noise is None]
    # SQL text written out, never executed: bandit's low-confidence B608 is noise
    dump = [f for f in found if f.file == "app/db.py" and f.range.start_line == 17]
    assert dump and all(f.noise and "low confidence" in f.noise for f in dump)


def _mk(rule, line, sev, *, tool="ruff", category="lint", fix=None, noise=None, file="a.py"):
    return Finding(role="r", tool=tool, rule_id=rule, title=rule, message=rule, severity=sev,
                   category=category, file=file, range=Range(start_line=line),
                   snippet=f"{rule} {line}", fix_patch_id=fix, noise=noise).with_stable_id()


def test_one_line_is_one_diagnostic_naming_every_rule_and_keeping_fixes():
    a = _mk("F401", 1, Severity.medium, fix="p1")
    b = _mk("B403", 1, Severity.low, tool="bandit", category="security")
    c = _mk("E501", 1, Severity.info)
    d = _mk("UP035", 1, Severity.info, fix="p2")  # a fix of its own: kept apart
    other = _mk("F401", 2, Severity.medium)
    out, merged = merge_lines([a, b, c, d, other])
    assert merged == 2 and len(out) == 3
    (lead,) = [f for f in out if f.range.start_line == 1 and f.rule_id == "F401"]
    assert lead.id == a.id and lead.related_rules == ["B403", "E501"]
    assert lead.fix_patch_id == "p1"
    assert any(f.fix_patch_id == "p2" for f in out)
    # a lead without a fix never wears another problem's fix
    sql = _mk("sql-injection", 5, Severity.high, tool="p", category="security")
    up = _mk("UP031", 5, Severity.info, fix="p3")
    out, merged = merge_lines([sql, up])
    assert merged == 0 and {f.fix_patch_id for f in out} == {None, "p3"}


def test_verdict_fails_only_on_what_is_worth_acting_on():
    noise = _mk("B105", 1, Severity.high, tool="bandit", category="security", noise="in tests code")
    low = _mk("F401", 2, Severity.low)
    assert compute_verdict([noise]) == "pass"
    assert compute_verdict([noise, low]) == "conditional"
    assert compute_verdict([noise, low, _mk("F821", 3, Severity.high)]) == "fail"


def test_most_important_first_and_noise_counted_in_the_summary():
    findings = [
        _mk("E501", 1, Severity.info),
        _mk("B105", 2, Severity.critical, tool="bandit", category="security",
            noise="the value is an identifier, not a secret"),
        _mk("F401", 3, Severity.medium),
        _mk("F821", 9, Severity.high, file="b.py"),
        _mk("B113", 4, Severity.medium, tool="bandit", category="security",
            noise="low confidence (0.40 < 0.7)"),
    ]
    ordered = by_importance(findings)
    assert [f.rule_id for f in ordered] == ["F821", "F401", "E501", "B105", "B113"]
    report = QualityReport(session_id="s", project="/p", mode="quick", isolation="x",
                           started_at="2026-01-01T00:00:00Z", findings=ordered)
    lines = summary_lines(report)
    assert lines[0].startswith("b.py:9:1: high F821")
    assert not any("B105" in line or "B113" in line for line in lines)
    (more,) = [line for line in lines if "more (noise)" in line]
    assert more.startswith("2 more (noise): ") and "1 low confidence" in more
    shown = summary_lines(report, show_noise=True)
    assert [line.split()[2] for line in shown[:5]] == ["F821", "F401", "E501", "B105", "B113"]


def test_advisories_and_cache_key_hashes_are_noise_real_ones_stay(tmp_path):
    (tmp_path / "m.py").write_text(
        "etag = hashlib.sha1(data).hexdigest()\n"
        "token = hashlib.sha1(secret).hexdigest()\n"
        "try:\n    x()\nexcept Exception:\n    pass\n"
        "n = random.random()\n"
        "session_token = random.random()\n"
    )
    findings = [
        _mk("B324", 1, Severity.medium, tool="bandit", category="security", file="m.py"),
        _mk("B324", 2, Severity.medium, tool="bandit", category="security", file="m.py"),
        _mk("S110", 5, Severity.medium, category="lint", file="m.py"),  # ruff's name for B110
        _mk("B311", 7, Severity.low, tool="bandit", category="security", file="m.py"),
        _mk("B311", 8, Severity.low, tool="bandit", category="security", file="m.py"),
    ]
    out = {f.range.start_line: f for f in _filtered(tmp_path, findings)}
    assert out[1].noise and "cache key" in out[1].noise
    assert out[2].noise is None  # protects a token
    assert out[5].noise and "advisory" in out[5].noise
    assert out[7].noise and out[8].noise is None  # random for a session token is a flaw


def test_security_before_lint_within_a_severity():
    lint = _mk("B004", 1, Severity.medium, file="a.py")
    sec = _mk("B301", 9, Severity.medium, tool="bandit", category="security", file="z.py")
    high_lint = _mk("F821", 5, Severity.high, file="z.py")
    assert by_importance([lint, sec, high_lint]) == [high_lint, sec, lint]


# -- context from the judged projects (jinja, pdoc, gunicorn, uvicorn, tomlkit) --

def _security(repo):
    return _filtered(repo, run_role(SecurityTester(), make_ctx(repo)).findings)


def _lint(repo):
    return _filtered(repo, run_role(LintTester(), make_ctx(repo)).findings)


@needs_bandit
def test_django_mark_safe_of_escaped_text_is_noise_of_outside_text_stays(make_repo):
    repo = make_repo({"app/templatetags/extras.py": (
        "from django.utils.html import escape\n"
        "from django.utils.safestring import mark_safe\n\n\n"
        "def mangle_link(s):\n"
        "    return mark_safe(escape(s).replace('.', '<span>.</span>'))\n\n\n"
        "def raw(s):\n"
        "    return mark_safe(s)\n")})
    found = _security(repo)
    noisy = [f for f in found if f.file.endswith("extras.py") and f.range.start_line == 6]
    assert noisy and all(f.noise and "already escaped" in f.noise for f in noisy)
    kept = [f for f in found if f.file.endswith("extras.py") and f.range.start_line == 10]
    assert kept and all(f.noise is None for f in kept)


@needs_bandit
def test_markup_on_escaped_or_rendered_text_is_noise_on_outside_text_stays(make_repo):
    repo = make_repo({
        "web/views.py": (
            "import html\n"
            "import pygments\n"
            "from markupsafe import Markup, escape\n\n\n"
            "def greet(name):\n"
            "    return Markup(escape(name))\n\n\n"
            "def code(src, lexer, fmt):\n"
            "    return Markup(pygments.highlight(src, lexer, fmt))\n\n\n"
            "def _quote(text):\n"
            "    return html.escape(text)\n\n\n"
            "def items(values):\n"
            "    parts = []\n"
            "    for v in values:\n"
            "        part = _quote(v)\n"
            "        part = f'<li>{part}</li>'\n"
            "        parts.append(part)\n"
            "    out = '<ul>' + ''.join(parts) + '</ul>'\n"
            "    return Markup(out)\n\n\n"
            "def comment(request):\n"
            "    return Markup(request.args['text'])\n\n\n"
            "def bio(text):\n"
            "    return Markup(f'<p>{text}</p>')\n"
        ),
    })
    found = _security(repo)
    for line in (7, 11, 25):
        (f,) = _at(found, "web/views.py", line, "B704")
        assert f.noise and "already escaped or rendered" in f.noise and f.severity is Severity.low
    for line in (29, 33):
        (f,) = _at(found, "web/views.py", line, "B704")
        assert f.noise is None and f.severity is Severity.medium


@needs_bandit
def test_mark_safe_of_diff_match_patchs_html_view_is_noise(make_repo):
    """django-import-export: ``dmp.diff_prettyHtml(diff)`` escapes both
    texts itself; the raw diff text marked safe stays shown."""
    repo = make_repo({
        "app/diff.py": (
            "from diff_match_patch import diff_match_patch\n"
            "from django.utils.safestring import mark_safe\n\n\n"
            "def pretty(a, b):\n"
            "    dmp = diff_match_patch()\n"
            "    html = dmp.diff_prettyHtml(dmp.diff_main(a, b))\n"
            "    return mark_safe(html)\n\n\n"
            "def raw(a, b):\n"
            "    return mark_safe(a + b)\n"
        ),
    })
    found = _security(repo)
    (pretty,) = [f for f in _at(found, "app/diff.py", 8, "B308")]
    (raw,) = [f for f in _at(found, "app/diff.py", 12, "B308")]
    assert pretty.noise and "already escaped or rendered" in pretty.noise
    assert raw.noise is None


@needs_bandit
def test_markup_in_a_template_engines_own_escaping_is_noise(make_repo):
    engine = (
        "from markupsafe import Markup\n\n\n"
        "def finish(eval_ctx, rv):\n"
        "    if eval_ctx.autoescape:\n"
        "        rv = Markup(rv)\n"
        "    return rv\n\n\n"
        "class Module:\n"
        "    def __html__(self):\n"
        "        return Markup(self.body)\n\n\n"
        "def mark_safe(value):\n"
        "    return Markup(value)\n"
    )
    repo = make_repo({"src/jinja2/filters.py": engine, "app/filters.py": engine})
    found = _security(repo)
    for line in (6, 12, 16):  # the engine's own package: it marks what it rendered
        (f,) = _at(found, "src/jinja2/filters.py", line, "B704")
        assert f.noise and "template engine's own" in f.noise
    (f,) = _at(found, "app/filters.py", 6, "B704")
    assert f.noise and "autoescaping produced" in f.noise
    (f,) = _at(found, "app/filters.py", 12, "B704")
    assert f.noise and "__html__" in f.noise
    (f,) = _at(found, "app/filters.py", 16, "B704")  # outside an engine: a parameter marked safe
    assert f.noise is None and f.severity is Severity.medium


PEM = ("-----BEGIN RSA PRIVATE KEY-----\n"
       "MIIEowIBAAKCAQEAu1SU1LfVLPHCozMxH2Mo4lgOEePzNm0tRgeLezV6ffAt0gunVTLw7onLRnrq0/Iz\n"
       "-----END RSA PRIVATE KEY-----\n")


@needs_bandit
def test_private_key_in_test_data_is_noise_in_the_product_it_stays(make_repo):
    repo = make_repo({"tests/certs/server.key": PEM, "examples/server.key": PEM,
                      "deploy/server.key": PEM})
    found = _security(repo)
    for path in ("tests/certs/server.key", "examples/server.key"):
        (f,) = [f for f in found if f.file == path]
        assert f.noise and "key material" in f.noise
    (real,) = [f for f in found if f.file == "deploy/server.key"]
    assert real.noise is None and real.severity.at_least(Severity.high)
    assert compute_verdict(found) == "fail"


CONTEXT_CASES = {
    # RFC 6455's handshake is SHA-1 of the key and a fixed GUID; a
    # password's hash stays, also in a function named for git
    "protocol-sha1": ({"srv/ws.py": (
        "import base64\nimport hashlib\n\n"
        "WS_GUID = b'258EAFA5-E914-47DA-95CA-C5AB0DC85B11'\n\n\n"
        "def accept(ws_key):\n"
        "    return base64.b64encode(hashlib.sha1(ws_key + WS_GUID).digest())\n\n\n"
        "def store(password):\n"
        "    return hashlib.sha1(password).hexdigest()\n\n\n"
        "def git_object_id(password):\n"
        "    return hashlib.sha1(password).hexdigest()\n")},
        [("srv/ws.py", 8, "B324", "RFC 6455")], [("srv/ws.py", 12, "B324"), ("srv/ws.py", 16, "B324")]),
    # Gravatar's URL is the MD5 of an e-mail address; a token's MD5 stays
    "gravatar-md5": ({"app/models.py": (
        "from hashlib import md5\n\n\n"
        "def avatar(email, size):\n"
        "    digest = md5(email.lower().encode()).hexdigest()\n"
        "    return f'https://www.gravatar.com/avatar/{digest}?s={size}'\n\n\n"
        "def avatar_login(email, token):\n"
        "    return md5((email + token).encode()).hexdigest()\n")},
        [("app/models.py", 5, "B324", "Gravatar")], [("app/models.py", 10, "B324")]),
    # uvicorn's "running on" line; bound, also through a formatted address, stays
    "address-shown": ({"srv/run.py": (
        "import logging\nimport socket\n\nlogger = logging.getLogger(__name__)\n\n\n"
        "def announce(config):\n"
        "    host = '0.0.0.0' if config.host is None else config.host\n"
        "    if ':' in host:\n"
        "        host = f'[{host}]'\n"
        "    logger.info('running on http://%s:%d', host, config.port)\n\n\n"
        "def serve(port):\n"
        "    host = '0.0.0.0'\n"
        "    logger.info('binding %s', host)\n"
        "    sock = socket.socket()\n"
        "    sock.bind((host, port))\n\n\n"
        "def listen(server, port):\n"
        "    server.listen('{}:{}'.format('0.0.0.0', port))\n")},
        [("srv/run.py", 8, "B104", "only shown")], [("srv/run.py", 15, "B104"), ("srv/run.py", 22, "B104")]),
    # mitmproxy's offline ClientHello parse (a peer's address) and duplicate-listen
    # message; the same address formatted into a bind stays
    "address-peer-or-message": ({"srv/quic.py": (
        "import socket\n\n\n"
        "def parse_hello(quic, datagrams, now):\n"
        "    for dgm in datagrams:\n"
        "        quic.receive_datagram(dgm, ('0.0.0.0', 0), now=now)\n\n\n"
        "def check(addrs, port, format_address):\n"
        "    if len(set(addrs)) != len(addrs):\n"
        "        dup = format_address((addrs[0] or '0.0.0.0', port))\n"
        "        raise ValueError(f'Cannot spawn two servers on {dup}')\n\n\n"
        "def serve(port, format_address):\n"
        "    sock = socket.socket()\n"
        "    sock.bind(format_address(('0.0.0.0', port)))\n")},
        [("srv/quic.py", 6, "B104", "a peer's"), ("srv/quic.py", 11, "B104", "only shown")],
        [("srv/quic.py", 17, "B104")]),
    # jinja's bytecode cache; request data stays, also in a cache-named function
    "own-cache": ({
        "lib/bccache.py": (
            "import pickle\n\n\n"
            "class Bucket:\n"
            "    def load(self, f):\n"
            "        self.checksum = pickle.load(f)\n\n"
            "    def dump(self, f):\n"
            "        pickle.dump(self.checksum, f)\n"),
        "lib/api.py": (
            "import pickle\n\n\n"
            "def handle(request):\n"
            "    return pickle.loads(request.body)\n\n\n"
            "def load_cache(request):\n"
            "    return pickle.loads(request.body)\n\n\n"
            "def save_cache(obj):\n"
            "    return pickle.dumps(obj)\n")},
        [("lib/bccache.py", 6, "B301", "cache the module writes itself")],
        [("lib/api.py", 5, "B301"), ("lib/api.py", 9, "B301")]),
    # jinja's ``pass_arg``; a password, also one whose name says "bypass", stays
    "pass-verb": ({"lib/compiler.py": (
        "def call(pass_arg, password):\n"
        "    if pass_arg == 'environment':\n"
        "        return 1\n"
        "    if password == 'Xk29-prod!db':\n"
        "        return 2\n"
        "    bypass_password = 'Zq81-prod!db'\n"
        "    return bypass_password\n")},
        [("lib/compiler.py", 2, "B105", "pass (the verb)")],
        [("lib/compiler.py", 4, "B105"), ("lib/compiler.py", 6, "B105")]),
}


@needs_bandit
@pytest.mark.parametrize("case", sorted(CONTEXT_CASES))
def test_context_marks_noise_and_the_real_one_stays(make_repo, case):
    files, noise, kept = CONTEXT_CASES[case]
    found = _security(make_repo(files))
    for file, line, rule, why in noise:
        (f,) = _at(found, file, line, rule)
        assert f.noise and why in f.noise, (case, line, f.noise)
        assert f.severity.rank <= Severity.low.rank
    for file, line, rule in kept:
        (f,) = _at(found, file, line, rule)
        assert f.noise is None and f.severity.at_least(Severity.medium), (case, line, f.noise)


@needs_ruff
def test_deliberate_reexports_are_noise_an_unused_import_stays(make_repo):
    repo = make_repo({
        "pyproject.toml": '[tool.ruff.lint]\nselect = ["F401", "PLC0414"]\n',
        "pkg/__init__.py": "from pkg.api import load\n",
        "pkg/api.py": "from pkg.core import parse as parse\n\n\ndef load():\n    return 1\n",
        "pkg/core.py": "import os\n\n\ndef parse():\n    return 2\n",
    })
    found = _lint(repo)
    (init,) = _at(found, "pkg/__init__.py", 1, "F401")
    assert init.noise and "re-exports" in init.noise
    (alias,) = _at(found, "pkg/api.py", 1, "PLC0414")
    assert alias.noise and "re-export" in alias.noise
    (unused,) = _at(found, "pkg/core.py", 1, "F401")
    assert unused.noise is None


def test_a_noise_report_does_not_raise_the_one_worth_acting_on():
    lead = _mk("BLE001", 3, Severity.low)
    advisory = _mk("S110", 3, Severity.medium, noise="an advisory")
    (out,), merged = merge_lines([lead, advisory])
    assert merged == 1 and out.severity is Severity.low and out.related_rules == ["S110"]
    real = _mk("B608", 3, Severity.high, tool="bandit", category="security")
    (out,), _ = merge_lines([lead, real])
    assert out.severity is Severity.high


def test_hash_for_a_lookup_key_and_an_exec_advisory_are_noise(tmp_path):
    (tmp_path / "m.py").write_text(
        "def get_template_key(name):\n    return 'tmpl_' + sha1(name).hexdigest()\n"
        "def get_secret_key(name):\n    return sha1(name).hexdigest()\n"
        "os.execvpe(prog, args, env)\n"
    )
    findings = [
        _mk("B324", 2, Severity.medium, tool="bandit", category="security", file="m.py"),
        _mk("B324", 4, Severity.medium, tool="bandit", category="security", file="m.py"),
        _mk("B606", 5, Severity.low, tool="bandit", category="security", file="m.py"),
    ]
    out = {f.range.start_line: f for f in _filtered(tmp_path, findings)}
    assert out[2].noise and "cache key" in out[2].noise
    assert out[4].noise is None  # a secret key's hash protects something
    assert out[5].noise and "advisory" in out[5].noise


@needs_ruff
def test_env_default_converted_at_once_is_noise_kept_raw_it_stays(make_repo):
    repo = make_repo({
        "pyproject.toml": '[tool.ruff.lint]\nselect = ["PLW1508"]\n',
        "conf.py": ("import os\n\n"
                    "WORKERS = int(os.environ.get('WEB_CONCURRENCY', 1))\n"
                    "PORT = os.environ.get('PORT', 8000)\n"),
    })
    found = _lint(repo)
    (conv,) = _at(found, "conf.py", 3, "PLW1508")
    assert conv.noise and "converted at once" in conv.noise
    (raw,) = _at(found, "conf.py", 4, "PLW1508")
    assert raw.noise is None and raw.severity is Severity.medium
