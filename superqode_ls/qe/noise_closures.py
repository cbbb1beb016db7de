"""Noise rules on what a name's uses prove (called from ``qe/noise_idioms.py``):

- a loop variable read by a closure (B023) where the closure never outlives
  the iteration that made it: a function defined in the loop body whose name
  is only ever called there (directly, in a list comprehension, or given to
  one of the calls below), or a lambda given straight to a call whose name
  says nothing of keeping, scheduling or wrapping it (fail2ban's
  ``Utils.wait_for(lambda: ...)``, ``action.consistencyCheck(fn)``: a
  registration, thread, timer, task, container or factory keeps it), to ``sorted()``/
  ``min()``/``max()``/``.sort()``/``reduce()`` or as a ``key=``, as the
  replacement of ``re.sub``/``pattern.sub`` (a pattern the code compiled),
  to ``map``/``filter`` whose iterator is drained on the spot (``list(...)``,
  a ``for``), or to ``await loop.run_in_executor(...)``/``asyncio.to_thread``
  awaited where it is handed over. A call of the closure inside its own
  body (a recursive walk) runs only within an outer call; a use after a
  later statement of the same block that binds the name again (a second
  ``def add`` after the loop) reads that other object. B023's late binding
  cannot bite: the closure runs before the variable moves on. A closure
  rebound only on one branch, or that is stored,
  returned, appended, passed anywhere else, or called from a generator or
  another closure (which may run later) stays;
- an undefined name (F821) read inside ``try`` whose handler catches
  ``NameError`` (or ``Exception``, or everything): the code asks whether the
  name exists (``get_ipython`` under IPython) and handles its absence;
- a ``groupby`` group read again (B031) where every earlier read of it in
  the iteration is in a branch that then leaves it (pyramid's loop that
  lists a group's actions and raises): the flagged read never runs after
  another; and the one read of an inner ``groupby``'s group that reuses the
  outer group's name (lemur's two ``items``: ruff follows the outer name
  into the inner loop). A group read twice on one path, after a branch
  that only logs, or in an inner loop stays.
"""

from __future__ import annotations

import ast
import re
from itertools import pairwise

from .ast_index import index
from .codegen import Scopes
from .noise_defaults import callee

# Calls that run a key or function they are given before they return.
_EAGER = frozenset({"sorted", "min", "max", "sort", "nsmallest", "nlargest", "reduce"})
# A regex substitution calls its replacement for each match before it returns.
_SUBSTITUTE = frozenset({"sub", "subn"})
_REGEX_MODULES = frozenset({"re", "regex"})
# Lazy: the function runs as the iterator is read, so only where it is read at once.
_LAZY = frozenset({"map", "filter", "filterfalse", "starmap", "takewhile", "dropwhile"})
_DRAINS = frozenset({"list", "tuple", "set", "frozenset", "dict", "sorted", "sum", "any",
                     "all", "min", "max", "join", "deque", "Counter", "OrderedDict"})
# Runs the function on a worker and returns an awaitable of its result.
_OFFLOAD = frozenset({"run_in_executor", "to_thread", "run_sync"})
_LOOPS = (ast.For, ast.AsyncFor, ast.While)
# A call whose name says it keeps, schedules or wraps what it is given (a
# callback registration, a thread or timer, a task, a container, a factory):
# the function may run after the loop has moved on.
_KEEPS = re.compile(
    r"(?i)^(add|put|push|set|new|create|make|build|get|wrap|bind|on_|on(?=[A-Z])|start|spawn)"
    r"|append|extend|insert|register|connect|subscribe|listen|callback|handler|submit|schedule"
    r"|call_(soon|later|at)|after|defer|timer|thread|process|task|future|async|partial|route"
    r"|signal|atexit|hook|observe|watch|store|save|cache|memo|finaliz|decorat|lazy|map|filter")
# Where a call may run after the statement that wrote it (a later iteration).
_LATER = (ast.GeneratorExp, ast.Lambda, ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)
_NAME_ERRORS = frozenset({"NameError", "Exception", "BaseException"})
_UNDEFINED = re.compile(r"[Uu]ndefined name [`'\"]?([A-Za-z_]\w*)")


