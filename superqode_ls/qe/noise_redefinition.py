"""A redefinition (ruff's F811) that the module's structure proves deliberate.

F811 says a name is bound again before its first binding was used: most
often a copy-paste that silently drops the first definition, a likely bug.
Three shapes choose between the definitions on purpose, and only one of
them is ever in effect:

- a function that replaces itself at its first call (it declares ``global
  name`` and rebinds its own name: urllib3's ``wait_for_socket`` picks
  ``poll`` or ``select`` once, lazily, so monkeypatching before the first
  call still counts);
- the two bindings in mutually exclusive branches: the body and the
  ``else`` of one ``if`` (or two of its ``elif`` arms), the ``try`` body and
  an ``except`` handler, two handlers of one ``try``, two ``case`` arms;
- a fallback defined first and a redefinition under a feature test: an
  ``if`` on ``hasattr``/``callable``/``find_spec``, ``sys.version_info``,
  ``sys.platform``, ``os.name``, ``platform``, ``TYPE_CHECKING`` or a
  ``HAS_x``/``HAVE_x`` flag, or a ``try`` whose handlers catch
  ``ImportError``/``AttributeError`` (an optional faster implementation).

Each is noise with the reason said. A plain redefinition of an unused name
(two ``def render():`` one after the other, or a guarded first definition
overridden unconditionally) stays shown.
"""

from __future__ import annotations

import ast
import re
from collections.abc import Callable

from ..models import Finding
from .ast_index import index
from .context import mark_noise
from .noise_library import module_of

Lines = Callable[[str], "list[str] | None"]
_REDEFINED = re.compile(r"[Rr]edefinition of unused `([^`]+)` from line (\d+)")
_FEATURE_CALLS = frozenset({"hasattr", "callable", "find_spec", "find_loader"})
_FEATURE_ATTRS = frozenset({"version_info", "platform", "name", "hexversion", "implementation",
                            "PY2", "PY3", "PYPY", "IS_PYPY"})
# a module's flag in capitals (HAS_SSL, PY312, IS_WINDOWS, TYPE_CHECKING)
_FEATURE_FLAG = re.compile(r"^_*(?:(?:HAS|HAVE|IS|PY|PYPY|WIN)_[A-Z0-9_]+|PY[23][0-9]*|PYPY|"
                           r"WINDOWS|TYPE_CHECKING)$")
_OPTIONAL = frozenset({"ImportError", "ModuleNotFoundError", "AttributeError", "NameError"})

SELF_REPLACING = ("a function that replaces itself at its first call (it declares `global {}` "
                  "and rebinds its own name): the redefinition is the design")
EXCLUSIVE = ("the two definitions are in mutually exclusive branches ({}): only one of them "
             "is ever in effect")
GUARDED = ("a fallback redefined under a feature test ({}): the second definition replaces "
           "the first only where the feature is there")


def redefinition_noise(findings: list[Finding], lines_of: Lines,
                       canonical: Callable[[str], str]) -> list[Finding]:
    """``findings`` with each F811 whose two bindings the module proves
    deliberate marked noise, the reason said."""
    trees: dict[str, ast.Module | None] = {}
    out = []
    for f in findings:
        m = _REDEFINED.search(f.message or "")
        if (m and f.noise is None and f.file and f.file.endswith(".py") and f.range
                and "F811" in {canonical(f.rule_id), *f.related_rules}):
            if f.file not in trees:
                lines = lines_of(f.file)
                trees[f.file] = module_of(lines) if lines is not None else None
            tree = trees[f.file]
            why = (deliberate(tree, m.group(1), int(m.group(2)), f.range.start_line)
                   if tree is not None else None)
            if why:
                f = mark_noise(f, why)
        out.append(f)
    return out


def deliberate(tree: ast.Module, name: str, first: int, again: int) -> str | None:
    """Why binding ``name`` at line ``again`` after its binding at line
    ``first`` is deliberate, or None."""
    parents = index(tree).parents
    a, b = _binding(tree, name, first), _binding(tree, name, again)
    if a is None or b is None or a is b:
        return None
    for func, other in ((a, b), (b, a)):
        if (isinstance(func, (ast.FunctionDef, ast.AsyncFunctionDef)) and func.name == name
                and _inside(parents, other, func) and _declares_global(func, name)):
            return SELF_REPLACING.format(name)
    if (branch := _exclusive(parents, a, b)) is not None:
        return EXCLUSIVE.format(branch)
    later = b if again >= first else a
    earlier = a if later is b else b
    if (guard := _guard(parents, later, earlier)) is not None:
        return GUARDED.format(guard)
    return None


