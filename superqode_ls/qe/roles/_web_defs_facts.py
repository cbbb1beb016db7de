"""What ``_web_defs``' flow check knows of single expressions and of the
module around them: the ORM's own names, a quote doubled, a library
parameter typed as a number, the names a statement binds, and the module's
class constants and ``global`` names (one cached walk a module)."""

from __future__ import annotations

import ast
import re
import weakref

from ..codegen import Scopes

Safe = frozenset[str]
_META = frozenset({"__table__", "__tablename__", "__mapper__", "__dict__", "_meta", "__name__"})
_QUOTES = ("'", '"', "`", "]")
_HTTP = frozenset({"get", "post", "put", "patch", "delete", "head", "options"})
_ROUTES = frozenset({"route", "get", "post", "put", "delete", "patch", "api_route", "view",
                     "websocket"})


def _typed_numbers(func: ast.FunctionDef | ast.AsyncFunctionDef) -> Safe:
    """A library function's parameters annotated ``int``/``float``/``bool``
    (``common_limit: int = 10``): its callers' contract. Not a view's: Flask
    ignores ``def view(id: int)`` on ``/<id>``, Django passes text, so a
    function with a route decorator, a ``request`` parameter or an HTTP
    method's name keeps its parameters unchecked."""
    a = func.args
    params = [*a.posonlyargs, *a.args, *a.kwonlyargs]
    if func.name in _HTTP or any(p.arg in ("request", "req") for p in params) or any(
            isinstance(d, ast.Call) and isinstance(d.func, ast.Attribute) and d.func.attr in _ROUTES
            for d in func.decorator_list):
        return frozenset()
    return frozenset(p.arg for p in params if isinstance(p.annotation, ast.Name)
                     and p.annotation.id in ("int", "float", "bool"))


def _doubles(e: ast.Call) -> bool:
    """``v.replace("'", "''")``: SQL's own escape of a quote inside a quoted
    string or identifier (``replace("'", "")`` or ``"\\'"`` is no such escape)."""
    if _call_name(e) != "replace" or len(e.args) != 2 or not all(
            isinstance(a, ast.Constant) and isinstance(a.value, str) for a in e.args):
        return False
    old, new = e.args[0].value, e.args[1].value  # type: ignore[attr-defined]
    return old in _QUOTES and new == old * 2


def _call_name(call: ast.Call) -> str:
    f = call.func
    return f.attr if isinstance(f, ast.Attribute) else getattr(f, "id", "")


def _bound_names(node: ast.AST) -> set[str]:
    """Names bound anywhere under ``node`` (not inside nested functions' bodies
    that are separate scopes: those are rare enough to over-count)."""
    out: set[str] = set()
    for n in ast.walk(node):
        if isinstance(n, ast.Name) and isinstance(n.ctx, ast.Store | ast.Del):
            out.add(n.id)
        elif isinstance(n, ast.MatchAs | ast.MatchStar) and n.name:
            out.add(n.name)
        elif isinstance(n, ast.MatchMapping) and n.rest:
            out.add(n.rest)
        elif isinstance(n, ast.ExceptHandler) and n.name:
            out.add(n.name)
        elif isinstance(n, ast.alias):
            out.add((n.asname or n.name).split(".")[0])
        elif isinstance(n, ast.Global | ast.Nonlocal):
            out.update(n.names)
    return out


def _meta(e: ast.AST) -> bool:
    """The ORM's or the class's own names: ``Model.__tablename__``,
    ``Model.__table__.columns.keys()``, ``obj._meta.db_table``,
    ``inspect(engine)...``: the chain of attributes and calls leading to the
    value passes one (a call's arguments do not count); never anything read
    from a request."""
    if any(isinstance(n, ast.Name) and n.id == "request" for n in ast.walk(e)):
        return False
    while isinstance(e, ast.Attribute | ast.Call | ast.Subscript):
        if isinstance(e, ast.Attribute) and e.attr in _META and (
                e.attr != "__dict__" or _class_like(e.value)):
            return True
        if isinstance(e, ast.Call) and _call_name(e) == "inspect":
            return True
        e = e.func if isinstance(e, ast.Call) else e.value
    return False


