"""SQL identifiers from the code's own definitions (qe/roles/_web_identifiers.py):
a table, column or schema name the class defines (luigi's marker table from
its configuration, a Task's ``table``/``columns``), or a dataclass's own
field names (piccolo's ``RowMeta``), formatted in with the values bound as
parameters, is noise; a value formatted in, an identifier the module takes
from a request, or another attribute stays shown.

Each sink line carries its expectation (``# SAFE-...`` / ``# BAD-...``)."""

from __future__ import annotations

import ast

import pytest

from superqode_ls.qe.codegen import Scopes
from superqode_ls.qe.roles._web_quiet import _numbers_only_sql

LIB = '''\
import dataclasses
import luigi


class MySqlTarget:
    marker_table = luigi.configuration.get_config().get("mysql", "marker-table", "table_updates")

    def __init__(self, table, update_id):
        self.table = table
        self.update_id = update_id

    def touch(self, cursor):
        cursor.execute("INSERT INTO {t} (update_id, target_table) VALUES (%s, %s)".format(t=self.marker_table), (self.update_id, self.table))  # SAFE-config-marker-table
        cursor.execute("DELETE FROM {} WHERE update_id = '{}'".format(self.marker_table, self.update_id))  # BAD-value-formatted-in

    def copy(self, cursor, rows):
        values = "({})".format(",".join(["%s" for i in range(len(self.columns))]))
        columns = "({})".format(",".join([c[0] for c in self.columns]))
        cursor.execute("INSERT INTO {} {} VALUES {}".format(self.table, columns, values), rows)  # SAFE-task-table-and-columns
        cursor.execute("SELECT * FROM {}".format(self.comment))  # BAD-not-an-identifier


@dataclasses.dataclass
class RowMeta:
    column_name: str
    data_type: str

    @classmethod
    def get_column_name_str(cls) -> str:
        return ", ".join(i.name for i in dataclasses.fields(cls))

    @classmethod
    def get_other(cls, extra) -> str:
        return ", ".join(extra)


async def schema(db, table):
    await db.raw(f"SELECT {RowMeta.get_column_name_str()} FROM information_schema.columns WHERE table_name = {{}}", table)  # SAFE-dataclass-fields
    await db.raw(f"SELECT {RowMeta.get_other(table)} FROM information_schema.columns")  # BAD-other-method
'''

VIEW = '''\
from flask import request


class Report:
    def __init__(self):
        self.table = request.args["table"]

    def rows(self, db):
        return db.execute("SELECT * FROM {} WHERE id = ?".format(self.table), (1,))  # BAD-table-from-request
'''


def _marked(text: str, tag: str) -> dict[int, str]:
    return {i: line.split("# ")[-1] for i, line in enumerate(text.splitlines(), 1)
            if f"# {tag}-" in line}


@pytest.mark.parametrize("text", [LIB, VIEW])
def test_identifiers_the_code_defines_are_noise_values_and_request_names_stay(text):
    scopes = Scopes(ast.parse(text))
    marks = {**_marked(text, "SAFE"), **_marked(text, "BAD")}
    assert marks
    for line, tag in marks.items():
        why = _numbers_only_sql(scopes, line)
        if tag.startswith("SAFE"):
            assert why is not None and "table or column name" in why, tag
        else:
            assert why is None, tag



RETARGET = '''\
class Store:
    table = "items"

    def rows(self, db):
        return db.execute("SELECT * FROM {} WHERE id = ?".format(self.table), (1,))  # BAD-reassigned-later

    def retarget(self, other):
        self.table = other
'''


def test_an_identifier_a_method_reassigns_later_stays():
    scopes = Scopes(ast.parse(RETARGET))
    (line,) = _marked(RETARGET, "BAD")
    assert _numbers_only_sql(scopes, line) is None


PROPERTIES = '''\
import abc


class CopyToTable:
    @property
    @abc.abstractmethod
    def table(self):
        return None

    def create(self, db):
        db.execute("CREATE TABLE {} (id INT)".format(self.table))  # SAFE-abstract-property


class Labels:
    @property
    def table_names(self):
        return [r[0] for r in self.db.execute("SELECT value FROM properties").fetchall()]

    def clear(self, db):
        for table in self.table_names:
            db.execute(f"DELETE FROM {table}")  # BAD-computed-from-rows
'''


def test_an_abstract_property_is_the_subclass_definition_a_computed_one_stays():
    scopes = Scopes(ast.parse(PROPERTIES))
    for line, tag in {**_marked(PROPERTIES, "SAFE"), **_marked(PROPERTIES, "BAD")}.items():
        why = _numbers_only_sql(scopes, line)
        assert (why is not None) is tag.startswith("SAFE"), tag
