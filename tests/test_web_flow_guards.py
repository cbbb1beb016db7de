"""The data-flow check behind the SQL rule's noise (qe/roles/_web_defs.py),
through security_tester and the noise filter on a real Flask module: SQL
built from request data that a dominating whitelist check, an escaping
helper, a dict of literals or the ORM's own names make harmless is noise
(counted, one click away); the same shapes left injectable stay shown and
high: a check in one branch only, a value joined in after the check,
``replace("'", "")``, a list the request itself gives, a value carried
round a loop, a list of literals given request text.

Each sink line carries its expectation (``# SAFE-...`` / ``# BAD-...``).
"""

from __future__ import annotations

import ast

import pytest

from superqode_ls.models import Severity
from superqode_ls.qe.codegen import Scopes
from superqode_ls.qe.roles._web import web_patterns
from superqode_ls.qe.roles._web_quiet import _numbers_only_sql
from tests.test_context_raise import found_by_security, needs_bandit
from tests.test_findings_context import _at

APP = '''\
import sqlite3
from flask import Flask, abort, request
from .models import User
from .sqlutil import quote_identifier

app = Flask(__name__)
db = sqlite3.connect("x")
COLUMNS = ("id", "name", "created")
ORDER = {"new": "created DESC", "old": "created ASC"}
TABLE = "books"


@app.route("/a")
def reassigned():
    sort = request.args.get("sort", "id")
    order = request.args.get("order", "").lower()
    if sort not in ("id", "name"):
        sort = "id"
    if not order in ["asc", "desc"]:
        order = "asc"
    return db.execute("SELECT * FROM t ORDER BY " + sort + " " + order).fetchall()  # SAFE-whitelist-reassign


@app.route("/b")
def returned():
    col = request.args["col"]
    if col not in COLUMNS:
        return "bad column", 400
    return db.execute(f"SELECT {col} FROM t").fetchall()  # SAFE-whitelist-return


@app.route("/c")
def aborted():
    col = request.args["col"]
    if col not in COLUMNS:
        abort(400)
    return db.execute(f"SELECT {col} FROM t").fetchall()  # SAFE-whitelist-abort


@app.route("/d")
def around():
    col = request.args["col"]
    if col == "state":
        return "x"
    elif col in ["id", "name"]:
        return db.execute(f"SELECT {col} FROM t").fetchall()  # SAFE-whitelist-around
    return db.execute(f"SELECT {col} FROM t").fetchall()  # BAD-guard-not-dominating


@app.route("/e")
def mapped():
    key = request.args["order"]
    return db.execute("SELECT * FROM t ORDER BY %s" % ORDER.get(key, "id")).fetchall()  # SAFE-mapping


@app.route("/f")
def asserted():
    col = request.args["col"]
    assert col in COLUMNS
    return db.execute(f"SELECT {col} FROM t").fetchall()  # SAFE-assert


@app.route("/g")
def orm_checked():
    sort = request.args["sort"]
    if sort not in User.__table__.columns.keys():
        sort = "id"
    return db.execute(f"SELECT * FROM {User.__tablename__} ORDER BY {sort}").fetchall()  # SAFE-orm


@app.route("/h")
def escaped():
    name = request.args["name"]
    return db.execute("SELECT * FROM t WHERE n = '{}'".format(name.replace("'", "''"))).fetchall()  # SAFE-escape-double


@app.route("/i")
def stripped():
    name = request.args["name"]
    return db.execute("SELECT * FROM t WHERE n = '{}'".format(name.replace("'", ""))).fetchall()  # BAD-escape-removes


@app.route("/j")
def quoted():
    col = request.args["col"]
    return db.execute(f"SELECT {quote_identifier(col)} FROM {TABLE}").fetchall()  # SAFE-escape-helper


@app.route("/k")
def placeholders():
    ids = request.args.getlist("id")
    marks = ", ".join("?" * len(ids))
    return db.execute(f"SELECT * FROM t WHERE id IN ({marks})", ids).fetchall()  # SAFE-placeholders


@app.route("/l")
def added_after():
    sort = request.args["sort"]
    if sort not in COLUMNS:
        sort = "id"
    sort = sort + request.args.get("dir", "")
    return db.execute(f"SELECT * FROM t ORDER BY {sort}").fetchall()  # BAD-added-after-guard


@app.route("/m")
def list_from_request():
    col = request.args["col"]
    allowed = request.args.getlist("allowed")
    if col not in allowed:
        col = "id"
    return db.execute(f"SELECT {col} FROM t").fetchall()  # BAD-list-from-request


@app.route("/n")
def checked_in_one_branch():
    col = request.args["col"]
    if request.args.get("strict"):
        if col not in COLUMNS:
            col = "id"
    return db.execute(f"SELECT {col} FROM t").fetchall()  # BAD-one-branch


@app.route("/o")
def loop_reassigned():
    col = "id"
    out = []
    for name in request.args.getlist("c"):
        out.append(db.execute(f"SELECT {col} FROM t").fetchall())  # BAD-loop-carried
        col = name
    return out


@app.route("/p")
def parts_appended():
    where = ["deleted = 0"]
    where.append("owner = '%s'" % request.args["owner"])
    return db.execute("SELECT * FROM t WHERE " + " AND ".join(where)).fetchall()  # BAD-list-mutated


@app.route("/q")
def continue_guard():
    out = []
    for col in request.args.getlist("c"):
        if col not in COLUMNS:
            continue
        out.append(db.execute(f"SELECT {col} FROM t").fetchall())  # SAFE-continue
    return out


@app.route("/r")
def unquoted():
    name = request.args["name"]
    return db.execute(f"SELECT * FROM t WHERE n = '{unquote_plus(name)}'").fetchall()  # BAD-unquote


def unquote_plus(v):
    return v


def pick(table, column):
    return column


@app.route("/s")
def meta_argument():
    col = request.args["col"]
    return db.execute(f"SELECT {pick(User.__table__, col)} FROM t").fetchall()  # BAD-meta-argument


MODE = "asc"


@app.route("/t")
def set_mode():
    global MODE
    MODE = request.args["mode"]
    return db.execute(f"SELECT * FROM t ORDER BY id {MODE}").fetchall()  # BAD-global-rebound


@app.route("/u")
def constant_order():
    return db.execute(f"SELECT * FROM {TABLE} ORDER BY {COLUMNS[0]}").fetchall()  # SAFE-module-constant


def top(limit: int = 10):
    return db.execute(f"SELECT * FROM t LIMIT {limit}").fetchall()  # SAFE-typed-int-library


@app.route("/v/<limit>")
def top_view(limit: int):
    return db.execute(f"SELECT * FROM t LIMIT {limit}").fetchall()  # BAD-typed-int-flask-view


def top_by(order: str, limit: int = 10):
    return db.execute(f"SELECT * FROM t ORDER BY {order} LIMIT {limit}").fetchall()  # BAD-typed-str


def schema_table(schema):
    if schema in (None, "main"):
        return "sqlite_master"
    return '"{}".sqlite_master'.format(schema.replace('"', '""'))


def raw_table(schema):
    return schema + ".sqlite_master"


@app.route("/w")
def schema_names():
    schema = request.args["schema"]
    own = db.execute("SELECT name FROM {}".format(schema_table(schema))).fetchall()  # SAFE-module-function
    raw = db.execute("SELECT name FROM {}".format(raw_table(schema))).fetchall()  # BAD-module-function-raw
    return own + raw


@app.route("/x")
def stale_catalog():
    tables = ("catalog_tables", "catalog_views")
    chosen = request.args["table"]

    def delete(conn):
        for table in tables:
            conn.execute("DELETE FROM {} WHERE stale = 1".format(table))  # SAFE-closure
        conn.execute("DELETE FROM {} WHERE stale = 1".format(chosen))  # BAD-closure-request
    delete(db)
    return "ok"


class Counter:
    count_limit = 1000

    def count(self, table):
        return db.execute(f"SELECT count(*) FROM (SELECT * FROM {quote_identifier(table)} LIMIT {self.count_limit + 1})").fetchone()  # SAFE-number-plus-one

    def label(self, suffix):
        return db.execute("SELECT * FROM t WHERE n = '%s'" % (suffix + "1")).fetchone()  # BAD-text-plus-text
'''

