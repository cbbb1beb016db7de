"""One walk of a parsed module answers the noise rules' questions by line.

The rules ask, per finding, which function holds a line, which calls span
it and which nodes start on it. Walking the whole module for each finding
made the filter quadratic in a large module's findings (sqlalchemy: seconds
at the end of a run, past the budget). A module is walked once here; the
last few modules' indexes are kept, which is what the filter needs (its
findings come file by file) with a bound; the filter lets them go when it
ends (``clear``), so the long-lived server holds no module's tree between
runs.

A module's tree is parsed once a filter run as well (``parsed``): the
context step and the rules after it (library, project, compatibility,
evidence, carried names, operator code, the threat model) each asked for the
same flagged module's tree and parsed it again (pyload: 284 parses of 96
modules, 0.4 s of the filter's 1.1 s of CPU). The trees are kept by their
source text up to a bound on the text kept (about 44 bytes of tree a
character), oldest first out, and let go with the indexes (``clear``).
"""

from __future__ import annotations

import ast
from collections import OrderedDict
from collections.abc import Iterator
from threading import Lock

from ..workspace.pyast import parse as parse_python

_FUNCTIONS = (ast.FunctionDef, ast.AsyncFunctionDef)


class TreeIndex:
    def __init__(self, tree: ast.Module) -> None:
        self.tree = tree
        self._functions: list[ast.FunctionDef | ast.AsyncFunctionDef] = []
        self._calls: list[ast.Call] = []
        self._at: dict[int, list[ast.AST]] = {}
        self._assigned: dict[int, dict[str, list[ast.AST]]] = {}
        self._parents: dict[ast.AST, ast.AST] | None = None
        for node in ast.walk(tree):  # outside in: a node's parents come first
            line = getattr(node, "lineno", None)
            if line is not None:
                self._at.setdefault(line, []).append(node)
            if isinstance(node, _FUNCTIONS):
                self._functions.append(node)
            elif isinstance(node, ast.Call):
                self._calls.append(node)

    def function_at(self, line: int) -> ast.FunctionDef | ast.AsyncFunctionDef | None:
        """The innermost function whose lines hold ``line`` (a nested one
        starts after the function around it)."""
        best = None
        for node in self._functions:
            if (node.lineno <= line <= (node.end_lineno or node.lineno)
                    and (best is None or node.lineno > best.lineno)):
                best = node
        return best

    def calls_over(self, line: int) -> list[ast.Call]:
        """The calls whose lines hold ``line``, in walk order."""
        return [n for n in self._calls if n.lineno <= line <= (n.end_lineno or n.lineno)]

    def nodes_at(self, line: int) -> list[ast.AST]:
        """The nodes that start on ``line``, in walk order."""
        return self._at.get(line, [])

    @property
    def parents(self) -> dict[ast.AST, ast.AST]:
        """Each node's parent, made on first use (most trees never need it)
        and shared by every rule that asks of this tree."""
        if self._parents is None:
            self._parents = {c: p for p in ast.walk(self.tree) for c in ast.iter_child_nodes(p)}
        return self._parents

    def assigned(self, scope: ast.AST) -> dict[str, list[ast.AST]]:
        """Each plain name ``scope`` assigns (``x = ...``), with its values."""
        key = id(scope)
        if key not in self._assigned:
            out: dict[str, list[ast.AST]] = {}
            for node in ast.walk(scope):
                if isinstance(node, ast.Assign):
                    for t in node.targets:
                        if isinstance(t, ast.Name):
                            out.setdefault(t.id, []).append(node.value)
            self._assigned[key] = out
        return self._assigned[key]


_KEEP = 8
_recent: OrderedDict[int, TreeIndex] = OrderedDict()
_lock = Lock()


def index(tree: ast.Module) -> TreeIndex:
    """``tree``'s index, made once while it is among the last few asked for
    (the index holds its tree, so an id seen here is that tree's)."""
    with _lock:
        got = _recent.get(id(tree))
        if got is not None and got.tree is tree:
            _recent.move_to_end(id(tree))
            return got
    made = TreeIndex(tree)
    with _lock:
        _recent[id(tree)] = made
        while len(_recent) > _KEEP:
            _recent.popitem(last=False)
    return made


# Source characters whose trees are kept: 2 MB of text, about 90 MB of trees.
_MAX_CHARS = 2_000_000
_trees: OrderedDict[str, ast.Module | None] = OrderedDict()
_chars = 0


def parsed(text: str) -> ast.Module | None:
    """``text``'s tree, parsed once while kept; None where it does not parse.
    Callers share the tree: none may change it."""
    global _chars
    with _lock:
        if text in _trees:
            _trees.move_to_end(text)
            return _trees[text]
    try:
        tree = parse_python(text)
    except (SyntaxError, ValueError):
        tree = None
    if len(text) > _MAX_CHARS:
        return tree
    with _lock:
        if text not in _trees:
            _trees[text] = tree
            _chars += len(text)
            while _chars > _MAX_CHARS:
                old, _ = _trees.popitem(last=False)
                _chars -= len(old)
    return tree


def clear() -> None:
    """Let every kept index and tree go."""
    global _chars
    with _lock:
        _recent.clear()
        _trees.clear()
        _chars = 0


def module_assignments(tree: ast.Module) -> Iterator[tuple[ast.stmt, ast.expr, ast.expr]]:
    """(statement, target, value) of each module-level ``name = value`` (one
    target) and ``name: T = value``, in order."""
    for node in tree.body:
        if isinstance(node, ast.Assign) and len(node.targets) == 1:
            yield node, node.targets[0], node.value
        elif isinstance(node, ast.AnnAssign) and node.value is not None:
            yield node, node.target, node.value
