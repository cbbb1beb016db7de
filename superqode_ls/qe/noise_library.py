"""What a library's own code proves harmless (noise.py, after the context
step), each judged from the flagged module alone:

- a weak hash (B324) whose line only asks an empty hash object for its size
  or name (``os.urandom(sha1().digest_size)``): nothing is hashed;
- ``yaml.load`` (B506) with a loader the module derives from PyYAML's
  ``SafeLoader`` (``class Loader(yaml.SafeLoader)``, returned by a helper):
  bandit only knows the loaders by name; ``yaml.Loader``, ``FullLoader``,
  ``UnsafeLoader`` and a module with no safe loader class of its own stay;
- an undefined name (F821) in a module that defines names at run time
  through ``globals()[...] = ...`` or ``globals().update(...)`` (a script
  turning its options into globals): pyflakes cannot see them;
- an undefined Python 2 builtin (F821: ``unicode``, ``basestring``,
  ``raw_input``...) in a module that branches on the version (``PY3``,
  ``sys.version_info``, ``six.PY2``): only its Python 2 branch names it
  (``str if PY3 else unicode``); in a module with no such test it stays;
- an unused import (F401) in a ``try:`` whose ``except`` catches
  ``ImportError`` (or any exception): the import tests that the module is
  there (``import readline`` to know whether line editing is on), its
  handler records the answer; a dead import elsewhere stays;
- a shell call (B601, B602, B605) whose command is a method's own
  ``command``/``cmd`` parameter passed on unchanged, in a project that is no
  web application (no module imports a web framework): the class's API
  runs what its caller asks (invoke's ``Local.start``, paramiko's
  ``SSHClient.exec_command``); the caller's input is what to check. A
  module's helper (``def run_cmd(cmd): os.popen(cmd)``), the same method in
  a web application, and a command the method builds (``f"git log {ref}"``)
  stay;
- a jinja2 ``Environment`` left at jinja2's default, no autoescape (B701),
  in a project that is no web application: its templates turn the author's own content into
  documents (a static site or report generator: mkdocs' theme), no request
  reaches them; an explicit ``autoescape=False`` and any in a web
  application stay (XSS);
- a jinja2 ``Environment`` (B701) whose templates are all text, not HTML
  (tox.ini, a workflow's YAML, scaffolded Python): see noise_jinja.py; an
  HTML template or one it cannot find stays;
- ``Markup(x).striptags()`` (B704): the Markup only strips the tags, the
  result is plain text that is never rendered as markup; ``Markup(x)``
  itself stays;
- ``os.chmod(path, 0o755)`` (B103): bandit counts execute for others as
  permissive, but only the owner can write (the mode of every directory
  and installed program); a mode that lets the group or others write
  (``0o775``, ``0o777``, ``0o666``) stays;
- a shell command fixed in the code but for the running interpreter's path
  (``os.system("{} setup.py sdist".format(sys.executable))``, B602/B605):
  nothing from outside reaches it; any other value filled in stays;
- SQL formatted only with a list of placeholders
  (``f"... IN ({placeholders})"`` where ``placeholders = ", ".join("?" for _
  in ids)``, B608 and ``sql-injection``): the values go as parameters; any
  other value formatted in stays;
- ``return super().__init__(...)`` in ``__init__`` (PLE0101): it returns what
  ``__init__`` returns, None, which Python accepts; returning a value stays;
- ``from ._parser import __doc__`` (F401): it sets the module's docstring;
- ``pickle.loads`` (B301) in the reconstructor a class's ``__reduce__``
  returns (``return (Cls._from_pickled, (..., pickle.dumps(v)))``): it runs
  only while a pickle is already being loaded, and reads what ``__reduce__``
  wrote, so it adds nothing to what loading that pickle does anyway.
"""

from __future__ import annotations

import ast
import os
import re
from collections.abc import Callable
from pathlib import Path

