"""A mutable default (B006), empty or of constants only, that nothing
changes (``noise_idioms``' rule): the function only reads it (iterates,
tests, subscripts, unpacks, copies it with ``other[:] = default``, passes
it to ``len``/``dict``/``x.update(...)``), passes it on to a function,
method or class of the same module that only reads what it is given
(``self._spawn(command, args)``, lark's ``GrammarBuilder(False, paths)``),
keeps it in an attribute (``self.paths = paths or []``) that the module only
reads, or rebinds the name to a new object before any other use
(``ns = [n + "." for n in ns]``). An empty default that the function
leaves on at once (``if not args: return``) never reaches the code after.
A default that is mutated, returned, stored anywhere else, changed through
the attribute it is kept in, or passed to any other call (another module's
function: what it does is not in sight) stays.

A call default (B008) of a class of the module whose methods never change
the instance after ``__init__`` (lark's ``ForestSumVisitor()``): one shared
instance acts as a fresh one. A class with any state its methods change,
or with a base elsewhere, stays."""

from __future__ import annotations

import ast

from .codegen import Scopes


def callee(call: ast.Call) -> str:
    """The called name: ``f`` of ``f(...)`` or ``obj.f(...)``, else empty."""
    f = call.func
    return f.id if isinstance(f, ast.Name) else f.attr if isinstance(f, ast.Attribute) else ""


# Builtins that read their argument and never change it.
_READERS = frozenset({"len", "list", "dict", "set", "frozenset", "tuple", "sorted", "iter",
                      "any", "all", "sum", "min", "max", "bool", "str", "repr", "enumerate",
                      "zip", "isinstance", "reversed", "deepcopy", "copy", "type", "id", "hash"})
# Methods of the default that only read it.
_READ_METHODS = frozenset({"get", "items", "keys", "values", "copy", "count", "index",
                           "issubset", "issuperset", "union", "intersection", "difference"})
# Methods of another object that read what they are given.
_TAKES_COPY = frozenset({"update", "extend", "union", "intersection", "difference",
                         "issubset", "issuperset", "fromkeys"})


def default_only_read(scopes: Scopes, line: int, col: int) -> str | None:
    """Why the mutable default at ``line``:``col`` is never changed, or None."""
    for func in scopes.functions:
        args = func.args
        positional = [*args.posonlyargs, *args.args]
        pairs = list(zip(positional[len(positional) - len(args.defaults):], args.defaults,
                         strict=True))
        pairs += [(a, d) for a, d in zip(args.kwonlyargs, args.kw_defaults, strict=True)
                  if d is not None]
        for arg, default in pairs:
            if default.lineno == line and default.col_offset <= col <= (
                    default.end_col_offset or default.col_offset):
                if not _flat(default):
                    return _stateless_instance(scopes, default)
                if _only_read(scopes, func, arg.arg, 2, set()):
                    return (f"the default of {arg.arg!r} is only read, never changed or "
                            "returned (nor kept anywhere but in an attribute the module only "
                            "reads): no call can see another's changes")
                if _empty(default) and _leaves_when_empty(func, arg.arg):
                    return (f"the function returns at once when {arg.arg!r} is empty, as its "
                            "empty default always is: the default never reaches the code "
                            "that changes what it is given")
                return None
    return None


# (function, parameter) pairs being followed: a call back into one of them
# (a builder that hands its own attribute to a new builder) is judged by the
# walk already under way.
_Seen = set[tuple[int, str]]


def _only_read(scopes: Scopes, func: ast.AST, name: str, depth: int, seen: _Seen) -> bool:
    """Every use of the parameter ``name`` in ``func`` only reads it; ``depth``
    bounds how far it may be followed into the module's own functions."""
    if (id(func), name) in seen:
        return True
    seen.add((id(func), name))
    body = list(getattr(func, "body", ()))
    # A top-level ``name = <new object>`` ends the default's life: the uses
    # after it read the new object (``ns = [n + "." for n in ns]``).
    end = next((i for i, stmt in enumerate(body) if isinstance(stmt, ast.Assign)
                and any(isinstance(t, ast.Name) and t.id == name for t in stmt.targets)
                and not _may_be(stmt.value, name)), len(body) - 1)
    uses = [n for stmt in body[:end + 1] for n in ast.walk(stmt)
            if isinstance(n, ast.Name) and n.id == name]
    return all(_reads(scopes, u) or (depth > 0 and _passed_to_reader(scopes, u, depth, seen))
               or _kept_read(scopes, u, depth, seen) for u in uses)


