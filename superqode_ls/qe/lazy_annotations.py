"""Where Python never evaluates an annotation: under ``from __future__
import annotations``, in a string annotation, or on a local variable (PEP
526). A name used only there is no error at run time (``qe/context.py``
marks ruff's F821 on it as noise).
"""

from __future__ import annotations

import ast
from collections.abc import Callable

from . import ast_index


class LazyAnnotations:
    """Per file: the spans of annotations Python never evaluates."""

    def __init__(self, lines: Callable[[str], list[str] | None]):
        self._lines = lines
        self._spans: dict[str, list[tuple[int, int, int, int]] | None] = {}

    def spans(self, rel: str) -> list[tuple[int, int, int, int]] | None:
        if rel not in self._spans:
            self._spans[rel] = self._compute(rel)
        return self._spans[rel]

    def covers(self, rel: str, line: int, col: int) -> bool:
        """Whether (``line``, ``col``) of ``rel`` is in such an annotation."""
        spans = self.spans(rel)
        return spans is not None and any(_inside(s, line, col) for s in spans)

    def _compute(self, rel: str) -> list[tuple[int, int, int, int]] | None:
        lines = self._lines(rel)
        if lines is None:
            return None
        tree = ast_index.parsed("\n".join(lines))  # the context step's tree
        if tree is None:
            return None
        lazy = any(isinstance(n, ast.ImportFrom) and n.module == "__future__"
                   and any(a.name == "annotations" for a in n.names) for n in tree.body)
        out: list[tuple[int, int, int, int]] = []
        for node in ast.walk(tree):
            if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
                # A local variable's annotation is never evaluated (PEP 526).
                out.extend(_span(n.annotation) for n in _local_annotations(node))
            annotations: list[ast.AST | None] = []
            if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
                a = node.args
                annotations = [x.annotation for x in (*a.posonlyargs, *a.args, *a.kwonlyargs,
                                                      a.vararg, a.kwarg) if x is not None]
                annotations.append(node.returns)
            elif isinstance(node, ast.AnnAssign):
                annotations = [node.annotation]
            for ann in annotations:
                if ann is None:
                    continue
                if lazy:
                    out.append(_span(ann))
                else:  # evaluated at definition time, except the strings in it
                    out.extend(_span(s) for s in ast.walk(ann)
                               if isinstance(s, ast.Constant) and isinstance(s.value, str))
        return out


def _local_annotations(func: ast.AST) -> list[ast.AnnAssign]:
    """``x: T = ...`` statements of a function's own body (not of a class
    or function inside it)."""
    out, todo = [], list(getattr(func, "body", []))
    while todo:
        node = todo.pop()
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef, ast.Lambda)):
            continue
        if isinstance(node, ast.AnnAssign) and isinstance(node.target, ast.Name):
            out.append(node)
        todo.extend(ast.iter_child_nodes(node))
    return out


def _span(node: ast.AST) -> tuple[int, int, int, int]:
    return (node.lineno, node.col_offset, node.end_lineno or node.lineno,  # type: ignore[attr-defined]
            node.end_col_offset or 0)  # type: ignore[attr-defined]


def _inside(span: tuple[int, int, int, int], line: int, col: int) -> bool:
    sl, sc, el, ec = span
    return (sl, sc) <= (line, col) <= (el, ec)