from ..models import Finding, Severity
from . import ast_index
from .ast_index import index
from .context import mark_noise
from .noise_calls import COMMAND_WORD, interpreter_only, passed_parameter, placeholders_only
from .noise_jinja import kind_by_name, renders_no_html
from .noise_paths import PATH_CLASS_CATEGORIES, join_reasons
from .noise_trusted import TRUSTED_RULES, declares_script, project_filters, trusted_why
from .noise_trusted import clear as let_trusted_facts_go
from .roles._common import read_prefix

_EMPTY_HASH_ATTR = re.compile(
    r"\b(?:hashlib\.)?(?:md5|sha1|new\(\s*['\"][\w-]+['\"]\s*\))\(\s*\)\.(?:digest_size|block_size|name)\b")
_HASH_WITH_DATA = re.compile(r"\b(?:hashlib\.)?(?:md5|sha1)\(\s*[^)\s]")
_GLOBALS_WRITE = re.compile(r"\bglobals\(\)\s*(?:\[[^\]]+\]\s*=[^=]|\.update\(|\.setdefault\()")
_PY2_NAME = re.compile(r"`(unicode|basestring|raw_input|long|xrange|unichr|execfile|cmp|file|"
                       r"buffer|apply|intern|StandardError|reduce|reload)`")
_VERSION_TEST = re.compile(r"\bPY_?[23]\b|\bPYTHON_?[23]\b|\bIS_PY_?[23]\b|sys\.version_info|"
                           r"\bsix\.PY_?[23]\b|sys\.version\b")
_RETURN_INIT = re.compile(r"^\s*return\s+(?:super\([^)]*\)|[\w.]+)\.__init__\(")
_IMPORT_DOC = re.compile(r"^\s*from\s+[\w.]+\s+import\s+[^#]*\b__doc__\b")
_SAFE_BASES = {"SafeLoader", "CSafeLoader", "BaseLoader", "CBaseLoader"}


def module_of(lines: list[str]) -> ast.Module | None:
    """A flagged module's tree from its lines (the serialized parse), or
    None when it does not parse: the noise rules' one way to parse."""
    return ast_index.parsed("\n".join(lines))


def _base_name(node: ast.expr) -> str:
    if isinstance(node, ast.Attribute):
        return node.attr
    return node.id if isinstance(node, ast.Name) else ""


def _safe_loader_classes(tree: ast.Module) -> set[str]:
    """Classes of the module derived (directly or through each other) from a safe loader."""
    safe: set[str] = set()
    changed = True
    classes = [n for n in ast.walk(tree) if isinstance(n, ast.ClassDef)]
    while changed:
        changed = False
        for c in classes:
            if c.name not in safe and any(_base_name(b) in _SAFE_BASES | safe for b in c.bases):
                safe.add(c.name)
                changed = True
    return safe


_UNSAFE_LOADER = re.compile(r"\byaml\.C?Loader\b|\bC?UnsafeLoader\b|\bC?FullLoader\b|"
                            r"\bfrom\s+yaml\s+import\b[^\n]*\bC?Loader\b")
_LOADER_ARG = re.compile(r"\bLoader\s*=\s*([\w.]+)|,\s*([\w.]+)\s*\)\s*$")


def _safe_loader(line: str, lines: list[str], tree: Callable[[], ast.Module | None]) -> bool:
    """The loader passed on ``line`` is a class the module derives from a
    safe loader, or a variable in a module that names no unsafe loader at
    all and derives one of its own."""
    m = _LOADER_ARG.search(line)
    if m is None:
        return False  # yaml.load(data) with no loader: unsafe before PyYAML 6
    name = (m.group(1) or m.group(2)).rsplit(".", 1)[-1]
    if _UNSAFE_LOADER.search("\n".join(lines)) or (t := tree()) is None:
        return False
    safe = _safe_loader_classes(t)
    return name in safe or (bool(safe) and name[:1].islower())


def _reconstructors(tree: ast.Module) -> set[str]:
    """Names of functions a ``__reduce__``/``__reduce_ex__`` returns as the
    callable of its tuple."""
    out: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.FunctionDef) and node.name in ("__reduce__", "__reduce_ex__"):
            for ret in ast.walk(node):
                if (isinstance(ret, ast.Return) and isinstance(ret.value, ast.Tuple)
                        and ret.value.elts):
                    name = _base_name(ret.value.elts[0])
                    if name:
                        out.add(name)
    return out