def _empty(default: ast.AST) -> bool:
    return (isinstance(default, (ast.List, ast.Dict, ast.Set)) and not (
        getattr(default, "elts", None) or getattr(default, "keys", None))) or (
        isinstance(default, ast.Call) and not default.args)


def _leaves_when_empty(func: ast.AST, name: str) -> bool:
    """The first statement of ``func`` (past its docstring) that names the
    parameter is ``if not name: ... return`` (or raise), with no other use of
    it in the test or the branch (nikola's ``if not args: print(help);
    return False``). The default starts empty and nothing runs on it before
    the function leaves, so it stays empty: by induction no call changes it."""
    body = list(getattr(func, "body", ()))
    if body and isinstance(body[0], ast.Expr) and isinstance(body[0].value, ast.Constant):
        body = body[1:]
    for stmt in body:
        names = [n for n in ast.walk(stmt) if isinstance(n, ast.Name) and n.id == name]
        if not names:
            continue
        test = stmt.test if isinstance(stmt, ast.If) else None
        return (isinstance(test, ast.UnaryOp) and isinstance(test.op, ast.Not)
                and isinstance(test.operand, ast.Name) and test.operand.id == name
                and len(names) == 1 and bool(stmt.body)
                and isinstance(stmt.body[-1], (ast.Return, ast.Raise)))
    return False


def _parameter(func: ast.AST, call: ast.Call, use: ast.AST, bound: bool = False) -> str | None:
    """The parameter of ``func`` that ``use`` (an argument of ``call``) binds
    (``bound``: ``func`` is the ``__init__`` of the class called)."""
    args = getattr(func, "args", None)
    if args is None:
        return None
    params = [a.arg for a in (*args.posonlyargs, *args.args)]
    if params and params[0] in ("self", "cls") and (bound or isinstance(call.func, ast.Attribute)):
        params = params[1:]
    if use in call.args:
        i = call.args.index(use)
        if any(isinstance(a, ast.Starred) for a in call.args[:i + 1]):
            return None
        return params[i] if i < len(params) else None
    for kw in call.keywords:
        if kw.value is use and kw.arg:
            names = params + [a.arg for a in args.kwonlyargs]
            return kw.arg if kw.arg in names else None
    return None


def _passed_to_reader(scopes: Scopes, use: ast.AST, depth: int, seen: _Seen) -> bool:
    """``helper(default)`` / ``self._spawn(cmd, default)`` / ``Builder(default)``:
    a function or class of the module (one name, one definition) that only
    reads what it is given. A call of anything else (another module's
    function, a method of another object) is not followed: what it does
    with the object is not in sight, so the default stays."""
    up = scopes.parent.get(use)
    if isinstance(up, ast.keyword):
        up = scopes.parent.get(up)
    if not isinstance(up, ast.Call) or isinstance(up.func, ast.Attribute) and not (
            isinstance(up.func.value, ast.Name) and up.func.value.id in ("self", "cls")):
        return False
    name = callee(up)
    named: list[ast.AST] = [fn for fn in scopes.functions if fn.name == name]
    classes = [c for c in ast.walk(scopes.tree) if isinstance(c, ast.ClassDef) and c.name == name]
    if len(named) + len(classes) != 1:
        return False
    target = named[0] if named else _init_of(classes[0])
    if target is None:
        return False
    param = _parameter(target, up, use, bound=not named)
    return param is not None and _only_read(scopes, target, param, depth - 1, seen)


def _init_of(cls: ast.ClassDef) -> ast.AST | None:
    return next((n for n in cls.body if isinstance(n, ast.FunctionDef)
                 and n.name == "__init__"), None)


def _kept_read(scopes: Scopes, use: ast.Name, depth: int, seen: _Seen) -> bool:
    """``self.paths = default`` (or ``= default or []``) where every other
    ``.paths`` of the module only reads the attribute or hands it to a
    function or class of the module that only reads it (lark's
    ``GrammarBuilder`` passing ``self.import_paths`` to the next builder).
    Storing it and changing it later through the attribute is the bug that
    stays. A public attribute is judged by the module that defines it, and
    only where the module itself reads it (its own state): one the module
    never reads is there for the object's users, who may change it
    (``Holder().items.append(x)``)."""
    up = scopes.parent.get(use)
    if isinstance(up, ast.BoolOp) and isinstance(up.op, ast.Or) and up.values[0] is use:
        up = scopes.parent.get(up)  # ``default or []``: the attribute may hold it
        value_ok = isinstance(up, ast.Assign)
    else:
        value_ok = isinstance(up, ast.Assign) and up.value is use
    if not (value_ok and isinstance(up, ast.Assign) and len(up.targets) == 1):
        return False
    target = up.targets[0]
    if not (isinstance(target, ast.Attribute) and isinstance(target.value, ast.Name)
            and target.value.id == "self" and not target.attr.startswith("__")):
        return False
    attrs = [n for n in ast.walk(scopes.tree) if isinstance(n, ast.Attribute)
             and n.attr == target.attr and n is not target]
    if not attrs and not target.attr.startswith("_"):
        return False  # a public attribute the module never reads is there for its users
    return all(isinstance(a.ctx, ast.Load) and (_reads(scopes, a) or (
        depth > 0 and _passed_to_reader(scopes, a, depth, seen))) for a in attrs)


