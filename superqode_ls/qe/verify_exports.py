"""Fixes that remove a name other code reads from the module: never verified
(verify_step.never_verifiable).

A fix that drops an import binding changes what the module exports, and
neither the tool's re-run nor the tests that import the module can show
that nothing reads it: ruff calls F401's fix safe in a stub
(``from . import auth`` in an ``__init__.pyi`` is how type checkers learn
of ``pkg.auth``), in a module that another module imports the name from
(``from .compat import loads`` elsewhere: the tests of ``compat`` still
pass, the importer breaks), and where the only use is a string that type
checkers read as a type (``Num: "TypeAlias" = "Union[Decimal, Fraction]"``:
ruff does not read that alias, mypy does). So a fix that removes a module-level
binding is never verified where the name is, by the module's own text or
the project's:

- a package's ``__init__`` (it re-exports what it imports) or a star import;
- PEP 484's explicit re-export (``import X as X``, ``from Y import X as
  X``), in a stub also ``from . import X`` (the typing spec's stub
  conventions, as pyright and ty read them);
- listed in ``__all__``;
- named in a string of the fixed module that parses as an expression (a
  type alias or annotation type checkers read);
- imported from this module by another module of the project
  (``from pkg.compat import loads``, ``from .compat import loads``,
  ``compat.loads`` after ``from pkg import compat``).

Fails closed: a fix whose new text cannot be made, or a module that does not
parse, or a project too large to read whole, is never verified either.
Everything is read as text and parsed with ``ast``; nothing is run.
"""

from __future__ import annotations

import ast
import os
import re
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path

from ..workspace.pyast import parse as parse_python
from .roles._common import read_head
from .roles._patches import split_lines
from .verify_copies import changes, merged

# A removed line (not the "---" header) that holds an import statement's word.
_DROPS_IMPORT = re.compile(r"^-(?!--).*\bimport\b", re.MULTILINE)
_SKIP = frozenset({".git", ".venv", "venv", "node_modules", "__pycache__", ".tox", ".nox",
                   "build", "dist", ".superqode", "site-packages", ".mypy_cache"})
# The project's modules read for importers: past this many, it cannot tell
# (fails closed); each read up to this many bytes.
MAX_FILES = 5000
_MAX_BYTES = 1_000_000
_MAX_STRING = 2000  # longer strings are prose, not type expressions
_FROM = re.compile(r"^[ \t]*from[ \t]+(\.*)([\w.]*)[ \t]+import[ \t]+(\([^)]*\)|[^\n#]*)",
                   re.MULTILINE)
_IMPORT = re.compile(r"^[ \t]*import[ \t]+([^\n#]*)", re.MULTILINE)


@dataclass
class ExportReads:
    """What was read of one run's sandbox: each module's tree (None: it does
    not parse), each fix's verdict, the project's modules' texts."""

    sources: dict[str, tuple[str, ast.Module] | None] = field(default_factory=dict)
    verdicts: dict[str, str | None] = field(default_factory=dict)
    index: _Index | None = None  # the project's imports; None: not read yet
    complete: bool = True  # all of the project's modules were read


@dataclass(frozen=True)
class _Binding:
    name: str
    explicit: bool  # ``X as X``
    dot: bool  # ``from . import X``
    star: bool
    # The block it is in: ``import simplejson as json`` in a ``try`` does
    # not stand for the ``import json`` of its ``except ImportError``.
    where: tuple[str, ...] = ()


def may_drop_import(diff: str) -> bool:
    """Whether ``diff`` removes a line with an import on it (cheap: most
    fixes do not)."""
    return _DROPS_IMPORT.search(str(diff)) is not None


_WORD = re.compile(r"[^\W\d]\w*")


def _loses_a_word(diff: str) -> bool:
    """Whether a word of the removed lines is on no added line (an import
    block sorted, rewrapped or merged keeps every name: no parse then)."""
    gone: set[str] = set()
    kept: set[str] = set()
    for line in diff.splitlines():
        if line.startswith("-") and not line.startswith("---"):
            gone.update(_WORD.findall(line, 1))
        elif line.startswith("+") and not line.startswith("+++"):
            kept.update(_WORD.findall(line, 1))
    return not gone <= kept