_IMPORT_ERRORS = frozenset({"ImportError", "ModuleNotFoundError", "Exception", "BaseException"})


def _probe_import(tree: ast.Module, line: int) -> bool:
    """The import on ``line`` is in a try body whose handler catches its absence."""
    for node in ast.walk(tree):
        if not isinstance(node, ast.Try) or not node.body:
            continue
        if not node.body[0].lineno <= line <= (node.body[-1].end_lineno or node.body[-1].lineno):
            continue
        if not any(isinstance(n, (ast.Import, ast.ImportFrom)) and n.lineno == line
                   for n in node.body):
            continue
        for h in node.handlers:
            types = h.type.elts if isinstance(h.type, ast.Tuple) else [h.type]
            if h.type is None or any(t is not None and _base_name(t) in _IMPORT_ERRORS
                                     for t in types):
                return True
    return False


def _enclosing_function(tree: ast.Module, line: int) -> str | None:
    best = index(tree).function_at(line)
    return best.name if best else None


def _why(f: Finding, rule: str, lines: list[str], tree: Callable[[], ast.Module | None],
         web: Callable[[], bool], root: Path | None = None) -> str | None:
    assert f.range is not None
    n = f.range.start_line
    text = lines[n - 1] if 0 < n <= len(lines) else ""
    if rule == "B324":
        if _EMPTY_HASH_ATTR.search(text) and not _HASH_WITH_DATA.search(text):
            return "the line only reads an empty hash object's size or name: nothing is hashed"
    elif rule == "B506":
        if _safe_loader(text, lines, tree):
            return ("the loader is one the module derives from yaml's SafeLoader "
                    "(bandit only knows loaders by name)")
    elif rule == "F401":
        if _IMPORT_DOC.search(text) and "__doc__" in (f.message or f.title or ""):
            return "it sets the module's docstring from the module that holds it"
        if text[:1] in (" ", "\t") and (t := tree()) is not None and _probe_import(t, n):
            return ("an import tried for its availability: the except branch handles the "
                    "module's absence")
    elif rule == "PLE0101":
        if _RETURN_INIT.search(text):
            return "it returns what __init__ returns (None), which Python accepts"
    elif rule == "F821":
        m = _PY2_NAME.search(f.message or f.title or "")
        if m and any(_VERSION_TEST.search(x) for x in lines):
            return (f"{m.group(1)} is a Python 2 builtin in a module that branches on the "
                    "version: only its Python 2 branch names it")
        if any(_GLOBALS_WRITE.search(x) for x in lines):
            return "the module defines names at run time through globals(), which pyflakes cannot see"
    elif rule == "B608":
        if (t := tree()) is not None and placeholders_only(t, n):
            return ("only placeholders are formatted into the SQL (', '.join('?' ...)): the "
                    "values are passed as parameters")
    elif rule in _SHELL_RULES:
        if "sys.executable" in text and (t := tree()) is not None and interpreter_only(t, n):
            return "the command is fixed in the code but for the running interpreter's path"
        if (COMMAND_WORD.search(text) and (t := tree()) is not None
                and (param := passed_parameter(t, n)) and not web()):
            return (f"a command-running API: it runs the `{param}` its caller passes, unchanged "
                    "(no web framework in the project); the caller's input is what to check")
    elif rule in ("B105", "B106"):
        m = _LOCAL_DEFAULT_ACCOUNT.search(text)
        account = ((m.group(1), m.group(2), m.group(3)) if m
                   else (t := tree()) is not None and _local_account_dict(t, n))
        if account and account[0] == account[1]:
            return (f"{account[0]}:{account[1]}@{account[2]} is a service's default local "
                    "account: it answers only on this machine, a default the caller replaces, "
                    "not a credential")
    elif rule in ("B610", "B611"):
        if not any(_DJANGO_IMPORT.match(x) for x in lines):
            return ("the module imports nothing of Django: `.extra()` / `RawSQL` here is another "
                    "API's (anyio's typed attributes), not a QuerySet's")
    elif rule == "B030":
        if _EXCEPT_SUM.search(text):
            return ("the handler catches a concatenation of exception tuples (kombu's "
                    "connection_errors + channel_errors), which Python accepts")
    elif rule == "B704":
        if _STRIPTAGS.search(text) and not _MARKUP_KEPT.search(_STRIPTAGS.sub("", text)):
            return "Markup only strips the tags: the result is plain text, not rendered as markup"
    elif rule == "B103":
        m = _CHMOD.search(text)
        if m and (mode := _mode(m.group(1))) is not None and not mode & 0o022:
            return (f"mode {mode:#o}: only the owner can write (execute for others is what a "
                    "directory or a program needs)")
    elif rule == "B701":
        end = max(f.range.end_line or n, n)
        # jinja2's default, not an explicit ``autoescape=False`` (a choice that stays shown)
        if not any("autoescape" in x for x in lines[n - 1:end]) and not web():
            return ("templates without autoescape in a project with no web framework: they "
                    "render the author's own content into documents, no request reaches them")
        if root is not None and (t := tree()) is not None:
            return renders_no_html(t, n, root / f.file, root)
    elif rule == "B702":
        call = "\n".join(lines[n - 1:max(f.range.end_line or n, n)])
        if _MAKO_ESCAPES.search(call):
            return "the template's default filters include `h`: every expression is HTML-escaped"
        if (m := _MAKO_FILE.search(call)) and _not_html(m.group(1)):
            return (f"the template renders {m.group(1)!r}, not HTML: HTML-escaping would "
                    "corrupt it, and no browser reads it")
        if not web():
            return ("Mako templates in a project with no web framework: they render the "
                    "author's own files (code, configuration), no request reaches them")
    elif (rule in ("B301", "B302") and (t := tree()) is not None
          and (fn := _enclosing_function(t, n)) and fn in _reconstructors(t)):
        return (f"{fn}() is the reconstructor __reduce__ returns: it runs only while a pickle "
                "is being loaded, and reads what __reduce__ wrote")
    return None