def _flat(default: ast.AST) -> bool:
    """An empty or constant-only ``[]``/``{}``/``set()``: no object inside it
    that a read (``d["k"]``, ``d.get("k")``) could hand out to be changed."""
    if isinstance(default, ast.Call):
        return isinstance(default.func, ast.Name) and default.func.id in (
            "list", "dict", "set") and not default.args and not default.keywords
    if isinstance(default, ast.Dict):
        items = [*default.keys, *default.values]
    elif isinstance(default, (ast.List, ast.Set)):
        items = list(default.elts)
    else:
        return False
    return all(isinstance(i, ast.Constant) for i in items)


def _reads(scopes: Scopes, use: ast.Name | ast.Attribute) -> bool:
    """``use`` of the default's name only reads the object."""
    if not isinstance(use.ctx, ast.Load):
        return isinstance(use, ast.Name) and isinstance(use.ctx, ast.Store) and _rebound_fresh(
            scopes, use)
    up = scopes.parent.get(use)
    if isinstance(up, ast.Assign) and up.value is use and all(
            isinstance(t, ast.Subscript) and isinstance(t.slice, ast.Slice) for t in up.targets):
        return True  # other[:] = default: its items are copied into another list
    if isinstance(up, (ast.If, ast.While, ast.IfExp, ast.Assert)) and up.test is use:
        return True
    if isinstance(up, ast.BinOp):
        return True  # default + [node], default * 2: a new object, the default unchanged
    if isinstance(up, (ast.BoolOp, ast.Compare, ast.FormattedValue)):
        return not isinstance(up, ast.BoolOp) or _bool_read(scopes, up)
    if isinstance(up, ast.UnaryOp) and isinstance(up.op, ast.Not):
        return True
    if isinstance(up, (ast.For, ast.comprehension)) and up.iter is use:
        return True
    if isinstance(up, ast.Subscript) and up.value is use:
        return isinstance(up.ctx, ast.Load)
    if isinstance(up, ast.Attribute) and up.value is use:
        call = scopes.parent.get(up)
        return up.attr in _READ_METHODS and isinstance(call, ast.Call) and call.func is up
    if isinstance(up, ast.keyword) and up.arg is None:
        return True  # f(**default): unpacked into a new dict
    if isinstance(up, ast.Starred):
        return True
    if isinstance(up, ast.Call) and use in up.args:
        name = callee(up)
        if isinstance(up.func, ast.Name):
            return name in _READERS
        return name in _TAKES_COPY
    return False


def _bool_read(scopes: Scopes, op: ast.BoolOp) -> bool:
    """``default or x`` / ``default and x`` as a test only (its value, which
    may be the default itself, is not kept)."""
    up = scopes.parent.get(op)
    return isinstance(up, (ast.If, ast.While, ast.IfExp, ast.Assert)) and up.test is op or (
        isinstance(up, ast.UnaryOp) and isinstance(up.op, ast.Not))


def _rebound_fresh(scopes: Scopes, target: ast.Name) -> bool:
    """``name = <a new object>``: from then on the name no longer holds the
    default (its later uses are checked all the same). The new value may be
    built from the name (``ns = [n + "." for n in ns]``: each read of it is
    checked as a use) but may not be the default itself (``ns = ns or x``)."""
    up = scopes.parent.get(target)
    return isinstance(up, ast.Assign) and not _may_be(up.value, target.id)


def _may_be(value: ast.AST, name: str) -> bool:
    """``value`` may evaluate to the object ``name`` holds."""
    if isinstance(value, ast.Name):
        return value.id == name
    if isinstance(value, ast.BoolOp):
        return any(_may_be(v, name) for v in value.values)
    if isinstance(value, ast.IfExp):
        return _may_be(value.body, name) or _may_be(value.orelse, name)
    if isinstance(value, ast.NamedExpr):
        return _may_be(value.value, name)
    if isinstance(value, (ast.ListComp, ast.SetComp, ast.DictComp, ast.GeneratorExp,
                          ast.List, ast.Tuple, ast.Dict, ast.Set, ast.Constant, ast.JoinedStr,
                          ast.BinOp, ast.Compare, ast.UnaryOp)):
        return False  # a new object (its reads of the name are checked as uses)
    return any(isinstance(n, ast.Name) and n.id == name for n in ast.walk(value))


