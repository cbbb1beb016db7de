"""A URL whose scheme the code checks before ``urlopen`` (B310) opens it
(noise_trusted.py's B310 step): in the function (``if not
url.startswith(("http://", "https://")): raise``, ``if urlparse(url).scheme
in ("http", "https"):``) or, for a parameter, before every call of the
function in the module. Only http(s) then reaches the call; a check that
lets any scheme through (``if urlparse(app).scheme:``) or a caller without
the check keeps the finding."""

from __future__ import annotations

import ast
from collections.abc import Callable

from .ast_index import index

_WEB_SCHEMES = frozenset({"http", "https", "http:", "https:", "http://", "https://"})


def scheme_checked(tree: ast.Module, line: int, parent: dict[ast.AST, ast.AST],
                   calls_of: Callable[[], dict[str, list[ast.Call]]]) -> str | None:
    """Why only an http(s) URL reaches the ``urlopen`` (B310) on ``line``, or
    None. ``parent``: each node's parent; ``calls_of``: the module's calls
    by function name (asked only for a URL that is a parameter)."""
    for call in (x for x in index(tree).nodes_at(line) if isinstance(x, ast.Call)):
        if not call.args or not isinstance(arg := call.args[0], ast.Name):
            continue
        if _guarded(parent, call, arg.id):
            return "the URL's scheme is checked to be http(s) before it is opened"
        func = _function_of(parent, call)
        params = {a.arg for a in func.args.args + func.args.kwonlyargs} if func else set()
        if func is None or arg.id not in params:
            continue
        position = [a.arg for a in func.args.args].index(arg.id) if arg.id in [
            a.arg for a in func.args.args] else None
        calls = calls_of().get(func.name, [])
        if calls and all(_passes_checked(parent, c, arg.id, position) for c in calls):
            return (f"every call of {func.name}() in the module checks the URL's scheme is "
                    "http(s) first")
    return None


def _passes_checked(parent: dict, call: ast.Call, name: str, position: int | None) -> bool:
    passed = next((k.value for k in call.keywords if k.arg == name), None)
    if passed is None and position is not None and position < len(call.args):
        passed = call.args[position]
    return isinstance(passed, ast.Name) and _guarded(parent, call, passed.id)


def _function_of(parent: dict, node: ast.AST) -> ast.FunctionDef | ast.AsyncFunctionDef | None:
    up = parent.get(node)
    while up is not None and not isinstance(up, (ast.FunctionDef, ast.AsyncFunctionDef)):
        up = parent.get(up)
    return up


def _guarded(parent: dict, node: ast.AST, name: str) -> bool:
    """``node`` runs only when ``name``'s scheme is http(s): inside ``if
    <check>:``, or after ``if not <check>: raise/return`` in a block that
    holds it."""
    child, up = node, parent.get(node)
    while up is not None and not isinstance(up, (ast.FunctionDef, ast.AsyncFunctionDef,
                                                 ast.Module, ast.Lambda)):
        if isinstance(up, ast.If) and child in up.body and _check(up.test, name) is True:
            return True
        for block in ("body", "orelse", "finalbody"):
            stmts = getattr(up, block, None)
            if isinstance(stmts, list) and child in stmts:
                for before in stmts[:stmts.index(child)]:
                    if (isinstance(before, ast.If) and _check(before.test, name) is False
                            and before.body and isinstance(before.body[-1], (ast.Raise,
                                                                             ast.Return))):
                        return True
        child, up = up, parent.get(up)
    if isinstance(up, (ast.FunctionDef, ast.AsyncFunctionDef)):
        for before in up.body[:up.body.index(child)] if child in up.body else []:
            if (isinstance(before, ast.If) and _check(before.test, name) is False
                    and before.body and isinstance(before.body[-1], (ast.Raise, ast.Return))):
                return True
    return False


def _check(test: ast.AST, name: str) -> bool | None:
    """True: ``test`` holds only for an http(s) ``name``; False: it holds
    only for another scheme (its negation); None: neither."""
    if isinstance(test, ast.UnaryOp) and isinstance(test.op, ast.Not):
        inner = _check(test.operand, name)
        return None if inner is None else not inner
    if isinstance(test, ast.Call) and isinstance(test.func, ast.Attribute) \
            and test.func.attr == "startswith" and _is(test.func.value, name) and test.args:
        return True if _web_only(test.args[0]) else None
    if isinstance(test, ast.Compare) and len(test.ops) == 1 and _scheme_of(test.left, name):
        op, right = test.ops[0], test.comparators[0]
        if isinstance(op, (ast.In, ast.Eq)) and _web_only(right):
            return True
        if isinstance(op, (ast.NotIn, ast.NotEq)) and _web_only(right):
            return False
    return None


def _is(e: ast.AST, name: str) -> bool:
    return isinstance(e, ast.Name) and e.id == name


def _scheme_of(e: ast.AST, name: str) -> bool:
    """``urlparse(name).scheme`` / ``urlsplit(name).scheme``."""
    return (isinstance(e, ast.Attribute) and e.attr == "scheme" and isinstance(e.value, ast.Call)
            and (getattr(e.value.func, "attr", None) or getattr(e.value.func, "id", None))
            in ("urlparse", "urlsplit") and bool(e.value.args) and _is(e.value.args[0], name))


def _web_only(e: ast.AST) -> bool:
    if isinstance(e, ast.Constant):
        return isinstance(e.value, str) and e.value.lower() in _WEB_SCHEMES
    if isinstance(e, (ast.Tuple, ast.List, ast.Set)):
        return bool(e.elts) and all(_web_only(x) for x in e.elts)
    return False
