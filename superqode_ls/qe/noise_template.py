"""An undefined name (ruff's F821) that is a ``str.format`` slot in a
Python file the project fills in as text.

evennia's game template ships ``server/conf/secret_settings.py`` holding
``SECRET_KEY = {secret_key}``: the launcher copies the file, reads it and
calls ``settings_string.format_map(setting_dict)``, so the written file
holds a quoted random key. As Python the line is a set of one undefined
name; as the template it is, it is a slot.

The rule asks for both halves: the flagged name is the only item of a set
display (``{secret_key}``, the slot's shape), and another module of the
project names the file (a string literal ``"secret_settings.py"``) and calls
``.format(...)`` or ``.format_map(...)``. A set of one name in a file
nothing names, or in a project that never formats text, stays shown.
"""

from __future__ import annotations

import ast
import os
import re
from collections.abc import Callable
from pathlib import Path

from ..models import Finding, Severity
from ..workspace.pyast import parse as parse_python
from .ast_index import index
from .context import mark_noise
from .noise_library import module_of, module_texts

Lines = Callable[[str], "list[str] | None"]
_UNDEFINED = re.compile(r"Undefined name `([A-Za-z_][A-Za-z0-9_]*)`")
_FORMATS = frozenset({"format", "format_map"})

WHY = ("`{{{}}}` is a slot of a template: {} names this file and fills it with "
       ".format()/.format_map()")


def template_noise(findings: list[Finding], lines_of: Lines,
                   root: str | os.PathLike[str] | None,
                   canonical: Callable[[str], str]) -> list[Finding]:
    """``findings`` with each F821 on a format slot of a file the project
    fills in as a template marked noise (info), the reason said."""
    if root is None:
        return findings
    slots: dict[int, str] = {}
    for i, f in enumerate(findings):
        m = _UNDEFINED.search(f.message or "")
        if (m and f.noise is None and f.file and f.file.endswith(".py") and f.range
                and canonical(f.rule_id) == "F821"):
            lines = lines_of(f.file)
            line = f.range.start_line
            # (parsed only where the line holds the slot's text)
            shaped = lines is not None and 0 < line <= len(lines) and (
                "{" + m.group(1) + "}") in lines[line - 1].replace(" ", "")
            tree = module_of(lines) if shaped and lines is not None else None
            if tree is not None and _slot(tree, m.group(1), line):
                slots[i] = m.group(1)
    if not slots:
        return findings
    fillers = _fillers(Path(root), {os.path.basename(findings[i].file or "") for i in slots})
    out = list(findings)
    for i, name in slots.items():
        file = findings[i].file or ""
        where = fillers.get(os.path.basename(file))
        if where and where != file:
            out[i] = mark_noise(out[i], WHY.format(name, where), Severity.info)
    return out


def _slot(tree: ast.Module, name: str, line: int) -> bool:
    """``name`` read on ``line`` as the only item of a set display."""
    parents = index(tree).parents
    for node in ast.walk(tree):
        if isinstance(node, ast.Name) and node.id == name and node.lineno == line:
            up = parents.get(node)
            if isinstance(up, ast.Set) and up.elts == [node]:
                return True
    return False


def _fillers(root: Path, basenames: set[str]) -> dict[str, str]:
    """For each of ``basenames``, a module (relative path) that names the
    file in a string literal and calls ``.format``/``.format_map``."""
    quick = re.compile("|".join(re.escape(b) for b in sorted(basenames)))
    found: dict[str, str] = {}
    for path, text in module_texts(root):
        if path is None:
            break
        if text is None:
            continue
        if not quick.search(text) or ".format" not in text:
            continue
        try:
            tree = parse_python(text)
        except (SyntaxError, ValueError):
            continue
        named = {n.value for n in ast.walk(tree) if isinstance(n, ast.Constant)
                 and isinstance(n.value, str) and n.value in basenames}
        if named and any(isinstance(n, ast.Call) and isinstance(n.func, ast.Attribute)
                         and n.func.attr in _FORMATS for n in ast.walk(tree)):
            rel = os.path.relpath(path, root).replace(os.sep, "/")
            for b in named:
                found.setdefault(b, rel)
    return found
