"""What the flagged module proves about where a value comes from or how long
an object lives (noise_library.py calls it, after the context step):

- an all-interfaces address (B104) in a module that binds nothing (no
  ``bind``, ``listen``, ``run``/``serve``, server or socket call) and not
  held under a host/bind/listen name or key: the address is a value (isso's
  ``anonymize`` returns ``"0.0.0.0"`` for an address it cannot parse), not
  where a server listens. ``app.run(host="0.0.0.0")``, ``HOST = "0.0.0.0"``
  and ``{"bind": "0.0.0.0"}`` stay;
- the standard library's XML parsers (B313, B314, B318, B405, B408) on XML
  the function builds from its own text (WeasyPrint's bleed marks written
  as an SVG string), or in a module that takes nothing from a request or the
  network (no web framework's request, HTTP client, socket or fetch): a
  migration of the user's own export, a playlist or a font's SVG table. The
  standard library's parser resolves no external entity; what B314 warns of
  is a document an attacker writes. A module that fetches or takes a
  request keeps it (WeasyPrint's ``images.py`` parses what ``fetch`` got);
  lxml (B320, B410) is not here: it can resolve entities;
- ``urlopen`` (B310) of a module constant that is an ``http(s)://`` URL
  (pipx's ``GITHUB_API_URL``): no ``file:`` or custom scheme can reach it;
- ``urlopen`` (B310) of a URL whose scheme the code checks first (see
  ``noise_scheme``), in the function (``if not url.startswith(("http://", "https://")): raise``,
  ``if urlparse(url).scheme in ("http", "https"):``) or, for a parameter,
  before every call of the function in the module: only http(s) reaches
  it. A check that lets any scheme through (``if urlparse(app).scheme:``)
  or a caller without the check keeps it; a URL rooted at a literal address
  through parameters and attributes: see ``noise_urls``;
- ``__all__`` (PLE0604) annotated as strings (``__all__: list[str] =
  [HistoryPanel.panel_id]``): the items are read at run time (a class
  property that returns the class's name), which ruff cannot follow; the
  project's type checker holds the annotation. An unannotated ``__all__``
  of objects stays;
- ``functools.lru_cache`` on a method (B019) of a class the module makes
  once, at module level, and nowhere else (a singleton): the cache keeps
  that one instance alive, which the module does anyway; or in a project
  that is a command-line tool (a console script declared, no web framework
  in any module): twine's ``Resolver``, made once per upload, lives as long
  as the process anyway. A class made per request or per call in a server
  or a library with no script stays;
- ``Markup(...)`` (B704) in a jinja2 filter this module registers
  (``env.filters["minify_css"] = minify_css``) on an environment with
  autoescape on, where every use in the project's templates gives it markup
  already: a ``{% filter minify_css %}`` block (rendered, so escaped), or a
  chain whose previous filter escapes or is one of this module's own
  (``var.annotation_str | escape | linkify``, ``to_html | linkify``). A use
  on a bare variable (``{{ spec | link }}``) or after ``safe`` keeps it.
"""

from __future__ import annotations

import ast
import re
from collections import OrderedDict
from collections.abc import Callable
from pathlib import Path

from ..models import Finding
from .ast_index import index
from .noise_scheme import scheme_checked
from .noise_urls import default_url
from .roles._common import read_prefix

_ALL_INTERFACES = frozenset({"0.0.0.0", "::", "[::]"})
# A call that listens: the bind address goes here.
# A call that may listen (the bind address goes there): any call whose name
# says bind, listen, serve, run, server or socket (``run_app``,
# ``serve_forever``, ``make_server``, ``create_connection``'s peers), broad
# on purpose: a module with one keeps its B104 shown.
_BINDS = re.compile(r"(?i)\b\w*(?:bind|listen|serve|run|server|socket|site|uvicorn|gunicorn|"
                    r"hypercorn|waitress)\w*\s*\(")