def _closure_at(scopes: Scopes, line: int, col: int) -> ast.AST | None:
    """The innermost function or lambda whose body holds (line, col)."""
    best: ast.AST | None = None
    for node in ast.walk(scopes.tree):
        if not isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda)):
            continue
        start, end = (node.lineno, node.col_offset), (node.end_lineno or node.lineno,
                                                       node.end_col_offset or 0)
        if start <= (line, col) <= end and (best is None or (
                (best.lineno, best.col_offset) <= start)):
            best = node
    return best


def _loop_body_of(scopes: Scopes, node: ast.AST) -> ast.AST | None:
    """The loop whose body holds ``node`` directly (no function between)."""
    child = node
    while child in scopes.parent:
        parent = scopes.parent[child]
        if isinstance(parent, _LOOPS) and child in parent.body:
            return parent
        if isinstance(parent, (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda,
                               ast.ClassDef, ast.Module)):
            return None
        child = parent
    return None


def _within(scopes: Scopes, node: ast.AST, top: ast.AST) -> bool:
    """``node`` is inside ``top``, with nothing between that runs later."""
    child = node
    while child in scopes.parent:
        child = scopes.parent[child]
        if child is top:
            return True
        if isinstance(child, _LATER):
            return False
    return False


def _eager_argument(scopes: Scopes, node: ast.AST) -> bool:
    """``node`` is given to a call that runs it before the iteration goes
    on: a ``key=`` of any call, an argument of ``sorted``/``min``/``max``/
    ``.sort``/``reduce``, the replacement of a regex substitution, ``map``/
    ``filter`` whose iterator is consumed on the spot, or a thread pool's
    job that is awaited where it is handed over."""
    parent = scopes.parent.get(node)
    if isinstance(parent, ast.keyword):
        return parent.arg == "key" or (parent.arg == "repl" and _substitution(
            scopes, scopes.parent.get(parent)))
    if not (isinstance(parent, ast.Call) and node in parent.args):
        return False
    name = callee(parent)
    if name in _EAGER:
        return True
    if name in _SUBSTITUTE:
        return _substitution(scopes, parent)
    if name in _LAZY:
        return _consumed(scopes, parent)
    # ``await loop.run_in_executor(pool, fn)``: the coroutine ends when fn has run
    if name in _OFFLOAD:
        return isinstance(scopes.parent.get(parent), ast.Await)
    # Any other call whose name says nothing of keeping what it is given: a
    # project's helper that calls the function while the loop waits
    # (``wait_for(lambda: ...)``, ``check(fn)``); its body is often in another
    # module, so its name is the evidence.
    return bool(name) and not _KEEPS.search(name)


def _substitution(scopes: Scopes, call: ast.AST | None) -> bool:
    """``call`` is ``re.sub``/``re.subn`` or ``.sub``/``.subn`` of a pattern the
    code compiled (``pattern = re.compile(...)``): the replacement runs for
    each match before the call returns. Another object's ``.sub`` may keep
    what it is given."""
    if not (isinstance(call, ast.Call) and isinstance(call.func, ast.Attribute)):
        return False
    owner = call.func.value
    if isinstance(owner, ast.Name) and owner.id in _REGEX_MODULES:
        return True
    if isinstance(owner, ast.Call):  # re.compile(...).sub(fn, text)
        return callee(owner) == "compile"
    if not isinstance(owner, ast.Name):
        return False
    writes = [n for n in ast.walk(_scope_of(scopes, call)) if isinstance(n, ast.Assign)
              and any(isinstance(t, ast.Name) and t.id == owner.id for t in n.targets)]
    return bool(writes) and all(isinstance(w.value, ast.Call) and callee(w.value) == "compile"
                                for w in writes)


