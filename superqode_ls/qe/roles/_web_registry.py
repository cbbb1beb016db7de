"""Values a database's own code proves it wrote, where SQL is built
(``_web_defs``' SQL rule).

Table names a class reads back from where only it records them
(``_web_defs``' SQL rule): ``self.table_names``, a property or method of the
class whose one query is the code's own text and reads rows keyed by a class
constant (``... WHERE name LIKE '{self.PREFIX}%'``), where every other use of
that constant in the module is the key of a call that records a name the same
method has already run as a created table's name
(``CREATE TABLE IF NOT EXISTS {table}`` first, then
``self.properties.set(f"{self.PREFIX}-{table}", table)``: searxng's cache).

A name looped over or checked to be in such a collection is then one the
class itself ran as ``CREATE TABLE``'s name: if that name could carry SQL, the
finding is at the ``CREATE TABLE`` (judged on its own, and shown there), not at
every later read of it. Rows keyed otherwise (a user's text stored in a row,
read back: second-order input), a constant used anywhere else, a recorded
value that was not first a created table's name, or a method that takes
arguments, prove nothing.

Rows of a database opened read-only (``sqlite3.connect("file:...?mode=ro",
uri=True)``) formatted into a query run on that same connection's cursor
(``read_only_cursor``): one statement that can only read the file the rows
came from. Those rows in another connection's SQL stay.
"""

from __future__ import annotations

import ast
import re
import weakref

from ..codegen import Scopes
from ._web_defs_facts import _class_constants

_READ_ONLY = re.compile(r"[?&]mode=ro\b")
_CREATE = re.compile(r"(?is)\bcreate\s+table\s+(?:if\s+not\s+exists\s+)?$")
_KNOWN: weakref.WeakKeyDictionary[Scopes, dict[tuple[int, str], bool]] = \
    weakref.WeakKeyDictionary()


def created_names(s: Scopes, node: ast.AST, e: ast.AST) -> bool:
    """``e`` (``self.NAME`` or ``self.NAME()`` in a method around ``node``)
    yields only names its class ran as a created table's name."""
    if isinstance(e, ast.Call) and not e.args and not e.keywords:
        e = e.func
    if not (isinstance(e, ast.Attribute) and isinstance(e.value, ast.Name)
            and e.value.id == "self"):
        return False
    cls = s.class_of(node)
    if cls is None:
        return False
    known = _KNOWN.setdefault(s, {})
    key = (id(cls), e.attr)
    if key not in known:
        known[key] = _registry(s, cls, e.attr)
    return known[key]


def _registry(s: Scopes, cls: ast.ClassDef, attr: str) -> bool:
    defs = [n for n in cls.body if isinstance(n, ast.FunctionDef) and n.name == attr]
    if len(defs) != 1:
        return False
    method = defs[0]
    a = method.args
    if [p.arg for p in (*a.posonlyargs, *a.args, *a.kwonlyargs)] != ["self"] \
            or a.vararg or a.kwarg:
        return False
    runs = [n for n in ast.walk(method) if isinstance(n, ast.Call)
            and isinstance(n.func, ast.Attribute) and n.func.attr == "execute"]
    if len(runs) != 1 or not runs[0].args:
        return False
    query = _text_of(method, runs[0].args[0])
    if query is None:
        return False
    constants = _constants_in(s, query)
    if constants is None or len(constants) != 1:
        return False
    (const,) = constants
    return _recorded_only_created(s, query, const)


def _text_of(method: ast.FunctionDef, e: ast.AST) -> ast.JoinedStr | None:
    """The f-string the query is: given inline or to a name assigned once."""
    if isinstance(e, ast.Name):
        values = [n.value for n in ast.walk(method) if isinstance(n, ast.Assign)
                  and any(isinstance(t, ast.Name) and t.id == e.id for t in n.targets)]
        stores = [n for n in ast.walk(method) if isinstance(n, ast.Name) and n.id == e.id
                  and not isinstance(n.ctx, ast.Load)]
        if len(values) != 1 or len(stores) != 1:
            return None
        e = values[0]
    return e if isinstance(e, ast.JoinedStr) else None


def _constants_in(s: Scopes, query: ast.JoinedStr) -> set[str] | None:
    """The class constants the query is made of; None if anything else is in it."""
    found: set[str] = set()
    for v in query.values:
        if isinstance(v, ast.Constant):
            continue
        x = v.value if isinstance(v, ast.FormattedValue) else None
        if not (isinstance(x, ast.Attribute) and isinstance(x.value, ast.Name)
                and x.value.id == "self" and _class_constants(s).get(x.attr, False)):
            return None
        found.add(x.attr)
    return found