_BIND_NAME = re.compile(r"(?i)host|bind|listen|interface|server|address|addr$|^ip$|iface")
# The other end's address (pyramid's ``remote_addr = '0.0.0.0'`` hashed into a
# ticket when the IP is left out): a value read or stood in for, never bound.
_PEER_NAME = re.compile(r"(?i)remote|client|peer|forwarded|^src_|source_ip")
_XML_RULES = frozenset({"B313", "B314", "B318", "B405", "B408"})
# What brings data from outside into a module: a request, an HTTP client, a
# socket, a fetch.
_OUTSIDE = re.compile(r"\b(?:request|requests|urlopen|urllib\.request|urllib3|httpx|aiohttp|"
                      r"http\.client|HTTPConnection|socket|recv|fetch|url_fetcher|flask|django|"
                      r"starlette|fastapi|tornado|werkzeug|websocket|websockets)\b")
_STR_ALL = re.compile(r"^(?:list|List|tuple|Tuple|Sequence|typing\.Sequence|"
                      r"collections\.abc\.Sequence)\[\s*str\s*(?:,\s*\.\.\.\s*)?\]$")
TRUSTED_RULES = frozenset({"B104", "B310", "PLE0604", "B019", "B704", *_XML_RULES})
_AUTOESCAPE_ON = re.compile(r"\bautoescape\s*=\s*(?:True\b|select_autoescape\()")
_ESCAPES = frozenset({"escape", "e", "forceescape"})
_TEMPLATE_SUFFIXES = (".jinja2", ".jinja", ".j2", ".html", ".htm", ".xml", ".txt")
_TEMPLATE_SKIP = frozenset({".git", ".venv", "venv", "node_modules", "__pycache__", ".tox",
                            ".nox", "build", "dist", "site-packages", ".superqode"})


def trusted_why(f: Finding, rule: str, lines: list[str], tree: Callable[[], ast.Module | None],
                one_command: Callable[[], bool],
                project: Callable[[], tuple] = lambda: ([], {}, frozenset())) -> str | None:
    """Why the module proves ``f`` harmless, or None."""
    assert f.range is not None
    n = f.range.start_line
    t = tree()
    if t is None:
        return None
    if rule == "B104":
        return _address_value(t, lines, n)
    if rule in _XML_RULES:
        return _trusted_xml(t, lines, n, rule)
    if rule == "B310":
        return (_constant_url(t, n) or scheme_checked(t, n, _parents(t), lambda: _calls_of(t))
                or default_url(t, n))
    if rule == "PLE0604":
        return _annotated_all(t, n) or _property_names(t, n, project()[2])
    if rule == "B704":
        return _filter_of_rendered(t, lines, n, project)
    if rule == "B019":
        if one_command():
            return ("a command-line tool's process (a console script, no web framework or "
                    "server): it ends with the command, and the instances the cache keeps with it")
        return _singleton_cache(t, n)
    return None


def _at(tree: ast.Module, line: int, kind: type) -> list:
    return [x for x in index(tree).nodes_at(line) if isinstance(x, kind)]


# What the rules ask of a whole module (each node's parent, the calls by
# name, whether a line binds or fetches...), for the last few modules (their
# findings come file by file): one walk per module, not one per finding.
_FACTS: OrderedDict[int, tuple[ast.Module, dict]] = OrderedDict()
_FACTS_KEPT = 4


def _facts(tree: ast.Module) -> dict:
    held = _FACTS.get(id(tree))
    if held is not None and held[0] is tree:
        _FACTS.move_to_end(id(tree))
        return held[1]
    facts: dict = {}
    _FACTS[id(tree)] = (tree, facts)
    while len(_FACTS) > _FACTS_KEPT:
        _FACTS.popitem(last=False)
    return facts


def _once(tree: ast.Module, key: str, make: Callable[[], object]):
    facts = _facts(tree)
    if key not in facts:
        facts[key] = make()
    return facts[key]


def _parents(tree: ast.Module) -> dict[ast.AST, ast.AST]:
    return index(tree).parents


