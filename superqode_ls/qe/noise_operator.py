"""Findings that nothing from outside can reach: true, but noise.

A sink is worth acting on when something from outside the program -- a
request, a network peer, a database row another user wrote, a file from
anyone -- can reach it. Three classes where the code itself proves that
nothing does (each marked noise, said why, kept and counted):

- **input the operator already controls**: an injection sink (formatted
  SQL, a shell, ``eval``/``exec``, ``urlopen``) in code only the person who
  runs the program reaches: a Django management command, a click/typer
  command, a ``cli.py``/``__main__.py`` that reads its own argv, a top-level
  ``scripts/``, ``tools/`` or ``bin/`` file, ``manage.py``, ``noxfile.py``,
  ``fabfile.py``, a root ``tasks.py`` (invoke's; not a Celery one),
  ``docs/conf.py`` (a ``setup.py`` that calls ``setup()`` is
  ``noise_project``'s maintainer script; one that does not stays shown). Whoever passes the option owns the
  database or the shell already. It stays shown when the same function
  reads request data or the network, or (SQL) formats a value read from
  the database's rows (second-order input: another user may have written
  it);
- **Markup over the project's own text** (``Markup``, ``mark_safe``,
  ``SafeString``): every value reaching the call is a literal, a
  translation (``_``, ``gettext``, ``lazy_gettext``, ``ngettext``...) of a
  literal whose interpolated values are such text too, an escape call or a
  number, also through the function's own names. A parameter, request
  data, a database value or anything not followed keeps it shown;
- **debug at the development entry point**: ``app.run(debug=True)`` under
  ``if __name__ == "__main__":`` (or in a function only that block calls)
  when the project deploys another entry point -- a WSGI/ASGI server
  (gunicorn, uwsgi, uvicorn...) named in a Procfile, a Dockerfile, a
  compose file or a shell entry point -- and none of those runs this
  module as a script. Without such a file the ``__main__`` block is how the
  application runs, and the finding stays (the vulnerable demo apps). Debug
  on in settings that production reads is not this rule's.
"""

from __future__ import annotations

import ast
import re
from collections.abc import Callable
from pathlib import Path

from ..models import Finding, Severity
from .ast_index import index
from .codegen import _params
from .context import mark_noise
from .noise_library import module_of
from .noise_migrations import _from_rows
from .noise_project import imported_names
from .noise_widgets import widget_markup
from .roles._common import read_head
from .roles._web_quiet_tools import _CLI_DECORATORS, _cli_decorator, _decorator_name

Lines = Callable[[str], "list[str] | None"]

SQL_RULES = frozenset({"B608", "SQL-INJECTION"})
_URL_RULES = frozenset({"B310", "SSRF"})
OPERATOR_RULES = frozenset({*SQL_RULES, "B602", "B604", "B605", "B609", "COMMAND-INJECTION",
                            "B307", "B102", "B310", "SSRF"})
MARKUP_RULES = frozenset({"B703", "B704", "B308"})
DEBUG_RULES = frozenset({"B201", "DEBUG-MODE"})
# The same development server call's other advisory: listening on every interface.
_DEV_SERVER_RULES = frozenset({*DEBUG_RULES, "B104"})

OPERATOR_WHY = "input the operator already controls ({where}): no request or other user reaches it"
MARKUP_WHY = ("Markup over the project's own text (literals, translations of literals, escaped "
              "values or numbers): nothing from outside reaches it")
DEBUG_WHY = ("{what} at the development entry point: the __main__ block of {module}, while "
             "the project deploys {deployed}")

# Files only the operator runs, by name (anywhere) or by top-level folder.
_OPERATOR_FILES = {"manage.py": "manage.py", "noxfile.py": "a nox file",
                   "fabfile.py": "a fabric file"}
