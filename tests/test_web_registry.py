"""Table names a class reads back from where only it records them
(qe/roles/_web_registry.py), with real bandit on real files: a loop over
``self.table_names`` and a check against it, where the class records only
names it ran as ``CREATE TABLE``'s, are noise; the second-order neighbours
stay shown (a row's text a user wrote, a recorded value that was never a
created table's name, the constant used in another way)."""

from __future__ import annotations

from tests.test_context_raise import found_by_security, needs_bandit
from tests.test_web_quiet import _noise, _shown

CACHE = '''import sqlite3


class Cache:
    PREFIX: str = "CACHE-TABLE"

    def __init__(self, db, properties):
        self.db = db
        self.properties = properties

    def create_table(self, table):
        if table in self.table_names:
            return False
        self.db.execute(f"CREATE TABLE IF NOT EXISTS {table} (key TEXT, value BLOB)")
        self.properties.set(f"{self.PREFIX}-{table}", table)
        return True

    @property
    def table_names(self):
        sql = f"SELECT value FROM properties WHERE name LIKE '{self.PREFIX}%%'"
        return [r[0] for r in self.db.execute(sql).fetchall()]

    def expire(self, when):
        for table in self.table_names:
            self.db.execute(f"DELETE FROM {table} WHERE expire < ?", (when,))  # 25

    def get(self, key, table):
        if table not in self.table_names:
            return None
        return self.db.execute(f"SELECT value FROM {table} WHERE key = ?", (key,))  # 30

    def unchecked(self, key, table):
        return self.db.execute(f"SELECT value FROM {table} WHERE key = ?", (key,))  # 33


class Users:
    def __init__(self, db):
        self.db = db

    def drop_all(self):
        for name in self.db.execute("SELECT name FROM users").fetchall():
            self.db.execute(f"DELETE FROM {name[0]}")  # 42

    @property
    def names(self):
        return [r[0] for r in self.db.execute("SELECT name FROM users").fetchall()]

    def purge(self):
        for name in self.names:
            self.db.execute(f"DELETE FROM {name}")  # 50
'''

LABELS = '''class Labels:
    PREFIX = "LABEL"

    def __init__(self, db, properties):
        self.db = db
        self.properties = properties

    def add(self, table, label):
        self.db.execute(f"CREATE TABLE IF NOT EXISTS {table} (k TEXT)")
        self.properties.set(f"{self.PREFIX}-{table}", label)

    @property
    def table_names(self):
        sql = f"SELECT value FROM properties WHERE name LIKE '{self.PREFIX}%%'"
        return [r[0] for r in self.db.execute(sql).fetchall()]

    def clear(self):
        for table in self.table_names:
            self.db.execute(f"DELETE FROM {table}")  # 19


class Renamed:
    PREFIX = "T"

    def __init__(self, db, properties):
        self.db = db
        self.properties = properties

    def create(self, table):
        self.db.execute(f"CREATE TABLE IF NOT EXISTS {table} (k TEXT)")
        table = table.upper()
        self.properties.set(f"{self.PREFIX}-{table}", table)

    def note(self, text):
        self.properties.set(f"{self.PREFIX}-note", text)

    @property
    def table_names(self):
        sql = f"SELECT value FROM properties WHERE name LIKE '{self.PREFIX}%%'"
        return [r[0] for r in self.db.execute(sql).fetchall()]

    def clear(self):
        for table in self.table_names:
            self.db.execute(f"DELETE FROM {table}")  # 44
'''


@needs_bandit
def test_names_the_class_created_and_recorded_are_noise_a_users_row_stays(make_repo):
    found = found_by_security(make_repo({"pkg/__init__.py": "", "pkg/cache.py": CACHE}))
    # a loop over the names the class recorded after CREATE TABLE, a check against them
    for line in (25, 30):
        _noise(found, "pkg/cache.py", line, "sql-injection")
    # where the name comes in (CREATE TABLE of a parameter), no check at all, a row's
    # text a user wrote (inline, through a property of the class)
    for line in (14, 33, 42, 50):
        assert _shown(found, "pkg/cache.py", line, "sql-injection"), line


@needs_bandit
def test_a_recorded_value_that_was_not_the_created_name_stays(make_repo):
    found = found_by_security(make_repo({"pkg/__init__.py": "", "pkg/labels.py": LABELS}))
    # the value recorded is a label, not the table's name; the name is rebound before
    # it is recorded, and the prefix also keys a note's free text
    for line in (19, 44):
        assert _shown(found, "pkg/labels.py", line, "sql-injection"), line


IMPORT = '''import sqlite3


def load_firefox(path, out, name):
    conn = sqlite3.connect('file:%s?mode=ro' % path, uri=True)
    cur = conn.cursor()
    res = cur.execute('SELECT DISTINCT fk, parent, title FROM moz_bookmarks WHERE type=1')
    for row in res.fetchall():
        res = cur.execute('SELECT url FROM moz_places where id={}'.format(row[0]))  # 9
        parent = cur.execute('SELECT title, parent FROM moz_bookmarks').fetchone()
        title, parent_id = parent
        cur.execute('SELECT title FROM moz_bookmarks WHERE id={}'.format(parent_id))  # 12
        out.execute("INSERT INTO bookmarks (title) VALUES ('{}')".format(title))  # 13
        cur.execute("SELECT url FROM moz_places WHERE title = '{}'".format(name))  # 14


def load_writable(path):
    conn = sqlite3.connect('file:%s' % path, uri=True)
    cur = conn.cursor()
    for row in cur.execute('SELECT fk FROM moz_bookmarks').fetchall():
        cur.execute('DELETE FROM moz_places where id={}'.format(row[0]))  # 21
'''


@needs_bandit
def test_rows_of_a_read_only_database_in_its_own_sql_are_noise_written_elsewhere_stay(make_repo):
    found = found_by_security(make_repo({"pkg/__init__.py": "", "pkg/imp.py": IMPORT}))
    # an id read from the read-only database, formatted into a query of that same database
    for line in (9, 12):
        _noise(found, "pkg/imp.py", line, "sql-injection")
    # the same rows' text in another connection's SQL, a parameter in the read-only
    # query, rows of a database opened writable
    for line in (13, 14, 21):
        assert _shown(found, "pkg/imp.py", line, "sql-injection"), line
