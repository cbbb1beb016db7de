"""security_tester's round-4 web checks both ways: SSRF, CORS with
credentials, CSRF turned off, a command line built for a run_cmd-like
helper, SQLAlchemy's text() without SQL words and pathlib's open() of a
request path; each shown at its line and a safe neighbour quiet (the
red-team cases: a fixed host, an allow-listed host, a named origin list,
no credentials, a read-only exempt view, a constant command, bound
parameters)."""

from __future__ import annotations

import ast

import pytest

from superqode_ls.models import Finding, Severity
from superqode_ls.qe.context import is_sink
from superqode_ls.qe.noise import canonical_rule
from superqode_ls.qe.roles._web import may_match, web_patterns
from superqode_ls.qe.roles.security import SecurityTester
from tests.role_helpers import make_ctx, run_role

RULES = {"ssrf", "cors-credentials", "csrf-disabled", "command-injection", "sql-injection",
         "path-traversal"}


def _hits(source: str, rel: str = "app.py") -> list[tuple[str, int, Severity]]:
    if not may_match(source):
        return []
    return [(rule, node.lineno, sev)
            for node, rule, _t, _m, sev in web_patterns(ast.parse(source), rel, source)
            if rule in RULES]


F = ("from flask import Flask, request\nimport requests, httpx\n"
     "from urllib.request import urlopen\napp = Flask(__name__)\n")
CORS = F + "from flask_cors import CORS\n"
EXEMPT = "from django.views.decorators.csrf import csrf_exempt\n@csrf_exempt\ndef v(request):\n"

SHOWN = [
    (F + "@app.route('/f')\ndef f():\n    u = request.args.get('u')\n    r = urlopen(u)\n"
     "    return 'x'\n", "app.py", ("ssrf", 8, Severity.high)),
    (F + "@app.route('/f')\ndef f():\n    h = request.args.get('h')\n"
     "    return httpx.get(f'http://{h}/status').status_code\n", "app.py", ("ssrf", 8, Severity.high)),
    (F + "@app.route('/f/<path:url>')\ndef f(url):\n    requests.post(url, json={})\n    return ''\n",
     "app.py", ("ssrf", 7, Severity.high)),
    (CORS + "CORS(app, supports_credentials=True)\n", "app.py",
     ("cors-credentials", 6, Severity.high)),
    (CORS + "CORS(app, resources={r'/*': {'origins': '*'}}, supports_credentials=True)\n", "app.py",
     ("cors-credentials", 6, Severity.high)),
    (("from fastapi.middleware.cors import CORSMiddleware\n"
      "app.add_middleware(CORSMiddleware, allow_origins=['*'], allow_credentials=True)\n"),
     "main.py", ("cors-credentials", 2, Severity.high)),
    (F + "@app.after_request\ndef a(resp):\n"
     "    resp.headers['Access-Control-Allow-Origin'] = request.headers.get('Origin')\n"
     "    resp.headers['Access-Control-Allow-Credentials'] = 'true'\n    return resp\n",
     "app.py", ("cors-credentials", 7, Severity.high)),
    ("CORS_ALLOW_ALL_ORIGINS = True\nCORS_ALLOW_CREDENTIALS = True\n", "site/settings.py",
     ("cors-credentials", 1, Severity.high)),
    ("app.config['WTF_CSRF_ENABLED'] = False\n", "app.py", ("csrf-disabled", 1, Severity.medium)),
    ("WTF_CSRF_ENABLED = False\n", "config.py", ("csrf-disabled", 1, Severity.medium)),
    (EXEMPT + "    u = User(name=request.POST['n'])\n    u.save()\n", "views.py",
     ("csrf-disabled", 2, Severity.medium)),
    (("MIDDLEWARE = ['django.contrib.sessions.middleware.SessionMiddleware',\n"
      "              'django.middleware.common.CommonMiddleware']\n"), "proj/settings.py",
     ("csrf-disabled", 1, Severity.medium)),
    (("from core import helpers\ndef r(self, info, arg):\n"
     "    return helpers.run_cmd('ps {}'.format(arg))\n"), "views.py",
     ("command-injection", 3, Severity.high)),
    ("from sqlalchemy import text\ndef r(q, f):\n    return q.filter(text(\"title = '%s'\" % f))\n",
     "views.py", ("sql-injection", 3, Severity.high)),
    (F + "from pathlib import Path\n@app.route('/m', methods=['POST'])\ndef m():\n"
     "    fn = request.form.get('f') + '.txt'\n    path = Path('data/' + fn)\n"
     "    with path.open('w') as f:\n        f.write('x')\n    return 'ok'\n", "app.py",
     ("path-traversal", 10, Severity.high)),
]

