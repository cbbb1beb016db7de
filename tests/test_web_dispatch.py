"""security_tester's flows this round added, each shown at its line and
with a neighbour that stays quiet: SQL built in a handler and run by
another module's helper whatever its name (its parameter reaches
``execute()``/``text()``/``raw()``), a dispatcher handed the request's body
whole (``request.json``, ``request.get_json()``, aiohttp's ``await
request.post()``) whose subscripts and ``.get()`` reach a sink, and one
finding for an SSRF that bandit also reports at the helper's ``urlopen``."""

from __future__ import annotations

import ast

import pytest

from superqode_ls.models import Severity
from superqode_ls.qe.roles._web import may_match, web_patterns
from superqode_ls.qe.roles.security import SecurityTester
from tests.role_helpers import make_ctx, run_role
from tests.test_context_raise import found_by_security, needs_bandit
from tests.test_web_quiet import _noise, _shown

FLASK = "from flask import Flask, request\napp = Flask(__name__)\n"
DB = """import sqlite3
from sqlalchemy import text

conn = sqlite3.connect('app.db')

def fetch_all(q):
    cur = conn.cursor()
    cur.execute(q)
    return cur.fetchall()

def lookup(stmt, args=()):
    return conn.execute(stmt, args).fetchall()

def through(query):
    return fetch_all(query)

def orm(session, clause):
    return session.execute(text(clause)).all()

def count(table):
    return conn.execute('SELECT count(*) FROM users').fetchone()
"""


def _hits(files: dict[str, str], rel: str) -> list[tuple[str, int, Severity]]:
    source = files[rel]
    if not may_match(source):
        return []
    return sorted((rule, node.lineno, sev) for node, rule, _t, _m, sev
                  in web_patterns(ast.parse(source), rel, source, files.get))


def _view(body: str, imports: str = "from app import db\n") -> dict[str, str]:
    return {"app/__init__.py": "", "app/db.py": DB,
            "app/views.py": FLASK + imports + "@app.route('/u')\ndef u():\n" + body}


SQL_SHOWN = [
    # built in the handler, run by a module's helper named for nothing SQL
    (_view("    q = \"SELECT * FROM users WHERE name = '%s'\" % request.args['n']\n"
           "    return str(db.fetch_all(q))\n"), 6),
    # imported by name; the helper also returns the read (its mark kept apart)
    (_view("    return str(lookup(\"SELECT * FROM users WHERE name = '\" + request.args['n']"
           " + \"'\"))\n", "from app.db import lookup\n"), 6),
    # two calls deep: through() -> fetch_all() -> execute()
    (_view("    return str(db.through(f\"DELETE FROM users WHERE id = {request.args['i']}\"))\n"),
     6),
    # SQLAlchemy's text() of the parameter, the SQL given by keyword
    (_view("    return str(db.orm(db.conn, clause=\"SELECT * FROM t WHERE name = '%s'\""
           " % request.args['n']))\n"), 6),
]

SQL_QUIET = [
    # the value passed as a query parameter
    _view("    return str(db.lookup('SELECT * FROM users WHERE name = ?', (request.args['n'],)))\n"),
    # built SQL handed to a helper that never runs its parameter
    _view("    q = \"SELECT * FROM users WHERE name = '%s'\" % request.args['n']\n"
          "    return str(db.count(q))\n"),
    # a module that is not the project's: nothing read, nothing claimed
    _view("    q = \"SELECT * FROM users WHERE name = '%s'\" % request.args['n']\n"
          "    return str(other.fetch_all(q))\n", "import other\n"),
]


@pytest.mark.parametrize(("files", "line"), SQL_SHOWN)
def test_sql_run_by_another_modules_helper_is_shown(files, line):
    hits = [h for h in _hits(files, "app/views.py") if h[0] == "sql-injection"]
    assert hits == [("sql-injection", line, Severity.high)]


def test_the_sql_finding_names_the_helper_and_where_it_runs():
    files = SQL_SHOWN[2][0]
    source = files["app/views.py"]
    (message,) = [m for _n, r, _t, m, _s in web_patterns(ast.parse(source), "app/views.py",
                                                         source, files.get)
                  if r == "sql-injection"]
    assert "through() → fetch_all() → execute() at app/db.py:8" in message


