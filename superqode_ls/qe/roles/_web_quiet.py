"""What a web application's own code proves about security_tester's
findings, after bandit's and the pattern checks' reports are merged: a
finding the code shows cannot be exploited is noise (counted, one click
away), never dropped.

- SQL formatted only from the code's own text (literals, a choice between
  literals, a loop over a literal list of table names, ``_web_quiet_sql``):
  low noise;
- SQL formatted only from values a data-flow check inside the function
  proves checked or owned where the query runs (``_web_defs``: a
  whitelist check that dominates the sink, an escaping helper, the ORM's
  own names, placeholders): low noise;
- SQL formatted only from numbers (``sql-injection``, bandit's B608): a
  Flask/FastAPI route parameter the framework converts (``<int:id>``,
  ``id: int``) or ``int(...)``/``float(...)`` of request data cannot carry
  SQL: low noise (the flaw there may be a missing ownership check, which no
  rule judges). A ``<string:...>``/``<path:...>`` segment stays high;
- ``pickle``/``marshal`` loads (B301/B302) of a file whose path the project
  fixes itself (a literal, a module constant, ``os.path.join`` of
  ``__file__`` and literals, a parameter whose default and every caller in
  the module pass one): its own model or cache, low noise; a load of
  request data or an upload stays (raised to high by ``qe.context``);
- ``path-traversal`` through a Flask route segment with the default
  converter followed by fixed text (``id + ".pickle"``): the converter
  refuses ``/``, and with text after it the segment is never ``..``:
  low noise (a POSIX server's view: Windows also splits at ``\\``).
  ``<path:...>`` and query or body data stay;
- B104 (all interfaces) on an application server's run call (``app.run``,
  ``uvicorn.run``, ``run_app``) that does not turn debug on, in a module
  that never does: a deployment choice, low noise; with debug on it stays
  (the debugger is then open to the network), and so does a socket bound by
  hand;
- a command-line tool's shell call of its own arguments, ``urlopen`` of a
  fixed http(s) URL, B104 on a command-line option's default: see
  ``_web_quiet_tools``.
- a redirect back to the Referer, debug under a debug flag, a JWT decode
  beside a verification setting, a sign-in marker or a local default URL
  as a password, ``self.path`` of a class that serves no request, a
  command helper that starts no process: see ``_web_quiet_guards``.
"""

from __future__ import annotations

import ast
import re
import time
from collections.abc import Callable
from pathlib import Path

from ...models import Finding, Severity
from ...workspace.pyast import parse as parse_python
from ..codegen import Scopes
from ..context import mark_noise
from ..noise_context import UNFILTERED
from ._web_defs import safe_at
from ._web_quiet_guards import (
    FLOW_RULES,
    debug_flag_guarded,
    environment_default,
    jwt_verify_setting,
    own_attribute_input,
    own_command_helper,
    referer_redirect,
    sign_in_marker,
)
from ._web_quiet_sql import assigned_values, constant_text
from ._web_quiet_text import (
    ProjectDefs,
    caller_checked_sql,
    literal_template,
    parse_or_none,
    regex_checked_reflection,
    shown_text_password,
)
from ._web_quiet_tools import cli_argument_shell, fixed_scheme_urlopen, option_default_address
from ._web_sinks import from_request

_SQL_RULES = frozenset({"sql-injection", "B608", "S608"})
_PICKLE_RULES = frozenset({"B301", "B302", "S301", "S302"})
_BIND_RULES = frozenset({"B104", "S104"})
_SHELL_RULES = frozenset({"B602", "B604", "B605", "S602", "S604", "S605"})
_URLOPEN_RULES = frozenset({"B310", "S310"})
_NUMERIC = frozenset({"int", "float", "bool", "len"})
_NUMBER_CONVERTER = re.compile(r"<(?:int|float):(\w+)>|\{(\w+):(?:int|float)\}")
# a Flask segment the default converter (or ``string:``) fills: no "/" in it
_SEGMENT = re.compile(r"<(?:string:)?(\w+)>|<string\([^)]*\):(\w+)>")
_ROUTE = frozenset({"route", "get", "post", "put", "delete", "patch", "api_route"})
_PATH_BUILD = frozenset({"join", "Path", "PurePath", "abspath", "dirname", "realpath",
                         "normpath", "resolve", "expanduser"})
_DEPTH = 6
_SERVER_RUN = frozenset({"run", "run_app", "run_simple", "serve"})
_TEXT_RULES = frozenset({"path-traversal", "template-injection", "hardcoded-db-password",
                         "reflected-xss", "open-redirect", "debug-mode", "B201", "S201",
                         "jwt-no-verify", "ssrf", "xpath-injection", "command-injection"})


