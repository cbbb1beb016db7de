"""A shell command built only from the application's own values: noise.

Bandit's shell rules (B602 ``shell=True``, B604, B605 ``os.system``) flag
every command that is not one literal. Application code often formats its
own values into one -- ``os.system(f'chown {uid}:{gid} "{DATA_DIR}"')`` --
where every value is a number, a module-level constant or setting (set when
the module is imported: literals, the environment, paths built from them),
or a local built from those. Whoever sets those runs the program already:
the same "input the operator already controls" as ``noise_operator``, but
proved by where each value comes from instead of by where the code runs.

Fails closed: the finding stays shown when any value comes from a function
parameter, a ``global`` a function rebinds, request data, a call the rule
does not know (a database query, a network read, another module's
function) or any name it cannot follow.
"""

from __future__ import annotations

import ast
import re
from collections.abc import Callable

from ..models import Finding, Severity
from .ast_index import index
from .codegen import _own_nodes, _params
from .context import mark_noise
from .noise_defaults import callee
from .noise_library import module_of
from .noise_operator import _reads_outside

Lines = Callable[[str], "list[str] | None"]

SHELL_RULES = frozenset({"B602", "B604", "B605"})
OWN_WHY = ("shell command built only from the application's own values (literals, numbers, "
           "module-level settings and paths built from them): no request or other user reaches it")

_SHELL_CALLS = frozenset({"system", "popen", "Popen", "run", "call", "check_call",
                          "check_output", "getoutput", "getstatusoutput", "spawn"})
# Calls whose result is as much the application's own as their arguments.
_PURE = frozenset({"str", "int", "float", "Path", "PurePath", "PosixPath", "join", "abspath",
                   "realpath", "normpath", "dirname", "basename", "expanduser", "fspath"})
# Calls that make a value the shell cannot misread, whatever it held.
_QUOTES = frozenset({"quote"})
# The process's own identity and place: numbers and paths no one else chooses.
_OWN_CALLS = frozenset({"getuid", "geteuid", "getgid", "getegid", "getpid", "getcwd",
                        "cpu_count", "gettempdir"})
# Reading the environment: the operator sets it.
_ENV_CALLS = frozenset({"getenv"})
_PATH_METHODS = frozenset({"resolve", "absolute", "expanduser", "with_name", "with_suffix",
                           "joinpath", "as_posix", "format"})
_PATH_ATTRS = frozenset({"parent", "name", "stem", "suffix", "parents"})
_DEPTH = 12


def own_shell_noise(findings: list[Finding], lines_of: Lines,
                    canonical: Callable[[str], str]) -> list[Finding]:
    """The findings, a shell command built only from own values marked noise."""
    trees: dict[str, ast.Module | None] = {}
    facts: dict[str, _Facts] = {}
    out = []
    for f in findings:
        rules = {canonical(f.rule_id), *map(canonical, f.related_rules)}
        if (f.noise is None and f.file and f.file.endswith(".py") and f.range
                and rules & SHELL_RULES):
            if f.file not in trees:
                lines = lines_of(f.file)
                trees[f.file] = module_of(lines) if lines is not None else None
            tree = trees[f.file]
            if tree is not None and f.file not in facts:
                facts[f.file] = _Facts(tree)
            if tree is not None and own_command(tree, f.range.start_line,
                                                _package(f.file), facts[f.file]):
                f = mark_noise(f, OWN_WHY, Severity.low)
        out.append(f)
    return out


def _package(rel: str) -> str:
    """The top-level package a project file belongs to (``src/`` skipped)."""
    parts = rel.split("/")
    if parts[0] == "src" and len(parts) > 2:
        parts = parts[1:]
    return parts[0] if len(parts) > 1 else ""


class _Facts:
    """What every finding in one module asks of its whole tree, walked once."""

    def __init__(self, tree: ast.Module) -> None:
        self.shell_calls: list[ast.Call] = []
        self.functions: list[ast.FunctionDef | ast.AsyncFunctionDef | ast.Lambda] = []
        self.rebound: set[str] = set()
        for n in ast.walk(tree):
            if isinstance(n, ast.Call) and callee(n) in _SHELL_CALLS:
                self.shell_calls.append(n)
            elif isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda)):
                self.functions.append(n)
            elif isinstance(n, (ast.Global, ast.Nonlocal)):
                self.rebound.update(n.names)