MODELS = (
    "from sqlalchemy import Column, Integer, String\n"
    "from sqlalchemy.orm import declarative_base\n"
    "Base = declarative_base()\n\n\n"
    "class User(Base):\n"
    "    __tablename__ = 'users'\n"
    "    id = Column(Integer, primary_key=True)\n"
    "    name = Column(String)\n"
)
SQLUTIL = "def quote_identifier(name):\n    return '\"' + name.replace('\"', '\"\"') + '\"'\n"


def _marked(kind: str) -> dict[int, str]:
    return {i: line.split("# ")[-1] for i, line in enumerate(APP.splitlines(), 1)
            if f"# {kind}-" in line}


@pytest.mark.parametrize("line", sorted(_marked("SAFE") | _marked("BAD")),
                         ids=lambda line: {**_marked("SAFE"), **_marked("BAD")}[line])
def test_each_shape_is_judged_as_marked_by_the_flow_check(line):
    """The rule itself, one shape a case: a SAFE line is shown by the old
    rule and noise now; its BAD pair stays a finding."""
    tag = {**_marked("SAFE"), **_marked("BAD")}[line]
    why = _numbers_only_sql(Scopes(ast.parse(APP)), line)
    assert (why is not None) == tag.startswith("SAFE"), tag


@needs_bandit
def test_checked_escaped_and_owned_sql_is_noise_and_injectable_sql_stays_high(make_repo):
    repo = make_repo({"shop/__init__.py": "", "shop/app.py": APP, "shop/models.py": MODELS,
                      "shop/sqlutil.py": SQLUTIL})
    found = found_by_security(repo)
    for line, tag in _marked("SAFE").items():
        hits = _at(found, "shop/app.py", line, "sql-injection")
        assert hits, tag
        assert all(f.noise and f.severity.rank <= Severity.low.rank for f in hits), tag
        assert all("checked or owned" in (f.noise or "") for f in hits), tag
    for line, tag in _marked("BAD").items():
        hits = [f for f in _at(found, "shop/app.py", line, "sql-injection") if f.noise is None]
        assert any(f.severity == Severity.high for f in hits), tag