def _stateless_instance(scopes: Scopes, default: ast.AST) -> str | None:
    """Why a call default (B008) ``Visitor()`` is harmless, or None: a class
    of this module, made from constants, none of whose methods outside
    ``__init__`` (its bases' included, all in this module) changes the
    instance: no ``self.x = ...``, ``del``/``+=``/item assignment on it,
    ``setattr``, nor a call of anything on ``self.x`` other than the class's
    own methods. One instance shared by every call then behaves as a fresh
    one (lark's ``prioritizer=ForestSumVisitor()``)."""
    if not (isinstance(default, ast.Call) and isinstance(default.func, ast.Name)
            and all(isinstance(a, ast.Constant) for a in default.args)
            and all(isinstance(k.value, ast.Constant) for k in default.keywords)):
        return None
    classes = _hierarchy(scopes.tree, default.func.id)
    if not classes:
        return None
    methods = {n.name for c in classes for n in c.body
               if isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef))}
    # attributes something assigns (``getattr(self, name)`` of another is a method or absent)
    held = {n.attr for n in ast.walk(scopes.tree) if isinstance(n, ast.Attribute)
            and not isinstance(n.ctx, ast.Load)}
    for cls in classes:
        for fn in cls.body:
            if isinstance(fn, (ast.FunctionDef, ast.AsyncFunctionDef)) and (
                    fn.name not in ("__init__", "__new__") and _changes_self(scopes, fn, methods, held)):
                return None
            if isinstance(fn, ast.FunctionDef) and fn.name in ("__setattr__", "__setitem__"):
                return None
    return (f"{default.func.id}() keeps no state: no method of the class changes the "
            "instance after __init__, so the one shared default acts as a fresh one")


def _hierarchy(tree: ast.Module, name: str) -> list[ast.ClassDef]:
    """The class ``name`` and its bases, each defined once at the module's
    top level; empty when any base is elsewhere (not in sight)."""
    out: list[ast.ClassDef] = []
    todo = [name]
    while todo:
        current = todo.pop()
        defs = [n for n in tree.body if isinstance(n, ast.ClassDef) and n.name == current]
        if len(defs) != 1 or len(out) > 16:
            return []
        cls = defs[0]
        if cls.keywords or cls.decorator_list:
            return []  # a metaclass or a decorator may add state
        out.append(cls)
        for base in cls.bases:
            if not isinstance(base, ast.Name):
                return []
            if base.id != "object":
                todo.append(base.id)
    return out


def _changes_self(scopes: Scopes, fn: ast.FunctionDef | ast.AsyncFunctionDef,
                  methods: set[str], held: set[str]) -> bool:
    """``fn`` may change its instance: ``self`` is used other than to call
    one of the class's methods or to read a plain attribute in a test, a
    comparison or a formatted value (``if self.single_visit``). Handing
    ``self`` or ``self.x`` to anything else counts as a change: what it does
    is not in sight."""
    params = [*fn.args.posonlyargs, *fn.args.args]
    if not params:
        return False
    me = params[0].arg
    for n in ast.walk(fn):
        if isinstance(n, (ast.Global, ast.Nonlocal)):
            return True
        if not (isinstance(n, ast.Name) and n.id == me):
            continue
        attr = scopes.parent.get(n)
        if isinstance(attr, ast.Call) and callee(attr) == "getattr" and attr.args[0] is n \
                and len(attr.args) > 1 and isinstance(attr.args[1], ast.Constant) \
                and (attr.args[1].value in methods or attr.args[1].value not in held):
            continue  # getattr(self, "visit_token"[, fallback]): a method, or absent
        if not (isinstance(attr, ast.Attribute) and attr.value is n):
            return True  # self handed on, returned or rebound
        up = scopes.parent.get(attr)
        if attr.attr in methods:
            if not (isinstance(up, ast.Call) and up.func is attr):
                return True
            continue
        if not isinstance(attr.ctx, ast.Load):
            return True  # self.x = ..., del self.x
        if isinstance(up, ast.BoolOp):  # ``if self.a and x``: only as a test
            attr, up = up, scopes.parent.get(up)
        if not (isinstance(up, (ast.If, ast.While, ast.IfExp, ast.Assert)) and up.test is attr
                or isinstance(up, (ast.Compare, ast.FormattedValue))
                or isinstance(up, ast.UnaryOp) and isinstance(up.op, ast.Not)):
            return True
    return False
