"""A module whose unused imports are its API (noise.py runs this after
its other steps, past their stop, so that a large project's run, which the
budget stops before the project step, still judges them): a package's
``__init__`` importing from the package's own modules (also a package
stub's ``from . import submodule``), or a module made
only of relative imports (sqlalchemy's ``events.py``). An unused import of another package
there, or in a module that does anything else, stays. Then an import that a string
type alias reads (``noise_aliases``)."""

from __future__ import annotations

import ast
import re
from collections.abc import Callable

from ..models import Finding, Severity
from .context import mark_noise
from .noise_aliases import string_alias_imports
from .noise_library import module_of

Lines = Callable[[str], "list[str] | None"]


OWN_REEXPORT = ("a package's __init__ importing from its own modules makes the name "
                "importable from the package (its API, or a name kept for compatibility)")


def package_reexports(findings: list[Finding], lines_of: Lines,
                      canonical: Callable[[str], str]) -> list[Finding]:
    """``findings`` with the re-exports above marked as noise. It parses
    only the ``__init__.py`` files with an unused import and the modules
    whose text is imports only, so it finishes where the whole project step,
    after the context step, was cut by a large project's budget (sqlalchemy's
    re-exports were shown as findings)."""
    trees: dict[str, ast.Module | None] = {}
    out = []
    for f in findings:
        if (f.noise is None and f.file and f.range and f.file.endswith("/__init__.pyi")
                and canonical(f.rule_id) == "F401"):
            if f.file not in trees:
                lines = lines_of(f.file)
                trees[f.file] = module_of(lines) if lines is not None else None
            tree = trees[f.file]
            if tree is not None and _dot_import(tree, f.range.start_line):
                f = mark_noise(f, STUB_SUBMODULE, Severity.info)
        elif (f.noise is None and f.file and f.range and f.file.endswith(".py")
                and canonical(f.rule_id) == "F401"):
            if f.file not in trees:
                trees[f.file] = _reexporting(f.file, lines_of(f.file))
            tree = trees[f.file]
            init = f.file.rsplit("/", 1)[-1] == "__init__.py"
            if tree is not None and own_import(tree, f.range.start_line, f.file,
                                               relative_only=not init):
                f = mark_noise(f, OWN_REEXPORT if f.file.endswith("__init__.py")
                               else _IMPORTS_ONLY, Severity.info)
        out.append(f)
    # an import a string type alias reads: as cheap (a text test first), so here too
    return string_alias_imports(out, lines_of, canonical)


# Pyright's library-interface rules and ty's "dot re-exports" both read
# ``from . import a`` in an ``__init__.pyi`` as ``from . import a as a``.
STUB_SUBMODULE = ("a package stub's `from . import submodule` re-exports the submodule "
                  "(type checkers read it as `from . import submodule as submodule`): its API")


def _dot_import(tree: ast.Module, line: int) -> bool:
    """The import at ``line`` is exactly ``from . import name, ...``."""
    return any(isinstance(n, ast.ImportFrom) and n.level == 1 and n.module is None
               and n.lineno <= line <= (n.end_lineno or n.lineno) for n in tree.body)


_IMPORTS_ONLY = ("a module made only of relative imports from its own package (sqlalchemy's "
                 "events.py) exists to make those names importable from it")
# A statement that does more than import: such a module is not only a re-export.
_DOES_MORE = re.compile(r"^(?!(?:from|import)\s)(?:def|class|async|if|for|while|try|with|@|"
                        r"\w+\s*[:=(.\[])",
                        re.MULTILINE)


def _reexporting(rel: str, lines: list[str] | None) -> ast.Module | None:
    """The parsed module when its unused imports may be re-exports: a
    package's ``__init__``, or a module whose top level is nothing but
    imports (and its docstring); None otherwise. The text is looked at
    before any parse, so a large project's ordinary modules cost no parse."""
    if lines is None:
        return None
    text = "\n".join(lines)
    if rel.rsplit("/", 1)[-1] == "__init__.py":
        return module_of(lines)
    if _DOES_MORE.search(text):
        return None
    tree = module_of(lines)
    if tree is None or not all(
            isinstance(n, (ast.Import, ast.ImportFrom)) or (
                isinstance(n, ast.Expr) and isinstance(n.value, ast.Constant))
            for n in tree.body):
        return None
    return tree


def own_import(tree: ast.Module, line: int, rel: str, relative_only: bool = False) -> bool:
    """The import at ``line`` takes a name from the package's own modules
    (``from ._parser import X``, ``from pkg.sub import X``; only the first
    form with ``relative_only``)."""
    folders = rel.split("/")[:-1]
    for node in tree.body:
        if (isinstance(node, ast.ImportFrom)
                and node.lineno <= line <= (node.end_lineno or node.lineno)):
            if node.level > 0:
                return True
            top = (node.module or "").split(".")[0]
            return not relative_only and bool(top) and top in folders
    return False