INSPECT = "def inspect_hash(path):\n    with open(path, 'rb') as f:\n        return hash(f.read())\n"
SERVER = (
    "from http.server import BaseHTTPRequestHandler\n"
    "from pathlib import Path\n\n"
    "from .inspect import inspect_hash\n\n\n"
    "class Database:\n"
    "    def __init__(self, path, cache):\n"
    "        self.path, self.cache = path, cache\n\n"
    "    def hash(self):\n"
    "        if self.cache.get('hash'):\n"
    "            return self.cache['hash']\n"
    "        return inspect_hash(Path(self.path))\n\n\n"  # 14
    "class Files(BaseHTTPRequestHandler):\n"
    "    def do_GET(self):\n"
    "        if self.headers.get('x-skip'):\n"
    "            return\n"
    "        self.wfile.write(str(inspect_hash(Path(self.path))).encode())\n"  # 21
)


def _flows(tmp_path, rel: str, source: str) -> list[tuple[int, str, str]]:
    (tmp_path / "pkg").mkdir(exist_ok=True)
    for name, text in (("inspect.py", INSPECT), (rel, source)):
        (tmp_path / "pkg" / name).write_text(text)

    def read(path: str) -> str | None:
        target = tmp_path / path
        return target.read_text() if target.is_file() else None

    return [(h[0].lineno, h[1], h[3]) for h in web_patterns(ast.parse(source), f"pkg/{rel}",
                                                             source, read)]


