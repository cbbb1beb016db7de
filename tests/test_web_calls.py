"""security_tester's request data followed through the project's own
functions, both ways: a helper whose parameter reaches a sink (in the same
module, in an imported one, two calls deep), a class-based view's and a
graphene resolver's arguments as request data, and stored XSS (a database
read rendered through ``|safe``, ``Markup``). Each case is shown at its
line; its neighbour stays quiet (the red-team cases: a sanitised value, a
constant, a helper that cleans its parameter, a value not from the
database, an import that would leave the project)."""

from __future__ import annotations

import ast

import pytest

from superqode_ls.models import Severity
from superqode_ls.qe.roles._web import may_match, web_patterns
from superqode_ls.qe.roles._web_calls import _Cache, _candidates
from superqode_ls.qe.roles.security import SecurityTester
from tests.role_helpers import make_ctx, run_role

RULES = {"path-traversal", "open-redirect", "reflected-xss", "ssrf", "command-injection",
         "stored-xss", "xpath-injection"}


def _hits(files: dict[str, str], rel: str) -> list[tuple[str, int, Severity]]:
    source = files[rel]
    if not may_match(source):
        return []
    return sorted((rule, node.lineno, sev) for node, rule, _t, _m, sev
                  in web_patterns(ast.parse(source), rel, source, files.get) if rule in RULES)


FLASK = "from flask import Flask, request, render_template, Markup\napp = Flask(__name__)\n"
HELPERS = """import os
import subprocess
import requests

def save_file(filename, text):
    with open('/srv/uploads/' + filename, 'w') as f:
        f.write(text)

def safe_save(filename, text):
    with open('/srv/uploads/' + os.path.basename(filename), 'w') as f:
        f.write(text)

def run_cmd(cmd):
    return os.popen(cmd).read()

def disk(parameters):
    return subprocess.run('df -h ' + parameters, shell=True)

def fetch(url):
    return requests.get(url).text

def store(name, data):
    return save_file(name, data)
"""

SHOWN = [
    # the same module: a helper whose parameter reaches open()
    ({"app.py": FLASK + "def read(name):\n    return open('files/' + name).read()\n"
      "@app.route('/r')\ndef r():\n    return read(request.args['f'])\n"},
     "app.py", ("path-traversal", 7, Severity.high)),
    # ... a method called through self, and a keyword argument
    ({"app.py": FLASK + "class Store:\n    def put(self, path, data):\n"
      "        open(path, 'w').write(data)\n"
      "    def save(self):\n        self.put(path=request.form['p'], data='x')\n"},
     "app.py", ("path-traversal", 7, Severity.high)),
    # an imported module's helpers: file, shell, subprocess(shell=True), URL
    ({"core/helpers.py": HELPERS, "core/views.py": FLASK + "from core import helpers\n"
      "@app.route('/u')\ndef u():\n    helpers.save_file(request.args['n'], 'x')\n"},
     "core/views.py", ("path-traversal", 6, Severity.high)),
    ({"core/helpers.py": HELPERS, "core/views.py": FLASK + "from .helpers import fetch as get\n"
      "@app.route('/g')\ndef g():\n    return get(url=request.args['u'])\n"},
     "core/views.py", ("ssrf", 6, Severity.high)),
    ({"core/helpers.py": HELPERS, "core/views.py": FLASK + "import core.helpers as h\n"
      "@app.route('/f')\ndef f():\n    return h.fetch(request.args['url'])\n"},
     "core/views.py", ("ssrf", 6, Severity.high)),
    # two calls deep: store() -> save_file() -> open()
    ({"core/helpers.py": HELPERS, "core/views.py": FLASK + "from core import helpers\n"
      "@app.route('/s')\ndef s():\n    helpers.store(request.form['n'], 'x')\n"},
     "core/views.py", ("path-traversal", 6, Severity.high)),
    # a graphene resolver's and mutation's arguments are request data
    ({"core/helpers.py": HELPERS, "core/schema.py": "import graphene\nfrom core import helpers\n"
      "class Query(graphene.ObjectType):\n"
      "    def resolve_image(self, info, url):\n"
      "        return helpers.fetch(url)\n"},
     "core/schema.py", ("ssrf", 5, Severity.high)),
    ({"core/helpers.py": HELPERS, "core/schema.py": "import graphene\nfrom core import helpers\n"
      "class Upload(graphene.Mutation):\n    def mutate(self, info, filename, content):\n"
      "        return helpers.save_file(filename, content)\n"},
     "core/schema.py", ("path-traversal", 5, Severity.high)),
    # class-based views: Flask's MethodView, Django's View
    ({"views.py": "from flask.views import MethodView\nfrom flask import send_file\n"
      "class Files(MethodView):\n    def get(self, name):\n"
      "        return send_file('static/' + name)\n"},
     "views.py", ("path-traversal", 5, Severity.high)),
    ({"app/pages.py": "from django.views import View\nfrom django.http import HttpResponse\n"
      "class Hello(View):\n    def get(self, request, slug):\n"
      "        return HttpResponse('<h1>%s</h1>' % slug)\n"},
     "app/pages.py", ("reflected-xss", 5, Severity.high)),
]