def _consumed(scopes: Scopes, call: ast.Call) -> bool:
    """The iterator ``call`` returns is drained where it is made: the
    argument of ``list``/``tuple``/``sum``/``"".join`` and the like, or the
    iterable of a ``for`` loop or a comprehension."""
    parent = scopes.parent.get(call)
    if isinstance(parent, ast.Call) and call in parent.args:
        return callee(parent) in _DRAINS
    if isinstance(parent, (ast.For, ast.AsyncFor)):
        return parent.iter is call
    return isinstance(parent, ast.comprehension) and parent.iter is call and not isinstance(
        scopes.parent.get(parent), ast.GeneratorExp)


def _scope_of(scopes: Scopes, node: ast.AST) -> ast.AST:
    child = node
    while child in scopes.parent:
        child = scopes.parent[child]
        if isinstance(child, (ast.FunctionDef, ast.AsyncFunctionDef, ast.Module)):
            return child
    return scopes.tree


def closure_used_in_iteration(scopes: Scopes, line: int, col: int) -> str | None:
    """Why the closure that B023 names at (line, col) runs within the
    iteration that made it, or None."""
    closure = _closure_at(scopes, line, col)
    if closure is None or (loop := _loop_body_of(scopes, closure)) is None:
        return None
    if isinstance(closure, ast.Lambda):
        if _eager_argument(scopes, closure):
            return ("the lambda is given straight to a call that runs it before the loop "
                    "moves on (a sort/min/max key, a regex substitution, map/filter read at "
                    "once, a thread-pool job awaited on the spot, a call whose name says "
                    "nothing of keeping it): the loop variable it reads is the current one")
        target = scopes.parent.get(closure)
        if not (isinstance(target, ast.Assign) and len(target.targets) == 1
                and isinstance(target.targets[0], ast.Name)):
            return None
        name = target.targets[0].id
    else:
        name = closure.name
    scope = _scope_of(scopes, closure)
    rebinds = _rebindings(scopes, scope, closure, name)
    # A use after a later binding of the name in the same block reads that
    # other object (nikola's second ``def add`` after the loop).
    uses = [n for n in ast.walk(scope) if isinstance(n, ast.Name) and n.id == name
            and not _shadowed(scopes, n, rebinds)]
    loads = [n for n in uses if isinstance(n.ctx, ast.Load)]
    if not loads or len(uses) - len(loads) > (1 if isinstance(closure, ast.Lambda) else 0):
        return None  # rebound elsewhere, or never used: not provably local
    for use in loads:
        if _recursive_call(scopes, use, closure):
            continue  # it runs only while the closure itself runs
        if not _within(scopes, use, loop):
            return None
        parent = scopes.parent.get(use)
        called = isinstance(parent, ast.Call) and parent.func is use
        if not (called or _eager_argument(scopes, use)):
            return None  # stored, returned or passed on: it may run later
    return (f"{name}() is only called within the iteration that defines it (directly, in a "
            "list comprehension or as a sort key): it never sees a later value of the loop "
            "variable")


def _binding_statement(scopes: Scopes, node: ast.AST) -> ast.AST:
    while not isinstance(node, ast.stmt) and node in scopes.parent:
        node = scopes.parent[node]
    return node


def _rebindings(scopes: Scopes, scope: ast.AST, closure: ast.AST, name: str) -> list[ast.AST]:
    """The statements of ``scope`` (not of a function nested in it) after
    ``closure`` that bind ``name`` again: a def, a class, an assignment or an
    import of that name."""
    out: list[ast.AST] = []
    start = getattr(closure, "lineno", 0)
    for n in ast.walk(scope):
        if n is closure or getattr(n, "lineno", 0) <= start:
            continue
        if isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)) \
                and n.name == name:
            stmt: ast.AST = n
        elif (isinstance(n, ast.Name) and n.id == name and isinstance(n.ctx, ast.Store)) or (
                isinstance(n, ast.alias) and (n.asname or n.name) == name):
            stmt = _binding_statement(scopes, n)
        else:
            continue
        if _scope_of(scopes, stmt) is scope:
            out.append(stmt)
    return out