_OPERATOR_DIRS = {"scripts": "a script", "tools": "a developer tool", "bin": "a script"}
# A command-line entry point's module: there a function that parses argv is the command.
_CLI_MODULES = frozenset({"cli.py", "__main__.py"})
_COMMANDS = re.compile(r"(^|/)management/commands/[^/]+\.py$")
# A task queue's task takes its arguments from whoever queued it (a view).
_QUEUES = frozenset({"celery", "dramatiq", "huey", "rq"})

# What reads from outside: web request data and the network.
_REQUEST_NAMES = frozenset({"request", "req"})
_READS = frozenset({"urlopen", "recv", "recvfrom", "recv_into"})
_FILE_READS = frozenset({"open", "read", "read_text", "read_bytes", "readline", "readlines",
                         "input", "load", "loads"})
_URLLIB_CALLS = frozenset({"urlopen", "Request", "urlretrieve", "build_opener"})
_NETWORK_CALLS = frozenset({"urlopen", "recv", "recvfrom", "recv_into", "accept", "get", "post",
                            "request", "fetch", "ClientSession", "Client", "AsyncClient"})
_NETWORK_MODULES = frozenset({"requests", "httpx", "urllib", "aiohttp", "socket", "urllib3"})


def operator_noise(findings: list[Finding], lines_of: Lines, root: str | Path | None,
                   canonical: Callable[[str], str]) -> list[Finding]:
    """The findings, those of the three classes above marked as noise."""
    trees: dict[str, ast.Module | None] = {}
    deployed = _Deployment(Path(root)) if root is not None else None
    imports: list[set[str] | None] = []  # the project's imported names, read once if needed
    out = []
    for f in findings:
        rules = {canonical(f.rule_id), *map(canonical, f.related_rules)}
        if (f.noise is None and f.file and f.file.endswith(".py") and f.range
                and rules & (OPERATOR_RULES | MARKUP_RULES | _DEV_SERVER_RULES)):
            if f.file not in trees:
                lines = lines_of(f.file)
                trees[f.file] = module_of(lines) if lines is not None else None
            tree = trees[f.file]
            why = None
            if tree is not None:
                line = f.range.start_line
                if rules & OPERATOR_RULES:
                    why = operator_code(f.file, tree, line, sql=bool(rules & SQL_RULES),
                                        url_open=bool(rules & _URL_RULES))
                if why is None and rules & OPERATOR_RULES and deployed is not None:
                    why = _hand_script(f.file, tree, line, deployed, imports,
                                       sql=bool(rules & SQL_RULES), url_open=bool(rules & _URL_RULES))
                if why is None and rules & MARKUP_RULES:
                    why = MARKUP_WHY if own_text_markup(tree, line) else widget_markup(tree, line)
                if why is None and rules & _DEV_SERVER_RULES and deployed is not None:
                    why = development_server(f.file, tree, line, deployed,
                                             debug=bool(rules & DEBUG_RULES))
            if why is not None:
                f = mark_noise(f, why, Severity.low)
        out.append(f)
    return out


# -- operator-only code ----------------------------------------------------

def operator_code(rel: str, tree: ast.Module, line: int, *, sql: bool = False,
                  url_open: bool = False) -> str | None:
    """Why the sink on ``line`` of ``rel`` takes only what the operator gives
    (the OPERATOR_WHY text), or None."""
    where = _operator_where(rel, tree, line)
    if where is None:
        return None
    scope: ast.AST = index(tree).function_at(line) or tree
    # (a URL-open finding's own call is the sink, not the input)
    if _reads_outside(scope, line if url_open else None) or _file_contents(tree, scope, line) or (
            sql and _from_rows(tree, line)):
        return None
    return OPERATOR_WHY.format(where=where)


