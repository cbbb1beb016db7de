"""SQL composed in a schema migration: the operator's one-off script.

An alembic revision (a module that states ``revision`` and
``down_revision`` and defines ``upgrade()``) or a Django migration (a
``Migration`` class built on ``migrations.Migration``) or a module of
numbered migration steps (lnbits' ``migrations.py``: ``async def
m001_initial(db)``, ``m002_...``, run in order by the app's migrator) runs
once, by whoever
deploys, against the database's own rows and the literals written in it:
mealie's ``DELETE FROM {table_meta.tablename}`` over a literal list of
tables, ``INSERT INTO households ({columns})`` from a dict's own keys. No
request reaches it, so formatted SQL there is noise (said why), not an
injection. A value the migration reads from the database's rows and formats
into SQL (``apps.get_model(...).objects.first().name``, a ``fetchone()``'s
column) is second-order input and stays shown, as does the same text in a
module that is not a migration.
"""

from __future__ import annotations

import ast
import re
from collections.abc import Callable

from ..models import Finding, Severity
from .ast_index import index
from .context import mark_noise
from .noise_library import module_of

Lines = Callable[[str], "list[str] | None"]
_SQL_RULES = frozenset({"sql-injection", "B608", "S608"})
WHY = ("SQL composed in a schema migration: the operator runs it once against the "
       "database's own rows and the names written in it; no request data reaches it")


def migration_noise(findings: list[Finding], lines_of: Lines,
                    canonical: Callable[[str], str]) -> list[Finding]:
    trees: dict[str, ast.Module | None] = {}
    out = []
    for f in findings:
        if (f.noise is None and f.file and f.file.endswith(".py") and f.range
                and ({canonical(f.rule_id), *f.related_rules} & _SQL_RULES)):
            if f.file not in trees:
                trees[f.file] = _migration(lines_of(f.file), f.file)
            tree = trees[f.file]
            if tree is not None and not _from_rows(tree, f.range.start_line):
                f = mark_noise(f, WHY, Severity.low)
        out.append(f)
    return out


def _migration(lines: list[str] | None, file: str) -> ast.Module | None:
    """The module's tree when it is a schema migration, else None."""
    tree = module_of(lines) if lines is not None else None
    return tree if tree is not None and (_alembic_revision(tree) or _django_migration(tree)
                                         or _numbered_steps(tree, file)) else None


# A migration step's name: its number first (m001_initial, v2_add_index,
# migration_0003_...), as the migrators that run them in order read it.
_STEP = re.compile(r"^(?:m|v|migration_?|migrate_?)\d{1,5}(?:_|$)")


def _numbered_steps(tree: ast.Module, file: str) -> bool:
    """A module of migration steps: named ``migrations.py`` (or in a
    ``migrations/`` folder), with at least two top-level functions named by
    their number."""
    parts = file.split("/")
    if parts[-1] != "migrations.py" and "migrations" not in parts[:-1]:
        return False
    steps = [n for n in tree.body if isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef))
             and _STEP.match(n.name)]
    return len(steps) >= 2


# What reads the database's rows (Django's manager, DB-API and SQLAlchemy results).
_ROWS = frozenset({"objects", "fetchone", "fetchall", "fetchmany", "first", "scalar",
                   "scalars", "one", "one_or_none", "execute", "raw", "values_list", "query"})


def _from_rows(tree: ast.Module, line: int) -> bool:
    """Whether a value formatted into the SQL on ``line`` comes, through the
    enclosing function's assignments, from the database's rows."""
    scope: ast.AST = index(tree).function_at(line) or tree
    formatted = [n for n in ast.walk(scope) if _formats(n)
                 and n.lineno <= line <= (n.end_lineno or n.lineno)]
    given: dict[str, list[ast.AST]] = {}  # a name's assigned values
    keys: dict[str, list[ast.AST]] = {}  # a dict's keys, where only they are read
    for n in ast.walk(scope):
        if isinstance(n, ast.Assign):
            for t in n.targets:
                if isinstance(t, ast.Subscript) and isinstance(t.value, ast.Name):
                    keys.setdefault(t.value.id, []).append(t.slice)  # d[k] = v: k a key
                    continue
                for name in ast.walk(t):
                    if isinstance(name, ast.Name):
                        given.setdefault(name.id, []).append(n.value)
                        keys.setdefault(name.id, []).extend(
                            [k for k in n.value.keys if k is not None]
                            if isinstance(n.value, ast.Dict) else [n.value])
        elif isinstance(n, (ast.For, ast.comprehension)):
            for name in ast.walk(n.target):
                if isinstance(name, ast.Name):
                    given.setdefault(name.id, []).append(n.iter)
    todo: list[tuple[ast.AST, bool]] = [(e, False) for e in formatted]
    seen: set[tuple[str, bool]] = set()
    while todo:
        expr, only_keys = todo.pop()
        for x in _reads(expr, only_keys):
            if isinstance(x, ast.Attribute) and x.attr in _ROWS:
                return True
            if isinstance(x, tuple) and x not in seen:  # (name, keys only)
                seen.add(x)
                todo.extend((e, False) for e in (keys if x[1] else given).get(x[0], ()))
    return False


def _reads(expr: ast.AST, only_keys: bool):
    """The attributes ``expr`` reads and the names it reads, each as (name,
    whether only its keys reach the text: ``d.keys()``, a join over ``d``)."""
    if isinstance(expr, ast.Name):
        yield (expr.id, only_keys)
        return
    if (isinstance(expr, ast.Call) and isinstance(expr.func, ast.Attribute)
            and expr.func.attr == "keys" and isinstance(expr.func.value, ast.Name)):
        yield (expr.func.value.id, True)
        return
    if isinstance(expr, ast.Attribute):
        yield expr
    for child in ast.iter_child_nodes(expr):
        yield from _reads(child, False)


def _formats(n: ast.AST) -> bool:
    """An f-string, a ``%`` or a ``.format()``: where values enter the text."""
    return (isinstance(n, ast.JoinedStr)
            or (isinstance(n, ast.BinOp) and isinstance(n.op, ast.Mod))
            or (isinstance(n, ast.Call) and isinstance(n.func, ast.Attribute)
                and n.func.attr == "format"))


def _alembic_revision(tree: ast.Module) -> bool:
    assigned = {t.id for n in tree.body if isinstance(n, (ast.Assign, ast.AnnAssign))
                for t in (n.targets if isinstance(n, ast.Assign) else [n.target])
                if isinstance(t, ast.Name)}
    functions = {n.name for n in tree.body if isinstance(n, ast.FunctionDef)}
    return {"revision", "down_revision"} <= assigned and "upgrade" in functions


def _django_migration(tree: ast.Module) -> bool:
    for n in tree.body:
        if isinstance(n, ast.ClassDef) and n.name == "Migration":
            for base in n.bases:
                if (isinstance(base, ast.Attribute) and base.attr == "Migration"
                        and isinstance(base.value, ast.Name) and base.value.id == "migrations"):
                    return True
    return False
