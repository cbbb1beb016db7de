"""security_tester's request-data checks both ways: path traversal, open
redirects, reflected XSS, XPath injection, lxml's default parser, and a
framework's parameters as request data; each shown at its line and a safe
neighbour quiet (the red-team cases: a sanitiser, a fixed prefix, a value
looked up rather than sent, a number, an injected dependency)."""

from __future__ import annotations

import ast

import pytest

from superqode_ls.models import Finding, Severity
from superqode_ls.qe.context import is_sink
from superqode_ls.qe.noise import canonical_rule
from superqode_ls.qe.roles._web import may_match, web_patterns
from superqode_ls.qe.roles.security import SecurityTester
from tests.role_helpers import make_ctx, run_role

FLOW_RULES = {"path-traversal", "open-redirect", "reflected-xss", "xpath-injection", "xxe",
              "template-injection"}


def _hits(source: str, rel: str = "app.py") -> list[tuple[str, int, Severity]]:
    if not may_match(source):
        return []
    return [(rule, node.lineno, sev)
            for node, rule, _t, _m, sev in web_patterns(ast.parse(source), rel, source)
            if rule in FLOW_RULES]


FLASK = "from flask import Flask, request, redirect, send_file, make_response\napp = Flask(__name__)\n"

SHOWN = [
    # path traversal: a query argument, through os.path.join
    ((FLASK + "@app.route('/read')\ndef read():\n    name = request.args.get('f')\n"
     "    return open(os.path.join('files', name)).read()\n"),
     ("path-traversal", 6, Severity.high)),
    # ... a Flask route's own argument
    (FLASK + "@app.route('/dl/<path:name>')\ndef dl(name):\n    return send_file('static/' + name)\n",
     ("path-traversal", 5, Severity.high)),
    # ... an http.server handler's query, split and decoded into a dict
    (("import os\nfrom http.server import BaseHTTPRequestHandler\n"
      "class H(BaseHTTPRequestHandler):\n    def do_GET(self):\n"
      "        path, query = self.path.split('?', 1) if '?' in self.path else (self.path, '')\n"
      "        code, params = 200, dict(q.split('=') for q in query.split('&'))\n"
      "        return open(os.path.abspath(params['path']), 'rb').read()\n"),
     ("path-traversal", 7, Severity.high)),
    # ... a sanitiser on another part of the path hides nothing
    (("import os\nfrom django.http import FileResponse\ndef read(request):\n"
      "    return FileResponse(os.path.join(os.path.basename(BASE), request.GET['f']))\n"),
     ("path-traversal", 4, Severity.high)),
    # open redirect: the whole URL from the request, also through a name
    (FLASK + "@app.route('/go')\ndef go():\n    return redirect(request.args.get('next'))\n",
     ("open-redirect", 5, Severity.medium)),
    (("from django.shortcuts import redirect\ndef out(request):\n"
     "    url = request.GET.get('url')\n    return redirect(url)\n"),
     ("open-redirect", 4, Severity.medium)),
    # ... this site's route with a path from the request after it ('/' then '/evil.com'),
    # or the request's text in front of the route
    (("from django.http import HttpResponseRedirect\nfrom django.urls import reverse\n"
      "def go(request):\n    return HttpResponseRedirect(reverse('index') + request.GET['to'])\n"),
     ("open-redirect", 4, Severity.medium)),
    (("from django.http import HttpResponseRedirect\nfrom django.urls import reverse\n"
      "def go(request):\n"
      "    return HttpResponseRedirect(f\"{request.GET['to']}{reverse('index')}?a=1\")\n"),
     ("open-redirect", 4, Severity.medium)),
    # reflected XSS: a route returning request text as HTML, make_response of it
    (FLASK + "@app.route('/hi')\ndef hi():\n    return f\"<p>Hello {request.args['name']}</p>\"\n",
     ("reflected-xss", 5, Severity.high)),
    ((FLASK + "@app.route('/e')\ndef e():\n    q = request.args.get('q')\n"
     "    return make_response('<b>' + q + '</b>')\n"),
     ("reflected-xss", 6, Severity.high)),
    # ... a FastAPI parameter added to an HTMLResponse
    (("from fastapi import FastAPI\nfrom fastapi.responses import HTMLResponse\napp = FastAPI()\n"
     "@app.get('/x')\nasync def x(user_input: str):\n    page = '<h1>hi</h1>'\n"
     "    page += '<p>' + user_input + '</p>'\n    return HTMLResponse(page)\n"),
     ("reflected-xss", 8, Severity.high)),
    # ... a Django view's URL argument
    (("from django.http import HttpResponse\ndef show(request, slug):\n"
     "    return HttpResponse('<h1>%s</h1>' % slug)\n"),
     ("reflected-xss", 3, Severity.high)),
    # ... through the file's helper that returns request data
    (("from django.http import HttpResponse\ndef _input(request):\n"
     "    return request.GET.get('q', '')\n"
     "def page(request):\n    return HttpResponse('<p>' + _input(request) + '</p>')\n"),
     ("reflected-xss", 5, Severity.high)),
    # XPath injection
    (("import lxml.etree\ndef find(request):\n    name = request.GET['name']\n"
     "    return TREE.xpath(\".//user[name/text()='%s']\" % name)\n"),
     ("xpath-injection", 4, Severity.high)),
    # lxml's default parser on request data
    ("from lxml import etree\ndef upload(request):\n    return etree.fromstring(request.body)\n",
     ("xxe", 3, Severity.medium)),
    # SSTI through a FastAPI query parameter is now request data: high
    (("import jinja2\nfrom fastapi import FastAPI\napp = FastAPI()\n@app.get('/hello')\n"
     "def hello(name: str):\n    return jinja2.Template(f'Hi {name}').render()\n"),
     ("template-injection", 6, Severity.high)),
]

