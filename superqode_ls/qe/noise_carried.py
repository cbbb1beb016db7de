"""An undefined name (F821) that a loop carries from one iteration to the next.

pyflakes reads a function once, in order: a name used in a loop's body
before the statement that assigns it *later in the same loop* is
"undefined" to it, although at run time every use after the first
iteration reads the value the previous iteration left (fail2ban's
``prev_timeofban``, used when the IP changes and assigned at the end of each
pass). The code still depends on its first iteration not reaching the use,
which pyflakes cannot see and neither can this rule: such a finding is
noise with the reason said, one level lower, never hidden. A name no
statement of the loop assigns (a typo, a missing import) stays shown.
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
_UNDEFINED = re.compile(r"[Uu]ndefined name `([^`]+)`")
_LOOPS = (ast.For, ast.AsyncFor, ast.While)
_SCOPES = (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda, ast.ClassDef, ast.Module)
WHY = ("`{}` is assigned later in the same loop (line {}): each iteration after the first "
       "reads the value the one before left; pyflakes reads the loop once, in order")


def carried_noise(findings: list[Finding], lines_of: Lines,
                  canonical: Callable[[str], str]) -> list[Finding]:
    modules: dict[str, _Module | None] = {}  # this call's only
    out = []
    for f in findings:
        m = _UNDEFINED.search(f.message or "")
        if (m and f.noise is None and f.file and f.file.endswith(".py") and f.range
                and canonical(f.rule_id) == "F821"):
            if f.file not in modules:
                lines = lines_of(f.file)
                tree = module_of(lines) if lines is not None else None
                modules[f.file] = _Module(tree) if tree is not None else None
            module = modules[f.file]
            later = (module.assigned_later_in_loop(m.group(1), f.range.start_line)
                     if module is not None else None)
            if later is not None:
                f = mark_noise(f, WHY.format(m.group(1), later), Severity.low)
        out.append(f)
    return out


class _Module:
    """One flagged module, walked once for all its findings (pyload has
    hundreds of F821 on one name)."""

    def __init__(self, tree: ast.Module):
        self.parents = index(tree).parents
        self.loads: dict[tuple[str, int], ast.Name] = {}
        for n in ast.walk(tree):
            if isinstance(n, ast.Name) and isinstance(n.ctx, ast.Load):
                self.loads.setdefault((n.id, n.lineno), n)

    def assigned_later_in_loop(self, name: str, line: int) -> int | None:
        """The line of an assignment of ``name`` after ``line`` inside a loop
        (of the same scope) whose body holds the use at ``line``, or None."""
        node: ast.AST | None = self.loads.get((name, line))
        while node is not None and not isinstance(node, _SCOPES):
            node = self.parents.get(node)
            if isinstance(node, _LOOPS):
                for inner in _same_scope(node):
                    if (isinstance(inner, ast.Name) and inner.id == name
                            and isinstance(inner.ctx, ast.Store) and inner.lineno > line):
                        return inner.lineno
        return None


def _same_scope(loop: ast.AST):
    """The loop's nodes, not those of a function or class inside it."""
    todo = list(ast.iter_child_nodes(loop))
    while todo:
        node = todo.pop()
        yield node
        if not isinstance(node, _SCOPES):
            todo.extend(ast.iter_child_nodes(node))