def _shadowed(scopes: Scopes, use: ast.Name, rebinds: list[ast.AST]) -> bool:
    """A binding in ``rebinds`` runs before ``use`` on every path: it is an
    earlier statement of a block that holds ``use``, and it comes after the
    closure, so the closure cannot be made again between them."""
    child: ast.AST = use
    while child in scopes.parent:
        parent = scopes.parent[child]
        for field in ("body", "orelse", "finalbody", "handlers"):
            block = getattr(parent, field, None)
            if isinstance(block, list) and child in block:
                at = block.index(child)
                if any(stmt in block[:at] for stmt in rebinds):
                    return True
        if child in rebinds:
            return False  # the binding's own statement (``add = add_other``)
        child = parent
    return False


def _recursive_call(scopes: Scopes, use: ast.Name, closure: ast.AST) -> bool:
    """``use`` is a call of the closure inside its own body (nikola's
    ``create_hierarchy`` walking a tree): it runs only while an outer call of
    the closure does, so within that call's iteration."""
    parent = scopes.parent.get(use)
    return (isinstance(closure, (ast.FunctionDef, ast.AsyncFunctionDef))
            and isinstance(parent, ast.Call) and parent.func is use
            and scopes.function_of(use) is closure)


def _catches(h: ast.ExceptHandler) -> bool:
    """The handler catches NameError (bare, NameError, or one of its bases)."""
    types = h.type.elts if isinstance(h.type, ast.Tuple) else [h.type]
    return h.type is None or any(
        (n.id if isinstance(n, ast.Name) else getattr(n, "attr", "")) in _NAME_ERRORS
        for n in types if n is not None)


def _catches_name_error(t: ast.Try) -> bool:
    return any(_catches(h) for h in t.handlers)


def _exits(t: ast.Try) -> bool:
    """Every handler of ``t`` that catches NameError leaves the block."""
    return all(h.body and isinstance(h.body[-1], (ast.Return, ast.Raise, ast.Continue, ast.Break))
               for h in t.handlers if _catches(h))


def name_error_handled(scopes: Scopes, line: int, message: str) -> str | None:
    """Why the undefined name on ``line`` is asked for under a handler of its
    absence, or None: the line is inside ``try`` with a handler for
    ``NameError`` (or ``Exception``), or an earlier ``try`` of the same
    function reads the name and leaves the function when it is missing
    (rich's ``try: get_ipython / except NameError: return False``)."""
    m = _UNDEFINED.search(message)
    name = m.group(1) if m else None
    scope = None
    for fn in scopes.functions:
        if fn.lineno <= line <= (fn.end_lineno or fn.lineno) and (
                scope is None or fn.lineno >= scope.lineno):
            scope = fn
    for node in ast.walk(scope or scopes.tree):
        if not isinstance(node, ast.Try) or not node.body or not _catches_name_error(node):
            continue
        if scope is not None and scopes.function_of(node) is not scope:
            continue
        first, last = node.body[0].lineno, node.body[-1].end_lineno or node.body[-1].lineno
        if first <= line <= last:
            return ("the name is read inside try with a handler for NameError: the code "
                    "asks whether it exists (a builtin of another runtime) and handles "
                    "its absence")
        if name and (node.end_lineno or last) < line and _exits(node) and any(
                isinstance(n, ast.Name) and n.id == name
                for stmt in node.body for n in ast.walk(stmt)):
            return (f"an earlier try reads {name} and returns when it is missing "
                    "(except NameError): it exists wherever this line runs")
    return None


# Statements that leave the loop's iteration: the group is not read again in it.
_LEAVES = (ast.Return, ast.Raise, ast.Continue, ast.Break)
_COMPREHENSIONS = (ast.ListComp, ast.SetComp, ast.DictComp, ast.GeneratorExp)


