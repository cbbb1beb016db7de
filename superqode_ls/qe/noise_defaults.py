"""A mutable default (B006), empty or of constants only, that nothing
changes (``noise_idioms``' rule): the function only reads it (iterates,
tests, subscripts, unpacks, passes it to ``len``/``dict``/``x.update(...)``),
passes it on to a function or method of the same module that only reads
what it is given (``self._spawn(command, args)``), or keeps it in a private
attribute (``self._comps = comps``) that the module only reads. A default
that is mutated, returned, stored anywhere else (a public attribute, which
the object's users may change) or passed to any other call stays."""

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
                    default.end_col_offset or default.col_offset) and _flat(default):
                if _only_read(scopes, func, arg.arg, 2):
                    return (f"the default of {arg.arg!r} is only read, never changed, "
                            "returned or stored: no call can see another's changes")
                return None
    return None


def _only_read(scopes: Scopes, func: ast.AST, name: str, depth: int) -> bool:
    """Every use of the parameter ``name`` in ``func`` only reads it; ``depth``
    bounds how far it may be followed into the module's own functions."""
    uses = [n for stmt in getattr(func, "body", ()) for n in ast.walk(stmt)
            if isinstance(n, ast.Name) and n.id == name]
    return all(_reads(scopes, u) or (depth > 0 and _passed_to_reader(scopes, u, depth))
               or _kept_private(scopes, u) for u in uses)


def _parameter(func: ast.AST, call: ast.Call, use: ast.Name) -> str | None:
    """The parameter of ``func`` that ``use`` (an argument of ``call``) binds."""
    args = getattr(func, "args", None)
    if args is None:
        return None
    params = [a.arg for a in (*args.posonlyargs, *args.args)]
    if params and params[0] in ("self", "cls") and isinstance(call.func, ast.Attribute):
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


def _passed_to_reader(scopes: Scopes, use: ast.Name, depth: int) -> bool:
    """``helper(default)`` / ``self._spawn(cmd, default)``: a function of the
    module (one name, one definition) that only reads what it is given."""
    up = scopes.parent.get(use)
    if isinstance(up, ast.keyword):
        up = scopes.parent.get(up)
    if not isinstance(up, ast.Call) or isinstance(up.func, ast.Attribute) and not (
            isinstance(up.func.value, ast.Name) and up.func.value.id in ("self", "cls")):
        return False
    named = [fn for fn in scopes.functions if fn.name == callee(up)]
    if len(named) != 1:
        return False
    param = _parameter(named[0], up, use)
    return param is not None and _only_read(scopes, named[0], param, depth - 1)


def _kept_private(scopes: Scopes, use: ast.Name) -> bool:
    """``self._comps = default`` where every ``self._comps`` of the module only
    reads it: a private attribute, so no user of the object changes it."""
    up = scopes.parent.get(use)
    if not (isinstance(up, ast.Assign) and up.value is use and len(up.targets) == 1):
        return False
    target = up.targets[0]
    if not (isinstance(target, ast.Attribute) and isinstance(target.value, ast.Name)
            and target.value.id == "self" and target.attr.startswith("_")
            and not target.attr.startswith("__")):
        return False
    attrs = [n for n in ast.walk(scopes.tree) if isinstance(n, ast.Attribute)
             and n.attr == target.attr and n is not target]
    return all(isinstance(a.ctx, ast.Load) and _reads(scopes, a) for a in attrs)


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


def _reads(scopes: Scopes, use: ast.Name) -> bool:
    """``use`` of the default's name only reads the object."""
    if not isinstance(use.ctx, ast.Load):
        return isinstance(use.ctx, ast.Store) and _rebound_fresh(scopes, use)
    up = scopes.parent.get(use)
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
    """``name = <anything but the name>``: from then on the name no longer
    holds the default (its later uses are checked all the same)."""
    up = scopes.parent.get(target)
    return isinstance(up, ast.Assign) and not any(
        isinstance(n, ast.Name) and n.id == target.id for n in ast.walk(up.value))