def own_command(tree: ast.Module, line: int, package: str = "",
                facts: _Facts | None = None) -> bool:
    """The shell call on ``line`` runs a command made only of own values."""
    facts = _Facts(tree) if facts is None else facts
    calls = [n for n in facts.shell_calls if n.lineno <= line <= (n.end_lineno or n.lineno)]
    if len(calls) != 1:
        return False
    call = calls[0]
    command = call.args[0] if call.args else next(
        (k.value for k in call.keywords if k.arg in ("args", "cmd", "command")), None)
    if command is None:
        return False
    scope = index(tree).function_at(line)
    if scope is not None and _reads_outside(scope):
        return False
    return _Own(tree, scope, package, facts).value(command, _DEPTH)


class _Own:
    """Whether an expression holds only the application's own values."""

    def __init__(self, tree: ast.Module, scope: ast.AST | None, package: str,
                 facts: _Facts) -> None:
        self.tree = tree
        self.package = package
        self.scope = scope
        self.enclosing = [n for n in facts.functions if scope is not None
                          and n is not scope and n.lineno <= getattr(scope, "lineno", 0)
                          and getattr(scope, "end_lineno", 0) <= (n.end_lineno or n.lineno)]
        self.rebound = facts.rebound

    def value(self, e: ast.expr, depth: int, scope: ast.AST | None = ...) -> bool:  # type: ignore[assignment]
        scope = self.scope if scope is ... else scope
        if depth <= 0:
            return False
        d = depth - 1
        if isinstance(e, ast.Constant):
            return True
        if isinstance(e, ast.JoinedStr):
            return all(self.value(v, d, scope) for v in e.values)
        if isinstance(e, ast.FormattedValue):
            return self.value(e.value, d, scope) and (
                e.format_spec is None or self.value(e.format_spec, d, scope))
        if isinstance(e, ast.BinOp):
            return self.value(e.left, d, scope) and self.value(e.right, d, scope)
        if isinstance(e, (ast.Tuple, ast.List)):
            return all(self.value(v, d, scope) for v in e.elts)
        if isinstance(e, ast.IfExp):
            return self.value(e.body, d, scope) and self.value(e.orelse, d, scope)
        if isinstance(e, ast.BoolOp):
            return all(self.value(v, d, scope) for v in e.values)
        if isinstance(e, ast.Attribute):
            # A setting's field (CONSTANTS.DATA_DIR) or a path's part (.parent).
            return self.value(e.value, d, scope)
        if isinstance(e, ast.Subscript):
            return _environ(e.value) and _operator_variable(e.slice)
        if isinstance(e, ast.Call):
            return self._call(e, d, scope)
        if isinstance(e, ast.Name):
            return self._name(e.id, d, scope)
        return False

    def _call(self, e: ast.Call, d: int, scope: ast.AST | None) -> bool:
        f = e.func
        name = callee(e)
        if name in _QUOTES:
            return True
        args = [*e.args, *(k.value for k in e.keywords)]
        if any(isinstance(a, ast.Starred) for a in e.args) or any(
                k.arg is None for k in e.keywords):
            return False
        if name in _OWN_CALLS and not args:
            return True
        if name in _ENV_CALLS or (name == "get" and isinstance(f, ast.Attribute)
                                  and _environ(f.value)):
            return _operator_variable(args[0] if args else None) and all(
                self.value(a, d, scope) for a in args)
        if name in _PURE or (isinstance(f, ast.Attribute) and name in _PATH_METHODS
                             and self.value(f.value, d, scope)):
            return all(self.value(a, d, scope) for a in args)
        return False

    def _name(self, name: str, d: int, scope: ast.AST | None) -> bool:
        if name in self.rebound:
            return False
        if any(_binds(outer, name) for outer in self.enclosing):
            return False  # a closure's variable: the enclosing call chose it
        if scope is not None and isinstance(scope, (ast.FunctionDef, ast.AsyncFunctionDef)):
            if name in _params(scope):
                return False
            imported = self._imported(scope, name)
            if imported is not None:
                return imported
            values = _bindings(scope, name)
            if values:
                return all(v is not None and self.value(v, d, scope) for v in values)
        return self._module_name(name, d)

    def _imported(self, scope: ast.AST, name: str) -> bool | None:
        """None when ``scope`` does not import ``name``; else whether it is a
        constant of the project's own modules (by the convention of its name)."""
        for node in _own_nodes(scope):
            if isinstance(node, ast.ImportFrom) and any(
                    (a.asname or a.name) == name for a in node.names):
                own = node.level > 0 or (node.module or "").split(".")[0] == self.package
                return own and name.isupper()
            if isinstance(node, ast.Import) and any(
                    (a.asname or a.name.split(".")[0]) == name for a in node.names):
                return False
        return None

    def _module_name(self, name: str, d: int) -> bool:
        imported = self._imported(self.tree, name)
        if imported is not None:
            return imported
        values = _bindings(self.tree, name)
        if not values:
            return False
        return all(v is not None and self.value(v, d, None) for v in values)