def quiet(findings: list[Finding], text: Callable[[str], str | None],
          stop: float | None = None, late: list[Finding] | None = None,
          root: Path | None = None) -> list[Finding]:
    """``findings`` with those the code proves harmless marked as noise;
    ``text`` gives a project file's source by its path. Past ``stop``
    (``time.monotonic()``) no further file is parsed: a finding of such a
    file is kept as it is, tagged ``unfiltered`` and added to ``late`` (on
    sqlalchemy this step parsed 65 large modules, 4-5 s on a loaded 2-core
    machine, after the role's tools had stopped). ``root``: the project's
    folder, for the template rule's look at the methods a template is made
    of (without it that rule keeps its findings)."""
    modules: dict[str, Scopes | None] = {}
    defs = ProjectDefs(root, parse_or_none)

    def scopes(rel: str) -> Scopes | None:
        if rel not in modules:
            if stop is not None and time.monotonic() > stop:
                return _LATE
            source = text(rel)
            try:
                modules[rel] = Scopes(parse_python(source)) if source else None
            except (SyntaxError, ValueError):
                modules[rel] = None
        return modules[rel]

    out = []
    for f in findings:
        rules = {f.rule_id, *f.related_rules}
        if f.noise is None and f.file and f.file.endswith(".py") and f.range \
                and rules & (_SQL_RULES | _PICKLE_RULES | _BIND_RULES | _SHELL_RULES
                             | _URLOPEN_RULES | _TEXT_RULES) \
                and (s := scopes(f.file)) is not None:
            if s is _LATE:
                f = f.model_copy(update={"tags": [*f.tags, UNFILTERED]})
                if late is not None:
                    late.append(f)
                out.append(f)
                continue
            line = f.range.start_line
            why = None
            if rules & _SQL_RULES:
                why = _numbers_only_sql(s, line)
            elif rules & _PICKLE_RULES:
                why = _own_file_load(s, line)
            elif "path-traversal" in rules:
                why = _segment_with_suffix(s, line)
            elif "template-injection" in rules:
                why = literal_template(s, line, root, defs)
            elif f.rule_id == "hardcoded-db-password":
                why = shown_text_password(s, line) or sign_in_marker(s, line) \
                    or environment_default(s, line)
            elif "open-redirect" in rules:
                why = referer_redirect(s, line)
            elif rules & {"debug-mode", "B201", "S201"}:
                why = debug_flag_guarded(s, line)
            elif "jwt-no-verify" in rules:
                why = jwt_verify_setting(s, line)
            elif "reflected-xss" in rules:
                why = regex_checked_reflection(s, line, _function)
            elif rules & _BIND_RULES and not rules & {"B201", "debug-mode"}:
                why = _bind_without_debug(s, line) or option_default_address(s, line)
            elif f.rule_id == "command-injection":
                why = own_command_helper(s, line, defs)
            elif f.rule_id in _SHELL_RULES and "command-injection" not in rules:
                why = cli_argument_shell(s, line)
            elif f.rule_id in _URLOPEN_RULES and "ssrf" not in rules:
                why = fixed_scheme_urlopen(s, line)
            if why is None and rules & FLOW_RULES:
                why = own_attribute_input(s, line)
            if why is not None:
                f = mark_noise(f, why, Severity.low)
        out.append(f)
    return out


_LATE = Scopes(ast.Module(body=[], type_ignores=[]))  # a file reached after ``stop``


def _function(s: Scopes, line: int) -> ast.FunctionDef | ast.AsyncFunctionDef | None:
    """The innermost function around ``line`` (from the functions ``Scopes``
    listed in its one walk: a large file may hold hundreds of B608)."""
    best = None
    for node in s.functions:
        if node.lineno <= line <= (node.end_lineno or node.lineno) \
                and (best is None or node.lineno > best.lineno):
            best = node
    return best


def _route_texts(func: ast.AST) -> list[str]:
    return [str(d.args[0].value) for d in getattr(func, "decorator_list", [])
            if isinstance(d, ast.Call) and isinstance(d.func, ast.Attribute)
            and d.func.attr in _ROUTE and d.args and isinstance(d.args[0], ast.Constant)
            and isinstance(d.args[0].value, str)]


