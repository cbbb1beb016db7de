"""Whether a project runs its modules' doctests, and which names a module's
docstring examples use.

A project that runs its doctests (``pytest --doctest-modules`` in its pytest
configuration, tox, hatch or nox commands; ``doctest_optionflags``; ``DocTestSuite``
or ``doctest.testmod`` in its tests; Sphinx's ``sphinx.ext.doctest``) uses an
import its docstrings' examples need, though no code of the module does:
glom imports ``pprint`` in four modules for its ``>>> pprint(...)`` examples,
and removing the "unused" import fails six of its doctests. Such an F401 is
noise, and no fix that removes it is verified.

Everything here reads the project's files as text (configuration parsed,
docstrings parsed with ``doctest``'s own parser and ``ast``); nothing is run.
"""

from __future__ import annotations

import ast
import configparser
import re
import tomllib
from functools import lru_cache
from pathlib import Path
from typing import NamedTuple

from ..workspace.pyast import parse as parse_python
from .roles._common import read_prefix

# Configuration files read, largest first skipped: a hostile or generated
# file must not cost more than a glance.
_MAX_BYTES = 512_000
# ``--doctest-glob`` alone runs text files (``*.rst``), not the modules'
# docstrings: it says nothing of an import a module's examples read.
_DOCTEST_FLAG = re.compile(r"--doctest-modules\b|\bdoctest_optionflags\b")
_SUITE_CALL = re.compile(r"\b(?:DocTestSuite|doctest\.testmod|testmod\()")
_SPHINX = re.compile(r"['\"]sphinx\.ext\.doctest['\"]")
_TEST_NAME = re.compile(r"(?:^|/)(?:test_[^/]*|[^/]*_test|conftest)\.py$")
_SKIP_DIRS = frozenset({".git", ".venv", "venv", "node_modules", ".tox", ".nox", "build", "dist",
                        "__pycache__", "site-packages"})
_MAX_TEST_FILES = 2000
_MAX_ENTRIES = 100_000
_MAX_MODULE_BYTES = 8_000_000


def _text(path: Path, limit: int = _MAX_BYTES) -> str | None:
    raw = read_prefix(path, limit + 1)  # no link followed, no FIFO waited on
    return None if raw is None or len(raw) > limit else raw.decode("utf-8", "replace")


def _ini_says(text: str, sections: tuple[str, ...]) -> bool:
    parser = configparser.ConfigParser(interpolation=None, strict=False)
    try:
        parser.read_string(text)
    except configparser.Error:
        return False
    for name in parser.sections():
        if name in sections or name.startswith("testenv"):
            for key, value in parser.items(name, raw=True):
                if key == "doctest_optionflags" or _DOCTEST_FLAG.search(value or ""):
                    return True
    return False


def _pyproject_says(text: str) -> bool:
    try:
        data = tomllib.loads(text)
    except (tomllib.TOMLDecodeError, ValueError):
        return False
    tool = data.get("tool") if isinstance(data, dict) else None
    pytest = tool.get("pytest") if isinstance(tool, dict) else None
    opts = pytest.get("ini_options") if isinstance(pytest, dict) else None
    if isinstance(opts, dict):
        if "doctest_optionflags" in opts:
            return True
        add = opts.get("addopts")
        add = " ".join(map(str, add)) if isinstance(add, list) else str(add or "")
        if _DOCTEST_FLAG.search(add):
            return True
    # hatch or tox configured in pyproject: their commands are strings
    envs = [tool.get("hatch"), tool.get("tox")] if isinstance(tool, dict) else []
    return any(_DOCTEST_FLAG.search(s) for env in envs for s in _strings(env))


def _strings(node: object, depth: int = 0) -> list[str]:
    if depth > 8:
        return []
    if isinstance(node, str):
        return [node]
    if isinstance(node, dict):
        return [s for v in node.values() for s in _strings(v, depth + 1)]
    if isinstance(node, list):
        return [s for v in node for s in _strings(v, depth + 1)]
    return []


def _test_files(root: Path) -> list[Path]:
    out: list[Path] = []
    stack = [root]
    seen = 0  # entries looked at: a huge tree costs a bounded glance
    while stack and len(out) < _MAX_TEST_FILES and seen < _MAX_ENTRIES:
        folder = stack.pop()
        try:
            entries = list(folder.iterdir())
        except OSError:
            continue
        seen += len(entries)
        for p in entries:
            if p.is_symlink():
                continue
            if p.is_dir():
                if p.name not in _SKIP_DIRS and not p.name.startswith("."):
                    stack.append(p)
            elif _TEST_NAME.search(p.name):
                out.append(p)
    return out