def _hand_script(rel: str, tree: ast.Module, line: int, deployed: _Deployment,
                 imports: list[set[str] | None], *, sql: bool, url_open: bool) -> str | None:
    """A module at the project's top level whose sink runs at import, as a
    script (OpenOversight's ``db_backup.py``: ``os.system(f"pg_dump {db}")``
    of the app's own configured database): no module imports it and no
    deployment file names it, so only someone who runs ``python it.py``
    reaches it, with the configuration they already hold. A module something
    imports or a server runs, a sink inside a function, or one that reads a
    request, the network or a file's contents stays."""
    # (``flask run`` imports app.py or wsgi.py by itself, naming neither)
    if "/" in rel or rel in ("setup.py", "conftest.py", "app.py", "wsgi.py", "asgi.py") \
            or index(tree).function_at(line):
        return None
    stem = rel[:-3]
    if re.search(rf"\b{re.escape(stem)}\b", deployed.text(rel) + deployed.scripts()):
        return None
    if not imports:
        imports.append(imported_names(deployed.root))
    if imports[0] is None or stem in imports[0]:
        return None
    if _reads_outside(tree, line if url_open else None) or _file_contents(tree, tree, line) or (
            sql and _from_rows(tree, line)):
        return None
    return OPERATOR_WHY.format(where="a script at the top level that no module imports, run "
                                     "by hand")


def _operator_where(rel: str, tree: ast.Module, line: int) -> str | None:
    parts = rel.split("/")
    name = parts[-1]
    if _COMMANDS.search(rel):
        return "a Django management command"
    if name in _OPERATOR_FILES:
        return _OPERATOR_FILES[name]
    if len(parts) > 1 and parts[0] in _OPERATOR_DIRS:
        return _OPERATOR_DIRS[parts[0]]
    if rel in ("docs/conf.py", "doc/conf.py"):
        return "the documentation's build configuration"
    if rel == "tasks.py" and not _imports(tree) & _QUEUES:
        return "an invoke task file"
    func = index(tree).function_at(line)
    if func is not None and _cli_command(func, tree):
        return "a command-line command's own options"
    if func is not None and name in _CLI_MODULES and _parses_argv(func):
        return "the command line this function parses itself"
    return None


def _imports(tree: ast.Module) -> set[str]:
    out = set()
    for n in ast.walk(tree):
        if isinstance(n, ast.Import):
            out.update(a.name.split(".")[0] for a in n.names)
        elif isinstance(n, ast.ImportFrom) and n.module and not n.level:
            out.add(n.module.split(".")[0])
    return out


def _cli_command(func: ast.FunctionDef | ast.AsyncFunctionDef, tree: ast.Module) -> bool:
    """``func`` is a click/typer command (or Flask's ``app.cli.command``; a
    chat bot's ``@bot.command()`` takes strangers' words and is not one)."""
    return any(_decorator_name(d) in _CLI_DECORATORS and _cli_decorator(d, tree)
               for d in func.decorator_list)


def _parses_argv(func: ast.AST) -> bool:
    """``func`` reads the command line itself (``parser.parse_args()``, ``sys.argv``)."""
    return any((isinstance(n, ast.Attribute) and n.attr == "argv")
               or (isinstance(n, ast.Call) and _name(n.func) in ("parse_args", "parse_known_args"))
               for n in ast.walk(func))


def _file_contents(tree: ast.Module, scope: ast.AST, line: int) -> bool:
    """A file's contents reach the sink on ``line`` (anyone may have written
    it: ``eval(open(path).read())`` stays), also through the function's names."""
    assigned = index(tree).assigned(scope)
    todo: list[ast.AST] = [a for c in index(tree).calls_over(line)
                           for a in [*c.args, *(k.value for k in c.keywords)]]
    seen: set[str] = set()
    while todo:
        for n in ast.walk(todo.pop()):
            if isinstance(n, ast.Call) and _name(n.func) in _FILE_READS:
                return True
            if isinstance(n, ast.Name) and n.id not in seen:
                seen.add(n.id)
                todo.extend(assigned.get(n.id, ()))
    return False


