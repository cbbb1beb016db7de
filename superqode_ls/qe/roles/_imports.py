"""Which project files a module imports, directly or through other project
modules, found statically (``ast``): the mutation cache keys a file's results
on them, since a mutant's fate can change when code it calls changes."""

from __future__ import annotations

import ast
from collections.abc import Mapping

from ...workspace.pyast import parse as parse_python

SOURCE_ROOTS = ("", "src/", "lib/")


def module_names(rel: str) -> list[str]:
    """Dotted names a project file can be imported as (plain and src layouts)."""
    if not rel.endswith(".py"):
        return []
    names = []
    for root in SOURCE_ROOTS:
        if root and not rel.startswith(root):
            continue
        parts = rel[len(root):-3].split("/")
        if parts[-1] == "__init__":
            parts = parts[:-1]
        if parts and all(p.isidentifier() for p in parts):
            names.append(".".join(parts))
    return names


def _package_of(rel: str, name: str) -> list[str]:
    parts = name.split(".")
    return parts if rel.endswith("/__init__.py") or rel == "__init__.py" else parts[:-1]


def imported_names(rel: str, source: str) -> set[str]:
    """Absolute dotted names ``source`` imports, relative imports resolved."""
    try:
        tree = parse_python(source)
    except (SyntaxError, ValueError):
        return set()
    own = module_names(rel)
    out: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            out.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                for name in own:
                    pkg = _package_of(rel, name)
                    if node.level - 1 > len(pkg):
                        continue
                    base = pkg[: len(pkg) - (node.level - 1)]
                    if node.module:
                        base = base + node.module.split(".")
                    out.add(".".join(base))
                    out.update(".".join(base + [a.name]) for a in node.names)
            elif node.module:
                out.add(node.module)
                out.update(f"{node.module}.{a.name}" for a in node.names)
    return out


def import_closure(sources: Mapping[str, str | None]) -> dict[str, set[str]]:
    """For each project ``.py`` file (path -> its text, None when unreadable),
    the other project files it reaches by importing (a module also reaches its
    parent packages' ``__init__``)."""
    by_name: dict[str, str] = {}
    for rel in sources:
        for name in module_names(rel):
            by_name.setdefault(name, rel)
    direct: dict[str, set[str]] = {}
    for rel, source in sources.items():
        deps = set()
        for name in imported_names(rel, source) if source is not None else ():
            parts = name.split(".")
            for i in range(1, len(parts) + 1):  # `a.b.c` runs a/__init__, a/b/__init__ too
                hit = by_name.get(".".join(parts[:i]))
                if hit is not None and hit != rel:
                    deps.add(hit)
        direct[rel] = deps
    closure: dict[str, set[str]] = {}
    for rel in sources:
        seen: set[str] = set()
        todo = list(direct.get(rel, ()))
        while todo:
            dep = todo.pop()
            if dep in seen or dep == rel:
                continue
            seen.add(dep)
            todo.extend(direct.get(dep, ()))
        closure[rel] = seen
    return closure