def runs_doctests(root: Path) -> str | None:
    """Where the project at ``root`` says it runs its doctests (a short
    phrase for a message), or None where it does not."""
    root = root.resolve()
    return _runs(root, tuple(_mtime(root / n) for n in _CONFIGS))


_CONFIGS = ("pytest.ini", "tox.ini", "setup.cfg", "pyproject.toml", "noxfile.py",
            "docs/conf.py", "doc/conf.py", "docs/source/conf.py")


def _mtime(path: Path) -> int:
    try:
        return path.stat().st_mtime_ns
    except OSError:
        return 0


# Keyed by the configuration files' times as well, so that a long-running
# server sees a project start (or stop) running its doctests.
@lru_cache(maxsize=32)
def _runs(root: Path, _stamp: tuple[int, ...]) -> str | None:
    for name, sections in (("pytest.ini", ("pytest",)), ("tox.ini", ("pytest", "tox")),
                           ("setup.cfg", ("tool:pytest",))):
        if (text := _text(root / name)) is not None and _ini_says(text, sections):
            return f"its {name}"
    if (text := _text(root / "pyproject.toml")) is not None and _pyproject_says(text):
        return "its pyproject.toml"
    if (text := _text(root / "noxfile.py")) is not None and _DOCTEST_FLAG.search(text):
        return "its noxfile.py"
    for conf in (root / "docs" / "conf.py", root / "doc" / "conf.py",
                 root / "docs" / "source" / "conf.py"):
        if (text := _text(conf)) is not None and _SPHINX.search(text):
            return f"Sphinx's doctest extension ({conf.relative_to(root).as_posix()})"
    for path in _test_files(root):
        if (text := _text(path)) is not None and "doctest" in text and _SUITE_CALL.search(text):
            return f"its tests ({path.relative_to(root).as_posix()})"
    return None


@lru_cache(maxsize=1)
def _parser():  # -> doctest.DocTestParser
    # doctest imports pdb and unittest (0.1-0.2 s): only a project that runs
    # doctests and a module with an example pay for it, never a plain run.
    import doctest

    return doctest.DocTestParser()


def doctest_names(source: str) -> frozenset[str]:
    """The global names the module's docstring examples read before binding
    them themselves (each docstring runs in its own copy of the module's
    globals, so a name an earlier example of the same docstring imports or
    assigns is its own); empty for a module that does not parse."""
    try:
        tree = parse_python(source)
    except (SyntaxError, ValueError):
        return frozenset()
    return tree_doctest_names(tree)


def tree_doctest_names(tree: ast.Module) -> frozenset[str]:
    """``doctest_names`` of a module already parsed."""
    return _scan(tree)[1]


def _scan(tree: ast.Module) -> tuple[bool, frozenset[str]]:
    """(whether any docstring of the module holds an example, the names the
    examples read before binding them)."""
    used: set[str] = set()
    any_example = False
    for node in ast.walk(tree):
        if not isinstance(node, (ast.Module, ast.ClassDef, ast.FunctionDef, ast.AsyncFunctionDef)):
            continue
        doc = ast.get_docstring(node, clean=False)
        if not doc or ">>>" not in doc:
            continue
        try:
            examples = _parser().get_examples(doc)
        except ValueError:  # a malformed example: doctest would report it, not run it
            continue
        any_example = any_example or bool(examples)
        bound: set[str] = set()
        for ex in examples:
            try:
                code = parse_python(ex.source)
            except (SyntaxError, ValueError):
                continue
            reads, binds = _reads_binds(code)
            # A name the example binds itself (``for i in ...``) is its own;
            # so is one an earlier example of this docstring bound.
            used |= reads - binds - bound
            bound |= binds
    return any_example, frozenset(used)


def _reads_binds(code: ast.Module) -> tuple[set[str], set[str]]:
    reads: set[str] = set()
    binds: set[str] = set()
    for n in ast.walk(code):
        if isinstance(n, ast.Name):
            (reads if isinstance(n.ctx, ast.Load) else binds).add(n.id)
        elif isinstance(n, (ast.Import, ast.ImportFrom)):
            binds |= {(a.asname or a.name).split(".", 1)[0] for a in n.names}
        elif isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            binds.add(n.name)
    return reads, binds


_UNUSED_IMPORT = re.compile(r"^`([^`]+)` imported but unused")