def _reads_outside(scope: ast.AST, sink_line: int | None = None) -> bool:
    """``scope`` reads web request data or the network (other than by a
    call on ``sink_line``)."""
    urllib = set()  # ``urllib.request`` and what it binds: the module, no request
    for n in ast.walk(scope):
        if isinstance(n, ast.Attribute) and n.attr in _URLLIB_CALLS:
            urllib.add(id(n.value))
        if isinstance(n, (ast.Name, ast.Attribute)) and id(n) in urllib:
            continue
        if isinstance(n, ast.Name) and n.id in _REQUEST_NAMES:
            return True
        if isinstance(n, ast.Attribute) and n.attr == "request":  # self.request.GET
            return True
        if isinstance(n, ast.Call):
            f = n.func
            name = f.attr if isinstance(f, ast.Attribute) else f.id if isinstance(f, ast.Name) \
                else ""
            owner = ast.unparse(f.value).split(".")[0] if isinstance(f, ast.Attribute) else ""
            if sink_line is not None and n.lineno <= sink_line <= (n.end_lineno or n.lineno):
                continue
            if name in _READS or (
                    owner in _NETWORK_MODULES and name in _NETWORK_CALLS):
                return True
    return False


# -- Markup over the project's own text ------------------------------------

_MARKUP_CALLS = frozenset({"Markup", "mark_safe", "SafeString", "SafeText"})
_TRANSLATIONS = frozenset({"_", "_l", "gettext", "ugettext", "gettext_lazy", "ugettext_lazy",
                           "lazy_gettext", "ngettext", "ungettext", "ngettext_lazy",
                           "lazy_ngettext", "pgettext", "pgettext_lazy", "lazy_pgettext",
                           "npgettext", "npgettext_lazy"})
# The positional argument that is a count (its text is digits), by translation.
_COUNT_AT = {"ngettext": 2, "ungettext": 2, "ngettext_lazy": 2, "lazy_ngettext": 2,
             "npgettext": 3, "npgettext_lazy": 3}
_ESCAPES = frozenset({"escape", "conditional_escape", "escape_html", "html_escape"})
_NUMBERS = frozenset({"int", "float", "len", "round", "abs"})
_DEPTH = 8


def _name(f: ast.AST) -> str:
    return f.attr if isinstance(f, ast.Attribute) else f.id if isinstance(f, ast.Name) else ""


def own_text_markup(tree: ast.Module, line: int) -> bool:
    """Every Markup/mark_safe call on ``line`` marks the project's own text."""
    calls = [c for c in index(tree).calls_over(line) if _name(c.func) in _MARKUP_CALLS]
    if not calls:
        return False
    for c in calls:
        scope = _scope_of(tree, c)
        if not c.args or not all(_own(a, scope, tree, _DEPTH, frozenset())
                                 for a in [*c.args, *(k.value for k in c.keywords)]):
            return False
    return True


def _scope_of(tree: ast.Module, node: ast.AST) -> ast.AST:
    return index(tree).function_at(node.lineno) or tree


