"""A first-run default account: true, but noise.

babybuddy's ``migrate`` management command creates ``admin``/``admin`` --
the account its documentation tells a new install to log in with and
change -- only when the database has no superuser yet:

    superusers = get_user_model().objects.filter(is_superuser=True)
    if len(superusers) == 0:
        get_user_model().objects.create_user("admin", password="admin")

The literal password is the product's documented first login, not a
credential of any deployment; what a maintainer would act on is the
advice to change it, not the code. Proved by the code, all required: the
flagged line is a ``create_user``/``create_superuser`` call in a Django
management command (run by the operator), inside an ``if`` whose test
says no superuser exists (``not ....filter(is_superuser=True).exists()``,
``len(...) == 0``, ``.count() == 0``, also through a name the function
binds once). The same call without that guard, or in a view or any other
module, stays shown.
"""

from __future__ import annotations

import ast
import copy
import re
from collections.abc import Callable

from ..models import Finding, Severity
from .ast_index import index
from .context import mark_noise
from .noise_library import module_of

Lines = Callable[[str], "list[str] | None"]

ACCOUNT_RULES = frozenset({"HARDCODED-DB-PASSWORD", "B105", "B106"})
WHY = ("a first-run default account: the management command {command} creates it only while "
       "no superuser exists (the install's documented first login, to be changed)")
_COMMANDS = re.compile(r"(^|/)management/commands/(?P<name>[^/]+)\.py$")
_CREATE = frozenset({"create_user", "create_superuser"})
_EMPTY = re.compile(r"^not\b|==\s*0\b|<\s*1\b|^0\s*==")


def first_run_noise(findings: list[Finding], lines_of: Lines,
                    canonical: Callable[[str], str]) -> list[Finding]:
    """The findings, a first-run default account's password marked noise."""
    trees: dict[str, ast.Module | None] = {}
    out = []
    for f in findings:
        rules = {canonical(f.rule_id), *map(canonical, f.related_rules)}
        m = _COMMANDS.search(f.file or "")
        if f.noise is None and m and f.file and f.range and rules & ACCOUNT_RULES:
            if f.file not in trees:
                lines = lines_of(f.file)
                trees[f.file] = module_of(lines) if lines is not None else None
            tree = trees[f.file]
            if tree is not None and first_run_account(tree, f.range.start_line):
                f = mark_noise(f, WHY.format(command=m.group("name")), Severity.low)
        out.append(f)
    return out


def first_run_account(tree: ast.Module, line: int) -> bool:
    """The account created on ``line`` is created only while no superuser exists."""
    func = index(tree).function_at(line)
    if func is None:
        return False
    call = next((n for n in ast.walk(func) if isinstance(n, ast.Call)
                 and n.lineno <= line <= (n.end_lineno or n.lineno)
                 and isinstance(n.func, ast.Attribute) and n.func.attr in _CREATE), None)
    if call is None:
        return False
    bound = _bound_once(func)
    for node in ast.walk(func):
        if (isinstance(node, ast.If) and node.body and node.body[0].lineno <= call.lineno
                <= (node.body[-1].end_lineno or node.body[-1].lineno)):
            test = _expand(node.test, bound)
            text = ast.unparse(test)
            if "is_superuser" in text and _EMPTY.search(ast.unparse(node.test)):
                return True
    return False


def _bound_once(func: ast.AST) -> dict[str, ast.expr]:
    seen: dict[str, ast.expr | None] = {}
    for n in ast.walk(func):
        if isinstance(n, ast.Assign) and len(n.targets) == 1 and isinstance(
                n.targets[0], ast.Name):
            name = n.targets[0].id
            seen[name] = None if name in seen else n.value
    return {k: v for k, v in seen.items() if v is not None}


def _expand(test: ast.expr, bound: dict[str, ast.expr]) -> ast.expr:
    """``test`` with each name the function binds once replaced by its value
    (one level: ``len(superusers) == 0`` -> ``len(....filter(is_superuser=True)) == 0``)."""

    class _Sub(ast.NodeTransformer):
        def visit_Name(self, node: ast.Name) -> ast.AST:
            return bound.get(node.id, node)

    return _Sub().visit(copy.deepcopy(test))
