"""Two more things a project's own code proves about bandit's reports
(``_web_quiet`` calls these; low noise, never dropped):

- a shell call (B602/B604/B605) in a command-line command (``@click.command``,
  ``@app.cli.command``, typer's ``@app.command``; not a chat bot's
  ``@bot.command``, whose arguments come from strangers) built only from that
  command's own arguments (``os.system("pybabel init -l " + lang)``): whoever
  passes the argument runs the tool in their own shell already. A value from
  anywhere else (a file, a setting, the network) stays;
- ``urlopen`` (B310) of a URL whose scheme and host the code fixes
  (``https://host/...``: a literal, an f-string or ``+`` starting with one,
  also through a local name or ``Request(url)``/``Request(url=...)``):
  B310 warns of ``file:`` and custom schemes, which such a URL cannot have.
  A URL from a parameter or the request, or a host put after a literal
  scheme, stays (and ``_web_flows`` reports the request's as ``ssrf``);
- B104 (all interfaces) as a command-line option's default, or as the
  default of an environment variable named for the listening address
  (``os.environ.get("LISTEN_HOST", "0.0.0.0")``, ``os.getenv("HOST", ...)``):
  the operator picks where the server listens, the way a self-hosted
  server documents it. An address bound in the code, or the default of a
  variable named for something else, stays.
"""

from __future__ import annotations

import ast
import re

from ..codegen import Scopes
from ..noise_urls import fixed_host, url_of

_CLI_DECORATORS = frozenset({"command", "group"})


def _decorator_name(d: ast.AST) -> str:
    f = d.func if isinstance(d, ast.Call) else d
    return f.attr if isinstance(f, ast.Attribute) else (f.id if isinstance(f, ast.Name) else "")


def _cli_decorator(d: ast.AST, tree: ast.AST) -> bool:
    """A command-line framework's command: Flask's ``app.cli.command``, or a
    module that imports click or typer. A chat bot's ``@bot.command()``
    (discord.py) takes its arguments from strangers and is no such tool."""
    text = ast.unparse(d.func if isinstance(d, ast.Call) else d)
    if text.startswith(("click.", "cli.")) or ".cli." in text:
        return True
    return any(isinstance(n, ast.Import | ast.ImportFrom) and any(
        m.split(".")[0] in ("click", "typer") for m in (
            [a.name for a in n.names] if isinstance(n, ast.Import) else [n.module or ""]))
        for n in getattr(tree, "body", []))


def cli_argument_shell(s: Scopes, line: int) -> str | None:
    if not cli_own_arguments(s, line):
        return None
    return ("the command line is built from this command-line tool's own arguments: whoever "
            "passes them runs the tool in their own shell")


def cli_own_arguments(s: Scopes, line: int) -> bool:
    """The call on ``line`` is in a command-line command and takes only that
    command's own arguments (also the context step's question for ``eval``)."""
    calls = s.calls_on(line)
    if not calls:
        return False
    func = s.function_of(calls[0])
    if not isinstance(func, ast.FunctionDef | ast.AsyncFunctionDef) or not any(
            _decorator_name(d) in _CLI_DECORATORS and _cli_decorator(d, s.tree)
            for d in func.decorator_list):
        return False
    a = func.args
    params = {p.arg for p in (*a.posonlyargs, *a.args, *a.kwonlyargs)}
    names = {n.id for c in calls for arg in c.args for n in ast.walk(arg) if isinstance(n, ast.Name)}
    return bool(names) and names <= params


def _fixed_scheme(e: ast.AST | None, func: ast.AST, depth: int = 3) -> bool:
    if e is None:
        return False
    if isinstance(e, ast.Call) and _decorator_name(e) == "Request":
        return _fixed_scheme(url_of(e), func, depth)
    if isinstance(e, ast.Name) and depth > 0:
        values = [n.value for n in ast.walk(func) if isinstance(n, ast.Assign)
                  and any(isinstance(t, ast.Name) and t.id == e.id for t in n.targets)]
        return bool(values) and all(_fixed_scheme(v, func, depth - 1) for v in values)
    first: ast.AST = e
    while isinstance(first, ast.BinOp) and isinstance(first.op, ast.Add):
        first = first.left
    if isinstance(first, ast.JoinedStr) and first.values:
        first = first.values[0]
    return isinstance(first, ast.Constant) and isinstance(first.value, str) \
        and fixed_host(first.value.lower(), first is not e)


def fixed_scheme_urlopen(s: Scopes, line: int) -> str | None:
    opens = [c for c in s.calls_on(line) if _decorator_name(c) == "urlopen"]
    if not opens or not all(_fixed_scheme(url_of(c), s.function_of(c))
                            for c in opens):
        return None
    return "the URL's scheme is fixed to http(s) in the code: no file: or custom scheme reaches it"


_OPTION_CALLS = frozenset({"add_argument", "option", "Option", "add_option"})


def option_default_address(s: Scopes, line: int) -> str | None:
    """B104 on a command-line option's default (``parser.add_argument("--host",
    default="0.0.0.0")``, ``@click.option("--host", default=...)``): the
    operator who starts the server picks where it listens."""
    for c in s.calls_on(line):
        if _decorator_name(c) in _OPTION_CALLS and any(
                k.arg == "default" and isinstance(k.value, ast.Constant)
                and k.value.value in ("0.0.0.0", "::") for k in c.keywords):
            return ("it is a command-line option's default: where the server listens is the "
                    "choice of whoever starts it")
        if _env_read(c) and _ADDRESS_VAR.search(_env_name(c)) and _all_interfaces(_env_default(c)):
            return ("it is the default of an environment variable for the listening address: "
                    "where the server listens is the choice of whoever starts it")
    return None


# An environment variable that holds the address a server listens on
# (LISTEN_HOST, BIND_ADDRESS, FLASK_RUN_HOST, HOST): each word a part of the
# name (``GHOST`` is not ``HOST``).
_ADDRESS_VAR = re.compile(r"(?i)(?:^|_)(?:host|hostname|bind|listen|addr|address|interface|ip)"
                          r"(?:$|_)")
_ENV_OWNERS = frozenset({"environ", "os"})


def _env_read(c: ast.Call) -> bool:
    """``os.environ.get(NAME, default)``, ``environ.get``, ``os.getenv``."""
    f = c.func
    if not isinstance(f, ast.Attribute):
        return isinstance(f, ast.Name) and f.id == "getenv"
    if f.attr == "getenv":
        return isinstance(f.value, ast.Name) and f.value.id == "os"
    return f.attr in ("get", "setdefault") and (
        (isinstance(f.value, ast.Attribute) and f.value.attr == "environ")
        or (isinstance(f.value, ast.Name) and f.value.id == "environ"))


def _env_name(c: ast.Call) -> str:
    first = c.args[0] if c.args else next((k.value for k in c.keywords if k.arg == "key"), None)
    return first.value if isinstance(first, ast.Constant) and isinstance(first.value, str) else ""


def _env_default(c: ast.Call) -> ast.AST | None:
    if len(c.args) > 1:
        return c.args[1]
    return next((k.value for k in c.keywords if k.arg == "default"), None)


def _all_interfaces(e: ast.AST | None) -> bool:
    return isinstance(e, ast.Constant) and e.value in ("0.0.0.0", "::")
