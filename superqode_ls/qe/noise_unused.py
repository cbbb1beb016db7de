"""An unused local (ruff's F841) whose statement the code needs without the name.

F841 is worth a look where a value was computed to be used and then
forgotten (a result never returned, a typo in the name read later). Four
shapes bind a name only as a by-product of a statement that does its work
anyway, so the unused name changes nothing the code does:

- the name of an ``except ... as e`` handler (evennia's ``except re.error
  as e: caller.msg("Invalid regular expression.")``, lark's ``except
  Exception as e: ... raise``): the handler catches the same exceptions
  without it;
- an attribute or item lookup that is the whole body of a ``try`` with
  handlers (evennia's ``try: ctypes = obj._content_types`` / ``except
  AttributeError:``): the lookup is made to learn whether it raises (a call
  there, ``value = int(text)``, stays: the converted value may be the one
  forgotten);
- a walrus in the test of an ``if``/``elif``/``while`` (``if matches :=
  find(...):``): the test reads the value;
- one name of an unpacking whose other names are read (``shared, excess =
  word[:n], word[n - 1:]``, ``excess`` used): the statement is there for them;
- the target of a ``with ... as name`` never read: the context manager is
  entered and left the same without it;
- any local of a function that stops in a debugger (``breakpoint()``,
  ``pdb.set_trace()``): the value is kept to be looked at there.

Each is noise with the reason said. A plain ``result = compute()`` never
read, an assignment inside a ``try`` next to other statements, or an
unpacking none of whose names is read stays shown.
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
_UNUSED = re.compile(r"[Ll]ocal variable `([A-Za-z_][A-Za-z0-9_]*)` is assigned to but never used")

HANDLER = ("the name of an `except ... as {}` handler that the handler never reads: it catches "
           "the same exceptions without the name")
PROBE = ("the assignment is the whole body of a `try` with handlers: the expression is "
         "evaluated to learn whether it raises, the name is not needed")
WALRUS = "a walrus in the test of an `{}`: the test reads the value, the name is not needed"
WITH = ("the target of a `with ... as {}` never read: the context manager is entered and left "
        "the same without it")
DEBUGGER = ("the function stops in a debugger ({}): the value is kept to be looked at there")
UNPACKED = ("one name of an unpacking whose other names are read ({}): the statement is there "
            "for them")


def unused_noise(findings: list[Finding], lines_of: Lines,
                 canonical: Callable[[str], str]) -> list[Finding]:
    """``findings`` with each F841 whose statement the code needs without
    the name marked noise (info), the reason said."""
    trees: dict[str, ast.Module | None] = {}
    out = []
    for f in findings:
        m = _UNUSED.search(f.message or "")
        if (m and f.noise is None and f.file and f.file.endswith(".py") and f.range
                and canonical(f.rule_id) == "F841"):
            if f.file not in trees:
                lines = lines_of(f.file)
                trees[f.file] = module_of(lines) if lines is not None else None
            tree = trees[f.file]
            why = needless(tree, m.group(1), f.range.start_line) if tree is not None else None
            if why:
                f = mark_noise(f, why, Severity.info)
        out.append(f)
    return out


def needless(tree: ast.Module, name: str, line: int) -> str | None:
    """Why the binding of ``name`` on ``line`` is a by-product of a
    statement that works without it, or None (kept shown)."""
    idx = index(tree)  # (the nodes on the line, not a walk per finding)
    func = idx.function_at(line)
    if func is not None and (stop := _debugger(func)) is not None:
        return DEBUGGER.format(stop)
    for node in idx.nodes_at(line):
        if isinstance(node, (ast.With, ast.AsyncWith)) and any(
                isinstance(i.optional_vars, ast.Name) and i.optional_vars.id == name
                and i.optional_vars.lineno == line for i in node.items):
            return WITH.format(name)
        if isinstance(node, ast.ExceptHandler) and node.name == name:
            return HANDLER.format(name)
        if isinstance(node, ast.NamedExpr) and isinstance(node.target, ast.Name) \
                and node.target.id == name:
            test = _test_of(func or tree, node)
            return WALRUS.format(test) if test else None
        if isinstance(node, ast.Assign):
            if _binds(node, name) is None:
                continue
            up = _holder(func or tree, node)
            # (a lookup only: ``value = int(text)`` then ``text`` used may be
            # the bug F841 points at, a converted value forgotten)
            if (isinstance(up, (ast.Try, ast.TryStar)) and up.body == [node] and up.handlers
                    and len(node.targets) == 1 and isinstance(node.targets[0], ast.Name)
                    and isinstance(node.value, (ast.Attribute, ast.Subscript))):
                return PROBE
            others = _read_siblings(func or tree, node, name)
            if others:
                return UNPACKED.format(", ".join(f"`{o}`" for o in others))
            return None
    return None


# (not IPython's ``embed``: a model's ``embed(x)`` is no debugger)
_DEBUGGERS = frozenset({"set_trace", "post_mortem"})


def _debugger(func: ast.AST) -> str | None:
    """The debugger call in ``func``'s own body (not a nested function's)."""
    todo = list(ast.iter_child_nodes(func))
    while todo:
        node = todo.pop()
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda, ast.ClassDef)):
            continue
        if isinstance(node, ast.Call):
            fn = node.func
            called = fn.id if isinstance(fn, ast.Name) else fn.attr if isinstance(
                fn, ast.Attribute) else ""
            if called in _DEBUGGERS or (isinstance(fn, ast.Name) and fn.id == "breakpoint"):
                return f"{called}()"
        todo.extend(ast.iter_child_nodes(node))
    return None


def _binds(node: ast.Assign, name: str) -> ast.Name | None:
    for target in node.targets:
        for x in ast.walk(target):
            if isinstance(x, ast.Name) and x.id == name and isinstance(x.ctx, ast.Store):
                return x
    return None


def _test_of(scope: ast.AST, node: ast.AST) -> str | None:
    """``if``/``while`` when ``node`` sits in such a statement's test (not its body)."""
    for up in ast.walk(scope):
        if isinstance(up, (ast.If, ast.While)) and any(n is node for n in ast.walk(up.test)):
            return "if" if isinstance(up, ast.If) else "while"
    return None


def _holder(scope: ast.AST, node: ast.stmt) -> ast.AST | None:
    """The ``try`` whose body holds the statement ``node`` directly, if any."""
    for up in ast.walk(scope):
        if isinstance(up, (ast.Try, ast.TryStar)) and any(n is node for n in up.body):
            return up
    return None


def _read_siblings(scope: ast.AST, node: ast.Assign, name: str) -> list[str]:
    """The other names a one-target tuple/list unpacking binds that its
    function (or module) reads; empty unless ``name`` is one element of it."""
    if len(node.targets) != 1 or not isinstance(node.targets[0], (ast.Tuple, ast.List)):
        return []
    elts = node.targets[0].elts
    if not all(isinstance(e, ast.Name) for e in elts) or name not in {e.id for e in elts}:
        return []
    read = {n.id for n in ast.walk(scope)
            if isinstance(n, ast.Name) and isinstance(n.ctx, ast.Load)}
    return [e.id for e in elts if e.id != name and e.id in read]