# scheme://user:password@host with the password the user's own name, on this
# machine only: a broker's or database's out-of-the-box account.
_USER_KEYS = ("userid", "user", "username", "login", "user_id")
_PASSWORD_KEYS = ("password", "passwd", "pwd")
_HOST_KEYS = ("hostname", "host", "server")
_LOCAL_HOSTS = frozenset({"localhost", "127.0.0.1", "::1"})


def _local_account_dict(tree: ast.Module, line: int) -> tuple[str, str, str] | None:
    """(user, password, host) of a dict literal on ``line`` that names a
    user, its password and this machine as host (kombu's
    ``default_connection_params``: ``'userid': 'guest', 'password': 'guest',
    'hostname': 'localhost'``)."""
    for d in ast.walk(tree):
        if not (isinstance(d, ast.Dict) and d.lineno <= line <= (d.end_lineno or d.lineno)):
            continue
        given = {k.value: v.value for k, v in zip(d.keys, d.values, strict=True)
                 if isinstance(k, ast.Constant) and isinstance(k.value, str)
                 and isinstance(v, ast.Constant) and isinstance(v.value, str)}
        user = next((given[k] for k in _USER_KEYS if k in given), None)
        password = next((given[k] for k in _PASSWORD_KEYS if k in given), None)
        host = next((given[k] for k in _HOST_KEYS if k in given), None)
        if user and password and host in _LOCAL_HOSTS:
            return user, password, host
    return None


_DJANGO_IMPORT = re.compile(r"\s*(?:from|import)\s+django\b")
_EXCEPT_SUM = re.compile(r"^\s*except\s*\(?\s*[\w.]+(?:\s*\+\s*(?:[\w.]+|\([^()]*\)))+")
_LOCAL_DEFAULT_ACCOUNT = re.compile(
    r"\w+://(\w+):(\w+)@(localhost|127\.0\.0\.1|\[::1\])(?::\d+)?(?:[/\"']|$)")