QUIET = [
    # the helper cleans its parameter; a constant argument; an int
    ({"core/helpers.py": HELPERS, "core/views.py": FLASK + "from core import helpers\n"
      "@app.route('/u')\ndef u():\n    helpers.safe_save(request.args['n'], 'x')\n"},
     "core/views.py"),
    ({"core/helpers.py": HELPERS, "core/views.py": FLASK + "from core import helpers\n"
      "@app.route('/u')\ndef u():\n    return helpers.run_cmd('uptime')\n"},
     "core/views.py"),
    # request data given to the parameter that reaches no sink
    ({"core/helpers.py": HELPERS, "core/views.py": FLASK + "from core import helpers\n"
      "@app.route('/u')\ndef u():\n    helpers.save_file('log.txt', request.form['text'])\n"},
     "core/views.py"),
    # a graphene resolver's ``info`` is no request text
    ({"core/helpers.py": HELPERS, "core/schema.py": "import graphene\nfrom core import helpers\n"
      "class Query(graphene.ObjectType):\n    def resolve_x(self, info):\n"
      "        return helpers.fetch(info.context.url)\n"},
     "core/schema.py"),
    # a helper's shell call is bandit's finding at its own line (B605/B602):
    # no second one at each caller
    ({"core/helpers.py": HELPERS, "core/views.py": FLASK + "from core.helpers import run_cmd, disk\n"
      "@app.route('/c')\ndef c():\n    return run_cmd(request.args['cmd']) + disk(request.args['p'])\n"},
     "core/views.py"),
    # a method named get of a class that is no view
    ({"util.py": "from flask import send_file\nclass Cache:\n    def get(self, name):\n"
      "        return send_file('static/' + name)\n"}, "util.py"),
]


@pytest.mark.parametrize("files,rel,expected", SHOWN)
def test_flow_through_calls_is_shown_at_the_call(files, rel, expected):
    assert expected in _hits(files, rel)


@pytest.mark.parametrize("files,rel", QUIET)
def test_safe_neighbour_stays_quiet(files, rel):
    assert _hits(files, rel) == []


def test_a_helper_reading_the_request_itself_is_shown_once():
    """Reported where it reads the request, not again at each caller."""
    files = {"app.py": FLASK + "def read(name):\n    return open(request.args['f']).read()\n"
             "def other():\n    return read('x')\n"}
    assert _hits(files, "app.py") == [("path-traversal", 4, Severity.high)]