def _calls_of(tree: ast.Module) -> dict[str, list[ast.Call]]:
    def make() -> dict[str, list[ast.Call]]:
        out: dict[str, list[ast.Call]] = {}
        for c in ast.walk(tree):
            if isinstance(c, ast.Call) and isinstance(c.func, ast.Name):
                out.setdefault(c.func.id, []).append(c)
        return out
    return _once(tree, "calls", make)


def clear() -> None:
    """Let the modules' facts go (the filter's end)."""
    _FACTS.clear()


def _address_value(tree: ast.Module, lines: list[str], line: int) -> str | None:
    hits = [c for c in _at(tree, line, ast.Constant) if c.value in _ALL_INTERFACES]
    if not hits or _once(tree, "binds", lambda: any(_BINDS.search(x) for x in lines)):
        return None
    parent = _parents(tree)
    for c in hits:
        node, up = c, parent.get(c)
        while isinstance(up, (ast.IfExp, ast.BoolOp, ast.Tuple, ast.List, ast.Set)):
            node, up = up, parent.get(up)
        if isinstance(up, ast.keyword) and up.arg and _BIND_NAME.search(up.arg):
            return None
        if isinstance(up, ast.Dict) and any(
                v is node and isinstance(k, ast.Constant) and isinstance(k.value, str)
                and _BIND_NAME.search(k.value) for k, v in zip(up.keys, up.values)):
            return None
        if isinstance(up, (ast.Assign, ast.AnnAssign, ast.AugAssign)):
            targets = up.targets if isinstance(up, ast.Assign) else [up.target]
            if any(_BIND_NAME.search(t := ast.unparse(x)) and not _PEER_NAME.search(t)
                   for x in targets):
                return None
        if isinstance(up, ast.arguments):  # a parameter's default: def serve(host="0.0.0.0")
            return None
    return ("the address is a value (an IP it returns, compares or passes on), and the module "
            "binds nothing: no server, socket or listen call")


def _trusted_xml(tree: ast.Module, lines: list[str], line: int, rule: str) -> str | None:
    if rule in ("B313", "B314", "B318"):
        for call in _at(tree, line, ast.Call):
            if call.args and _built_here(tree, call, call.args[0]):
                return ("the XML is text the function builds itself: no document from "
                        "outside reaches the parser")
    if _once(tree, "outside", lambda: any(_OUTSIDE.search(x) for x in lines
                                          if not x.lstrip().startswith("#"))):
        return None
    return ("the module takes nothing from a request or the network: it parses the project's "
            "or the user's own files, and the standard library's parser resolves no "
            "external entity")


def _built_here(tree: ast.Module, call: ast.Call, arg: ast.AST) -> bool:
    if _text_only(arg):
        return True
    if not isinstance(arg, ast.Name):
        return False
    func = index(tree).function_at(call.lineno)
    if func is None or arg.id in {a.arg for a in func.args.args + func.args.kwonlyargs}:
        return False
    writes = []
    for x in ast.walk(func):
        targets = x.targets if isinstance(x, ast.Assign) else [x.target] if isinstance(
            x, (ast.AugAssign, ast.AnnAssign)) else []
        if any(isinstance(t, ast.Name) and t.id == arg.id for t in targets):
            writes.append(x.value)
        elif arg.id in _bound_by(x):
            return False
    return bool(writes) and all(w is not None and _text_only(w) for w in writes)


def _bound_by(x: ast.AST) -> set[str]:
    """Names a loop, ``with ... as`` or ``:=`` binds (to values not written here)."""
    if isinstance(x, (ast.For, ast.AsyncFor, ast.NamedExpr, ast.comprehension)):
        targets = [x.target]
    elif isinstance(x, (ast.With, ast.AsyncWith)):
        targets = [i.optional_vars for i in x.items if i.optional_vars is not None]
    else:
        return set()
    return {n.id for t in targets for n in ast.walk(t) if isinstance(n, ast.Name)}


