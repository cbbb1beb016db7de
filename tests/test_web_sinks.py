"""security_tester's web sinks both ways: server-side template injection,
SQL run through SQLAlchemy's text() or a project's helper, lxml XXE; each
shown at its line and a safe neighbour quiet."""

from __future__ import annotations

import ast

import pytest

from superqode_ls.models import Finding, Severity
from superqode_ls.qe.context import is_sink
from superqode_ls.qe.noise import canonical_rule
from superqode_ls.qe.roles._web import may_match, web_patterns
from superqode_ls.qe.roles.security import SecurityTester
from tests.role_helpers import make_ctx, run_role


def _hits(source: str) -> list[tuple[str, int, Severity]]:
    assert may_match(source)
    return [(rule, node.lineno, sev)
            for node, rule, _t, _m, sev in web_patterns(ast.parse(source), "app.py", source)]


SHOWN = [
    # SSTI: request data into the template's source (through a local name)
    (("from flask import request, render_template_string\n"
     "def hello():\n    name = request.args.get('name')\n"
     "    template = f'<h1>{name}</h1>'\n    return render_template_string(template)\n"),
     ("template-injection", 5, Severity.high)),
    (("from flask import request, render_template_string\n"
     "def page():\n    t = '<h3>%s</h3>' % request.url\n    return render_template_string(t)\n"),
     ("template-injection", 4, Severity.high)),
    ("import jinja2\ndef greet(user):\n    return jinja2.Template(f'Hi {user}').render()\n",
     ("template-injection", 3, Severity.medium)),
    (("from jinja2 import Environment\ndef show(body):\n"
     "    return Environment().from_string('<p>' + body + '</p>').render()\n"),
     ("template-injection", 3, Severity.medium)),
    # SQL through SQLAlchemy's text()
    (("from sqlalchemy.sql import text\ndef get_user(db, username):\n"
     "    q = f\"SELECT * FROM users WHERE username = '{username}'\"\n"
     "    return db.session.execute(text(q))\n"),
     ("sql-injection", 3, Severity.high)),
    # SQL through a helper of the file that hands its parameter to execute()
    (("import sqlite3\ndef query_rows(sql, args=()):\n"
     "    return sqlite3.connect('x').cursor().execute(sql, args).fetchall()\n"
     "def login(u, p):\n"
     "    query = \"SELECT id FROM user WHERE name = '%s' AND pw = '%s'\" % (u, p)\n"
     "    return query_rows(query)\n"),
     ("sql-injection", 5, Severity.high)),
    # ... also where the helper wraps it in text(), and called as a method
    (("from sqlalchemy import text\nclass Repo:\n    def run(self, sql):\n"
     "        return self.db.execute(text(sql))\n"
     "    def find(self, name):\n"
     "        return self.run('SELECT * FROM t WHERE name = ' + name)\n"),
     ("sql-injection", 6, Severity.high)),
    # ... and through an imported one (its body is in another module)
    (("from . import query_db\ndef add(u):\n"
     "    query_db(\"INSERT INTO user (name) VALUES ('%s')\" % u, [], False, True)\n"),
     ("sql-injection", 3, Severity.high)),
    # XXE: request data parsed with entities on
    (("import io, lxml.etree\nclass H:\n    def do_GET(self):\n"
     "        path, query = self.path.split('?', 1)\n        params = dict(q.split('=') for q in query.split('&'))\n"
     "        return lxml.etree.parse(io.BytesIO(params['xml'].encode()), "
     "lxml.etree.XMLParser(load_dtd=True, resolve_entities=True, no_network=False))\n"),
     ("xxe", 6, Severity.high)),
    ("from lxml import etree\nPARSER = etree.XMLParser(no_network=False)\n",
     ("xxe", 2, Severity.medium)),
]