@pytest.mark.parametrize("files", SQL_QUIET)
def test_sql_neighbours_stay_quiet(files):
    assert [h for h in _hits(files, "app/views.py") if h[0] == "sql-injection"] == []


OPS = """def handle(data):
    with open(data['path']) as f:
        return f.read()

def preview(data):
    import requests
    return requests.get(data.get('url')).text

def constant(data):
    return open('static/' + 'index.html').read()
"""

DISPATCH_SHOWN = [
    # a Flask handler hands the JSON body whole; the helper subscripts it
    ({"app/ops.py": OPS, "app/views.py": FLASK + "from app import ops\n"
      "@app.route('/api', methods=['POST'])\ndef api():\n    return ops.handle(request.json)\n"},
     ("path-traversal", 6)),
    # get_json() and the helper's .get()
    ({"app/ops.py": OPS, "app/views.py": FLASK + "from app import ops\n"
      "@app.route('/api')\ndef api():\n    return ops.preview(request.get_json())\n"},
     ("ssrf", 6)),
    # aiohttp: the form body awaited into a name, handed on
    ({"app/ops.py": OPS, "app/views.py": "from aiohttp import web\nfrom app import ops\n"
      "async def api(request):\n    data = await request.post()\n"
      "    return web.Response(text=ops.handle(data))\n"}, ("path-traversal", 5)),
    # ... and await request.json() passed directly, same module
    ({"app/views.py": "from aiohttp import web\n" + OPS +
      "async def api(request):\n    return web.Response(text=handle(await request.json()))\n"},
     ("path-traversal", 13)),
]

DISPATCH_QUIET = [
    # a dict the server builds, not the request's
    {"app/ops.py": OPS, "app/views.py": FLASK + "from app import ops\n"
     "@app.route('/api')\ndef api():\n    return ops.handle({'path': 'static/index.html'})\n"},
    # the request's body handed to a helper that opens a constant path
    {"app/ops.py": OPS, "app/views.py": FLASK + "from app import ops\n"
     "@app.route('/api')\ndef api():\n    return ops.constant(request.get_json())\n"},
    # what the server attached to the request is not the sender's
    {"app/ops.py": OPS, "app/views.py": "from aiohttp import web\nfrom app import ops\n"
     "async def api(request):\n    return web.Response(text=ops.handle(request.app))\n"},
]


@pytest.mark.parametrize(("files", "expected"), DISPATCH_SHOWN)
def test_a_dispatcher_given_the_request_whole_is_followed(files, expected):
    rule, line = expected
    assert (rule, line, Severity.high) in _hits(files, "app/views.py")


@pytest.mark.parametrize("files", DISPATCH_QUIET)
def test_dispatcher_neighbours_stay_quiet(files):
    assert [h for h in _hits(files, "app/views.py")
            if h[0] in ("path-traversal", "ssrf")] == []


SSRF = """import urllib.request
from flask import request, render_template


def ssrf_api():
    url = request.form['imageUrl']
    saved = _download(url)
    return render_template('ssrf.html', saved=saved)


def _download(url):
    with urllib.request.urlopen(url) as f:
        return f.read()


def fixed():
    with urllib.request.urlopen(FEED) as f:
        return f.read()
"""


def test_ssrf_through_a_helper_is_one_finding_naming_bandits_rule(make_repo):
    repo = make_repo({"app/__init__.py": "", "app/ssrf.py": SSRF,
                      "app/main.py": "FEED = 'https://example.com/feed'\n"})
    out = run_role(SecurityTester(), make_ctx(repo))
    by_line = {(f.rule_id, f.range.start_line) for f in out.findings if f.file == "app/ssrf.py"}
    if ("B310", 17) not in by_line:
        pytest.skip("bandit is not installed here")
    # the caller's finding stands for the flaw; bandit's B310 at the sink is in it
    (ssrf,) = [f for f in out.findings if f.rule_id == "ssrf"]
    assert ssrf.range.start_line == 7 and "B310" in ssrf.related_rules
    assert "urlopen() at app/ssrf.py:12" in ssrf.message
    assert ("B310", 12) not in by_line
    # bandit's B310 where no request data is shown to reach it stays
    assert ("B310", 17) in by_line