def _class_like(e: ast.AST) -> bool:
    """A class, not an instance whose ``__dict__`` holds its data."""
    name = e.id if isinstance(e, ast.Name) else getattr(e, "attr", "")
    return name == "cls" or "class" in name.lower() or name[:1].isupper()


_CLASS: weakref.WeakKeyDictionary[Scopes, dict[str, bool]] = weakref.WeakKeyDictionary()
_GLOBALS: weakref.WeakKeyDictionary[Scopes, frozenset[str]] = weakref.WeakKeyDictionary()


def _globals(s: Scopes) -> frozenset[str]:
    """Names some function of the module declares ``global``."""
    if s not in _GLOBALS:
        _class_constants(s)
    return _GLOBALS[s]


def _class_constants(s: Scopes) -> dict[str, bool]:
    """By attribute name: given only string (or number) literals in class bodies and
    assigned nowhere else in the module (``_counts_table_name = "_counts"``
    read as ``self._counts_table_name``). The same one walk of the module
    notes the names a function declares ``global`` (``_globals``)."""
    if s not in _CLASS:
        given: dict[str, bool] = {}
        stored: set[str] = set()
        declared: set[str] = set()
        for n in ast.walk(s.tree):
            if isinstance(n, ast.ClassDef):
                for a in n.body:
                    # (``PREFIX: str = "CACHE-TABLE"`` too: searxng's cache tables)
                    if isinstance(a, (ast.Assign, ast.AnnAssign)) and a.value is not None:
                        for x in a.targets if isinstance(a, ast.Assign) else [a.target]:
                            if isinstance(x, ast.Name):
                                given[x.id] = given.get(x.id, True) and isinstance(
                                    a.value, ast.Constant) and isinstance(a.value.value,
                                                                          (str, int, float))
            elif isinstance(n, ast.Attribute) and not isinstance(n.ctx, ast.Load):
                stored.add(n.attr)
            elif isinstance(n, ast.Global):
                declared.update(n.names)
        _CLASS[s] = {k: v and k not in stored for k, v in given.items()}
        _GLOBALS[s] = frozenset(declared)
    return _CLASS[s]


# ``:param where: SQL where fragment`` (reST), ``where: SQL ...`` or
# ``where (str): SQL ...`` (Google style): the parameter's documented
# contract is SQL its caller writes
_SQL_DOC = r"(?im)^\s*(?::param\s+(?:\w+\s+)?{0}:|{0}\s*(?:\([^)]*\))?\s*:)[^\n]*" \
           r"\b(SQL|fragment|clause|expression|columns)\b"
_CLI = frozenset({"option", "argument"})


def _callers_sql(func: ast.FunctionDef | ast.AsyncFunctionDef) -> Safe:
    """Parameters whose SQL is the caller's by contract: a library function's
    parameter its docstring documents as SQL (sqlite-utils'
    ``rows_where(where=...)``: ":param where: SQL where fragment"), and a
    click command's options and arguments (the command line of the person
    running it on their own database). Not a view's (as ``_typed_numbers``):
    there the caller is whoever sends the request."""
    a = func.args
    params = [p.arg for p in (*a.posonlyargs, *a.args, *a.kwonlyargs)]
    if not params or func.name in _HTTP or any(p in ("request", "req") for p in params) or any(
            isinstance(d, ast.Call) and isinstance(d.func, ast.Attribute) and d.func.attr in _ROUTES
            for d in func.decorator_list):
        return frozenset()
    if any(isinstance(d, ast.Call) and isinstance(d.func, ast.Attribute) and d.func.attr in _CLI
           and isinstance(d.func.value, ast.Name) and d.func.value.id in ("click", "typer")
           for d in func.decorator_list):
        return frozenset(params)
    doc = ast.get_docstring(func) or ""
    return frozenset(p for p in params if p not in ("self", "cls")
                     and re.search(_SQL_DOC.format(re.escape(p)), doc))