def _groupby_loop(scopes: Scopes, use: ast.Name,
                  start: ast.AST | None = None) -> ast.For | ast.AsyncFor | None:
    """The ``for key, group in groupby(...)`` whose group ``use`` reads (no
    function between), the nearest above ``start`` (default: ``use``)."""
    child: ast.AST = use if start is None else start
    while child in scopes.parent:
        child = scopes.parent[child]
        if isinstance(child, (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda, ast.ClassDef)):
            return None
        if (isinstance(child, (ast.For, ast.AsyncFor)) and isinstance(child.iter, ast.Call)
                and callee(child.iter) == "groupby" and isinstance(child.target, ast.Tuple)
                and len(child.target.elts) == 2 and isinstance(child.target.elts[1], ast.Name)
                and child.target.elts[1].id == use.id):
            return child
    return None


def _path(scopes: Scopes, node: ast.AST, top: ast.AST) -> list[ast.AST]:
    """``node``'s ancestors up to ``top`` (nearest first), ``node`` first."""
    out = [node]
    while out[-1] is not top and out[-1] in scopes.parent:
        out.append(scopes.parent[out[-1]])
    return out


def _repeated(path: list[ast.AST]) -> bool:
    """A read on ``path`` may run more than once per iteration of the
    outer loop: it sits in an inner loop's body, a comprehension past its
    first iterable, or a function that may run later."""
    for child, parent in pairwise(path[:-1]):
        if isinstance(parent, (ast.For, ast.AsyncFor)) and child is not parent.iter:
            return True
        if isinstance(parent, (ast.While, *_LATER)):
            return True
        if isinstance(parent, _COMPREHENSIONS) and not (
                isinstance(child, ast.comprehension) and child is parent.generators[0]):
            return True
        if isinstance(parent, ast.comprehension) and child is not parent.iter:
            return True
    return False


def _leaving_block(path: list[ast.AST]) -> list[ast.stmt] | None:
    """The innermost branch of an ``if`` (or an ``else``) on ``path`` whose
    last statement leaves the iteration (return, raise, continue, break)."""
    for child, parent in pairwise(path):
        for block in (getattr(parent, "body", None), getattr(parent, "orelse", None)):
            if (isinstance(parent, ast.If) and isinstance(block, list) and child in block
                    and isinstance(block[-1], _LEAVES)):
                return block
    return None


def group_not_reused(scopes: Scopes, line: int, col: int) -> str | None:
    """Why the ``itertools.groupby`` group that B031 names at (line, col) is
    read once per iteration, or None: every earlier read of it in the loop
    is in a branch that then leaves the iteration (pyramid's ``for ... in
    actiongroup: ...; raise ConfigurationError``), so the flagged read never
    runs after it; the flagged read is in no inner loop."""
    use = next((n for n in index(scopes.tree).nodes_at(line) if isinstance(n, ast.Name)
                and isinstance(n.ctx, ast.Load) and n.col_offset == col), None)
    if use is None or (loop := _groupby_loop(scopes, use)) is None:
        return None
    mine = _path(scopes, use, loop)
    if _repeated(mine):
        return None
    others = [n for stmt in loop.body for n in ast.walk(stmt) if isinstance(n, ast.Name)
              and n.id == use.id and n is not use]
    if not others:
        # The one read of an inner groupby's group that reuses the outer
        # one's name (lemur's ``for notification, items in groupby(...)``
        # inside ``for owner, items in groupby(...)``): ruff follows the
        # outer name into the inner loop; this read is the inner group's.
        outer = _groupby_loop(scopes, use, start=loop)
        if outer is None:
            return None
        return (f"the inner groupby rebinds {use.id}: this is its group's only read, once per "
                "key (the outer loop's group of the same name is another object)")
    for other in others:
        if not isinstance(other.ctx, ast.Load) or (other.lineno, other.col_offset) > (
                use.lineno, use.col_offset):
            return None  # rebound, or read after the flagged read
        path = _path(scopes, other, loop)
        block = _leaving_block(path)
        if block is None or _repeated(path) or any(stmt in mine for stmt in block):
            return None
    return (f"each earlier read of the group {use.id} is in a branch that leaves the "
            "iteration (raise, return, continue, break): the group is read once per key")