REDIRECTS = """from django.shortcuts import redirect
from django.views.decorators.csrf import csrf_exempt
from django.core.signing import TimestampSigner


def sudo(request):
    if request.POST.get('code') == '1':
        request.session['sudo'] = 'on'
        return redirect(request.path)


def after_login(request):
    url = request.GET.get('next')
    if url and _allow_redirect(url):
        return redirect(url)
    return redirect('index')


def unchecked(request):
    return redirect(request.GET.get('next'))


@csrf_exempt
def unsubscribe(request, signed):
    username = TimestampSigner().unsign(signed)
    User.objects.filter(username=username).update(reports=False)


@csrf_exempt
def rename(request):
    User.objects.filter(id=request.POST['id']).update(name=request.POST['n'])
"""


def test_redirects_to_this_page_or_through_the_projects_own_check_stay_quiet():
    hits = _hits({"views.py": REDIRECTS}, "views.py")
    # the neighbours: redirect(request.path) and a URL its own check passed
    assert [h[1] for h in hits if h[0] == "open-redirect"] == [20]
    # a view that checks a signed token is not exempt by mistake; one that is, is shown
    assert [h[1] for h in hits if h[0] == "csrf-disabled"] == [29]


def test_a_one_letter_password_filling_a_form_is_no_hard_coded_password():
    source = ("import requests\nrequests.post(URL, data={'login': 'x', 'password': 'a'})\n"
              "DB = {'user': 'app', 'password': 'Xk3-prod'}\n")
    hits = _hits({"scripts.py": source}, "scripts.py")
    assert [h[1] for h in hits if h[0] == "hardcoded-db-password"] == [3]


@needs_bandit
def test_a_cli_commands_own_argument_and_a_fixed_http_url_are_noise(make_repo):
    repo = make_repo({
        "cli.py": ("import os\nimport click\n\n\n@click.command()\n@click.argument('lang')\n"
                   "def init(lang):\n    os.system('pybabel init -l ' + lang)\n\n\n"
                   "def hook(who):\n    os.system('notify ' + who)\n"),
        "status.py": ("from urllib.request import Request, urlopen\n\n\ndef check(path):\n"
                      "    url = f'http://localhost:8000{path}/status/'\n"
                      "    return urlopen(Request(url)).status\n\n\n"
                      "def fetch(url):\n    return urlopen(url).read()\n"),
        "settings.py": ("class Config:\n    WTF_CSRF_ENABLED = True\n\n\n"
                        "class TestingConfig(Config):\n    TESTING = True\n"
                        "    WTF_CSRF_ENABLED = False\n\n\n"
                        "class ProductionConfig(Config):\n    WTF_CSRF_ENABLED = False\n"),
    })
    found = found_by_security(repo)
    _noise(found, "cli.py", 8, "B605")
    # a caller's value stays (the operator's own environment is noise_shellown's)
    assert _shown(found, "cli.py", 12, "B605")
    _noise(found, "status.py", 6, "B310")
    assert _shown(found, "status.py", 10, "B310")  # a parameter's URL may be file:
    # CSRF off in the test configuration is quiet; in another one it is shown
    assert [f.range.start_line for f in found if f.rule_id == "csrf-disabled"] == [11]


@needs_bandit
def test_all_interfaces_as_an_options_default_is_noise_bound_in_code_stays(make_repo):
    repo = make_repo({"smtpd.py": (
        "import argparse\nimport socket\n\nparser = argparse.ArgumentParser()\n"
        "parser.add_argument('--host', help='address', default='0.0.0.0')\n"
        "sock = socket.socket()\nsock.bind(('0.0.0.0', 25))\n")})
    found = found_by_security(repo)
    _noise(found, "smtpd.py", 5, "B104")
    assert _shown(found, "smtpd.py", 7, "B104")