def test_the_finding_names_the_chain_to_the_sink():
    files = {"core/helpers.py": HELPERS, "core/views.py": FLASK + "from core import helpers\n"
             "@app.route('/s')\ndef s():\n    helpers.store(request.form['n'], 'x')\n"}
    [msg] = [m for _n, rule, _t, m, _s in web_patterns(
        ast.parse(files["core/views.py"]), "core/views.py", files["core/views.py"], files.get)
        if rule == "path-traversal"]
    assert "store() → save_file() → open() at core/helpers.py:6" in msg


def test_one_rule_on_one_line_is_one_hit():
    """Two flows of one rule on one line (two helpers, each reaching open())
    are one hit."""
    files = {"core/helpers.py": HELPERS, "core/views.py": FLASK + "from core import helpers\n"
             "@app.route('/c')\ndef c():\n"
             "    return helpers.store(request.args['a'], '') or helpers.save_file(request.args['b'], '')\n"}
    assert _hits(files, "core/views.py") == [("path-traversal", 6, Severity.high)]


def test_imports_never_leave_the_project():
    """Only paths made of the import's identifiers are read: a relative
    import above the root, or a name that is no identifier, reads nothing."""
    assert _candidates("app.py", "x", 2) == []
    assert _candidates("a/b.py", "..etc", 0) == []
    assert _candidates("a/b.py", "x/y", 0) == []
    assert all(".." not in p and not p.startswith("/")
               for p in _candidates("a/b/c.py", "d.e", 3))
    assert _candidates("a/b/c.py", "helpers", 1) == ["a/b/helpers.py", "a/b/helpers/__init__.py"]


STORED_VIEWS = """from flask import Flask, request, render_template, Markup
from flask_login import current_user
from app.db import posts_db
app = Flask(__name__)


@app.route('/post/<post_id>')
def post(post_id):
    post = posts_db.get_post(post_id)
    return render_template('post.html', post=post)


@app.route('/new', methods=['POST'])
def new():
    posts_db.add_post(request.form['title'], request.form['article'])
    return 'ok'


@app.route('/notes')
def notes():
    notes = Note.query.filter_by(user_id=current_user.id).all()
    return render_template('notes.html', notes=notes)


@app.route('/plain')
def plain():
    return render_template('notes.html', notes=Note.query.all(), banner=BANNER)


@app.route('/banner')
def banner():
    return render_template('banner.html', banner=BANNER)


@app.route('/hello')
def hello():
    message = Markup(f"{current_user.first_name}'s notes")
    fixed = Markup("<b>hi</b>")
    return render_template('banner.html', banner=message + fixed)
"""
STORED_DB = """import sqlite3


class posts_db:
    def get_post(post_id):
        db = sqlite3.connect('x.db')
        return db.execute('SELECT * FROM post WHERE id = ?', (post_id,)).fetchone()

    def add_post(title, article):
        db = sqlite3.connect('x.db')
        db.execute('INSERT INTO post (title, article) VALUES (?, ?)', (title, article))
"""


def test_stored_xss_is_shown_at_the_render_with_the_write(make_repo):
    repo = make_repo({
        "app/db.py": STORED_DB,
        "app/views.py": STORED_VIEWS,
        "app/templates/post.html": "<h1>{{ post['title'] }}</h1>\n<p>{{ post['article']|safe }}</p>\n",
        "app/templates/notes.html": ("{% for n in notes %}\n  <p>{{ n.text | safe }}</p>\n"
                                     "{% endfor %}\n{{ banner|safe }}\n"),
        "app/templates/banner.html": "{{ banner|safe }}\n",
    })
    out = run_role(SecurityTester(), make_ctx(repo))
    got = {f.range.start_line: f for f in out.findings
           if f.rule_id.split("+")[0] == "stored-xss"}
    assert set(got) == {10, 22, 27, 37}, sorted(got)
    # through a project function that returns a row, the write named
    assert "post.html:2" in got[10].message
    assert "add_post() at app/views.py:15" in got[10].message
    assert got[10].severity is Severity.medium and "CWE-79" in got[10].tags
    # an ORM query's rows printed in a loop with |safe; flask-login's user in Markup
    assert "notes.html:2" in got[22].message
    assert "Markup()" in got[37].message
    # quiet: a constant given to |safe (line 32), Markup of a literal