_STRIPTAGS = re.compile(r"\bMarkup\((?:[^()]|\([^()]*\))*\)\.striptags\(\)")
_MARKUP_KEPT = re.compile(r"\bMarkup\(")
# Mako's escaping is a default filter, not a flag: ``default_filters=['h']``.
_MAKO_ESCAPES = re.compile(r"default_filters\s*=\s*[\[(][^\])]*['\"]h['\"]")
_MAKO_FILE = re.compile(r"(?:filename|uri)\s*=\s*['\"]([^'\"]+)['\"]")


def _not_html(name: str) -> bool:
    """A template file whose output is not HTML, by its name: ``script.py.mako``
    (``.mako`` stripped, ``.py`` left); a bare ``page.mako`` is unknown."""
    return kind_by_name(name) == "text"


_CHMOD = re.compile(r"\bchmod\([^,]+,\s*(0o[0-7]+|0[0-7]+|\d+)\s*\)")


def _mode(text: str) -> int | None:
    try:
        return int(text, 8) if text.startswith("0") and text != "0" else int(text)
    except ValueError:
        return None


_SHELL_RULES = frozenset({"B601", "B602", "B605"})
_FRAMEWORK = re.compile(
    rb"(?m)^[ \t]*(?:from|import)[ \t]+[^\n]*\b(?:flask|django|fastapi|bottle|starlette|aiohttp"
    rb"|pyramid|tornado|falcon|sanic|quart|werkzeug|http\.server|graphene|rest_framework|cherrypy"
    rb"|web2py|litestar|connexion|wsgiref)\b|BaseHTTPRequestHandler"
    rb"|^[ \t]*from[ \t]+http[ \t]+import[ \t]+[^\n]*\bserver\b")
_SKIP_DIRS = frozenset({".git", ".venv", "venv", "env", "node_modules", "__pycache__", ".tox",
                        ".nox", "build", "dist", "site-packages", ".superqode"})
_MAX_FILES = 3000


def python_files(root: str | os.PathLike[str], skip: frozenset[str], limit: int):
    """Each Python file under ``root`` (folders in ``skip`` or hidden left
    out), then None once and no more past ``limit`` files: the noise rules'
    bounded walks of a project."""
    seen = 0
    for dirpath, dirnames, filenames in os.walk(root):
        dirnames[:] = [d for d in dirnames if d not in skip and not d.startswith(".")]
        for name in filenames:
            if not name.endswith(".py"):
                continue
            seen += 1
            if seen > limit:
                yield None
                return
            yield os.path.join(dirpath, name)


# The project-wide noise rules' walk (the exec runners, the re-raise
# helpers, the format templates, the injected names): its folders left out
# and its bounds, one for all of them.
MODULE_SKIP = frozenset({"node_modules", "venv", ".venv", "build", "dist", "__pycache__",
                         "site-packages"})
MODULE_MAX_FILES = 3000
MODULE_MAX_BYTES = 512 * 1024


def module_text(path: str) -> str | None:
    """A module's text (undecodable bytes replaced); None for a link, no
    regular file, or one over ``MODULE_MAX_BYTES``."""
    data = read_prefix(path, MODULE_MAX_BYTES + 1)
    return None if data is None or len(data) > MODULE_MAX_BYTES else data.decode("utf-8", "replace")


def module_texts(root: str | os.PathLike[str]):
    """(path, text) of each Python module of the project (``python_files``
    over ``MODULE_SKIP``), text None for one over ``MODULE_MAX_BYTES``; a
    link or no regular file is left out; (None, None) once, and no more,
    past ``MODULE_MAX_FILES``: each rule decides what a cut walk, or a
    module too large to read, proves."""
    for path in python_files(root, MODULE_SKIP, MODULE_MAX_FILES):
        if path is None:
            yield None, None
            return
        data = read_prefix(path, MODULE_MAX_BYTES + 1)
        if data is None:
            continue
        yield path, (None if len(data) > MODULE_MAX_BYTES else data.decode("utf-8", "replace"))