QUIET = [
    # a fixed URL, a fixed scheme and host in front, a host checked against a list
    (F + "@app.route('/f')\ndef f():\n    return requests.get('https://api.x.com/v1').text\n", "app.py"),
    (F + "@app.route('/f')\ndef f():\n    p = request.args['p']\n"
     "    return requests.get('https://api.x.com/' + p).text\n", "app.py"),
    (F + "from urllib.parse import urlparse\n@app.route('/f')\ndef f():\n    u = request.args['u']\n"
     "    if urlparse(u).hostname not in ALLOWED:\n        return 'no'\n"
     "    return requests.get(u).text\n", "app.py"),
    # another object's get(), and a URL from a parameter of a plain function
    (F + "@app.route('/f')\ndef f():\n    d = {}\n    return d.get(request.args['u'])\n", "app.py"),
    ("import requests\ndef fetch(url):\n    return requests.get(url, timeout=5)\n", "client.py"),
    # a named origin list with credentials, any origin without them
    (CORS + "CORS(app, origins=['https://a.com'], supports_credentials=True)\n", "app.py"),
    (CORS + "CORS(app)\n", "app.py"),
    (("from fastapi.middleware.cors import CORSMiddleware\n"
      "app.add_middleware(CORSMiddleware, allow_origins=['*'])\n"), "main.py"),
    (F + "@app.after_request\ndef a(resp):\n    resp.headers['Access-Control-Allow-Origin'] = '*'\n"
     "    return resp\n", "app.py"),
    ("CORS_ALLOW_ALL_ORIGINS = True\n", "site/settings.py"),
    # CSRF on, an exempt view that only reads, the middleware in place
    ("WTF_CSRF_ENABLED = True\n", "config.py"),
    (EXEMPT + "    return JsonResponse({'ok': 1})\n", "views.py"),
    (("MIDDLEWARE = ['django.contrib.sessions.middleware.SessionMiddleware',\n"
      "              'django.middleware.csrf.CsrfViewMiddleware']\n"), "proj/settings.py"),
    # a constant command, another helper's name, text() with bound parameters
    ("from core import helpers\ndef r(self, info):\n    return helpers.run_cmd('uptime')\n",
     "views.py"),
    ("def r(self, arg):\n    return log_cmd('ps {}'.format(arg))\n", "views.py"),
    ("from sqlalchemy import text\ndef r(q, f):\n    return q.filter(text('title = :t')).params(t=f)\n",
     "views.py"),
    ("def r(q, f):\n    return text(\"title = '%s'\" % f)\n", "views.py"),
    # pathlib on a fixed path, request data only written into it
    (F + "from pathlib import Path\n@app.route('/m', methods=['POST'])\ndef m():\n"
     "    path = Path('data/x.txt')\n    with path.open('w') as f:\n"
     "        f.write(request.form['t'])\n    return 'ok'\n", "app.py"),
]


@pytest.mark.parametrize(("source", "rel", "expected"), SHOWN)
def test_shown_at_its_line(source: str, rel: str, expected: tuple[str, int, Severity]) -> None:
    assert expected in _hits(source, rel)


@pytest.mark.parametrize(("source", "rel"), QUIET)
def test_safe_neighbour_stays_quiet(source: str, rel: str) -> None:
    assert _hits(source, rel) == []


@pytest.mark.parametrize("rule", ["ssrf", "command-injection", "cors-credentials", "csrf-disabled"])
def test_new_rules_are_sinks(rule: str) -> None:
    """Never hidden by a confidence threshold: a flaw, not an advisory."""
    f = Finding(id="x", role="security_tester", tool="superqode", rule_id=rule, title="t",
                message="m", severity=Severity.medium, confidence=0.3, file="app.py")
    assert is_sink(f, canonical_rule)


def test_the_role_tags_them_with_their_weakness(make_repo) -> None:
    repo = make_repo({"app.py": F + "from flask_cors import CORS\n"
                      "CORS(app, supports_credentials=True)\n"
                      "app.config['WTF_CSRF_ENABLED'] = False\n"
                      "@app.route('/f')\ndef f():\n    u = request.args.get('u')\n"
                      "    r = urlopen(u)\n    return 'x'\n"})
    out = run_role(SecurityTester(), make_ctx(repo))
    got = {f.rule_id.split("+")[0]: f for f in out.findings if f.tool == "superqode-patterns"}
    assert "CWE-918" in got["ssrf"].tags
    assert "CWE-942" in got["cors-credentials"].tags
    assert "CWE-352" in got["csrf-disabled"].tags


ADD_URL_RULE = ("from flask import Flask, send_file\napp = Flask(__name__)\n"
                "def show(name):\n    return send_file('files/' + name)\n"
                "def item(n):\n    return send_file('files/%d.txt' % n)\n"
                "def other(name):\n    return send_file('files/' + name)\n"
                "app.add_url_rule('/f/<name>', view_func=show)\n"
                "app.add_url_rule('/i/<int:n>', 'item', item)\n")


def test_a_view_registered_with_add_url_rule_is_a_route() -> None:
    """Its path parameters are the sender's; a number converter's is not,
    and an unregistered function's parameter is no request data."""
    got = _hits(ADD_URL_RULE)
    assert ("path-traversal", 4, Severity.high) in got
    assert [h for h in got if h[1] in (6, 8)] == []