def _bindings(tree: ast.Module) -> list[_Binding]:
    """The module-level import bindings (in ``if``/``try``/``with`` blocks
    too, not in functions or classes), each with the block it is in."""
    out: list[_Binding] = []
    todo: list[tuple[list[ast.stmt], tuple[str, ...]]] = [(tree.body, ())]
    while todo:
        body, where = todo.pop()
        k = 0  # the compound statements' ordinal: an import removed before one does not move it
        for node in body:
            if isinstance(node, (ast.Import, ast.ImportFrom)):
                relative = isinstance(node, ast.ImportFrom) and node.level > 0 and not node.module
                for a in node.names:
                    if a.name == "*":
                        out.append(_Binding("*", False, False, True, where))
                    elif isinstance(node, ast.Import):
                        out.append(_Binding(a.asname or a.name.split(".")[0],
                                            a.asname == a.name and "." not in a.name, False, False, where))
                    else:
                        out.append(_Binding(a.asname or a.name, a.asname == a.name, relative, False, where))
            elif isinstance(node, (ast.If, ast.Try, ast.TryStar, ast.With, ast.AsyncWith)):
                for part in ("body", "orelse", "finalbody"):
                    todo.append((getattr(node, part, []), (*where, f"{k}.{part}")))
                for i, h in enumerate(getattr(node, "handlers", [])):
                    todo.append((h.body, (*where, f"{k}.except{i}")))
                k += 1
    return out


def _defined(tree: ast.Module) -> list[str]:
    """Names the module's own top-level statements bind (not imports)."""
    out: list[str] = []
    for node in tree.body:
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            out.append(node.name)
        elif isinstance(node, (ast.Assign, ast.AnnAssign, ast.AugAssign)):
            targets = node.targets if isinstance(node, ast.Assign) else [node.target]
            out += [n.id for t in targets for n in ast.walk(t) if isinstance(n, ast.Name)]
    return out


def _all_names(tree: ast.Module) -> set[str]:
    out: set[str] = set()
    for node in tree.body:
        if not isinstance(node, (ast.Assign, ast.AnnAssign, ast.AugAssign)) or node.value is None:
            continue
        targets = node.targets if isinstance(node, ast.Assign) else [node.target]
        if any(isinstance(t, ast.Name) and t.id == "__all__" for t in targets):
            out |= {e.value for e in ast.walk(node.value)
                    if isinstance(e, ast.Constant) and isinstance(e.value, str)}
    return out


def _in_type_string(tree: ast.Module, name: str) -> str | None:
    """A string of the module that parses as an expression naming ``name``."""
    for node in ast.walk(tree):
        if not (isinstance(node, ast.Constant) and isinstance(node.value, str)
                and name in node.value and len(node.value) <= _MAX_STRING):
            continue
        try:
            expr = parse_python(node.value.strip(), mode="eval")
        except (SyntaxError, ValueError):
            continue
        if any(isinstance(n, ast.Name) and n.id == name for n in ast.walk(expr)):
            return node.value
    return None


def _parse(text: str | None) -> ast.Module | None:
    if text is None:
        return None
    try:
        return parse_python(text)
    except (SyntaxError, ValueError):
        return None


def _dotted(rel: str) -> list[str]:
    """The names ``rel`` is imported as (``src/pkg/m.py``: ``src.pkg.m``, ``pkg.m``, ``m``)."""
    stem = rel.rsplit(".", 1)[0].split("/")
    if stem[-1] == "__init__":
        stem = stem[:-1]
    return [".".join(stem[i:]) for i in range(len(stem)) if stem[i:]]


def _index(root: Path, reads: ExportReads) -> _Index:
    """The project's imports, read once a run: one bounded walk (past
    ``MAX_FILES`` modules ``complete`` is False)."""
    if reads.index is None:
        index = _Index()
        seen = 0
        for dirpath, dirnames, filenames in os.walk(root):
            dirnames[:] = [d for d in dirnames if d not in _SKIP and not d.startswith(".")]
            for fname in filenames:
                if not fname.endswith((".py", ".pyi")):
                    continue
                seen += 1
                if seen > MAX_FILES:
                    reads.complete = False
                    break
                path = os.path.join(dirpath, fname)
                text = read_head(path, _MAX_BYTES)  # no link followed, no FIFO waited on
                if text is not None:
                    index.add(os.path.relpath(path, root).replace(os.sep, "/"), text)
            if not reads.complete:
                break
        reads.index = index
    return reads.index


def _resolve(rel: str, dots: str, module: str) -> str:
    """The absolute dotted module of ``from <dots><module> import`` in ``rel``."""
    package = _dotted(rel)[0].split(".") if _dotted(rel) else []
    if rel.rsplit("/", 1)[-1] not in ("__init__.py", "__init__.pyi"):
        package = package[:-1]
    up = len(dots) - 1
    if up > len(package):
        return ""
    base = package[:len(package) - up] if up else package
    return ".".join([*base, module] if module else base)