def _text_only(e: ast.AST) -> bool:
    """A string the code writes: literals, f-strings and their concatenation
    (the values formatted in are numbers and names of its own drawing)."""
    if isinstance(e, ast.Constant):
        return isinstance(e.value, str)
    if isinstance(e, ast.JoinedStr):
        return True
    if isinstance(e, ast.BinOp) and isinstance(e.op, ast.Add):
        return _text_only(e.left) and _text_only(e.right)
    return False


def _constant_url(tree: ast.Module, line: int) -> str | None:
    def make() -> set[str]:
        urls = {t.id for s in tree.body if isinstance(s, (ast.Assign, ast.AnnAssign))
                for t in (s.targets if isinstance(s, ast.Assign) else [s.target])
                if isinstance(t, ast.Name) and isinstance(s.value, ast.Constant)
                and isinstance(s.value.value, str)
                and s.value.value.startswith(("https://", "http://"))}
        top = {id(s) for s in tree.body}
        rebound = {t.id for x in ast.walk(tree) if id(x) not in top
                   for t in getattr(x, "targets", []) if isinstance(t, ast.Name)}
        return urls - rebound
    urls = _once(tree, "urls", make)
    for call in _at(tree, line, ast.Call):
        if call.args and isinstance(call.args[0], ast.Name) and call.args[0].id in urls:
            return (f"the URL is the module's constant {call.args[0].id}, an http(s) address: "
                    "no file: or custom scheme reaches it")
    return None


def _annotated_all(tree: ast.Module, line: int) -> str | None:
    for s in tree.body:
        if (isinstance(s, ast.AnnAssign) and isinstance(s.target, ast.Name)
                and s.target.id == "__all__" and s.lineno <= line <= (s.end_lineno or s.lineno)
                and _STR_ALL.match(ast.unparse(s.annotation))):
            return ("__all__ is annotated as strings and its items are read at run time (a "
                    "property or class property returning a name), which ruff cannot follow")
    return None


def _property_names(tree: ast.Module, line: int, props: frozenset[str]) -> str | None:
    """Every item of ``__all__`` is ``Imported.attr`` where the project
    defines ``attr`` as a property returning ``str`` (``panel_id``)."""
    imported = {a.asname or a.name for s in tree.body if isinstance(s, ast.ImportFrom)
                for a in s.names}
    for s in tree.body:
        if (isinstance(s, ast.Assign) and any(isinstance(t, ast.Name) and t.id == "__all__"
                                              for t in s.targets)
                and s.lineno <= line <= (s.end_lineno or s.lineno)
                and isinstance(s.value, (ast.List, ast.Tuple)) and s.value.elts
                and all(isinstance(e, ast.Constant) and isinstance(e.value, str)
                        or isinstance(e, ast.Attribute) and isinstance(e.value, ast.Name)
                        and e.value.id in imported and e.attr in props for e in s.value.elts)):
            return ("__all__'s items are read at run time from a property the project declares "
                    "to return str, which ruff cannot follow")
    return None


def _singleton_cache(tree: ast.Module, line: int) -> str | None:
    cls = next((c for c in ast.walk(tree) if isinstance(c, ast.ClassDef)
                and c.lineno <= line <= (c.end_lineno or c.lineno)), None)
    if cls is None:
        return None
    made = _calls_of(tree).get(cls.name, [])
    top = {id(x) for s in tree.body if isinstance(s, (ast.Assign, ast.AnnAssign))
           for x in ast.walk(s) if isinstance(x, ast.Call)}
    if len(made) == 1 and id(made[0]) in top and not _named_elsewhere(tree, cls, made[0]):
        return (f"{cls.name} is made once, at module level (a singleton): the cache keeps alive "
                "only the instance the module keeps anyway")
    return None


def _named_elsewhere(tree: ast.Module, cls: ast.ClassDef, made: ast.Call) -> bool:
    """The class is used by name other than in its one construction and its
    own body (a subclass, a factory passing it on): it may be made elsewhere."""
    inside = {id(x) for x in ast.walk(cls)}
    return any(isinstance(x, ast.Name) and x.id == cls.name and x is not made.func
               and id(x) not in inside for x in ast.walk(tree))


