"""SQL composed in a schema migration: the operator's one-off script.

An alembic revision (a module that states ``revision`` and
``down_revision`` and defines ``upgrade()``) or a Django migration (a
``Migration`` class built on ``migrations.Migration``) runs once, by whoever
deploys, against the database's own rows and the literals written in it:
mealie's ``DELETE FROM {table_meta.tablename}`` over a literal list of
tables, ``INSERT INTO households ({columns})`` from a dict's own keys. No
request reaches it, so formatted SQL there is noise (said why), not an
injection; the same text in a module that is not a migration stays shown.
"""

from __future__ import annotations

import ast
from collections.abc import Callable

from ..models import Finding, Severity
from .context import mark_noise

Lines = Callable[[str], "list[str] | None"]
_SQL_RULES = frozenset({"sql-injection", "B608", "S608"})
WHY = ("SQL composed in a schema migration: the operator runs it once against the "
       "database's own rows and the names written in it; no request data reaches it")


def migration_noise(findings: list[Finding], lines_of: Lines,
                    canonical: Callable[[str], str]) -> list[Finding]:
    verdicts: dict[str, bool] = {}
    out = []
    for f in findings:
        if (f.noise is None and f.file and f.file.endswith(".py")
                and ({canonical(f.rule_id), *f.related_rules} & _SQL_RULES)):
            if f.file not in verdicts:
                verdicts[f.file] = _is_migration(lines_of(f.file))
            if verdicts[f.file]:
                f = mark_noise(f, WHY, Severity.low)
        out.append(f)
    return out


def _is_migration(lines: list[str] | None) -> bool:
    if lines is None:
        return False
    try:
        tree = ast.parse("\n".join(lines))
    except (SyntaxError, ValueError):
        return False
    return _alembic_revision(tree) or _django_migration(tree)


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