def test_stored_xss_neighbours_stay_quiet():
    files = {"app/db.py": STORED_DB,
             "app/templates/post.html": "<p>{{ post['article'] }}</p>\n",
             "app/templates/off.html": "{% autoescape false %}{{ post.body }}{% endautoescape %}\n",
             "app/views.py": ("from flask import Flask, render_template\nfrom app.db import posts_db\n"
                              "app = Flask(__name__)\n@app.route('/p/<i>')\ndef p(i):\n"
                              "    post = posts_db.get_post(i)\n"
                              "    return render_template('post.html', post=post)\n"
                              "@app.route('/o')\ndef o():\n"
                              "    return render_template('off.html', post=load_settings())\n")}
    assert _hits(files, "app/views.py") == []  # printed escaped; no database read
    # Flask's session is the signed cookie, not a database read
    files["app/templates/off.html"] = "{{ post|safe }}"
    files["app/views.py"] = files["app/views.py"].replace("load_settings()", "session.get('u')")
    assert _hits(files, "app/views.py") == []
    files["app/templates/post.html"] = "{% autoescape false %}{{ post['article'] }}{% endautoescape %}"
    assert _hits(files, "app/views.py") == [("stored-xss", 7, Severity.medium)]


def test_stored_text_escaped_or_drawn_as_a_qr_code_is_no_stored_xss():
    # securedrop: Markup over escape()d parts, and over the SVG a QR code
    # library draws from the user's name; the same row's name marked safe
    # as text stays shown
    views = ("from flask import Flask, render_template, flash\n"
             "from markupsafe import Markup, escape\n"
             "app = Flask(__name__)\n"
             "@app.route('/u/<uid>')\ndef u(uid):\n"
             "    user = User.query.get(uid)\n"
             "    flash(Markup('<b>{}</b> {}'.format(escape('Saved'), escape(user.name))))\n"
             "    qr = Markup(user.totp.qrcode_svg(user.name).decode())\n"
             "    count = Markup('<i>%d</i>' % len(user.items))\n"
             "    bad = Markup('<b>{}</b>'.format(user.name))\n"
             "    return render_template('u.html', qr=qr, count=count, bad=bad)\n")
    files = {"app/views.py": views, "app/templates/u.html": "{{ qr }}{{ count }}{{ bad }}\n"}
    assert _hits(files, "app/views.py") == [("stored-xss", 10, Severity.medium)]


def test_the_module_cache_is_bounded():
    cache = _Cache(size=2)
    for n in range(3):
        cache.put((f"m{n}.py", "digest", 2), ({}, frozenset()))
    assert cache.get(("m0.py", "digest", 2)) is None  # the oldest went first
    assert cache.get(("m2.py", "digest", 2)) == ({}, frozenset())


def test_a_configuration_file_template_is_no_page_its_html_twin_stays():
    # modoboa's offlineimap.conf rendered from the database into a file: no
    # browser reads it; the same render into an .html page stays
    files = {"app/db.py": STORED_DB,
             "app/templates/sync.conf": "{% autoescape false %}{{ post['article'] }}{% endautoescape %}\n",
             "app/templates/post.html": "{% autoescape false %}{{ post['article'] }}{% endautoescape %}\n",
             "app/views.py": ("from flask import Flask, render_template\nfrom app.db import posts_db\n"
                              "app = Flask(__name__)\n@app.route('/p/<i>')\ndef p(i):\n"
                              "    post = posts_db.get_post(i)\n"
                              "    return render_template('sync.conf', post=post)\n"
                              "@app.route('/h/<i>')\ndef h(i):\n"
                              "    post = posts_db.get_post(i)\n"
                              "    return render_template('post.html', post=post)\n")}
    assert _hits(files, "app/views.py") == [("stored-xss", 11, Severity.medium)]