_SCRIPTS = re.compile(r"(?m)^\[project\.scripts\]|^\[tool\.poetry\.scripts\]|console_scripts")


def declares_script(root: Path) -> bool:
    """The project installs a command (``[project.scripts]``, poetry's
    scripts, setuptools' ``console_scripts``)."""
    for name in ("pyproject.toml", "setup.cfg", "setup.py"):
        raw = read_prefix(root / name, 200_000)
        if raw is not None and _SCRIPTS.search(raw.decode("utf-8", "replace")):
            return True
    return False


def _filter_of_rendered(tree: ast.Module, lines: list[str], line: int,
                        project: Callable[[], tuple]) -> str | None:
    func = next((x for x in tree.body if isinstance(x, (ast.FunctionDef, ast.AsyncFunctionDef))
                 and x.lineno <= line <= (x.end_lineno or x.lineno)), None)
    if func is None:
        return None
    templates, filters, _ = project()
    names = {k for k, v in filters.items() if v == func.name}
    if not names:
        return None
    uses = 0
    for text in templates:
        for name in names:
            uses += len(re.findall(rf"\{{%-?\s*filter\s+{re.escape(name)}\b", text))
            for m in re.finditer(rf"\|\s*{re.escape(name)}\b", text):
                start = text.rfind("{{", 0, m.start())
                before = re.findall(r"\|\s*(\w+)", text[start:m.start()] if start >= 0 else "")
                if not before or (before[-1] not in _ESCAPES and before[-1] not in filters):
                    return None
                uses += 1
    if not uses:
        return None
    return ("the filter only receives markup: a rendered {% filter %} block or the output of an "
            "escape or of the project's own filters, in an environment with autoescape on")


# ``env.filters["minify_css"] = minify_css`` (or ``= render_helpers.minify_css``)
_REGISTERED = re.compile(r"\.filters\[\s*['\"](\w+)['\"]\s*\]\s*=\s*(?:[\w.]+\.)?(\w+)\s*$",
                         re.MULTILINE)


def project_filters(root: Path) -> tuple[list[str], dict[str, str], frozenset[str]]:
    """The project's templates, the jinja2 filters its modules register
    (filter name -> function name) in a module that turns autoescape on, and
    the names of the properties that say they return ``str``."""
    texts = _texts(root, _TEMPLATE_SUFFIXES, lambda t: "{{" in t or "{%" in t)
    filters: dict[str, str] = {}
    props: set[str] = set()
    for text in _texts(root, (".py",), lambda t: ".filters[" in t or "property" in t):
        if ".filters[" in text and _AUTOESCAPE_ON.search(text):
            filters.update((m.group(1), m.group(2)) for m in _REGISTERED.finditer(text))
        props.update(_STR_PROPERTY.findall(text))
    return texts, filters, frozenset(props)


# ``@classproperty`` / ``@property`` over ``def panel_id(cls) -> str:``
_STR_PROPERTY = re.compile(r"@\w*property\s*\n\s*def\s+(\w+)\(\s*(?:cls|self)\s*\)\s*->\s*str\s*:")


def _texts(root: Path, suffixes: tuple[str, ...], keep: Callable[[str], bool],
           limit_files: int = 2000, limit_bytes: int = 8_000_000) -> list[str]:
    """The text of the project's files with these suffixes that ``keep``
    accepts (the walk and what is read bounded)."""
    out: list[str] = []
    total = 0
    stack = [root]
    while stack and len(out) < limit_files and total < limit_bytes:
        folder = stack.pop()
        try:
            entries = sorted(folder.iterdir())
        except OSError:
            continue
        for e in entries:
            if e.is_dir() and not e.is_symlink():
                if e.name not in _TEMPLATE_SKIP and not e.name.startswith("."):
                    stack.append(e)
            elif e.name.endswith(suffixes) and e.is_file():
                raw = read_prefix(e, 200_000)  # no link followed, no FIFO waited on
                if raw is None:
                    continue
                text = raw.decode("utf-8", "replace")
                if keep(text):
                    out.append(text)
                    total += len(text)
    return out