QUIET = [
    # a sanitised file name
    (FLASK + "from werkzeug.utils import secure_filename\n@app.route('/read')\ndef read():\n"
     "    name = secure_filename(request.args.get('f'))\n    return open('files/' + name).read()\n"),
    # a path looked up in the database by the id the request gives
    ("def download(request, file_id):\n    f = File.objects.get(pk=file_id)\n"
     "    return open(BASE + f.path, 'rb').read()\n"),
    # an injected dependency and a number are no request text
    ("from fastapi import FastAPI, Depends\napp = FastAPI()\n@app.get('/u/{uid}')\n"
     "def u(uid: int, db = Depends(get_db)):\n    return open(db.path).read() + str(uid)\n"),
    (FLASK + "@app.route('/n/<int:n>')\ndef n(n):\n    return f'<p>{n}</p>'\n"),
    # a redirect with a fixed prefix, to url_for, or checked first
    (FLASK + "@app.route('/u')\ndef u():\n    return redirect('/user/' + request.args['id'])\n"),
    (FLASK + "@app.route('/u')\ndef u():\n    return redirect(url_for('user', id=request.args['id']))\n"),
    # the login page's route, then only a query string (wger's generic_views.py:89)
    ("from django.http import HttpResponseRedirect\nfrom django.urls import reverse_lazy\n"
      "def dispatch(request):\n    return HttpResponseRedirect(\n"
      "        reverse_lazy('core:user:login') + f'?next={request.GET[\"n\"]}')\n"),
    ("from django.http import HttpResponseRedirect\nfrom django.urls import reverse\n"
      "def go(request):\n"
      "    return HttpResponseRedirect(f\"{reverse('login')}#{request.GET['n']}\")\n"),
    ("from django.utils.http import url_has_allowed_host_and_scheme\ndef out(request):\n"
     "    url = request.GET.get('next')\n"
     "    if not url_has_allowed_host_and_scheme(url, None):\n        url = '/'\n"
     "    return redirect(url)\n"),
    # escaped, rendered or JSON text is no raw text
    (FLASK + "from markupsafe import escape\n@app.route('/hi')\ndef hi():\n"
     "    return f\"<p>Hello {escape(request.args['name'])}</p>\"\n"),
    (FLASK + "@app.route('/hi')\ndef hi():\n"
     "    page = render_template('hi.html', name=request.args['name'])\n    return page\n"),
    (FLASK + "@app.route('/m')\ndef m():\n    return request.method\n"),
    # a FastAPI route's string is JSON; plain text is no HTML
    ("from fastapi import FastAPI\napp = FastAPI()\n@app.get('/x')\ndef x(q: str):\n"
     "    return f'<p>{q}</p>'\n"),
    (FLASK + "@app.route('/t')\ndef t():\n"
     "    return make_response(request.args['q'], 200, mimetype='text/plain')\n"),
    # a helper that is no route: its string is no response
    "from flask import request\ndef label():\n    return f\"<b>{request.args['x']}</b>\"\n",
    # str.find, and an XPath with a constant, are no XPath injection
    "def f(request):\n    return request.path.find(f\"/{request.GET['a']}\")\n",
    "def f(request, tree):\n    return tree.xpath('//user[@id=$i]', i=request.GET['id'])\n",
    # lxml with an explicit parser (the sink checks cover an unsafe one)
    ("from lxml import etree\ndef read(request):\n"
     "    return etree.fromstring(request.body, etree.XMLParser(resolve_entities=False))\n"),
    # what the server attached to the request is not the sender's
    ("def conf(request):\n    path = request.app['config']['file']\n    return open(path).read()\n"),
]


