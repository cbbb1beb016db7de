"""A bare ``raise`` outside an ``except`` (ruff's PLE0704) in a helper that
the whole project calls only from ``except`` handlers.

The context step (``noise_rules.reraise_helper``) proves this where the
helper's callers are in its own module. A helper for other modules (celery's
``handle_remote_command_error(command, exc)`` in ``celery/bin/base.py``,
called as ``except Exception as exc: handle_remote_command_error(...)`` from
``bin/control.py`` and ``bin/graph.py``) has none there, so the proof needs
the project: every mention of the helper's name in any module is the callee
of a call inside an ``except`` block. Whenever it runs an exception is then
being handled, and the bare ``raise`` re-raises it.

Fails closed: a mention anywhere else (passed as a callback, stored, called
after the handler), the name in a string (``getattr(mod, "name")``), a
module that cannot be read or parsed, a walk cut short, or no call at all
keeps the finding shown.
"""

from __future__ import annotations

import ast
import os
import re
from collections.abc import Callable
from pathlib import Path

from ..models import Finding, Severity
from ..workspace.pyast import parse as parse_python
from .context import mark_noise
from .noise_library import module_of, module_texts

Lines = Callable[[str], "list[str] | None"]
_BOUNDARY = (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda, ast.ClassDef, ast.Module)

WHY = ("{}() is called only from except handlers across the project ({} call(s), e.g. {}): the "
       "bare raise re-raises the exception being handled")


def reraise_noise(findings: list[Finding], lines_of: Lines, root: str | os.PathLike[str] | None,
                  canonical: Callable[[str], str]) -> list[Finding]:
    """``findings`` with each PLE0704 in a helper the project calls only from
    ``except`` handlers marked noise (info), the reason said."""
    if root is None:
        return findings
    helpers: dict[int, str] = {}
    for i, f in enumerate(findings):
        if (f.noise is None and f.file and f.file.endswith(".py") and f.range
                and canonical(f.rule_id) == "PLE0704"):
            lines = lines_of(f.file)
            tree = module_of(lines) if lines is not None else None
            name = _enclosing(tree, f.range.start_line) if tree is not None else None
            if name:
                helpers[i] = name
    if not helpers:
        return findings
    calls = _handled_calls(Path(root), set(helpers.values()))
    out = list(findings)
    for i, name in helpers.items():
        where = calls.get(name)
        if where:
            out[i] = mark_noise(out[i], WHY.format(name, len(where), where[0]), Severity.info)
    return out


def _enclosing(tree: ast.Module, line: int) -> str | None:
    """The name of the innermost function whose body holds ``line``."""
    best = None
    for node in ast.walk(tree):
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)) \
                and node.lineno <= line <= (node.end_lineno or node.lineno) \
                and (best is None or node.lineno > best.lineno):
            best = node
    return best.name if best is not None else None


def _handled_calls(root: Path, names: set[str]) -> dict[str, list[str]]:
    """For each of ``names`` that the project mentions only as the callee of
    calls inside ``except`` blocks, where those calls are (``file:line``).
    A name mentioned any other way, or in a module that could not be read,
    is left out (unproven)."""
    quick = re.compile(r"\b(?:" + "|".join(re.escape(n) for n in sorted(names)) + r")\b")
    calls: dict[str, list[str]] = {n: [] for n in names}
    spoiled: set[str] = set()
    for path, text in module_texts(root):  # (a link or no regular file: left out)
        if path is None:
            return {}  # the walk was cut short: callers unseen
        if text is None:
            return {}  # a module too large to read may call any of them
        if not any(n in text for n in names):  # (the regex only where a name is written)
            continue
        present = set(quick.findall(text))
        if not present:
            continue
        try:
            tree = parse_python(text)
        except (SyntaxError, ValueError):
            spoiled |= present
            continue
        rel = os.path.relpath(path, root).replace(os.sep, "/")
        for name, ok, line in _mentions(tree, present):
            if ok:
                calls[name].append(f"{rel}:{line}")
            else:
                spoiled.add(name)
    return {n: where for n, where in calls.items() if where and n not in spoiled}


def _mentions(tree: ast.Module, names: set[str]):
    """(name, is a call inside an except block, line) for each mention of
    ``names``: a name or attribute read, or a string holding the name."""
    handled = _handled_callees(tree)
    for node in ast.walk(tree):
        if isinstance(node, ast.Name) and node.id in names and isinstance(node.ctx, ast.Load):
            yield node.id, id(node) in handled, node.lineno
        elif isinstance(node, ast.Attribute) and node.attr in names \
                and isinstance(node.ctx, ast.Load):
            yield node.attr, id(node) in handled, node.lineno
        elif isinstance(node, ast.Constant) and isinstance(node.value, str) \
                and node.value in names:
            # (looked up by name: getattr, __all__, a registry; callers unseen)
            yield node.value, False, node.lineno


def _handled_callees(tree: ast.Module) -> set[int]:
    """The ids of the callee expressions of calls that run inside an
    ``except`` block of their own function (not in a function, lambda or
    class defined there, which may run later)."""
    out: set[int] = set()
    for handler in ast.walk(tree):
        if not isinstance(handler, ast.ExceptHandler):
            continue
        todo: list[ast.AST] = list(handler.body)
        while todo:
            node = todo.pop()
            if isinstance(node, _BOUNDARY):
                continue
            if isinstance(node, ast.Call):
                out.add(id(node.func))
            todo.extend(ast.iter_child_nodes(node))
    return out