def test_a_path_the_class_sets_itself_is_not_request_data_and_a_handlers_path_is(tmp_path):
    """``self.path`` read by an http.server handler is what the client asked
    for; a database class's ``self.path = path`` is its own file, and
    "Request data reaches ..." said of it was false (datasette's
    ``Database.hash``)."""
    hits = [h for h in _flows(tmp_path, "server.py", SERVER) if h[1] == "path-traversal"]
    assert [h[0] for h in hits] == [21] and hits[0][2].startswith("Request data reaches")


FIELDS = (
    "from dataclasses import dataclass\n"
    "from http.server import BaseHTTPRequestHandler\n"
    "from pathlib import Path\n\n\n"
    "@dataclass\n"
    "class Attachment:\n"
    "    type: str | None = None\n"
    "    path: str | None = None\n\n"
    "    def content_bytes(self):\n"
    "        if self.path:\n"
    "            return Path(self.path).read_bytes()\n"  # 13
    "        return b''\n\n\n"
    "class Files(BaseHTTPRequestHandler):\n"
    "    def do_GET(self):\n"
    "        self.wfile.write(Path(self.path).read_bytes())\n"  # 19
)


def test_a_dataclass_path_field_is_not_request_data_and_a_handlers_path_is(tmp_path):
    """A dataclass's (attrs', pydantic's) own ``path`` field is set by the
    program that builds the object: "File path taken from the request" said
    of llm's ``Attachment.content_bytes`` was false. The http.server
    handler beside it, which declares no ``path``, stays shown."""
    hits = [h for h in _flows(tmp_path, "fields.py", FIELDS) if h[1] == "path-traversal"]
    assert [h[0] for h in hits] == [19]


LIB = '''\
import click
from flask import Flask

app = Flask(__name__)


class Table:
    def rows_where(self, where=None, select="*"):
        """Rows of the table.

        :param where: SQL where fragment to use, for example ``id > ?``
        :param select: Comma-separated list of columns to select
        """
        return self.db.execute(f"select {select} from t where {where}")  # SAFE-documented-sql

    def count_where(self, where: str = ""):
        """Count rows.

        Args:
            where (str): a clause of SQL the caller writes
        """
        return self.db.execute("select count(*) from t where " + where)  # SAFE-google-doc

    def find(self, name):
        """Rows by name.

        :param name: the user's name
        """
        return self.db.execute(f"select * from t where name = '{name}'")  # BAD-documented-text

    def by_id(self, user_id):
        return self.db.execute("select * from users where id = %s" % user_id)  # BAD-undocumented


@click.command()
@click.argument("path")
@click.option("--where", help="Optional where clause")
def convert(path, where):
    db = open_db(path)
    db.execute(f"update t set x = 1 where {where}")  # SAFE-cli-option


@app.route("/rows")
def rows(where):
    """:param where: SQL where fragment"""
    return db.execute(f"select * from t where {where}")  # BAD-view-doc


def search(request, where):
    """:param where: SQL where fragment"""
    return db.execute(f"select * from t where {where}")  # BAD-request-param
'''


def test_sql_the_caller_writes_by_contract_is_noise_a_plain_parameter_stays():
    """sqlite-utils' ``rows_where(where=..., select=...)`` and its CLI's
    ``--where``: SQL the library's documented contract (or the command line
    of the person running it) asks its caller for; no request reaches it
    here. A parameter documented as plain text, an undocumented one (dvpwa's
    DAO), and a view's or a request handler's parameter stay shown."""
    scopes = Scopes(ast.parse(LIB))
    for i, line in enumerate(LIB.splitlines(), 1):
        if "# SAFE-" in line or "# BAD-" in line:
            why = _numbers_only_sql(scopes, i)
            assert (why is not None) == ("# SAFE-" in line), line