def _number_params(func: ast.FunctionDef | ast.AsyncFunctionDef, fastapi: bool) -> set[str]:
    """Route parameters the framework converts to numbers: Flask's
    ``<int:id>``; an ``int`` annotation only where FastAPI enforces it
    (Flask ignores ``def view(id: int)``: ``/<id>`` stays text)."""
    out = {m.group(1) or m.group(2) for t in _route_texts(func)
           for m in _NUMBER_CONVERTER.finditer(t)}
    if fastapi and _route_texts(func):
        a = func.args
        out |= {p.arg for p in (*a.posonlyargs, *a.args, *a.kwonlyargs)
                if isinstance(p.annotation, ast.Name) and p.annotation.id in ("int", "float")}
    return out


def _numeric(e: ast.AST, func: ast.AST, params: set[str], depth: int = _DEPTH) -> bool:
    if isinstance(e, ast.Constant):
        return not isinstance(e.value, str | bytes)
    if isinstance(e, ast.Call) and isinstance(e.func, ast.Name) and e.func.id in _NUMERIC:
        return True
    if isinstance(e, ast.BinOp) and not isinstance(e.op, ast.Mod | ast.Add):
        return True  # arithmetic: a number
    if isinstance(e, ast.Name) and depth > 0:
        values = assigned_values(func, e.id)
        if values is None:
            return False
        if e.id in params:
            return all(_numeric(v, func, params, depth - 1) for v in values)
        return bool(values) and all(_numeric(v, func, params, depth - 1) for v in values)
    return False


def _formatted(e: ast.AST) -> list[ast.AST] | None:
    """The values formatted into a string expression; None when it is none."""
    if isinstance(e, ast.JoinedStr):
        return [v.value for v in e.values if isinstance(v, ast.FormattedValue)]
    if isinstance(e, ast.BinOp) and isinstance(e.op, ast.Mod) \
            and isinstance(e.left, ast.Constant | ast.JoinedStr):
        return list(e.right.elts) if isinstance(e.right, ast.Tuple) else [e.right]
    if isinstance(e, ast.BinOp) and isinstance(e.op, ast.Add):
        out = []
        for side in (e.left, e.right):
            if isinstance(side, ast.Constant):
                continue
            inner = _formatted(side)
            out.extend(inner if inner is not None else [side])
        return out
    if isinstance(e, ast.Call) and isinstance(e.func, ast.Attribute) and e.func.attr == "format" \
            and isinstance(e.func.value, ast.Constant):
        return [*e.args, *(k.value for k in e.keywords)]
    return None


def _numbers_only_sql(s: Scopes, line: int) -> str | None:
    func = _function(s, line)
    if func is None:
        return None
    fastapi = any(isinstance(n, ast.ImportFrom) and (n.module or "").startswith("fastapi")
                  or isinstance(n, ast.Import) and any(a.name.startswith("fastapi") for a in n.names)
                  for n in s.tree.body)
    params = _number_params(func, fastapi)
    built = [n for n in ast.walk(func) if getattr(n, "lineno", 0) == line
             and (values := _formatted(n)) is not None and values
             and not isinstance(s.parent.get(n), ast.BinOp | ast.JoinedStr | ast.FormattedValue)]
    if not built:
        return None
    values = [v for n in built for v in (_formatted(n) or [])]
    if all(_numeric(v, func, params) for v in values):
        return ("only numbers are formatted into this SQL (a converted route parameter, "
                "int(...)): they cannot carry SQL")
    if all(_numeric(v, func, params) or constant_text(s, v, func) for v in values):
        return ("only the code's own text is formatted into this SQL (literals, a choice "
                "between literals, a loop over a literal list): no value from outside")
    if all(safe_at(s, func, n, _formatted(n) or []) for n in built):
        return ("every value formatted into this SQL is checked or owned by the code where the "
                "query runs (a whitelist check before it, a quote-doubling or escaping helper, "
                "a lookup in a dict of literals, the ORM's own table and column names, a "
                "table or column name the code defines (its class attributes, configuration, a "
                "dataclass's fields: identifiers cannot be bound, the values are), a "
                "library parameter typed as a number, SQL its caller writes by the library's "
                "documented contract or on its own command line): no text from outside "
                "reaches it unchecked")
    return caller_checked_sql(s, func, built, values)


