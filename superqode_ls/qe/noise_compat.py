"""A compatibility module's idioms (noise.py, after the re-export step), each
what a maintainer would answer when the finding is shown:

- **a module-level self-assignment in a Python 2 branch** (PLW0127, and
  F821 on the same name there): ``if PY2: long = long`` (supervisor's
  ``compat.py``) makes the Python 2 builtin a global of the module, so that
  the project's other modules can ``from .compat import long`` under either
  Python; on Python 3 the branch never runs, so the name is never looked
  up. The same line in the Python 3 branch (a NameError when it runs), in a
  function, or under a test that is no version check stays;
- **a self-assignment in a function that reads its variables through
  ``locals()``** (PLW0127): ``name = name  # used by locals()`` keeps the
  variable that only a ``"%(name)s" % locals()`` reads from looking unused;
- **an unused import that another module of the project imports from this
  one** (F401): ``from supervisor.compat import xmlrpclib`` elsewhere makes
  the import this module's export; removing it breaks that module. An
  import no module takes from it stays. The project's modules are read in
  one bounded walk (only their first 64 KB), and only where such an import
  is left to judge.
"""

from __future__ import annotations

import ast
import os
import re
from collections.abc import Callable
from pathlib import Path

from ..models import Finding, Severity
from .context import mark_noise
from .noise_library import module_of, python_files
from .roles._common import read_head

Lines = Callable[[str], "list[str] | None"]

_RULES = frozenset({"PLW0127", "F821", "F401"})
_SKIP = frozenset({".git", ".venv", "venv", "node_modules", "__pycache__", ".tox", ".nox",
                   "build", "dist", ".superqode", "site-packages"})
_MAX_FILES = 3000
# Python 2's builtins that Python 3 removed (what a compatibility module re-exports).
_PY2_BUILTINS = frozenset({"long", "unicode", "basestring", "unichr", "raw_input", "xrange",
                           "file", "reduce", "cmp", "execfile", "buffer", "intern", "apply",
                           "coerce", "reload", "StandardError", "unicode_literals"})
# A flag that names the running Python (six.PY2, PY3, IS_PY2, PY2K).
_FLAG = re.compile(r"^(?:IS_|ON_|USING_)?PY(?:THON)?_?([23])K?$", re.IGNORECASE)
_FROM = re.compile(r"^[ \t]*from[ \t]+(\.*)([\w.]*)[ \t]+import[ \t]+(\([^)]*\)|[^\n#]*)",
                   re.MULTILINE)
_UNDEFINED = re.compile(r"[Uu]ndefined name [`'\"]?([A-Za-z_]\w*)")
_UNUSED = re.compile(r"^`([\w.]+)`")


def compat_noise(findings: list[Finding], lines_of: Lines, root: str | os.PathLike[str] | None,
                 canonical: Callable[[str], str]) -> list[Finding]:
    """``findings`` with the idioms above marked as noise."""
    trees: dict[str, ast.Module | None] = {}
    exports: dict[str, set[str]] | None = None
    out = []
    for f in findings:
        rule = canonical(f.rule_id)
        if f.noise is not None or rule not in _RULES or not (
                f.file and f.range and f.file.endswith(".py")):
            out.append(f)
            continue
        if f.file not in trees:
            text = lines_of(f.file)
            trees[f.file] = module_of(text) if text is not None else None
        tree = trees[f.file]
        why = None
        if tree is not None and rule in ("PLW0127", "F821"):
            why = _py2_reexport(tree, f.range.start_line, rule, f.message or "")
            if why is None and rule == "PLW0127":
                why = _locals_reader(tree, f.range.start_line)
        elif tree is not None and root is not None:
            name = _bound_name(tree, f.range.start_line, f.message or "")
            if name is not None:
                if exports is None:
                    exports = _imported_from(Path(root), _pending(findings, canonical))
                if name in exports.get(f.file, ()):
                    why = (f"another module of the project imports {name} from this one "
                           "(from ... import): the import is this module's export, and "
                           "removing it breaks that module")
        out.append(mark_noise(f, why, Severity.info) if why else f)
    return out


# -- a self-assignment in a Python 2 branch ----------------------------------


def _py2_side(test: ast.expr) -> str | None:
    """Which branch of ``if test:`` runs on Python 2 only ("body" or
    "orelse"), or None when ``test`` is no version check."""
    if isinstance(test, ast.UnaryOp) and isinstance(test.op, ast.Not):
        side = _py2_side(test.operand)
        return {"body": "orelse", "orelse": "body"}.get(side or "")
    flag = test.id if isinstance(test, ast.Name) else (
        test.attr if isinstance(test, ast.Attribute) else None)
    if flag is not None:
        m = _FLAG.match(flag)
        return None if m is None else ("body" if m.group(1) == "2" else "orelse")
    if not (isinstance(test, ast.Compare) and len(test.ops) == 1):
        return None
    left, op, right = test.left, test.ops[0], test.comparators[0]
    if "version_info" not in ast.unparse(left):
        return None
    major = right.elts[0] if isinstance(right, ast.Tuple) and right.elts else right
    if not (isinstance(major, ast.Constant) and isinstance(major.value, int)):
        return None
    if isinstance(op, ast.Eq):
        return {2: "body", 3: "orelse"}.get(major.value)
    if isinstance(op, ast.Lt) and major.value == 3:
        return "body"
    if isinstance(op, ast.GtE) and major.value == 3:
        return "orelse"
    return None