# What a CGI server sets from the request (RFC 3875): the environment is the
# operator's only where the request cannot write it.
_CGI_VARIABLES = re.compile(r"^(HTTP_\w*|QUERY_STRING|PATH_INFO|PATH_TRANSLATED|REQUEST_\w+|"
                            r"CONTENT_(TYPE|LENGTH)|REMOTE_\w+|AUTH_TYPE|SCRIPT_NAME)$")


def _operator_variable(key: ast.expr | None) -> bool:
    """An environment variable named by a literal that no request sets."""
    return (isinstance(key, ast.Constant) and isinstance(key.value, str)
            and not _CGI_VARIABLES.match(key.value.upper()))


def _environ(e: ast.expr) -> bool:
    return (isinstance(e, ast.Attribute) and e.attr == "environ"
            and isinstance(e.value, ast.Name) and e.value.id == "os")


def _binds(func: ast.AST, name: str) -> bool:
    """``func`` has ``name`` as a parameter or binds it in its own body."""
    return name in _params(func) or bool(_bindings(func, name))


def _bindings(scope: ast.AST, name: str) -> list[ast.expr | None]:
    """The values ``name`` is bound to directly in ``scope``, None for a
    binding whose value is not one expression (a loop target, a with, an
    unpacking, a definition): never followed."""
    out: list[ast.expr | None] = []
    for node in _own_nodes(scope):
        if isinstance(node, ast.Assign):
            for t in node.targets:
                if isinstance(t, ast.Name) and t.id == name:
                    out.append(node.value)
                elif any(isinstance(n, ast.Name) and n.id == name for n in ast.walk(t)):
                    out.append(None)
        elif isinstance(node, (ast.AnnAssign, ast.AugAssign)) and isinstance(
                node.target, ast.Name) and node.target.id == name:
            out.append(node.value)
        elif isinstance(node, (ast.For, ast.AsyncFor, ast.With, ast.AsyncWith,
                               ast.NamedExpr, ast.ExceptHandler, ast.comprehension,
                               ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef,
                               ast.Import, ast.ImportFrom)):
            names = _bound_names(node)
            if name in names:
                out.append(None)
    return out


def _bound_names(node: ast.AST) -> set[str]:
    if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
        return {node.name}
    if isinstance(node, ast.ExceptHandler):
        return {node.name} if node.name else set()
    if isinstance(node, (ast.Import, ast.ImportFrom)):
        return {(a.asname or a.name.split(".")[0]) for a in node.names}
    targets: list[ast.AST] = []
    if isinstance(node, (ast.For, ast.AsyncFor, ast.comprehension, ast.NamedExpr)):
        targets = [node.target]
    elif isinstance(node, (ast.With, ast.AsyncWith)):
        targets = [i.optional_vars for i in node.items if i.optional_vars is not None]
    return {n.id for t in targets for n in ast.walk(t) if isinstance(n, ast.Name)}
