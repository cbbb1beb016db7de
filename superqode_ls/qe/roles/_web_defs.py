"""A small data-flow check inside one function: which names hold only the
code's own text, or text checked against it, where SQL is built
(``_web_quiet``'s SQL rule, after ``_web_quiet_sql``'s shapes).

The function's statements are walked in order with the set of names known
safe; an ``if``/``else`` joins its branches (a name stays safe only where
every branch that goes on keeps it safe), a branch that returns, raises,
``continue``s or calls ``abort()`` does not go on, and a loop is walked
until the set stops changing. So a check counts only where it dominates the
sink:

- **whitelist guards**: ``if sort not in ("a", "b"): sort = "a"`` (or
  ``return``/``raise``/``abort()``) before the sink, ``if v in [literals]:``
  or ``elif v == "x":`` around it, ``assert v in (...)``, a value checked
  against the ORM's own column names (``Model.__table__.columns.keys()``),
  ``isinstance(v, int)``, ``v.isdigit()``, a name looped over or checked to
  be in ``self.table_names`` whose class records only the names it ran as
  ``CREATE TABLE``'s (``_web_registry``), rows of a database opened
  read-only in a query of that same cursor (``read_only_cursor``), and the
  parts of a safe value unpacked (``title, parent_id = row``);
- **escaping helpers**: ``value.replace("'", "''")`` (the quote doubled),
  a call whose name says quote/escape (``quote_identifier``,
  ``escape_sqlite``, ``conn.escape_string``), ``int()``/``float()``/``len()``;
- **values the code owns**: literals and module constants, a class
  constant, a dict of literals looked up (``ORDER[key]``,
  ``ORDER.get(key, "x")``), the ORM's own metadata (``__tablename__``,
  ``__table__``, ``_meta``, a class's ``__dict__``, ``inspect(...)``),
  identifiers the class defines (``self.table``, ``self.columns``, a
  dataclass's field names: ``_web_identifiers``),
  placeholders (``", ".join("?" * n)``), random scratch names
  (``uuid4().hex``, ``secrets.token_hex``), a name the enclosing function
  gives only literals, a module function whose every return is such text,
  a number plus a number literal, a library function's parameter
  annotated ``int`` (not a view's: see ``_typed_numbers``).

A check that does not dominate the sink, ``replace("'", "")``, or a value
joined in after the check stays a finding.
"""

from __future__ import annotations

import ast
import re
import weakref

from ..codegen import Scopes
from ._web_defs_facts import (
    _META,
    _bound_names,
    _call_name,
    _callers_sql,
    _class_constants,
    _doubles,
    _globals,
    _meta,
    _typed_numbers,
)
from ._web_identifiers import dataclass_fields, own_identifier
from ._web_quiet_sql import _quoted_identifier, _random
from ._web_registry import created_names, read_only_cursor

Safe = frozenset[str]
_NUMBERS = frozenset({"int", "float", "len", "bool", "round", "abs", "ord", "hash"})
_ESCAPE = re.compile(r"quote|escape", re.IGNORECASE)
_CHECKS = frozenset({"isdigit", "isdecimal", "isnumeric", "isalnum", "isalpha", "isidentifier"})
_ABORT = frozenset({"abort", "exit", "_exit"})
_MUTATE = frozenset({"append", "extend", "insert", "add", "update", "setdefault"})
_PASS = frozenset({"str", "sorted", "list", "tuple", "set", "frozenset", "reversed"})
_DEPTH = 8