def _py2_reexport(tree: ast.Module, line: int, rule: str, message: str) -> str | None:
    """Why the ``name = name`` on ``line`` is a compatibility re-export of a
    Python 2 builtin, or None: it is a statement of the module itself, in
    the branch of a version check that only Python 2 runs."""
    for node in _module_ifs(tree):
        side = _py2_side(node.test)
        if side is None:
            continue
        for stmt in getattr(node, side):
            if not (isinstance(stmt, ast.Assign) and stmt.lineno == line
                    and len(stmt.targets) == 1 and isinstance(stmt.targets[0], ast.Name)
                    and isinstance(stmt.value, ast.Name)
                    and stmt.value.id == stmt.targets[0].id):
                continue
            name = stmt.value.id
            m = _UNDEFINED.search(message)
            if name not in _PY2_BUILTINS or (rule == "F821" and (m is None or m.group(1) != name)):
                return None
            return (f"{name} = {name} in the branch only Python 2 runs makes its builtin a "
                    "global of this module for the project's other modules to import "
                    "(a compatibility module); Python 3 never runs the line")
    return None


def _module_ifs(tree: ast.Module) -> list[ast.If]:
    """The ``if`` statements of the module itself (also inside its top-level
    ``try``), not those of functions or classes."""
    out: list[ast.If] = []
    todo: list[ast.stmt] = list(tree.body)
    while todo:
        stmt = todo.pop()
        if isinstance(stmt, ast.If):
            out.append(stmt)
            todo.extend(stmt.body + stmt.orelse)
        elif isinstance(stmt, (ast.Try, ast.TryStar)):
            todo.extend(stmt.body + stmt.orelse + stmt.finalbody)
            for h in stmt.handlers:
                todo.extend(h.body)
    return out


# -- a self-assignment that locals() reads ------------------------------------


def _locals_reader(tree: ast.Module, line: int) -> str | None:
    """Why ``name = name`` on ``line`` keeps a variable that only
    ``locals()`` reads, or None: the innermost function around it calls
    ``locals()`` (or ``vars()`` with no argument)."""
    best: ast.AST | None = None
    for node in ast.walk(tree):
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)) and (
                node.lineno <= line <= (node.end_lineno or node.lineno)) and (
                best is None or node.lineno >= best.lineno):
            best = node
    if best is None:
        return None
    if any(isinstance(n, ast.Call) and isinstance(n.func, ast.Name) and not n.args
           and n.func.id in ("locals", "vars") for n in ast.walk(best)):
        return ("the function reads its variables through locals(): the self-assignment "
                "keeps a variable that only locals() reads from looking unused")
    return None


# -- an import other modules take from this one -------------------------------


def _bound_name(tree: ast.Module, line: int, message: str) -> str | None:
    """The name the import on ``line`` binds in the module, as F401's message
    names it (```sha.new` imported but unused``: ``sha1`` of ``from sha
    import new as sha1``)."""
    m = _UNUSED.match(message)
    if m is None:
        return None
    dotted = m.group(1)
    for node in ast.walk(tree):
        if not (isinstance(node, (ast.Import, ast.ImportFrom))
                and node.lineno <= line <= (node.end_lineno or node.lineno)):
            continue
        for a in node.names:
            full = f"{node.module}.{a.name}" if isinstance(node, ast.ImportFrom) and (
                node.module) else a.name
            if dotted in (full, a.name, a.asname):
                return a.asname or a.name.split(".")[0]
    return None


def _pending(findings: list[Finding], canonical: Callable[[str], str]) -> set[str]:
    """The modules with an unused import still to judge (their paths)."""
    return {f.file for f in findings if f.noise is None and f.file and f.file.endswith(".py")
            and canonical(f.rule_id) == "F401"}


def _dotted(rel: str) -> str:
    parts = rel[:-3].split("/")
    if parts[-1] == "__init__":
        parts = parts[:-1]
    return ".".join(parts)


def _imported_from(root: Path, modules: set[str]) -> dict[str, set[str]]:
    """For each module in ``modules`` (paths under ``root``), the names the
    project's other modules import from it (``from pkg.compat import a``,
    ``from .compat import a``); a module under ``src/`` is matched by its
    import name too. One bounded walk; past the bound, what it read."""
    names = {_dotted(m): m for m in modules}
    for dotted in list(names):
        parts = dotted.split(".")
        for i in range(1, len(parts) - 1):  # src/pkg/compat.py: pkg.compat
            names.setdefault(".".join(parts[i:]), names[dotted])
    lasts = {n.rsplit(".", 1)[-1] for n in names}
    out: dict[str, set[str]] = {}
    for path in python_files(root, _SKIP, _MAX_FILES):
        if path is None:
            break
        text = read_head(path, 65536)
        if text is None or not any(last in text for last in lasts):
            continue
        rel = os.path.relpath(path, root).replace(os.sep, "/")
        package = _dotted(rel).split(".")[:-1] if not rel.endswith("__init__.py") else (
            _dotted(rel).split("."))
        for m in _FROM.finditer(text):
            dots, module, what = m.groups()
            if dots:
                base = package[:len(package) - (len(dots) - 1)] if len(dots) > 1 else package
                if len(dots) - 1 > len(package):
                    continue
                module = ".".join([*base, module] if module else base)
            target = names.get(module)
            if target is None or target == rel:
                continue
            # a comment inside the parentheses would hide the name after it
            for part in re.sub(r"#[^\n]*", "", what).strip("()").split(","):
                bits = part.split()
                if bits and bits[0].isidentifier():
                    out.setdefault(target, set()).add(bits[0])
    return out
