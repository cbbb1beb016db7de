"""An undefined name (F821) that the project's loader sets on its modules.

A plugin package whose loader imports each module and then gives it its
names from outside (searxng's engines: ``engine.logger =
logger.getChild(name)`` in ``searx/engines/__init__.py``, ``engine.traits =
traits`` in ``searx/enginelib/traits.py``) leaves ``logger`` undefined in
the module's own text: ruff's F821, on every engine that logs, is the
loader's design, not a bug. 117 of searxng's 139 high findings were these.

The rule asks for both halves of the proof: the same name undefined in at
least ``_SIBLINGS`` modules of one folder, and an assignment of that
attribute (``X.name = ...`` or ``setattr(X, "name", ...)``, ``X`` a plain
name other than ``self``/``cls``) in another module of the project. A name
undefined in one module, or one nothing sets from outside, stays shown.
"""

from __future__ import annotations

import ast
import os
import re
from collections import defaultdict
from collections.abc import Callable
from pathlib import Path

from ..models import Finding, Severity
from ..workspace.pyast import parse as parse_python
from .context import mark_noise
from .noise_library import module_texts

_SIBLINGS = 3
_UNDEFINED = re.compile(r"Undefined name `([A-Za-z_][A-Za-z0-9_]*)`")
_OWN = frozenset({"self", "cls"})


def injected_noise(findings: list[Finding], root: str | os.PathLike[str] | None,
                   canonical: Callable[[str], str]) -> list[Finding]:
    """``findings`` with F821s on names the project sets on those modules
    from outside marked as noise."""
    if root is None:
        return findings
    groups: dict[tuple[str, str], set[str]] = defaultdict(set)
    for f in findings:
        if (name := _flagged(f, canonical)) is not None:
            groups[(os.path.dirname(f.file), name)].add(f.file)
    folders = {folder for (folder, _), files in groups.items() if len(files) >= _SIBLINGS}
    if not folders:
        return findings
    setters = _setters(Path(root), {name for (folder, name) in groups if folder in folders})
    # A folder whose modules the loader is proven to fill (three siblings lack
    # a name it sets) and the files that fill them; in such a folder a name
    # fewer modules use (searxng's `categories`, set by the same loader) is
    # the loader's too when the same file sets it.
    loaders: dict[str, set[str]] = defaultdict(set)
    for (folder, name), files in groups.items():
        if len(files) >= _SIBLINGS:
            loaders[folder] |= {w[0] for w in setters.get(name, ()) if w[0] not in files}
    out = []
    for f in findings:
        name = _flagged(f, canonical)
        folder = os.path.dirname(f.file or "")
        files = groups.get((folder, name or ""), set())
        where = next((w for w in setters.get(name or "", ())
                      if w[0] not in files and (len(files) >= _SIBLINGS or w[0] in loaders[folder])),
                     None) if name is not None and loaders.get(folder) else None
        if where is not None:
            f = mark_noise(f, f"`{name}` is set on the modules of {folder or 'the top folder'}/ "
                           f"from outside by the project's loader ({where[0]}:{where[1]})",
                           Severity.info)
        out.append(f)
    return out


def _flagged(f: Finding, canonical: Callable[[str], str]) -> str | None:
    if f.noise is not None or not f.file or canonical(f.rule_id) != "F821":
        return None
    m = _UNDEFINED.search(f.message or f.title or "")
    return m.group(1) if m else None


def _setters(root: Path, names: set[str]) -> dict[str, list[tuple[str, int]]]:
    """For each of ``names``, where the project assigns it as an attribute
    of something other than ``self``/``cls`` (file relative to ``root``,
    line)."""
    alternatives = "|".join(sorted(names))
    quick = re.compile(rf"\.\s*(?:{alternatives})\s*=[^=]|setattr\(")
    found: dict[str, list[tuple[str, int]]] = defaultdict(list)
    for path, text in module_texts(root):
        if path is None:
            break
        if text is None:
            continue
        if not quick.search(text):
            continue
        try:
            tree = parse_python(text)
        except (SyntaxError, ValueError):
            continue
        rel = os.path.relpath(path, root).replace(os.sep, "/")
        for name, line in _assignments(tree, names):
            found[name].append((rel, line))
    return found


def _assignments(tree: ast.Module, names: set[str]):
    for node in ast.walk(tree):
        if isinstance(node, (ast.Assign, ast.AnnAssign)):
            targets = node.targets if isinstance(node, ast.Assign) else [node.target]
            for t in targets:
                if (isinstance(t, ast.Attribute) and t.attr in names
                        and isinstance(t.value, ast.Name) and t.value.id not in _OWN):
                    yield t.attr, node.lineno
        elif (isinstance(node, ast.Call) and isinstance(node.func, ast.Name)
              and node.func.id == "setattr" and len(node.args) >= 2
              and isinstance(node.args[0], ast.Name) and node.args[0].id not in _OWN
              and isinstance(node.args[1], ast.Constant) and node.args[1].value in names):
            yield node.args[1].value, node.lineno
