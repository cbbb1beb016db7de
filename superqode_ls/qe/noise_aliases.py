"""An unused import (F401) whose name a string type alias reads (noise.py,
the re-export step, past the stop):

``_LexerArgType: 'TypeAlias' = 'Union[Literal["auto"], Type[Lexer]]'`` under
``if TYPE_CHECKING: from .lexer import Lexer`` (lark's ``common.py``).
pyflakes reads string annotations, not a string assigned as an alias; a type
checker evaluates it, so the import is used and removing it breaks type
checking. The finding is false and its fix is withdrawn: no suggestion
removes the import.

A string counts as an alias when it is assigned to a name annotated
``TypeAlias`` (also written ``'TypeAlias'`` or ``typing.TypeAlias``), or to a
name that the module uses as an annotation elsewhere (``def f(x: _Arg)``),
and it parses as an expression that names the import. A string assigned to
any other name (a message, a template) stays: nothing reads it as a type.
"""

from __future__ import annotations

import ast
import re
from collections.abc import Callable

from ..models import Finding, Severity
from ..workspace.pyast import parse as parse_python
from .context import mark_noise
from .noise_library import module_of

Lines = Callable[[str], "list[str] | None"]

WHY = ("the import is read by a string type alias ({alias}): a type checker evaluates the "
       "string, pyflakes does not; removing the import breaks type checking, so no fix "
       "is offered")
# A string literal in the module at all: without one no alias can read a name.
_QUOTED = re.compile(r"""['"]""")
_WORD = re.compile(r"\w+")


def string_alias_imports(findings: list[Finding], lines_of: Lines,
                         canonical: Callable[[str], str]) -> list[Finding]:
    """``findings`` with each F401 above marked as noise and its fix withdrawn.
    A module is parsed only when the imported name appears in it after a
    quote on some line (the cheap text test first)."""
    aliases: dict[str, dict[str, str] | None] = {}
    quoted: dict[str, set[str]] = {}
    out = []
    for f in findings:
        if (f.noise is None and f.file and f.range and f.file.endswith((".py", ".pyi"))
                and canonical(f.rule_id) == "F401"):
            lines = lines_of(f.file)
            name = _bound_name(lines, f.range.start_line, f.range.start_col - 1)
            if lines is not None and f.file not in quoted:
                # the words of the lines with a quote, once per file
                quoted[f.file] = {w for text in lines if _QUOTED.search(text)
                                  for w in _WORD.findall(text)}
            if lines is not None and name and name in quoted[f.file]:
                if f.file not in aliases:
                    tree = module_of(lines)
                    aliases[f.file] = _alias_names(tree) if tree is not None else None
                alias = _reading(aliases[f.file], name)
                if alias:
                    f = mark_noise(f, WHY.format(alias=alias), Severity.info)
                    f = f.model_copy(update={"fix_patch_id": None})
        out.append(f)
    return out


def _bound_name(lines: list[str] | None, line: int, col: int) -> str | None:
    """The name the import at ``line``:``col`` binds (``Lexer`` of ``from
    .lexer import Lexer``, ``np`` of ``import numpy as np``), read from the
    statement's text alone."""
    if not lines or not 0 < line <= len(lines):
        return None
    m = re.match(r"[\w.]+(?:\s+as\s+(\w+))?", lines[line - 1][col:])
    if not m:
        return None
    return m.group(1) or m.group(0).split(".")[0]


def _reading(aliases: dict[str, str] | None, name: str) -> str | None:
    """The alias whose string names ``name``, or None."""
    if not aliases:
        return None
    return next((alias for alias, text in aliases.items() if name in _names(text)), None)


def _names(text: str, depth: int = 2) -> set[str]:
    """The names an expression in ``text`` reads (nested strings too:
    ``'List["Lexer"]'``); empty when it is no expression."""
    try:
        tree = parse_python(text.strip(), mode="eval")
    except (SyntaxError, ValueError):
        return set()
    out: set[str] = set()
    for n in ast.walk(tree):
        if isinstance(n, ast.Name):
            out.add(n.id)
        elif isinstance(n, ast.Constant) and isinstance(n.value, str) and depth > 0:
            out |= _names(n.value, depth - 1)
    return out


def _is_type_alias(annotation: ast.expr) -> bool:
    if isinstance(annotation, ast.Constant) and isinstance(annotation.value, str):
        return annotation.value.strip().rsplit(".", 1)[-1] == "TypeAlias"
    if isinstance(annotation, ast.Attribute):
        return annotation.attr == "TypeAlias"
    return isinstance(annotation, ast.Name) and annotation.id == "TypeAlias"


def _annotations(tree: ast.Module) -> list[ast.expr]:
    out: list[ast.expr] = []
    for n in ast.walk(tree):
        if isinstance(n, ast.arg) and n.annotation is not None:
            out.append(n.annotation)
        elif isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef)) and n.returns is not None:
            out.append(n.returns)
        elif isinstance(n, ast.AnnAssign):
            out.append(n.annotation)
    return out


def _alias_names(tree: ast.Module) -> dict[str, str]:
    """Alias name -> its string, for each string type alias of the module."""
    strings: dict[str, str] = {}
    declared: set[str] = set()
    for n in ast.walk(tree):
        if isinstance(n, ast.AnnAssign) and isinstance(n.target, ast.Name) \
                and isinstance(n.value, ast.Constant) and isinstance(n.value.value, str):
            strings[n.target.id] = n.value.value
            if _is_type_alias(n.annotation):
                declared.add(n.target.id)
        elif isinstance(n, ast.Assign) and len(n.targets) == 1 \
                and isinstance(n.targets[0], ast.Name) and isinstance(n.value, ast.Constant) \
                and isinstance(n.value.value, str):
            strings[n.targets[0].id] = n.value.value
    if not strings:
        return {}
    used: set[str] = set()
    for annotation in _annotations(tree):
        for n in ast.walk(annotation):
            if isinstance(n, ast.Name):
                used.add(n.id)
            elif isinstance(n, ast.Constant) and isinstance(n.value, str):
                used |= _names(n.value)
    return {name: text for name, text in strings.items() if name in declared or name in used}