def _own(e: ast.AST, scope: ast.AST, tree: ast.Module, depth: int,
         seen: frozenset[str]) -> bool:
    """``e`` is the project's own text: see the module doc."""
    if depth <= 0:
        return False
    d = depth - 1
    if isinstance(e, ast.Constant):
        return isinstance(e.value, (str, int, float, bool)) or e.value is None
    if isinstance(e, ast.JoinedStr):
        return all(_own(v.value, scope, tree, d, seen) for v in e.values
                   if isinstance(v, ast.FormattedValue))
    if isinstance(e, ast.BinOp) and isinstance(e.op, (ast.Add, ast.Mod)):
        right = e.right.elts if isinstance(e.right, ast.Tuple) else (
            [v for v in e.right.values] if isinstance(e.right, ast.Dict) else [e.right])
        return _own(e.left, scope, tree, d, seen) and all(
            _own(x, scope, tree, d, seen) for x in right)
    if isinstance(e, ast.IfExp):
        return _own(e.body, scope, tree, d, seen) and _own(e.orelse, scope, tree, d, seen)
    if isinstance(e, ast.Call):
        name = _name(e.func)
        if name in _ESCAPES or name in _NUMBERS:
            return True
        if name in ("str", *_MARKUP_CALLS) and len(e.args) == 1 and not e.keywords:
            return _own(e.args[0], scope, tree, d, seen)
        if name in _TRANSLATIONS and isinstance(e.func, ast.Name):
            count = _COUNT_AT.get(name)
            return bool(e.args) and all(
                i == count or _own(a, scope, tree, d, seen) for i, a in enumerate(e.args)) \
                and all(_own(k.value, scope, tree, d, seen) for k in e.keywords)
        if name == "format" and isinstance(e.func, ast.Attribute):
            return _own(e.func.value, scope, tree, d, seen) and all(
                _own(x, scope, tree, d, seen) for x in [*e.args, *(k.value for k in e.keywords)])
        return False
    if isinstance(e, ast.Name):
        if e.id in seen:
            return True
        if e.id in _params(scope):
            return False
        values = index(tree).assigned(scope).get(e.id) if scope is not tree else None
        if not values:
            values = index(tree).assigned(tree).get(e.id) if not _bound_otherwise(
                e.id, scope) else None
            values = [v for v in values or [] if _module_level(tree, v)]
            if values and scope is not tree and _bound_otherwise(e.id, tree):
                return False
        if not values or _bound_otherwise(e.id, scope):
            return False
        return all(_own(v, scope, tree, d, seen | {e.id}) for v in values)
    return False


def _module_level(tree: ast.Module, value: ast.AST) -> bool:
    return any(isinstance(s, ast.Assign) and s.value is value for s in tree.body)


def _bound_otherwise(name: str, scope: ast.AST) -> bool:
    """``name`` is bound in ``scope`` other than by a plain assignment (a
    loop, ``with``, an augmented assignment, an unpacking): not followed."""
    for n in ast.walk(scope):
        targets: list[ast.AST] = []
        if isinstance(n, (ast.For, ast.AsyncFor, ast.comprehension, ast.AugAssign,
                          ast.AnnAssign)):
            targets = [n.target]
        elif isinstance(n, ast.withitem) and n.optional_vars is not None:
            targets = [n.optional_vars]
        elif isinstance(n, ast.Assign):
            targets = [t for t in n.targets if not isinstance(t, ast.Name)]
        elif isinstance(n, ast.NamedExpr):
            targets = [n.target]
        if any(isinstance(x, ast.Name) and x.id == name for t in targets for x in ast.walk(t)):
            return True
    return False


# -- debug at the development entry point ----------------------------------

_RUNS = frozenset({"run", "run_simple"})
# Where a project says how it is deployed: in the module's folder or any above it.
# (one level further under docker/ and deploy/: PowerDNS-Admin's
# docker/common/Dockerfile.app and docker/production/entrypoint.sh)
_DEPLOY_GLOBS = ("Procfile", "Dockerfile*", "*compose*.y*ml", "app.yaml", "fly.toml", "*.ini",
                 "gunicorn.conf.py", "*entrypoint*.sh", "conf/*", "docker/*", "deploy/*",
                 "docker/*/*", "deploy/*/*")
_SERVERS = re.compile(r"\b(gunicorn|uwsgi|uvicorn|hypercorn|daphne|waitress-serve|mod_wsgi|"
                      r"granian)\b")