def unused_import_names(message: str | None, tree: ast.Module | None = None,
                        line: int | None = None) -> frozenset[str]:
    """The name an F401 message's import binds, read from the import at
    ``line`` of ``tree`` where given (ruff's "`pprint.pprint` imported but
    unused" binds ``pprint``; "`os.path`" from ``import os.path`` binds
    ``os``; "`a.b as c`" binds ``c``), else both readings of the message."""
    m = _UNUSED_IMPORT.match(message or "")
    if not m:
        return frozenset()
    full, _, alias = m.group(1).partition(" as ")
    if alias:
        return frozenset({alias.strip()})
    if tree is not None and line is not None:
        for n in ast.walk(tree):
            if isinstance(n, (ast.Import, ast.ImportFrom)) and n.lineno <= line <= (n.end_lineno or n.lineno):
                for a in n.names:
                    if isinstance(n, ast.Import) and a.name == full:
                        return frozenset({a.asname or a.name.split(".", 1)[0]})
                    if isinstance(n, ast.ImportFrom) and (full == a.name or full.endswith("." + a.name)):
                        return frozenset({a.asname or a.name})
    return frozenset({full.rsplit(".", 1)[-1], full.split(".", 1)[0]})


class _Facts(NamedTuple):
    examples: bool  # a docstring holds an example
    names: frozenset[str]  # the names the examples read (``_scan``)
    imports: tuple[tuple[int, str], ...]  # (line, name bound) of each import of those


_NONE = _Facts(False, frozenset(), ())


def _module(path: Path) -> _Facts:
    """What the module at ``path`` holds, read once while it is unchanged
    (a large run asks of every fix and every fixed file)."""
    try:
        st = path.stat()
    except OSError:
        return _NONE
    return _module_at(path, st.st_mtime_ns, st.st_size)


@lru_cache(maxsize=512)
def _module_at(path: Path, _mtime: int, _size: int) -> _Facts:
    source = _text(path, _MAX_MODULE_BYTES)
    if not source or ">>>" not in source:
        return _NONE
    try:
        tree = parse_python(source)
    except (SyntaxError, ValueError):
        return _NONE
    examples, names = _scan(tree)
    imports = tuple(
        (a.lineno, bound) for n in ast.walk(tree) if isinstance(n, (ast.Import, ast.ImportFrom))
        for a in n.names
        if (bound := a.asname or a.name.split(".", 1)[0]) in names) if names else ()
    return _Facts(examples, names, imports)


def has_doctests(root: Path, rel: str) -> str | None:
    """Where the project runs doctests (as ``runs_doctests``) when the module
    at ``rel`` has docstring examples, else None."""
    if not rel.endswith(".py") or (where := runs_doctests(root)) is None:
        return None
    return where if _module(root / rel).examples else None


def untested_doctests(root: Path, files: list[str]) -> str | None:
    """Why tests that pass do not show a fix of ``files`` keeps meaning: a
    fixed module has docstring examples the project runs as doctests, and
    the covering tests are the test files importing it, not its doctests.
    None where no fixed module has doctests the project runs."""
    for rel in files:
        if where := has_doctests(root, rel):
            return (f"the doctests of {rel}, which the project runs ({where}), are not "
                    "among the covering tests")
    return None


_HUNK = re.compile(r"^@@ -(\d+)(?:,\d+)? \+\d+(?:,\d+)? @@")
_WORD = re.compile(r"[A-Za-z_]\w*")


def _changes(diff: str) -> dict[str, tuple[set[int], set[str]]]:
    """File -> (the old side's removed line numbers, the identifiers on the
    added lines), from a unified diff."""
    out: dict[str, tuple[set[int], set[str]]] = {}
    cur: tuple[set[int], set[str]] | None = None
    line = 0
    for text in diff.splitlines():
        if text.startswith("--- "):
            cur = None
        elif text.startswith("+++ "):
            name = text[4:].strip().split("\t", 1)[0]
            name = name.removeprefix("b/")
            cur = None if name == "/dev/null" else out.setdefault(name, (set(), set()))
        elif cur is not None and (m := _HUNK.match(text)):
            line = int(m.group(1))
        elif cur is not None and text.startswith("-"):
            cur[0].add(line)
            line += 1
        elif cur is not None and text.startswith("+"):
            cur[1].update(_WORD.findall(text[1:]))
        elif cur is not None and text.startswith(" "):
            line += 1
    return out


def drops_doctest_import(root: Path, diff: str, where: str) -> str | None:
    """Why a patch breaks doctests the project runs (``where``, from
    ``runs_doctests``): it removes an import of a name a module's docstring
    examples read and does not write it back (ruff's F401 fix of one name
    rewrites the whole ``from .core import Path, T, ...`` line, dropping
    every unused name there: glom's ``T``). None where it drops none."""
    for rel, (removed, added) in _changes(diff).items():
        if not rel.endswith(".py") or not removed:
            continue
        facts = _module(root / rel)
        gone = sorted({name for line, name in facts.imports if line in removed and name not in added})
        if gone:
            said = ", ".join(repr(g) for g in gone)
            return (f"it removes the import of {said} from {rel}, whose doctests read "
                    f"{'it' if len(gone) == 1 else 'them'} (the project runs them: {where})")
    return None