QUIET = [
    # a constant template, values given to render() as variables
    ("from flask import request, render_template_string\n"
    "def hello():\n    name = request.args.get('name')\n"
    "    return render_template_string('<h1>{{ name }}</h1>', name=name)\n"),
    "import jinja2\ndef greet(user):\n    return jinja2.Template('Hi {{ u }}').render(u=user)\n",
    # a template the caller hands in (a name, not built here)
    "from jinja2 import Environment\ndef show(source):\n    return Environment().from_string(source)\n",
    # string.Template runs no code
    "from string import Template\ndef hi(x):\n    return Template(f'$a {x}').substitute(a=1)\n",
    # bound parameters through text() and through a helper
    ("from sqlalchemy.sql import text\ndef get_user(db, username):\n"
    "    return db.session.execute(text('SELECT * FROM users WHERE username = :u'), {'u': username})\n"),
    ("from . import query_db\ndef add(u):\n"
    "    query_db('INSERT INTO user (name) VALUES (?)', (u,))\n"),
    # SQL-looking text given to a function that runs none
    "import logging\ndef note(u):\n    logging.info('SELECT id FROM user WHERE name = %s' % u)\n",
    # entities off: the safe parser
    ("from lxml import etree\ndef read(request):\n"
    "    return etree.fromstring(request.body, etree.XMLParser(resolve_entities=False, no_network=True))\n"),
]


@pytest.mark.parametrize("source,expected", SHOWN)
def test_sink_is_shown_at_its_line(source, expected):
    assert expected in _hits(source)


@pytest.mark.parametrize("source", QUIET)
def test_safe_neighbour_stays_quiet(source):
    rules = {"template-injection", "sql-injection", "xxe"}
    assert [h for h in (_hits(source) if may_match(source) else []) if h[0] in rules] == []


def test_one_sql_text_run_twice_is_one_finding():
    source = ("def f(cur, x):\n    q = 'SELECT a FROM t WHERE b = %s' % x\n"
              "    cur.execute(q)\n    cur.execute(q)\n")
    assert _hits(source) == [("sql-injection", 2, Severity.high)]


def test_security_role_reports_them_at_their_lines(make_repo):
    def case(text: str) -> str:
        return next(source for source, _ in SHOWN if text in source)

    repo = make_repo({
        "app.py": case("request.args.get('name')"),
        "db.py": case("from . import query_db"),
        "xml_in.py": case("resolve_entities=True"),
    })
    out = run_role(SecurityTester(), make_ctx(repo))
    got = {(f.file, f.range.start_line, f.rule_id.split("+")[0])
           for f in out.findings if f.tool == "superqode-patterns"}
    assert ("app.py", 5, "template-injection") in got
    assert ("db.py", 3, "sql-injection") in got
    assert ("xml_in.py", 6, "xxe") in got
    tags = {f.rule_id.split("+")[0]: set(f.tags) for f in out.findings
            if f.tool == "superqode-patterns"}
    assert "CWE-1336" in tags["template-injection"] and "CWE-611" in tags["xxe"]


@pytest.mark.parametrize("rule", ["template-injection", "xxe", "sql-injection"])
def test_a_raised_confidence_threshold_never_hides_these_sinks(rule):
    f = Finding(id="x", role="security_tester", tool="superqode", rule_id=rule, title="t",
                message="m", severity=Severity.medium, confidence=0.3, file="app.py")
    assert is_sink(f, canonical_rule)


def test_md5_of_a_stored_password_hash_is_no_password_hash_md5_of_the_password_is():
    """redash's ``get_id`` hashes ``email,password_hash`` into a session id:
    the password was hashed already, md5 over that hash gives no password
    back ("Password hashed with md5" was false). md5 over the password, or
    over the password beside the hash, stays high."""
    source = ("import hashlib\n"
              "class User:\n"
              "    def get_id(self):\n"
              "        return hashlib.md5(f'{self.email},{self.password_hash}'.encode()).hexdigest()\n"
              "    def set_password(self, password):\n"
              "        self.pw = hashlib.md5(password.encode()).hexdigest()\n"
              "    def both(self, password):\n"
              "        return hashlib.md5((password + self.password_hash).encode()).hexdigest()\n")
    hits = [(line, sev) for rule, line, sev in _hits(source) if rule == "weak-password-hash"]
    assert hits == [(6, Severity.high), (8, Severity.high)]