def _fixed(s: Scopes, e: ast.AST, func: ast.AST, depth: int = _DEPTH) -> bool:
    """A path the project fixes itself."""
    if depth <= 0:
        return False
    if isinstance(e, ast.Constant):
        return isinstance(e.value, str | bytes)
    if isinstance(e, ast.Name):
        if e.id == "__file__":
            return True
        if isinstance(func, ast.FunctionDef | ast.AsyncFunctionDef) and e.id in _param_names(func):
            return _fixed_param(s, func, e.id, depth - 1)
        values = assigned_values(func, e.id) if func is not s.tree else []
        if values is None:  # a loop or unpacking target: not followed
            return False
        if not values:  # not given a value here: the module's name, if any
            values = assigned_values(s.tree, e.id) if _module_name(s, e.id) else None
            func = s.tree
        return bool(values) and all(_fixed(s, v, func, depth - 1) for v in values)
    if isinstance(e, ast.JoinedStr):
        return all(isinstance(v, ast.Constant) or _fixed(s, v.value, func, depth - 1)
                   for v in e.values)
    if isinstance(e, ast.BinOp) and isinstance(e.op, ast.Add | ast.Div):
        return _fixed(s, e.left, func, depth - 1) and _fixed(s, e.right, func, depth - 1)
    if isinstance(e, ast.Attribute) and e.attr == "parent":
        return _fixed(s, e.value, func, depth - 1)
    if isinstance(e, ast.Call):
        name = e.func.attr if isinstance(e.func, ast.Attribute) else getattr(e.func, "id", "")
        return name in _PATH_BUILD and bool(e.args) and all(
            _fixed(s, a, func, depth - 1) for a in e.args) and (
            not isinstance(e.func, ast.Attribute) or name != "resolve"
            or _fixed(s, e.func.value, func, depth - 1))
    return False


def _module_name(s: Scopes, name: str) -> bool:
    return any(isinstance(n, ast.Assign) and any(isinstance(t, ast.Name) and t.id == name
                                                 for t in n.targets) for n in s.tree.body)


def _param_names(func: ast.FunctionDef | ast.AsyncFunctionDef) -> list[str]:
    a = func.args
    return [p.arg for p in (*a.posonlyargs, *a.args, *a.kwonlyargs)]


def _fixed_param(s: Scopes, func: ast.FunctionDef | ast.AsyncFunctionDef, name: str,
                 depth: int) -> bool:
    """A parameter whose default and every argument the module's calls of
    the function pass for it are fixed paths (``_load(self, path)`` called
    as ``self._load(model_path)`` where ``model_path="model.pkl"``); a
    route's parameter never is."""
    if _route_texts(func) or depth <= 0:
        return False
    a = func.args
    positional = [p.arg for p in (*a.posonlyargs, *a.args)]
    defaults = dict(zip(positional[::-1], a.defaults[::-1], strict=False))
    defaults.update({p.arg: d for p, d in zip(a.kwonlyargs, a.kw_defaults, strict=True) if d})
    if name in defaults and not _fixed(s, defaults[name], s.tree, depth):
        return False
    method = bool(positional) and positional[0] in ("self", "cls")
    calls = [c for c in ast.walk(s.tree) if isinstance(c, ast.Call)
             and (c.func.attr if isinstance(c.func, ast.Attribute)
                  else getattr(c.func, "id", None)) == func.name]
    if not calls and name not in defaults:
        return False
    for c in calls:
        index = positional.index(name) - (1 if method and isinstance(c.func, ast.Attribute)
                                          else 0) if name in positional else -1
        arg = next((k.value for k in c.keywords if k.arg == name), None)
        if arg is None and 0 <= index < len(c.args):
            arg = c.args[index]
        if arg is None and any(isinstance(x, ast.Starred) for x in c.args) or any(
                k.arg is None for k in c.keywords):
            return False
        if arg is not None and not _fixed(s, arg, s.function_of(c), depth):
            return False
    return True


def _opened_from(func: ast.AST, name: str) -> list[ast.AST] | None:
    """The path ``name``'s file was opened from (``with open(p) as f``)."""
    for node in ast.walk(func):
        if isinstance(node, ast.withitem) and isinstance(node.optional_vars, ast.Name) \
                and node.optional_vars.id == name:
            return [node.context_expr]
    values = assigned_values(func, name)
    return values or None


def _open_path(call: ast.AST) -> ast.AST | None:
    if isinstance(call, ast.Call) and call.args:
        f = call.func
        name = f.attr if isinstance(f, ast.Attribute) else getattr(f, "id", "")
        if name == "open":
            return call.args[0]
    return None


def _own_file_load(s: Scopes, line: int) -> str | None:
    loads = [c for c in s.calls_on(line) if isinstance(c.func, ast.Attribute)
             and c.func.attr in ("load", "loads") and isinstance(c.func.value, ast.Name)
             and c.func.value.id in ("pickle", "cPickle", "marshal", "dill", "joblib") and c.args]
    if not loads:
        return None
    for c in loads:
        func = s.function_of(c)
        arg = c.args[0]
        sources = _opened_from(func, arg.id) if isinstance(arg, ast.Name) else [arg]
        paths = [_open_path(x) for x in sources or []]
        if not paths or any(p is None or not _fixed(s, p, func) for p in paths):
            return None
    return "it loads a file whose path the project fixes itself (its own model or data), " \
           "not data a client sends"


