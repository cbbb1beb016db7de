"""A module that imports itself on purpose (pylint's PLW0406): noise.

tornado's ``autoreload.main()`` runs as ``python -m tornado.autoreload``:
there the module is ``__main__``, and its globals are not those of the
importable ``tornado.autoreload`` that the rest of the program sees. So
``main`` imports its own importable self and writes its state there too
(``tornado.autoreload._autoreload_is_main = _autoreload_is_main = True``).
The self-import is the point, not an accident.

Proved by the code, all required: the flagged import is inside a function
(not at the top, where it would only re-bind the module being imported),
and that function assigns an attribute of the imported module. A
self-import at the top, or one the function only reads from, stays shown.
"""

from __future__ import annotations

import ast
from collections.abc import Callable

from ..models import Finding, Severity
from .ast_index import index
from .context import mark_noise
from .noise_library import module_of

Lines = Callable[[str], "list[str] | None"]

WHY = ("the module imports its importable self on purpose: run as __main__ (python -m), its "
       "globals are another module's, so {function}() sets the state on {module} too")


def self_import_noise(findings: list[Finding], lines_of: Lines,
                      canonical: Callable[[str], str]) -> list[Finding]:
    """The findings, a deliberate self-import marked noise (``info``)."""
    trees: dict[str, ast.Module | None] = {}
    out = []
    for f in findings:
        if (f.noise is None and f.file and f.file.endswith(".py") and f.range
                and canonical(f.rule_id) == "PLW0406"):
            if f.file not in trees:
                lines = lines_of(f.file)
                trees[f.file] = module_of(lines) if lines is not None else None
            tree = trees[f.file]
            why = deliberate_self_import(tree, f.range.start_line) if tree is not None else None
            if why is not None:
                f = mark_noise(f, why, Severity.info)
        out.append(f)
    return out


def deliberate_self_import(tree: ast.Module, line: int) -> str | None:
    func = index(tree).function_at(line)
    if func is None:
        return None
    imp = next((n for n in ast.walk(func) if isinstance(n, ast.Import)
                and n.lineno <= line <= (n.end_lineno or n.lineno)), None)
    if imp is None or len(imp.names) != 1 or imp.names[0].asname:
        return None
    dotted = imp.names[0].name
    for node in ast.walk(func):
        targets = node.targets if isinstance(node, ast.Assign) else [node.target] if isinstance(
            node, (ast.AugAssign, ast.AnnAssign)) else []
        for t in targets:
            if isinstance(t, ast.Attribute) and ast.unparse(t.value) == dotted:
                return WHY.format(function=getattr(func, "name", "?"), module=dotted)
    return None