class _Flow:
    def __init__(self, s: Scopes, func: ast.FunctionDef | ast.AsyncFunctionDef | None,
                 sink: ast.stmt | None) -> None:
        self.s = s
        self.func = func
        self.sink = sink
        self.at_sink: list[Safe] = []
        self.bound = _bound_names(func) if func is not None else set()
        self.loops: list[tuple[list[Safe], list[Safe]]] = []  # (continues, breaks)
        # the cursor the sink runs on, where it reads a database opened read-only
        # (``sqlite3.connect("file:...?mode=ro", uri=True)``): its own rows are safe there
        self.rows_of: str | None = None

    # -- statements ---------------------------------------------------------
    def block(self, body: list[ast.stmt], state: Safe | None) -> Safe | None:
        for st in body:
            if state is None:
                return None
            state = self.stmt(st, state)
        return state

    def stmt(self, st: ast.stmt, state: Safe) -> Safe | None:
        if st is self.sink:
            self.at_sink.append(state)
        if isinstance(st, ast.Return | ast.Raise):
            return None
        if isinstance(st, ast.Continue | ast.Break):
            if self.loops:
                self.loops[-1][0 if isinstance(st, ast.Continue) else 1].append(state)
            return None
        if isinstance(st, ast.Expr) and isinstance(st.value, ast.Call) \
                and _call_name(st.value) in _ABORT:
            return None
        if isinstance(st, ast.If):
            then = self.block(st.body, self.refine(st.test, True, state))
            other = self.block(st.orelse, self.refine(st.test, False, state))
            return _join(then, other)
        if isinstance(st, ast.While | ast.For | ast.AsyncFor):
            return self.loop(st, state)
        if isinstance(st, ast.With | ast.AsyncWith):
            for item in st.items:
                if item.optional_vars is not None:
                    state = _drop(state, item.optional_vars)
            return self.block(st.body, state)
        if isinstance(st, ast.Try | ast.TryStar):
            body = self.block(st.body, state)
            handlers_in = state - {n for b in st.body for n in _bound_names(b)}
            ends = [self.block(st.orelse, body)]
            for h in st.handlers:
                ends.append(self.block(h.body, handlers_in - {h.name or ""}))
            end = _join(*ends)
            return self.block(st.finalbody, end if end is not None else handlers_in) \
                if st.finalbody else end
        if isinstance(st, ast.Match):
            ends: list[Safe | None] = [state]
            for case in st.cases:
                ends.append(self.block(case.body, state - _bound_names(case.pattern)))
            return _join(*ends)
        if isinstance(st, ast.Assert):
            return self.refine(st.test, True, state)
        return self.simple(st, state)

    def loop(self, st: ast.For | ast.AsyncFor | ast.While, state: Safe) -> Safe | None:
        head, breaks = state, []
        for _ in range(_DEPTH):
            self.loops.append(([], []))
            body_in = self.target(st.target, st.iter, head) if isinstance(
                st, ast.For | ast.AsyncFor) else self.refine(st.test, True, head)
            end = self.block(st.body, body_in)
            continues, breaks = self.loops.pop()
            new = _join(head, end, *continues)
            if new is None or new == head:
                break
            head = new
        out = head if isinstance(st, ast.For | ast.AsyncFor) else self.refine(st.test, False, head)
        return _join(self.block(st.orelse, out), *breaks)

    def target(self, target: ast.AST, it: ast.AST, state: Safe) -> Safe:
        names = {n.id for n in ast.walk(target) if isinstance(n, ast.Name)}
        counter = it.func.id if isinstance(it, ast.Call) and isinstance(it.func, ast.Name) \
            and it.args and it.func.id not in self.bound else None
        if counter == "range":  # numbers
            return state | names
        if counter == "enumerate" and isinstance(target, ast.Tuple) and len(target.elts) == 2:
            # kinto's ``for i, (obj, perm) in enumerate(...)``: the index is a
            # number (``:obj_{i}``, a placeholder's name); the item is the iterable's
            index = {n.id for n in ast.walk(target.elts[0]) if isinstance(n, ast.Name)}
            return self.target(target.elts[1], it.args[0], state | index)
        if self.safe(it, state) or _meta(it) or self.created(it):
            return state | names
        return state - names

    def simple(self, st: ast.stmt, state: Safe) -> Safe:
        if isinstance(st, ast.Assign):
            for t in st.targets:
                state = self.assign(t, st.value, state)
        elif isinstance(st, ast.AnnAssign) and st.value is not None:
            state = self.assign(st.target, st.value, state)
        elif isinstance(st, ast.AugAssign):
            name = st.target.id if isinstance(st.target, ast.Name) else None
            if name is not None and not (name in state and self.safe(st.value, state)):
                state = state - {name}
            elif name is None:
                state = self.mutated(st.target, st.value, state)
        elif isinstance(st, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef):
            state = state - {st.name}
        elif isinstance(st, ast.Delete | ast.Global | ast.Nonlocal | ast.Import | ast.ImportFrom):
            state = state - _bound_names(st) - set(getattr(st, "names", []) or [])
        for n in ast.walk(st):
            if isinstance(n, ast.NamedExpr):
                state = state - {n.target.id}
            elif isinstance(n, ast.Call) and isinstance(n.func, ast.Attribute) \
                    and n.func.attr in _MUTATE and isinstance(n.func.value, ast.Name) \
                    and n.func.value.id in state \
                    and not all(self.safe(a, state) for a in (*n.args, *(
                        k.value for k in n.keywords))):
                state = state - {n.func.value.id}
        return state

    def assign(self, target: ast.AST, value: ast.AST, state: Safe) -> Safe:
        if isinstance(target, ast.Name):
            return state | {target.id} if self.safe(value, state) else state - {target.id}
        if isinstance(target, ast.Tuple | ast.List) and isinstance(value, ast.Tuple | ast.List) \
                and len(target.elts) == len(value.elts):
            for t, v in zip(target.elts, value.elts, strict=True):
                state = self.assign(t, v, state)
            return state
        if isinstance(target, ast.Tuple | ast.List):  # unpacked: parts of what it is
            names = _bound_names(target)
            return state | names if self.safe(value, state) else state - names
        return self.mutated(target, value, state)

    def mutated(self, target: ast.AST, value: ast.AST, state: Safe) -> Safe:
        """``parts[i] = v`` / ``obj.x += v``: the container is only as safe as ``v``."""
        base = target
        while isinstance(base, ast.Subscript | ast.Attribute):
            base = base.value
        if isinstance(base, ast.Name) and not self.safe(value, state):
            return state - {base.id}
        return state

    # -- tests --------------------------------------------------------------
    def refine(self, test: ast.AST, truth: bool, state: Safe) -> Safe:
        """The names known safe where ``test`` is ``truth``."""
        if isinstance(test, ast.UnaryOp) and isinstance(test.op, ast.Not):
            return self.refine(test.operand, not truth, state)
        if isinstance(test, ast.BoolOp):
            both = isinstance(test.op, ast.And) == truth
            if both:  # ``a and b`` true / ``a or b`` false: each holds
                for v in test.values:
                    state = self.refine(v, truth, state)
                return state
            out, rest = None, state
            for v in test.values:  # one of them holds
                out = _join(out, self.refine(v, truth, rest))
                rest = self.refine(v, not truth, rest)
            return out if out is not None else state
        if isinstance(test, ast.Compare) and len(test.ops) == 1:
            op, left, right = test.ops[0], test.left, test.comparators[0]
            if isinstance(op, ast.Eq | ast.NotEq) and isinstance(right, ast.Name) \
                    and not isinstance(left, ast.Name):
                left, right = right, left
            if not isinstance(left, ast.Name) or not (
                    self.safe(right, state) or _meta(right) or self.created(right)):
                return state
            holds = {ast.In: True, ast.Eq: True, ast.Is: True,
                     ast.NotIn: False, ast.NotEq: False, ast.IsNot: False}.get(type(op))
            return state | {left.id} if holds is not None and holds == truth else state
        if truth and isinstance(test, ast.Call):
            name = _call_name(test)
            if name == "isinstance" and len(test.args) == 2 and isinstance(test.args[0], ast.Name) \
                    and all(isinstance(t, ast.Name) and t.id in ("int", "float", "bool")
                            for t in ast.walk(test.args[1]) if isinstance(t, ast.Name)):
                return state | {test.args[0].id}
            if name in _CHECKS and isinstance(test.func, ast.Attribute) \
                    and isinstance(test.func.value, ast.Name):
                return state | {test.func.value.id}
        return state

    def created(self, e: ast.AST) -> bool:
        """``self.table_names``: names the class ran as ``CREATE TABLE``'s
        (``_web_registry``); only a loop over it or a check against it."""
        return self.func is not None and created_names(self.s, self.func, e)

    # -- values -------------------------------------------------------------
    def safe(self, e: ast.AST, state: Safe, depth: int = _DEPTH) -> bool:
        """``e`` holds only the code's own text or text checked against it."""
        if depth <= 0:
            return False
        d = depth - 1
        if isinstance(e, ast.Constant):
            return True
        if isinstance(e, ast.Name):
            if e.id in state:
                return True
            return e.id not in self.bound and (_module_constant(self.s, e.id, d)
                                               or self.closure(e.id, d))
        if isinstance(e, ast.JoinedStr):
            return all(isinstance(v, ast.Constant) or self.safe(v.value, state, d)
                       for v in e.values)
        if isinstance(e, ast.BinOp):
            if isinstance(e.op, ast.Mult):  # "?" * n, ["?"] * n
                return any(isinstance(x, ast.Constant) and isinstance(x.value, str | bytes)
                           or isinstance(x, ast.List | ast.Tuple) and self.safe(x, state, d)
                           for x in (e.left, e.right)) or (
                    self.safe(e.left, state, d) and self.safe(e.right, state, d))
            if isinstance(e.op, ast.Add) and any(
                    isinstance(x, ast.Constant) and type(x.value) in (int, float)
                    for x in (e.left, e.right)):
                return True  # ``self.count_limit + 1``: a number, or a TypeError
            if isinstance(e.op, ast.Add | ast.Mod | ast.BitOr | ast.BitAnd):
                return self.safe(e.left, state, d) and self.safe(e.right, state, d)
            return True  # arithmetic: a number, or a TypeError
        if isinstance(e, ast.IfExp):
            return self.safe(e.body, state, d) and self.safe(e.orelse, state, d)
        if isinstance(e, ast.BoolOp):
            return all(self.safe(v, state, d) for v in e.values)
        if isinstance(e, ast.Compare | ast.UnaryOp):
            return True  # a bool or a number
        if isinstance(e, ast.List | ast.Tuple | ast.Set):
            return all(self.safe(x, state, d) for x in e.elts)
        if isinstance(e, ast.Dict):
            return all(k is None or self.safe(k, state, d) for k in e.keys) and all(
                self.safe(v, state, d) for v in e.values)
        if isinstance(e, ast.Starred):
            return self.safe(e.value, state, d)
        if isinstance(e, ast.ListComp | ast.GeneratorExp | ast.SetComp):
            inner = state
            for g in e.generators:
                inner = self.target(g.target, g.iter, inner)
            return self.safe(e.elt, inner, d)
        if isinstance(e, ast.Subscript):
            return self.safe(e.value, state, d)
        if isinstance(e, ast.Attribute):
            return isinstance(e.value, ast.Name) and _class_constants(self.s).get(e.attr, False) \
                or _meta(e) or own_identifier(self.s, e) or self.safe(e.value, state, d)
        if isinstance(e, ast.Call):
            return self.call(e, state, d)
        return False

    def closure(self, name: str, d: int) -> bool:
        """``name`` of the function around a nested one, given only the
        code's own text there (every assignment, whenever the inner one runs)."""
        outer = self.s.function_of(self.func) if self.func is not None else None
        if not isinstance(outer, ast.FunctionDef | ast.AsyncFunctionDef) or d <= 0:
            return False
        a = outer.args
        if name in {p.arg for p in (*a.posonlyargs, *a.args, *a.kwonlyargs)}:
            return False
        values = [n.value for n in ast.walk(outer) if isinstance(n, ast.Assign) and any(
            isinstance(x, ast.Name) and x.id == name for x in n.targets)]
        if not values or len(values) != sum(
                1 for n in ast.walk(outer) if isinstance(n, ast.Name) and n.id == name
                and isinstance(n.ctx, ast.Store)):
            return False  # a loop, an unpacking or a with binds it too
        inner = _Flow(self.s, outer, None)
        return all(inner.safe(v, frozenset(), d) for v in values)

    def call(self, e: ast.Call, state: Safe, d: int) -> bool:
        name = _call_name(e)
        args = [*e.args, *(k.value for k in e.keywords)]
        if name == "execute" and self.rows_of is not None and isinstance(e.func, ast.Attribute) \
                and isinstance(e.func.value, ast.Name) and e.func.value.id == self.rows_of:
            return True  # rows of the read-only database the sink queries itself
        if name in _NUMBERS and isinstance(e.func, ast.Name) or _random(e) or _meta(e) \
                or dataclass_fields(self.s, e):
            return True
        if name == "getattr" and len(e.args) >= 2 and isinstance(e.args[1], ast.Constant) \
                and e.args[1].value in _META:  # getattr(fn, "__name__", "fn")
            return all(self.safe(a, state, d) for a in e.args[2:])
        if _ESCAPE.search(name) and not name.lower().startswith("un") or _quoted_identifier(self.s, e) or _doubles(e):
            return True
        if name in _PASS and isinstance(e.func, ast.Name):
            return all(self.safe(a, state, d) for a in args)
        if isinstance(e.func, ast.Name) and _returns_own(self.s, name, d):
            return True
        if isinstance(e.func, ast.Attribute):
            base = e.func.value
            if name == "get" and e.args and self.safe(base, state, d):
                return len(e.args) < 2 or self.safe(e.args[1], state, d)
            return self.safe(base, state, d) and all(self.safe(a, state, d) for a in args)
        return False


