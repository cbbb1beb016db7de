"""Request data followed through the project's own functions (``_web_flows``):
a function whose parameter reaches a sink (``open(path)``, ``os.popen(cmd)``,
``requests.get(url)``...) is a *summary* its callers' checks use like the
sink itself, so ``helpers.save_file(filename, ...)`` of a resolver's
argument is path traversal at the call, naming the sink's line.

Summaries come from the file's own functions (a function calling another
summarised one with its parameter is summarised too, up to ``DEPTH`` calls
deep) and from the project modules it imports (``from core import
helpers``, ``from .db import posts_db``, ``import utils``), read through the
scan's ``read`` and summarised the same way one level less deep. Only
module paths made of the import's identifiers are read (never ``..`` or an
absolute path); a module's summaries are kept by its path and text in a
bounded cache, so a module imported by many views is walked once.
"""

from __future__ import annotations

import ast
import hashlib
import threading
from collections import OrderedDict
from collections.abc import Callable

from ...models import Severity
from ...workspace.pyast import parse as parse_python
from ._web_sinks import Scopes, _func_name, scoped

# rule, title, message, severity, where the sink is ("open() at core/helpers.py:25")
Summary = tuple[str, str, str, Severity, str]
# a function's parameters (self/cls left out) and, for those that reach a sink, its summary
FuncSummary = tuple[tuple[str, ...], dict[str, Summary]]
Table = dict[str, FuncSummary]
# (scopes, rel, callees, rounds) -> the file's own summaries
Summarize = Callable[[Scopes, str, "Callees", int], Table]
Read = Callable[[str], "str | None"]

DEPTH = 3  # calls followed from a handler to a sink
MAX_MODULES = 16  # imported project modules read for one file
_MAX_PATHS = 256  # paths tried for them (most imports are of installed packages)


class Callees:
    """What one file's checks know of the functions it calls: its own
    summaries (also as ``self.method``) and its imported project modules'
    (``helpers.save_file``, ``save_file`` imported by name)."""

    def __init__(self, local: Table | None = None, names: Table | None = None,
                 modules: dict[str, Table] | None = None):
        # kept as given: summarize() fills the file's own table while it uses it
        self.local: Table = local if local is not None else {}
        self.names: Table = names if names is not None else {}  # imported by name
        self.modules: dict[str, Table] = modules if modules is not None else {}  # by alias

    def __bool__(self) -> bool:
        return bool(self.local or self.names or self.modules)

    def lookup(self, call: ast.Call) -> tuple[str, FuncSummary] | None:
        f = call.func
        name = _func_name(call)
        if isinstance(f, ast.Name):
            found = self.local.get(name) or self.names.get(name)
        elif isinstance(f, ast.Attribute) and isinstance(f.value, ast.Name):
            owner = f.value.id
            # a module or a class imported by name (its static helpers: posts_db.get_post)
            found = self.local.get(name) if owner in ("self", "cls") \
                else self.modules.get(owner, {}).get(name)
        else:
            found = None
        return (name, found) if found else None


def arguments(call: ast.Call, params: tuple[str, ...]) -> dict[str, ast.AST]:
    """Which parameter each argument of the call fills."""
    out = {p: a for p, a in zip(params, call.args, strict=False)
           if not isinstance(a, ast.Starred)}
    out.update({kw.arg: kw.value for kw in call.keywords if kw.arg in params})
    return out


def params_of(func: ast.FunctionDef | ast.AsyncFunctionDef) -> tuple[str, ...]:
    a = func.args
    names = [p.arg for p in [*a.posonlyargs, *a.args]]
    if names[:1] in (["self"], ["cls"]):
        names = names[1:]
    return (*names, *(p.arg for p in a.kwonlyargs))


class _Cache:
    """Summaries of imported modules by (path, text digest, depth): a
    module many views import is walked once; bounded (oldest out first)."""

    def __init__(self, size: int = 256):
        self.size = size
        self._items: OrderedDict[tuple[str, str, int], tuple[Table, frozenset[str]]] = \
            OrderedDict()
        self._lock = threading.Lock()  # the language server scans in threads

    def get(self, key: tuple[str, str, int]) -> tuple[Table, frozenset[str]] | None:
        with self._lock:
            found = self._items.get(key)
            if found is not None:
                self._items.move_to_end(key)
            return found

    def put(self, key: tuple[str, str, int], value: tuple[Table, frozenset[str]]) -> None:
        with self._lock:
            self._items[key] = value
            while len(self._items) > self.size:
                self._items.popitem(last=False)


_MODULES = _Cache()