def _segment_with_suffix(s: Scopes, line: int) -> str | None:
    func = _function(s, line)
    if func is None:
        return None
    routes = _route_texts(func)
    segments = {m.group(1) or m.group(2) for t in routes for m in _SEGMENT.finditer(t)}
    # a ``<path:...>`` converter (or any other) takes "/": not this rule's
    if not segments or any("<path:" in t for t in routes):
        return None
    calls = [c for c in s.calls_on(line) if c.lineno == line and c.args
             and _call_name(c) in ("open", "send_file", "FileResponse")]
    if not calls or not all(_component_safe(c.args[0], func, segments, set()) == "fixed"
                            for c in calls):
        return None
    return ("the route segment cannot hold '/' (Flask's default converter) and fixed text "
            "follows it, so it never names '..': it stays in its folder")


def _call_name(c: ast.Call) -> str:
    return c.func.attr if isinstance(c.func, ast.Attribute) else getattr(c.func, "id", "")


def _component_safe(e: ast.AST, func: ast.AST, segments: set[str], seen: set[str]) -> str:
    """"fixed" (no sender text, or segments each followed by fixed text
    in their path component), "segment" (a bare segment, fine only with
    text after it) or "open" (anything else the sender may shape)."""
    if isinstance(e, ast.Constant):
        return "fixed" if isinstance(e.value, str | bytes) else "open"
    if isinstance(e, ast.Name):
        values = assigned_values(func, e.id)
        if e.id in segments and values == []:
            return "segment"
        if e.id in seen or values is None or e.id in _param_names(func):
            return "open"
        if not values:  # a module's name: the project's own
            return "fixed" if e.id != "request" else "open"
        results = {_component_safe(v, func, segments, seen | {e.id}) for v in values}
        return results.pop() if len(results) == 1 else "open"
    if isinstance(e, ast.Attribute | ast.Subscript):
        return "open" if from_request(e, frozenset()) else "fixed"
    if isinstance(e, ast.Call) and _call_name(e) in ("join", "Path", "PurePath", "str") \
            and e.args and not e.keywords:
        parts = [_component_safe(a, func, segments, seen) for a in e.args]
        if _call_name(e) == "str" and parts == ["segment"]:
            return "segment"
        return "fixed" if all(p == "fixed" for p in parts) else "open"
    pieces = _pieces(e)
    if pieces is None or len(pieces) < 2:
        return "open"
    kinds = [_component_safe(p, func, segments, seen) for p in pieces]
    for i, kind in enumerate(kinds):
        if kind == "open":
            return "open"
        if kind == "segment":
            after = pieces[i + 1] if i + 1 < len(pieces) else None
            if not (isinstance(after, ast.Constant) and isinstance(after.value, str)
                    and after.value and after.value[0] not in "/\\"):
                return "open"
    return "fixed"


def _pieces(e: ast.AST) -> list[ast.AST] | None:
    if isinstance(e, ast.Constant | ast.Name):
        return [e]
    if isinstance(e, ast.JoinedStr):
        return [v.value if isinstance(v, ast.FormattedValue) else v for v in e.values]
    if isinstance(e, ast.BinOp) and isinstance(e.op, ast.Add):
        left, right = _pieces(e.left), _pieces(e.right)
        return None if left is None or right is None else [*left, *right]
    return None


def _debug_on(call: ast.Call) -> bool:
    value = next((k.value for k in call.keywords if k.arg == "debug"), None)
    return value is not None and not (isinstance(value, ast.Constant) and not value.value)


_DEBUG_SET = re.compile(r"(?m)(\.debug\s*=\s*True|\[\s*['\"]DEBUG['\"]\s*\]\s*=\s*True"
                        r"|^\s*DEBUG\s*=\s*True|FLASK_DEBUG|debug\s*=\s*True)")


def _bind_without_debug(s: Scopes, line: int) -> str | None:
    # an application server's run call (Flask's app.run, uvicorn.run,
    # aiohttp's run_app): a socket bound by hand stays, it may be anything
    calls = [c for c in s.calls_on(line) if _call_name(c) in _SERVER_RUN and any(
        isinstance(n, ast.Constant) and n.value in ("0.0.0.0", "::") for n in ast.walk(c))]
    if not calls or any(_debug_on(c) for c in calls):
        return None
    if _DEBUG_SET.search(ast.unparse(s.tree)):
        return None
    return ("it listens on all interfaces without debug mode: where it listens is a "
            "deployment choice, no flaw in the code")