def test_all_interfaces_as_a_listen_variables_default_is_noise_other_variables_stay(make_repo):
    # changedetection.io's LISTEN_HOST: the operator sets where the server
    # listens; the same address as another variable's default, or bound by
    # hand, stays.
    repo = make_repo({"server.py": (
        "import os\nimport socket\n\n"
        "host = os.environ.get('LISTEN_HOST', '0.0.0.0').strip()\n"
        "bind = os.getenv('BIND_ADDRESS', default='::')\n"
        "peer = os.environ.get('GHOSTNAME_PEER', '0.0.0.0')\n"
        "sock = socket.socket()\nsock.bind(('0.0.0.0', int(os.environ.get('PORT', 25))))\n")})
    found = found_by_security(repo)
    _noise(found, "server.py", 4, "B104")
    assert _shown(found, "server.py", 6, "B104")
    assert _shown(found, "server.py", 8, "B104")


API_VIEWS = """from django.views.decorators.csrf import csrf_exempt
from .decorators import authorize


@csrf_exempt
@authorize
def pause(request, code):
    Check.objects.filter(code=code).update(paused=True)


@csrf_exempt
def ping(request, ping_key, slug):
    Ping.objects.create(key=ping_key, slug=slug)


@csrf_exempt
@authorize
def rename(request, code):
    Check.objects.filter(code=code, owner=request.user).update(name=request.POST['n'])


@csrf_exempt
def anyone(request):
    Note.objects.create(text=request.POST['t'])


@csrf_exempt
def status(request, code: UUID):
    Notification.objects.filter(code=code).update(error=request.POST['error'])


@csrf_exempt
@authenticated
def rename_mine(request, code):
    Check.objects.filter(code=code).update(name=request.POST['n'])


@csrf_exempt
def search(request):
    query = "SELECT slug, title FROM docs WHERE docs MATCH ? LIMIT 8"
    return db.cursor().execute(query, (request.GET['q'],)).fetchall()


@csrf_exempt
def delete(request):
    db.cursor().execute("DELETE FROM notes WHERE id = ?", (request.POST['id'],))


@csrf_exempt
def bounces(request):
    bounce = unsign_bounce_id(request.POST['to'])
    Notification.objects.filter(code=bounce).update(bounced=True)
"""


def test_an_exempt_view_authenticated_by_its_own_key_is_quiet():
    hits = _hits({"api/views.py": API_VIEWS}, "api/views.py")
    # an API key (decorator), a URL key or UUID, a signed id: no cookie to ride;
    # a SELECT changes nothing, a DELETE does; a session decorator stays;
    # the session's user, or no authentication at all (an intranet), stays
    assert [h[1] for h in hits if h[0] == "csrf-disabled"] == [16, 22, 32, 44]


TORNADO = """import tornado.template
import tornado.web


class Hello(tornado.web.RequestHandler):
    def get(self):
        name = self.get_argument('name', '')
        page = TEMPLATE.replace('NAMEHERE', name)
        self.write(tornado.template.Template(page).generate())

    def post(self):
        self.redirect(self.get_body_argument('next'))

    def put(self):
        page = tornado.template.Template('<p>{{ name }}</p>')
        self.write(page.generate(name=self.get_argument('n')))
        self.redirect('/done?n=' + self.get_argument('n'))
"""


def test_a_tornado_handlers_arguments_are_request_data():
    hits = _hits({"server.py": TORNADO}, "server.py")
    # the argument pasted into a template's source; a redirect to the body's URL;
    # quiet: the argument given to a constant template, a redirect with a fixed prefix
    assert [(r, line) for r, line, _s in hits] == [("open-redirect", 12),
                                                   ("template-injection", 9)]


@needs_bandit
def test_a_chat_bots_command_is_no_command_line_tool(make_repo):
    repo = make_repo({"bot.py": (
        "import os\nfrom discord.ext import commands\n\nbot = commands.Bot('!')\n\n\n"
        "@bot.command()\nasync def ping(ctx, host):\n    os.system('ping -c1 ' + host)\n")})
    assert _shown(found_by_security(repo), "bot.py", 9, "B605")