@pytest.mark.parametrize("source,expected", SHOWN)
def test_flow_is_shown_at_its_line(source, expected):
    assert expected in _hits(source, "views.py")


@pytest.mark.parametrize("source", QUIET)
def test_safe_neighbour_stays_quiet(source):
    assert _hits(source, "views.py") == []


def test_library_code_that_mentions_a_request_is_not_walked():
    """Only a route, or a web framework's module (http.server, lxml) with
    request data and a sink, is walked: a library's own code is not."""
    source = "import os\ndef read(request):\n    return open(request.args['f']).read()\n"
    assert _hits(source, "views.py") == []
    assert _hits("from flask import request\n" + source, "views.py") == [
        ("path-traversal", 4, Severity.high)]


def test_django_arguments_count_in_views_modules_only():
    """A function taking ``request`` first in a helper module is no view:
    its other parameters are the caller's values."""
    source = ("from django.http import HttpResponse\ndef show(request, slug):\n"
              "    return HttpResponse('<h1>%s</h1>' % slug)\n")
    assert _hits(source, "views.py") == [("reflected-xss", 3, Severity.high)]
    assert _hits(source, "util.py") == []


def test_security_role_reports_them_with_their_weakness(make_repo):
    def case(text: str) -> str:
        return next(source for source, _ in SHOWN if text in source)

    repo = make_repo({"views.py": case("request.args.get('f')"),
                      "go.py": case("request.args.get('next')")})
    out = run_role(SecurityTester(), make_ctx(repo))
    got = {(f.file, f.range.start_line, f.rule_id.split("+")[0]): f for f in out.findings
           if f.tool == "superqode-patterns"}
    assert ("views.py", 6, "path-traversal") in got
    assert ("go.py", 5, "open-redirect") in got
    assert "CWE-22" in got[("views.py", 6, "path-traversal")].tags
    assert "CWE-601" in got[("go.py", 5, "open-redirect")].tags


@pytest.mark.parametrize("rule", ["path-traversal", "open-redirect", "reflected-xss",
                                  "xpath-injection"])
def test_a_raised_confidence_threshold_never_hides_them(rule):
    f = Finding(id="x", role="security_tester", tool="superqode", rule_id=rule, title="t",
                message="m", severity=Severity.medium, confidence=0.3, file="app.py")
    assert is_sink(f, canonical_rule)