def safe_at(s: Scopes, func: ast.FunctionDef | ast.AsyncFunctionDef, node: ast.AST,
            values: list[ast.AST], seed: frozenset[str] = frozenset()) -> bool:
    """Every one of ``values`` (formatted into ``node``) holds only the
    code's own text, or text checked against it, where ``node`` runs;
    ``seed``: names known safe on entry (parameters every caller fills so)."""
    sink = node
    while not isinstance(sink, ast.stmt) and sink in s.parent:
        sink = s.parent[sink]
    if not isinstance(sink, ast.stmt):
        return False
    flow = _Flow(s, func, sink)
    flow.rows_of = read_only_cursor(func, sink, node)
    params = {a.arg for a in (*func.args.posonlyargs, *func.args.args, *func.args.kwonlyargs)}
    flow.bound |= params | {a.arg for a in (func.args.vararg, func.args.kwarg) if a}
    flow.block(func.body, _typed_numbers(func) | _callers_sql(func) | seed)
    if not flow.at_sink:
        return False
    state = frozenset.intersection(*flow.at_sink)
    return all(flow.safe(v, state) for v in values)


_RETURNS: weakref.WeakKeyDictionary[Scopes, dict[str, bool]] = weakref.WeakKeyDictionary()


def _returns_own(s: Scopes, name: str, depth: int) -> bool:
    """``name`` is a function of the module whose every return is the code's
    own text, whatever its arguments (``_sqlite_schema_table(schema)``:
    ``"sqlite_master"`` or a quoted identifier); once a module and name."""
    known = _RETURNS.setdefault(s, {})
    if name in known or depth <= 2:
        return known.get(name, False)
    defs = [n for n in s.tree.body if isinstance(n, ast.FunctionDef | ast.AsyncFunctionDef)
            and n.name == name]
    known[name] = False  # a recursive call proves nothing
    if len(defs) != 1:
        return False
    returns = [r for r in ast.walk(defs[0]) if isinstance(r, ast.Return)]
    ok = bool(returns) and all(r.value is not None and safe_at(s, defs[0], r, [r.value])
                               for r in returns)
    known[name] = ok
    return ok


