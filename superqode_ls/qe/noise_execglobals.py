"""An undefined name (ruff's F821) in a script the project runs itself with
``exec`` and a globals dict that gives it that name.

evennia's batch-code files (``example_batch_code.py``, ``player = caller``)
are never imported: ``BatchCodeProcessor.code_exec`` runs each block with
``exec(code, environdict)``, where ``environdict`` starts as ``{"DEBUG":
debug, ...}`` and the batch command adds ``extra_environ={"caller":
caller}``. ``caller`` and ``DEBUG`` are the runner's, by design.

The rule asks for every part of the proof:

- no module of the project imports the flagged file (its file name appears
  in no ``import``/``from`` line): imported as a module, the name would be
  missing;
- the project calls ``exec(code, globals)`` (or ``runpy.run_path(path,
  init_globals=...)``);
- the flagged name is a string key of a dict written in that runner's module
  (``{"DEBUG": debug}``) or of a dict passed to a call of the function that
  holds the ``exec`` (``code_exec(code, extra_environ={"caller": caller})``).

Fails closed: a walk cut short, an ``exec`` without globals, a name no
runner gives, or a file something imports keeps the finding shown.
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
from .noise_defaults import callee
from .noise_library import module_text, module_texts

_UNDEFINED = re.compile(r"Undefined name `([A-Za-z_][A-Za-z0-9_]*)`")
_RUNNER = re.compile(r"\b(?:exec|run_path)\s*\(")

WHY = ("`{}` is given by the project's runner, which runs this file with exec() and a globals "
       "dict holding it ({}); nothing imports the file as a module")


def exec_globals_noise(findings: list[Finding], root: str | os.PathLike[str] | None,
                       canonical: Callable[[str], str]) -> list[Finding]:
    """``findings`` with each F821 on a name a project's ``exec`` runner
    gives the flagged script marked noise (info), the reason said."""
    if root is None:
        return findings
    wanted: dict[int, tuple[str, str]] = {}
    for i, f in enumerate(findings):
        m = _UNDEFINED.search(f.message or "")
        if (m and f.noise is None and f.file and f.file.endswith(".py")
                and canonical(f.rule_id) == "F821"):
            wanted[i] = (f.file, m.group(1))
    if not wanted:
        return findings
    stems = {os.path.basename(file)[:-3] for file, _ in wanted.values()}
    scan = _scan(Path(root), stems, {name for _, name in wanted.values()})
    if scan is None:
        return findings
    imported, given = scan
    out = list(findings)
    for i, (file, name) in wanted.items():
        stem = os.path.basename(file)[:-3]
        if stem in imported or stem == "__init__" or name not in given:
            continue
        out[i] = mark_noise(out[i], WHY.format(name, given[name]), Severity.info)
    return out


def _scan(root: Path, stems: set[str],
          names: set[str]) -> tuple[set[str], dict[str, str]] | None:
    """The stems some module imports, and each of ``names`` a runner gives
    (with where); None when the walk was cut short or a module was too large."""
    imports = re.compile(r"^\s*(?:from|import)\s[^\n]*\b(" + "|".join(
        re.escape(s) for s in sorted(stems)) + r")\b", re.MULTILINE)
    imported: set[str] = set()
    runners: list[tuple[str, list[str], list[tuple[str, int]]]] = []
    seen: list[tuple[str, str]] = []  # (relative path, path): read again only if needed
    for path, text in module_texts(root):
        if path is None or text is None:
            return None  # the walk cut short, or a module too large to read
        rel = os.path.relpath(path, root).replace(os.sep, "/")
        if any(stem in text for stem in stems):  # (the regex only where one is written)
            imported |= set(imports.findall(text))
        seen.append((rel, path))
        if ("exec(" in text or "run_path(" in text) and _RUNNER.search(text):
            try:
                tree = parse_python(text)
            except (SyntaxError, ValueError):
                continue
            held = _exec_holders(tree)
            if held is not None:
                runners.append((rel, *held))
    given: dict[str, str] = {}
    callers: dict[str, str] = {}
    for rel, holders, keys in runners:
        for key, line in keys:
            given.setdefault(key, f"{rel}:{line}")
        for h in holders:
            callers.setdefault(h, rel)
    if callers:
        named = re.compile(r"\b(?:" + "|".join(re.escape(c) for c in sorted(callers)) + r")\s*\(")
        # (a runner's common name, ``call``, is in many modules: only those
        # that also write one of the names as a string are parsed)
        quoted = re.compile("[\"'](?:" + "|".join(re.escape(n) for n in sorted(names)) + ")[\"']")
        for rel, path in seen:
            text = module_text(path) or ""
            if not any(n in text for n in names) or not quoted.search(text) \
                    or not named.search(text):
                continue
            try:
                tree = parse_python(text)
            except (SyntaxError, ValueError):
                continue
            for key, line in _passed_keys(tree, set(callers)):
                given.setdefault(key, f"{rel}:{line}")
    return imported, given


def _exec_holders(tree: ast.Module) -> tuple[list[str], list[tuple[str, int]]] | None:
    """The names of the functions holding an ``exec`` with globals (or a
    ``run_path`` with ``init_globals``), and the keys of the dict written as
    those globals (or assigned to the name given as them); None where there
    is no such call."""
    parents = index(tree).parents
    found: tuple[list[str], list[tuple[str, int]]] | None = None
    for node in ast.walk(tree):
        if not isinstance(node, ast.Call):
            continue
        fn = node.func
        name = callee(node)
        kw = {k.arg: k.value for k in node.keywords}
        if name == "exec" and isinstance(fn, ast.Name):
            env = node.args[1] if len(node.args) >= 2 else kw.get("globals")
        elif name == "run_path":
            env = node.args[1] if len(node.args) >= 2 else kw.get("init_globals")
        else:
            continue
        if env is None:
            continue
        found = found if found is not None else ([], [])
        up = parents.get(node)
        while up is not None and not isinstance(up, (ast.FunctionDef, ast.AsyncFunctionDef)):
            up = parents.get(up)
        if up is not None:
            found[0].append(up.name)
        found[1].extend(_keys_of(env, up or tree))
    return found


def _keys_of(env: ast.expr, scope: ast.AST) -> list[tuple[str, int]]:
    """String keys of ``env`` when it is a dict display, or of the dict
    displays assigned to the name ``env`` in ``scope``."""
    if isinstance(env, ast.Dict):
        return list(_dict_keys(env))
    if not isinstance(env, ast.Name):
        return []
    out = []
    for node in ast.walk(scope):
        if isinstance(node, ast.Assign) and isinstance(node.value, ast.Dict) and any(
                isinstance(t, ast.Name) and t.id == env.id for t in node.targets):
            out.extend(_dict_keys(node.value))
    return out


def _dict_keys(node: ast.Dict):
    for k in node.keys:
        if isinstance(k, ast.Constant) and isinstance(k.value, str) and k.value.isidentifier():
            yield k.value, node.lineno


def _passed_keys(tree: ast.Module, callees: set[str]):
    """String keys of dicts written as arguments of calls to ``callees``."""
    for node in ast.walk(tree):
        if not isinstance(node, ast.Call):
            continue
        name = callee(node)
        if name not in callees:
            continue
        for arg in [*node.args, *(k.value for k in node.keywords)]:
            if isinstance(arg, ast.Dict):
                yield from _dict_keys(arg)