def is_web_project(root: Path) -> bool:
    """Whether any Python module of the project imports a web framework (its
    first 16 KB read; the walk bounded). Unknown (too many files) counts as
    a web project: the rule that asks this then keeps the finding shown."""
    for path in python_files(root, _SKIP_DIRS, _MAX_FILES):
        if path is None:
            return True
        head = read_prefix(path, 16384)
        if head is None:
            continue
        if _FRAMEWORK.search(head):
            return True
    return False


_RULES = frozenset({"PLE0101", "B105", "B106", "B610", "B611", "B030", "B608", "B701", "B702", "B704", "B103", "B324", "B506", "F401", "F821", "B301", "B302", *_SHELL_RULES})


def library_noise(findings: list[Finding], lines_of: Callable[[str], list[str] | None] | None,
                  canonical: Callable[[str], str]) -> list[Finding]:
    """``findings`` with what the flagged module proves harmless marked as noise."""
    if lines_of is None:
        return findings
    trees: dict[str, ast.Module | None] = {}
    root = getattr(getattr(lines_of, "__self__", None), "root", None)  # FileLines.lines
    webs: list[bool] = []

    def web() -> bool:
        if not webs:
            webs.append(root is None or is_web_project(Path(root)))
        return webs[0]

    commands: list[bool] = []
    facts: list[tuple] = []

    def project() -> tuple:
        if not facts:
            facts.append(project_filters(Path(root)) if root is not None
                         else ([], {}, frozenset()))
        return facts[0]

    def one_command() -> bool:
        if not commands:
            commands.append(root is not None and not web() and declares_script(Path(root)))
        return commands[0]

    out = []
    for f in findings:
        rule = canonical(f.rule_id)
        if (f.noise is None and (rule in _RULES or rule in TRUSTED_RULES) and f.file and f.range
                and f.file.endswith(".py") and (lines := lines_of(f.file)) is not None):
            file = f.file

            def tree(file=file, lines=lines) -> ast.Module | None:
                if file not in trees:
                    trees[file] = module_of(lines)
                return trees[file]

            if why := _why(f, rule, lines, tree, web, None if root is None else Path(root)) or trusted_why(
                    f, rule, lines, tree, one_command, project):
                low = rule in ("B301", "B302", "B701", "B702", *TRUSTED_RULES) or rule in _SHELL_RULES
                f = mark_noise(f, why, Severity.low if low else Severity.info)
        out.append(f)
    let_trusted_facts_go()
    return out


def _vendor_of_packages(folder: Path) -> bool:
    """A ``vendor/`` folder that holds other projects' packages only: no
    module of its own but ``__init__.py`` (a Django app named vendor has its
    models.py, views.py...)."""
    try:
        entries = list(folder.iterdir())
    except OSError:
        return False
    modules = [e for e in entries if e.suffix == ".py" and e.name != "__init__.py"]
    return not modules and any(e.is_dir() and not e.name.startswith((".", "__")) for e in entries)


def vendored(findings: list[Finding], root: str | os.PathLike[str] | None) -> list[Finding]:
    """A static finding in a package under a ``vendor/`` folder of packages
    (invoke's ``invoke/vendor/yaml/``): another project's code copied in,
    fixed upstream; shown one level lower and noise, as ``vendored/`` is."""
    if root is None:
        return findings
    known: dict[str, bool] = {}
    out = []
    for f in findings:
        parts = (f.file or "").split("/")
        at = parts.index("vendor") if "vendor" in parts[:-2] else -1
        if at >= 0 and f.category in PATH_CLASS_CATEGORIES and "path:vendored" not in f.tags:
            folder = "/".join(parts[:at + 1])
            if folder not in known:
                known[folder] = _vendor_of_packages(Path(root) / folder)
            if known[folder]:
                lowered = f.severity.lower()
                why = f"in vendored code ({folder + '/'!r} holds other projects' packages)"
                f = f.model_copy(update={
                    "severity": lowered, "tags": [*f.tags, "path:vendored"],
                    "severity_reason": join_reasons(f.severity_reason, f"{why}: shown one level "
                                                    f"lower than {f.severity.value}"),
                    "noise": join_reasons(f.noise, why) if f.noise else why})
        out.append(f)
    return out