@dataclass
class _Index:
    """What the project's modules import: (module, name) -> the modules
    importing it so (``from module import name``); each dotted name a module
    may be bound under in another (``from pkg import compat``, ``import
    pkg.compat as c``) -> (that module, its alias); the texts, for the
    alias's attribute reads."""

    names: dict[tuple[str, str], list[str]] = field(default_factory=dict)
    aliases: dict[str, list[tuple[str, str]]] = field(default_factory=dict)
    texts: dict[str, str] = field(default_factory=dict)

    def add(self, rel: str, text: str) -> None:
        if "import" not in text:
            return
        bound = False
        for m in _FROM.finditer(text):
            dots, module, what = m.groups()
            full = _resolve(rel, dots, module) if dots else module
            for part in re.sub(r"#[^\n]*", "", what).strip().strip("()").split(","):
                bits = part.split()
                if not bits or not bits[0].isidentifier():
                    continue
                self.names.setdefault((full, bits[0]), []).append(rel)
                self.aliases.setdefault(f"{full}.{bits[0]}" if full else bits[0], []).append(
                    (rel, bits[-1]))
                bound = True
        for m in _IMPORT.finditer(text):
            for part in m.group(1).split(","):
                bits = part.split()
                if bits:
                    self.aliases.setdefault(bits[0], []).append((rel, bits[-1]))
                    bound = True
        if bound:
            self.texts[rel] = text


def importer(root: Path, rel: str, name: str, reads: ExportReads) -> str | None:
    """Another module of the project that reads ``name`` from the module at
    ``rel`` (its path), or None."""
    index = _index(root, reads)
    for mine in _dotted(rel):
        other = next((o for o in index.names.get((mine, name), ()) if o != rel), None)
        if other is not None:
            return other
        for other, alias in index.aliases.get(mine, ()):
            if other != rel and re.search(
                    rf"(?<![\w.]){re.escape(alias)}\s*\.\s*{re.escape(name)}\b", index.texts[other]):
                return other
    return None


def drops_export(root: Path, rel: str, diff: str, reads: ExportReads) -> str | None:
    """Why the fix ``diff`` of ``rel`` removes a name other code may read
    from the module, or None."""
    diff = str(diff)
    if not rel.endswith((".py", ".pyi")) or not may_drop_import(diff) or not _loses_a_word(diff):
        return None
    if rel not in reads.sources:
        text = read_head(root / rel, _MAX_BYTES)  # no link followed, no FIFO waited on
        tree = _parse(text)
        reads.sources[rel] = None if text is None or tree is None else (text, tree)
    source = reads.sources[rel]
    if source is None:
        return f"{rel} could not be read or parsed, so the names this fix removes are unknown"
    text, old = source
    lines = split_lines(text)
    made = changes(lines, diff)
    new = _parse(merged(lines, [made])) if made is not None else None
    if new is None:
        return "the fixed module could not be made or parsed, so the names this fix removes are unknown"
    before = _bindings(old)
    left = Counter((b.name, b.where) for b in _bindings(new))
    defined = set(_defined(new))  # F811: the import gives way to a def of the same name
    gone = [b for b in before if left[(b.name, b.where)] == 0 and b.name not in defined]
    if not gone:
        return None
    stub = rel.endswith(".pyi")
    init = rel.rsplit("/", 1)[-1] in ("__init__.py", "__init__.pyi")
    exported = _all_names(old)
    for b in gone:
        if b.star:
            return "it removes a star import, which makes every public name of that module this one's"
        if b.explicit:
            return f"`{b.name} as {b.name}` is an explicit re-export (PEP 484): removing it removes the name"
        if stub and b.dot:
            return (f"in a stub, `from . import {b.name}` re-exports the submodule (the typing "
                    "spec's stub conventions): removing it hides it from type checkers")
        if stub:
            return (f"{rel} is a stub: only type checkers read it, so no test can show that "
                    f"removing {b.name} keeps its meaning")
        if init:
            return (f"a package's __init__ re-exports what it imports: removing {b.name} "
                    "removes it from the package")
        if b.name in exported:
            return f"{b.name} is listed in __all__"
        if (s := _in_type_string(new, b.name)) is not None:
            shown = s if len(s) <= 60 else s[:57] + "..."
            return (f"{b.name} is still named in the string {shown!r}, which type checkers read "
                    "as a type (tests do not evaluate it)")
    for b in gone:
        other = importer(root, rel, b.name, reads)
        if other is not None:
            return f"{other} imports {b.name} from this module: removing it breaks that module"
    if not reads.complete:
        return (f"the project has more than {MAX_FILES} modules, so whether another imports "
                "the removed name from this one is unknown")
    return None
