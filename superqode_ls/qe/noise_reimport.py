"""A redefinition (ruff's F811) that imports the very same object again.

F811 is worth a look where the second binding silently replaces a different
object (a second ``def render``, an import that shadows a local function).
Where both bindings import the same name from the same module at the same
level (evennia's ``from .rpsystem import (..., LanguageError, ...,
LanguageError, ...)`` in ``contrib/rpg/rpsystem/__init__.py``), the name is
bound twice to one object: a duplicate to tidy, never a change of meaning.

Noise (info) with the reason said. The same name imported from two
different modules (which may hold different objects), or under two
different original names, stays shown.
"""

from __future__ import annotations

import ast
import re
from collections.abc import Callable

from ..models import Finding, Severity
from .context import mark_noise
from .noise_library import module_of

Lines = Callable[[str], "list[str] | None"]
_REDEFINED = re.compile(r"[Rr]edefinition of unused `([^`]+)` from line (\d+)")

WHY = ("`{}` is imported again from the same module ({}): both bindings are the same object, "
       "a duplicate import, not a redefinition")


def reimport_noise(findings: list[Finding], lines_of: Lines,
                   canonical: Callable[[str], str]) -> list[Finding]:
    """``findings`` with each F811 whose two bindings import one object
    marked noise (info), the reason said."""
    trees: dict[str, ast.Module | None] = {}
    out = []
    for f in findings:
        m = _REDEFINED.search(f.message or "")
        if (m and f.noise is None and f.file and f.file.endswith(".py") and f.range
                and canonical(f.rule_id) == "F811"):
            if f.file not in trees:
                lines = lines_of(f.file)
                trees[f.file] = module_of(lines) if lines is not None else None
            tree = trees[f.file]
            source = (same_import(tree, m.group(1), int(m.group(2)), f.range.start_line)
                      if tree is not None else None)
            if source:
                f = mark_noise(f, WHY.format(m.group(1), source), Severity.info)
        out.append(f)
    return out


def same_import(tree: ast.Module, name: str, first: int, again: int) -> str | None:
    """The module both bindings of ``name`` (on lines ``first`` and
    ``again``) import it from, when they import one original name from one
    module; else None."""
    a, b = _origin(tree, name, first), _origin(tree, name, again)
    if a is None or b is None or a != b:
        return None
    return ("." * a[0]) + a[1]


def _origin(tree: ast.Module, name: str, line: int) -> tuple[int, str, str] | None:
    """(level, module, original name) of the ``from ... import`` binding
    ``name`` whose alias sits on ``line``; None for any other binding."""
    found = None
    for node in ast.walk(tree):
        if not isinstance(node, ast.ImportFrom) or not (
                node.lineno <= line <= (node.end_lineno or node.lineno)):
            continue
        for alias in node.names:
            if (alias.asname or alias.name) == name and getattr(alias, "lineno", line) == line:
                if found is not None:
                    return None  # two bindings on one line: which one is meant is unclear
                found = (node.level, node.module or "", alias.name)
    return found