def _binding(tree: ast.Module, name: str, line: int) -> ast.AST | None:
    """The statement on ``line`` that binds ``name`` (a def, a class, an
    import, an assignment, a ``global``)."""
    for node in ast.walk(tree):
        if getattr(node, "lineno", None) != line:
            continue
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            if node.name == name:
                return node
        elif isinstance(node, (ast.Import, ast.ImportFrom)):
            if any((al.asname or al.name.split(".")[0]) == name for al in node.names):
                return node
        elif isinstance(node, ast.Global):
            if name in node.names:
                return node
        elif isinstance(node, (ast.Assign, ast.AnnAssign, ast.AugAssign)):
            targets = node.targets if isinstance(node, ast.Assign) else [node.target]
            if any(isinstance(x, ast.Name) and x.id == name for t in targets for x in ast.walk(t)):
                return node
    return None


def _inside(parents: dict, node: ast.AST, outer: ast.AST) -> bool:
    up = parents.get(node)
    while up is not None:
        if up is outer:
            return True
        up = parents.get(up)
    return False


def _declares_global(func: ast.AST, name: str) -> bool:
    return any(isinstance(n, ast.Global) and name in n.names for n in ast.walk(func))


def _path(parents: dict, node: ast.AST) -> list[ast.AST]:
    """``node`` and its ancestors, outermost first."""
    out = [node]
    while (up := parents.get(out[-1])) is not None:
        out.append(up)
    return out[::-1]


def _arm(container: ast.AST, child: ast.AST) -> tuple[str, int] | None:
    """Which arm of ``container`` (an if, a try, a match) holds ``child``."""
    for field in ("body", "orelse", "handlers", "finalbody", "cases"):
        items = getattr(container, field, None)
        if isinstance(items, list) and child in items:
            return (field, items.index(child) if field in ("handlers", "cases") else 0)
    return None


def _exclusive(parents: dict, a: ast.AST, b: ast.AST) -> str | None:
    pa, pb = _path(parents, a), _path(parents, b)
    common = 0
    while common < min(len(pa), len(pb)) and pa[common] is pb[common]:
        common += 1
    if common == 0 or common >= min(len(pa), len(pb)):
        return None
    split = pa[common - 1]
    arm_a, arm_b = _arm(split, pa[common]), _arm(split, pb[common])
    if arm_a is None or arm_b is None or arm_a == arm_b:
        return None
    if isinstance(split, ast.If) and {arm_a[0], arm_b[0]} == {"body", "orelse"}:
        return "if/else"
    if isinstance(split, (ast.Try, ast.TryStar)):
        fields = {arm_a[0], arm_b[0]}
        if fields == {"body", "handlers"} or fields == {"handlers"}:
            return "try/except"
    if isinstance(split, ast.Match) and arm_a[0] == arm_b[0] == "cases":
        return "match cases"
    return None


def _guard(parents: dict, later: ast.AST, earlier: ast.AST) -> str | None:
    """The feature test that guards ``later`` and not ``earlier``."""
    child, up = later, parents.get(later)
    while up is not None and not isinstance(up, (ast.FunctionDef, ast.AsyncFunctionDef,
                                                 ast.ClassDef, ast.Lambda)):
        if not _inside(parents, earlier, up) and earlier is not up:
            if isinstance(up, ast.If) and child in up.body and (test := _feature(up.test)):
                return test
            if isinstance(up, (ast.Try, ast.TryStar)) and child in up.body and up.handlers \
                    and all(_catches_optional(h) for h in up.handlers):
                return "a try whose handlers catch what a missing feature raises"
        child, up = up, parents.get(up)
    return None


def _feature(test: ast.expr) -> str | None:
    for node in ast.walk(test):
        if isinstance(node, ast.Call):
            fn = node.func
            called = fn.id if isinstance(fn, ast.Name) else fn.attr if isinstance(
                fn, ast.Attribute) else ""
            if called in _FEATURE_CALLS:
                return f"{called}()"
            if isinstance(fn, ast.Attribute) and isinstance(fn.value, ast.Name) and \
                    fn.value.id == "platform":
                return f"platform.{fn.attr}()"
        elif isinstance(node, ast.Attribute) and isinstance(node.value, ast.Name) and (
                node.value.id in ("sys", "os", "six", "compat") and node.attr in _FEATURE_ATTRS):
            return f"{node.value.id}.{node.attr}"
        elif isinstance(node, ast.Name) and _FEATURE_FLAG.match(node.id):
            return node.id
        elif isinstance(node, ast.Attribute) and _FEATURE_FLAG.match(node.attr):
            return node.attr
    return None


def _catches_optional(handler: ast.ExceptHandler) -> bool:
    kinds = handler.type.elts if isinstance(handler.type, ast.Tuple) else [handler.type]
    names = {k.id if isinstance(k, ast.Name) else k.attr if isinstance(k, ast.Attribute) else ""
             for k in kinds if k is not None}
    return bool(names) and names <= _OPTIONAL