def _candidates(rel: str, module: str, level: int) -> list[str]:
    """Where ``module`` (dotted, without the leading dots of ``level``) may
    be, seen from ``rel``: relative to the importing package, or to the
    project's root and each folder above the file (a project in a subfolder)."""
    parts = module.split(".") if module else []
    if not all(p.isidentifier() for p in parts):
        return []  # fail closed: only paths made of identifiers (no "", "..", "/")
    here = rel.split("/")[:-1]
    if level:
        if level - 1 > len(here):
            return []
        bases = [here[:len(here) - (level - 1)]]
    else:
        bases = [here[:d] for d in range(len(here), -1, -1)]
    out = []
    for base in bases:
        stem = "/".join([*base, *parts])
        if stem:
            out += [stem + ".py", stem + "/__init__.py"]
    return out


def _module(path: str, read: Read, summarize: Summarize, depth: int
            ) -> tuple[Table, frozenset[str]] | None:
    text = read(path)
    if text is None:
        return None
    key = (path, hashlib.blake2b(text.encode("utf-8", "replace"), digest_size=12).hexdigest(),
           depth)
    found = _MODULES.get(key)
    if found is not None:
        return found
    try:
        tree = parse_python(text)
    except (SyntaxError, ValueError):
        return None
    scopes = scoped(tree)
    callees = imported(scopes, path, read, summarize, depth - 1) if depth > 1 else Callees()
    table = summarize(scopes, path, callees, depth)
    classes = frozenset(n.name for n in tree.body if isinstance(n, ast.ClassDef))
    _MODULES.put(key, (table, classes))
    return table, classes


def imported(scopes: Scopes, rel: str, read: Read | None, summarize: Summarize,
             depth: int = DEPTH - 1, wanted: set[str] | None = None) -> Callees:
    """The summaries of the project modules this file imports (at its top
    level; only those bound to a ``wanted`` name where given): at most
    ``MAX_MODULES`` of them, each read once."""
    out = Callees()
    if read is None or depth < 1:
        return out
    read_here: dict[str, tuple[Table, frozenset[str]] | None] = {}  # distinct modules

    def first(paths: list[str]) -> tuple[Table, frozenset[str]] | None:
        for path in paths:
            if path not in read_here:
                if len(read_here) >= _MAX_PATHS:
                    return None  # bounded: paths tried, found or not
                read_here[path] = _module(path, read, summarize, depth)
            if read_here[path] is not None:
                return read_here[path]
        return None

    def full() -> bool:
        return sum(v is not None for v in read_here.values()) >= MAX_MODULES

    imports = sorted((n for n in (scopes[0][1] if scopes else [])
                      if isinstance(n, ast.Import | ast.ImportFrom)), key=lambda n: n.lineno)
    for node in imports:
        if full():
            break
        if isinstance(node, ast.Import):
            for a in node.names:
                if a.asname is None and "." in a.name:
                    continue  # ``import a.b`` binds ``a``: no module of ours by that name
                if wanted is not None and (a.asname or a.name) not in wanted:
                    continue
                found = first(_candidates(rel, a.name, 0))
                if found is not None:
                    out.modules[a.asname or a.name] = found[0]
        elif isinstance(node, ast.ImportFrom):
            if wanted is not None and not any((a.asname or a.name) in wanted for a in node.names):
                continue
            module = node.module or ""
            paths = _candidates(rel, module, node.level) if module or node.level else []
            owner = first(paths)
            package = owner is None or _package(paths, read_here)
            for a in node.names:
                if a.name == "*" or full() or (wanted is not None
                                               and (a.asname or a.name) not in wanted):
                    continue
                alias = a.asname or a.name
                # ``from core import helpers``: a module of a package
                found = first(_candidates(rel, ".".join(filter(None, (module, a.name))),
                                          node.level)) \
                    if package else None
                if found is not None:
                    out.modules[alias] = found[0]
                elif owner is not None:  # ``from core.helpers import f``: a name in it
                    table, classes = owner
                    if a.name in table:
                        out.names[alias] = table[a.name]
                    elif a.name in classes:
                        out.modules[alias] = table  # its static helpers, by name
    return out


def _package(paths: list[str], read_here: dict[str, object]) -> bool:
    """The import's module was found as a package (its ``__init__.py``)."""
    return any(p.endswith("/__init__.py") and read_here.get(p) is not None for p in paths)


def where(name: str, summary: Summary) -> str:
    """The chain a caller's finding names (``save_file() → open() at x.py:3``)."""
    return f"{name}() → {summary[4]}"