class _Deployment:
    """What the project's deployment and packaging files say, each folder's
    read once, lazily (one filter run's)."""

    def __init__(self, root: Path) -> None:
        self.root = root
        self._texts: dict[str, str] = {}
        self._scripts: str | None = None

    def _folder(self, rel_dir: str) -> str:
        if rel_dir not in self._texts:
            texts = []
            base = self.root / rel_dir
            for g in _DEPLOY_GLOBS:
                try:
                    paths = sorted(base.glob(g))[:20]
                except (OSError, ValueError):
                    continue
                for p in paths:
                    text = read_head(p, 50_000)  # no link followed, no FIFO waited on
                    if text is not None:
                        texts.append(text)
            self._texts[rel_dir] = "\n".join(texts)
        return self._texts[rel_dir]

    def text(self, rel: str) -> str:
        """The deployment files of ``rel``'s folder and every folder above it."""
        parts = rel.split("/")[:-1]
        return "\n".join(self._folder("/".join(parts[:i])) for i in range(len(parts) + 1))

    def scripts(self) -> str:
        if self._scripts is None:
            out = []
            for n in ("pyproject.toml", "setup.cfg", "setup.py"):
                text = read_head(self.root / n, 200_000)
                if text is not None:
                    out.append(text)
            self._scripts = "\n".join(out)
        return self._scripts


def _runs_script(text: str, rel: str) -> bool:
    """A deployment file runs ``rel`` as a script (``python app.py``,
    ``CMD ["python", "app.py"]``, ``python -m pkg.app``)."""
    name = rel.rsplit("/", 1)[-1]
    module = rel[:-3].replace("/", ".")
    return bool(re.search(rf"python[\d.]*[\"',\s\]]+(?:[\w./-]*/)?{re.escape(name)}\b", text)
                or re.search(rf"-m[\"',\s]+(?:[\w.]*\.)?{re.escape(module)}\b", text))


def development_server(rel: str, tree: ast.Module, line: int, deployed: _Deployment, *,
                       debug: bool = True) -> str | None:
    """Why the ``app.run(...)`` on ``line`` (with ``debug=True`` when
    ``debug``) is the development entry point of a project deployed another
    way, or None."""
    calls = [c for c in index(tree).calls_over(line) if isinstance(c.func, ast.Attribute)
             and c.func.attr in _RUNS and (not debug or any(
                 k.arg in ("debug", "use_debugger") and isinstance(k.value, ast.Constant)
                 and k.value.value is True for k in c.keywords))]
    if not calls or not all(_main_only(tree, c) for c in calls):
        return None
    text = deployed.text(rel)
    server = _SERVERS.search(text)
    if server is None or _runs_script(text, rel) or _declared_script(deployed.scripts(), rel):
        return None
    return DEBUG_WHY.format(what="debug" if debug else "the development server",
                            module=rel, deployed=f"a {server.group(0)} server")


def _main_guard(node: ast.AST) -> bool:
    t = getattr(node, "test", None)
    return (isinstance(node, ast.If) and isinstance(t, ast.Compare)
            and isinstance(t.left, ast.Name) and t.left.id == "__name__"
            and len(t.comparators) == 1 and isinstance(t.comparators[0], ast.Constant)
            and t.comparators[0].value == "__main__")


def _main_only(tree: ast.Module, call: ast.Call) -> bool:
    """``call`` runs only from the module's ``__main__`` block: inside it,
    or in a module-level function that only that block names."""
    guards = [s for s in tree.body if _main_guard(s)]
    inside = any(call is n for g in guards for b in g.body for n in ast.walk(b))
    if inside:
        return True
    func = index(tree).function_at(call.lineno)
    if func is None or func not in tree.body:
        return False
    uses = [n for n in ast.walk(tree) if isinstance(n, ast.Name) and n.id == func.name]
    in_guard = [n for g in guards for b in g.body for n in ast.walk(b)
                if isinstance(n, ast.Name) and n.id == func.name]
    return bool(in_guard) and len(uses) == len(in_guard)


def _declared_script(scripts: str, rel: str) -> bool:
    """The module is an installed command's entry point (``pkg.run:main``
    in the project's scripts): what its users run, kept shown."""
    module = rel[:-3].replace("/", ".")
    for prefix in ("src.", "lib."):
        module = module.removeprefix(prefix)
    return f"{module}:" in scripts