def _recorded_only_created(s: Scopes, query: ast.JoinedStr, const: str) -> bool:
    """Every other use of ``const`` in the module keys a call recording a name
    its method ran as ``CREATE TABLE``'s name before (never rebound there)."""
    uses = [n for n in ast.walk(s.tree) if isinstance(n, ast.Attribute) and n.attr == const
            and isinstance(n.ctx, ast.Load) and not _inside(s, n, query)]
    if not uses:
        return False
    for use in uses:
        key = s.parent.get(use)
        key = s.parent.get(key) if isinstance(key, ast.FormattedValue) else None
        call = s.parent.get(key) if isinstance(key, ast.JoinedStr) else None
        if not (isinstance(call, ast.Call) and call.args and call.args[0] is key):
            return False
        names = [x for x in (*call.args[1:], *(k.value for k in call.keywords))]
        func = s.function_of(call)
        if not names or not isinstance(func, ast.FunctionDef | ast.AsyncFunctionDef) or not all(
                isinstance(x, ast.Name) and _created_before(func, x.id, call.lineno)
                for x in names):
            return False
    return True


def _inside(s: Scopes, node: ast.AST, top: ast.AST) -> bool:
    while node in s.parent:
        node = s.parent[node]
        if node is top:
            return True
    return False


def _created_before(func: ast.FunctionDef | ast.AsyncFunctionDef, name: str, line: int) -> bool:
    """``name`` is bound once in ``func`` (a parameter, never reassigned) and an
    f-string above ``line`` puts it right after ``CREATE TABLE``."""
    a = func.args
    if name not in {p.arg for p in (*a.posonlyargs, *a.args, *a.kwonlyargs)} or any(
            isinstance(n, ast.Name) and n.id == name and not isinstance(n.ctx, ast.Load)
            for n in ast.walk(func)):
        return False
    for n in ast.walk(func):
        if isinstance(n, ast.JoinedStr) and n.lineno < line:
            for before, v in zip(n.values, n.values[1:]):
                if isinstance(before, ast.Constant) and isinstance(before.value, str) \
                        and _CREATE.search(before.value) and isinstance(v, ast.FormattedValue) \
                        and isinstance(v.value, ast.Name) and v.value.id == name:
                    return True
    return False


def read_only_cursor(func: ast.FunctionDef | ast.AsyncFunctionDef, sink: ast.stmt,
                     node: ast.AST) -> str | None:
    """The cursor ``sink`` runs ``node`` on, where every binding of it in
    ``func`` is ``conn.cursor()`` of a connection opened read-only
    (``sqlite3.connect('file:%s?mode=ro' % path, uri=True)``, buku's import of
    Firefox's places.sqlite). ``execute`` runs one statement, so SQL formatted
    from that database's own rows can only read the same file the rows came
    from: no write, no other database. Rows written into another connection's
    SQL are not this."""
    runs = [n for n in ast.walk(sink) if isinstance(n, ast.Call)
            and isinstance(n.func, ast.Attribute) and n.func.attr == "execute"
            and isinstance(n.func.value, ast.Name) and n.args
            and any(x is node for x in ast.walk(n.args[0]))]
    if len(runs) != 1:
        return None
    cursor = runs[0].func.value.id  # type: ignore[union-attr]
    conns = _only_values(func, cursor)
    if not conns or not all(isinstance(v, ast.Call) and isinstance(v.func, ast.Attribute)
                            and v.func.attr == "cursor" and not v.args
                            and isinstance(v.func.value, ast.Name) for v in conns):
        return None
    for conn in {v.func.value.id for v in conns}:  # type: ignore[union-attr]
        opened = _only_values(func, conn)
        if not opened or not all(_read_only_connect(v) for v in opened):
            return None
    return cursor


def _only_values(func: ast.AST, name: str) -> list[ast.AST]:
    """Every value ``name`` is given in ``func``; empty when any binding is not
    a plain assignment (a loop, a with, a parameter, an unpacking)."""
    values = [n.value for n in ast.walk(func) if isinstance(n, ast.Assign)
              and len(n.targets) == 1 and isinstance(n.targets[0], ast.Name)
              and n.targets[0].id == name]
    stores = [n for n in ast.walk(func) if isinstance(n, ast.Name) and n.id == name
              and not isinstance(n.ctx, ast.Load)]
    params = {p.arg for p in (*func.args.posonlyargs, *func.args.args, *func.args.kwonlyargs)} \
        if isinstance(func, ast.FunctionDef | ast.AsyncFunctionDef) else set()
    return values if len(values) == len(stores) and name not in params else []


def _read_only_connect(v: ast.AST) -> bool:
    """``sqlite3.connect(<literal with ?mode=ro>, uri=True)``."""
    if not (isinstance(v, ast.Call) and isinstance(v.func, ast.Attribute)
            and v.func.attr == "connect" and isinstance(v.func.value, ast.Name)
            and v.func.value.id == "sqlite3" and v.args):
        return False
    if not any(k.arg == "uri" and isinstance(k.value, ast.Constant) and k.value.value is True
               for k in v.keywords):
        return False
    target = v.args[0]
    if isinstance(target, ast.BinOp) and isinstance(target.op, ast.Mod):
        target = target.left
    text = "".join(x.value for x in ast.walk(target)
                   if isinstance(x, ast.Constant) and isinstance(x.value, str))
    return bool(_READ_ONLY.search(text))