def _join(*states: Safe | None) -> Safe | None:
    """Where paths meet: safe only where every path that goes on is."""
    live = [x for x in states if x is not None]
    return frozenset.intersection(*live) if live else None


def _drop(state: Safe, target: ast.AST) -> Safe:
    return state - {n.id for n in ast.walk(target) if isinstance(n, ast.Name)}


_CONSTANT: weakref.WeakKeyDictionary[Scopes, dict[str, bool]] = weakref.WeakKeyDictionary()


def _module_constant(s: Scopes, name: str, depth: int) -> bool:
    """``name`` is given only the code's own text at module level (and is no
    function, class or import); once a module and name."""
    known = _CONSTANT.setdefault(s, {})
    if name not in known:
        if depth <= 2:
            return False
        known[name] = False  # a name defined through itself proves nothing
        known[name] = _module_constant_of(s, name, depth)
    return known[name]


def _module_constant_of(s: Scopes, name: str, depth: int) -> bool:
    if name in _globals(s):
        return False  # a function may rebind it
    values = []
    for n in s.tree.body:
        target = n.targets if isinstance(n, ast.Assign) else [n.target] if isinstance(
            n, ast.AnnAssign) and n.value is not None else []
        if any(isinstance(x, ast.Name) and x.id == name for x in target):
            values.append(n.value)  # type: ignore[union-attr]
        elif isinstance(n, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef):
            if n.name == name:
                return False
        elif not isinstance(n, ast.Assign | ast.AnnAssign | ast.Expr) and name in _bound_names(n):
            return False
    if not values or depth <= 0:
        return False
    module = _Module(s)
    return all(module.safe(v, frozenset(), depth) for v in values)


class _Module(_Flow):
    """Module-level values: nothing bound in a function."""

    def __init__(self, s: Scopes) -> None:
        super().__init__(s, None, None)
