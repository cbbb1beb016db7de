"""What an ordinary web application's code around a pattern check's hit
proves about it (``_web_quiet`` asks; each answer makes the finding low
noise, never drops it):

- ``open-redirect`` whose target is only the ``Referer`` the browser sent
  (``redirect(request.referrer)``, ``request.environ["HTTP_REFERER"]``,
  with ``url_for(...)`` or a literal as the fallback): the user goes back
  to the page they came from; a page that links here already had them.
  Any other request value in the target keeps it;
- ``debug-mode`` set inside ``if <a debug flag>:`` (searxng's ``if
  searx.sxng_debug: app.run(debug=True)``): debug already comes from the
  configuration; under ``not`` or in the ``else`` branch it stays;
- ``jwt-no-verify`` in a function that, under a condition naming a
  verification setting (``if verify_signature:``), passes the same token
  to a verifying call (``jwt.decode(token, keys)``, ``self._validate_jwt(
  token, jwks)``): verification is the operator's documented setting and
  the unverified decode its off branch or a peek at the claims first;
- ``hardcoded-db-password`` whose literal is a marker naming how the
  account signs in, written beside it in the same record (mealie's
  ``{"password": "LDAP", "auth_method": AuthMethod.LDAP}``), or a
  connection URL that is the default of an environment lookup
  (``env.str("PG_URI", "postgres://u:p@db:5432/x")``) for a host on this
  machine or a single-name container service: a development default the
  deployment overrides. A URL for a host with a domain stays.
"""

from __future__ import annotations

import ast
import re
from urllib.parse import urlsplit

from ..codegen import Scopes

_REFERER_KEYS = frozenset({"http_referer", "referer", "referrer"})
_REDIRECTS = frozenset({"redirect", "RedirectResponse", "HttpResponseRedirect",
                        "HTTPFound", "HTTPSeeOther", "HTTPTemporaryRedirect"})
_OWN_URL = frozenset({"url_for", "reverse", "reverse_lazy", "url_path_for"})
_DEBUG_NAME = re.compile(r"(?i)debug")
_VERIFY_NAME = re.compile(r"(?i)verif")
_VERIFYING_CALL = re.compile(r"(?i)(verif|validat)")
_AUTH_KEY = re.compile(r"(?i)(auth|method|provider|backend|source|login_type)")
_ENV_NAME = re.compile(r"^[A-Z][A-Z0-9_]*$")
_ENV_LOOKUPS = frozenset({"get", "getenv", "str", "env", "config", "url", "db_url", "setdefault"})
_LOCAL_HOSTS = frozenset({"localhost", "127.0.0.1", "::1", "0.0.0.0"})


def _name(call: ast.Call) -> str:
    f = call.func
    return f.attr if isinstance(f, ast.Attribute) else f.id if isinstance(f, ast.Name) else ""


def _text(node: ast.AST) -> str:
    return ast.unparse(node)


def _function(s: Scopes, node: ast.AST) -> ast.AST:
    func = s.function_of(node)
    return func if func is not None else s.tree


# -- a redirect back to the Referer --------------------------------------------


def _is_referer(e: ast.AST) -> bool:
    if isinstance(e, ast.Attribute) and e.attr.lower() in _REFERER_KEYS:
        return True
    key = None
    if isinstance(e, ast.Subscript):
        key = e.slice
    elif isinstance(e, ast.Call) and _name(e) == "get" and e.args:
        key = e.args[0]
    return isinstance(key, ast.Constant) and isinstance(key.value, str) \
        and key.value.lower() in _REFERER_KEYS


def _referer_only(e: ast.AST, func: ast.AST, seen: set[str]) -> bool | None:
    """True: the value is the Referer (with own-URL fallbacks); False: it
    holds something else; None: no Referer in it (own URLs only)."""
    if _is_referer(e):
        return True
    if isinstance(e, ast.Constant) or (isinstance(e, ast.Call) and _name(e) in _OWN_URL):
        return None
    parts: list[ast.AST] | None = None
    if isinstance(e, ast.BoolOp):
        parts = list(e.values)
    elif isinstance(e, ast.IfExp):
        parts = [e.body, e.orelse]
    elif isinstance(e, ast.Name) and e.id not in seen:
        parts = [n.value for n in ast.walk(func) if isinstance(n, ast.Assign)
                 and any(isinstance(t, ast.Name) and t.id == e.id for t in n.targets)]
        seen = seen | {e.id}
    if not parts:
        return False
    found = [_referer_only(p, func, seen) for p in parts]
    if any(r is False for r in found):
        return False
    return True if any(found) else None


def referer_redirect(s: Scopes, line: int) -> str | None:
    for call in s.calls_on(line):
        if _name(call) not in _REDIRECTS:
            continue
        target = call.args[0] if call.args else next(
            (k.value for k in call.keywords if k.arg in ("location", "url")), None)
        if target is None or _referer_only(target, _function(s, call), set()) is not True:
            return None
        return ("the redirect goes back to the page the browser came from (its Referer): "
                "a page that links here already had the user; no URL of this site leads elsewhere")
    return None


# -- debug on only under a debug flag ------------------------------------------


def _names_debug(test: ast.AST) -> bool:
    if isinstance(test, ast.UnaryOp) and isinstance(test.op, ast.Not):
        return False
    if isinstance(test, ast.BoolOp):
        return isinstance(test.op, ast.Or) and all(_names_debug(v) for v in test.values) \
            or isinstance(test.op, ast.And) and any(_names_debug(v) for v in test.values)
    if isinstance(test, ast.Name):
        return bool(_DEBUG_NAME.search(test.id))
    if isinstance(test, ast.Attribute):
        return bool(_DEBUG_NAME.search(test.attr))
    return False


def _under(s: Scopes, node: ast.AST, test) -> ast.If | None:
    """The ``if`` (not its ``else``) around ``node`` whose test passes ``test``."""
    child = node
    while child in s.parent:
        parent = s.parent[child]
        if isinstance(parent, ast.If) and any(child is b for b in parent.body) and test(parent.test):
            return parent
        if isinstance(parent, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef):
            return None
        child = parent
    return None


def _statement_on(s: Scopes, line: int) -> ast.stmt | None:
    best = None
    for node in ast.walk(s.tree):
        if isinstance(node, ast.stmt) and not isinstance(
                node, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef | ast.If
                | ast.For | ast.While | ast.With | ast.Try) \
                and node.lineno <= line <= (node.end_lineno or node.lineno):
            best = node
    return best


def debug_flag_guarded(s: Scopes, line: int) -> str | None:
    stmt = _statement_on(s, line)
    if stmt is None or _under(s, stmt, _names_debug) is None:
        return None
    return ("debug is turned on only under the configuration's own debug flag: the "
            "deployment decides it, nothing here forces it on")


# -- jwt decoded unverified beside a verification setting ----------------------


def _token(call: ast.Call) -> str | None:
    first = call.args[0] if call.args else None
    return first.id if isinstance(first, ast.Name) else None


def _names_verify(test: ast.AST) -> bool:
    if isinstance(test, ast.UnaryOp):
        return False
    return any(isinstance(n, ast.Name) and _VERIFY_NAME.search(n.id)
               or isinstance(n, ast.Attribute) and _VERIFY_NAME.search(n.attr)
               or isinstance(n, ast.Constant) and isinstance(n.value, str)
               and _VERIFY_NAME.search(n.value)
               for n in ast.walk(test))


def _verifying(call: ast.Call, token: str) -> bool:
    passes = any(isinstance(a, ast.Name) and a.id == token for a in call.args)
    if not passes:
        return False
    name = _name(call)
    if _VERIFYING_CALL.search(name):
        return True
    # a decode given a key: the library checks the signature
    return name == "decode" and len(call.args) > 1 and not any(
        k.arg in ("options", "verify") for k in call.keywords)


def jwt_verify_setting(s: Scopes, line: int) -> str | None:
    decodes = [c for c in s.calls_on(line) if _name(c) == "decode"]
    if len(decodes) != 1 or (token := _token(decodes[0])) is None:
        return None
    func = _function(s, decodes[0])
    for node in ast.walk(func):
        if isinstance(node, ast.If) and _names_verify(node.test) and any(
                isinstance(c, ast.Call) and c is not decodes[0] and _verifying(c, token)
                for b in node.body for c in ast.walk(b)):
            return ("signature verification is a setting this code honours (`"
                    + _text(node.test)[:40] + "`): the token is verified when it is on; the "
                    "unverified decode is its documented off branch or a look at the claims first")
    return None


# -- a password literal that is no credential ---------------------------------


def _dicts_on(s: Scopes, line: int) -> list[tuple[ast.Dict, ast.Constant]]:
    out = []
    for node in ast.walk(s.tree):
        if isinstance(node, ast.Dict):
            for k, v in zip(node.keys, node.values, strict=True):
                if isinstance(k, ast.Constant) and isinstance(k.value, str) \
                        and "pass" in k.value.lower() and isinstance(v, ast.Constant) \
                        and isinstance(v.value, str) and v.lineno == line:
                    out.append((node, v))
    return out


def _leaf(e: ast.AST) -> str | None:
    if isinstance(e, ast.Attribute):
        return e.attr
    if isinstance(e, ast.Name):
        return e.id
    if isinstance(e, ast.Constant) and isinstance(e.value, str):
        return e.value
    return None


def sign_in_marker(s: Scopes, line: int) -> str | None:
    found = _dicts_on(s, line)
    if not found:
        return None
    for d, value in found:
        marker = value.value.strip().lower()
        if not marker or not any(
                isinstance(k, ast.Constant) and isinstance(k.value, str)
                and _AUTH_KEY.search(k.value) and (_leaf(v) or "").lower() == marker
                for k, v in zip(d.keys, d.values, strict=True) if v is not value):
            return None
    return ("the password is a marker naming how the account signs in (written beside it "
            "in the same record), not a credential anyone can use")


def _local_dsn(text: str) -> bool:
    try:
        host = urlsplit(text).hostname
    except ValueError:
        return False
    return bool(host) and (host in _LOCAL_HOSTS or "." not in host and ":" not in host)


def environment_default(s: Scopes, line: int) -> str | None:
    texts = [n for n in ast.walk(s.tree) if isinstance(n, ast.Constant)
             and isinstance(n.value, str) and n.lineno == line and "://" in n.value
             and "@" in n.value]
    if not texts:
        return None
    for t in texts:
        call = s.parent.get(t)
        if not (isinstance(call, ast.Call) and _name(call) in _ENV_LOOKUPS and call.args
                and call.args[0] is not t and isinstance(call.args[0], ast.Constant)
                and isinstance(call.args[0].value, str) and _ENV_NAME.match(call.args[0].value)
                and _local_dsn(t.value)):
            return None
    return ("the connection URL is the default of an environment variable for a database "
            "on this machine or a local container service: a development default the "
            "deployment sets")


# -- ``self.path`` of a class that serves no request ---------------------------

FLOW_RULES = frozenset({"ssrf", "path-traversal", "open-redirect", "reflected-xss",
                         "xpath-injection"})
# what an http.server/Tornado handler reads from its client (``_web_sinks``)
_HANDLER_READS = frozenset({"path", "headers", "rfile"})


def _handler(cls: ast.ClassDef) -> bool:
    return any("handler" in _text(b).lower() for b in cls.bases)


def own_attribute_input(s: Scopes, line: int) -> str | None:
    """``requests.get(self.host + self.path)`` in a class with no handler
    base (calibre-web's ``GoodreadsRequest`` subclass builds a request to
    send): ``self.path`` is the object's own field, not what a client sent."""
    calls = s.calls_on(line)
    if not calls:
        return None
    call = min(calls, key=lambda c: (c.end_lineno or c.lineno) - c.lineno)
    cls = s.class_of(call)
    # no base: maybe a mixin a handler takes in; a handler of this module
    # built on it also reads its client through these methods
    if cls is None or not cls.bases or _handler(cls) or any(
            isinstance(n, ast.ClassDef) and _handler(n)
            and any(_text(b).split(".")[-1] == cls.name for b in n.bases)
            for n in ast.walk(s.tree)):
        return None
    reads = False
    for part in [*call.args, *(k.value for k in call.keywords)]:
        for n in ast.walk(part):
            if isinstance(n, ast.Name) and n.id != "self":
                return None  # a local or parameter: the flow check's judgement stands
            if isinstance(n, ast.Attribute) and n.attr == "request":
                return None
            if isinstance(n, ast.Attribute) and n.attr in _HANDLER_READS \
                    and isinstance(n.value, ast.Name) and n.value.id == "self":
                reads = True
    if not reads:
        return None
    return (f"`self.path` here is a field of `{cls.name}`, a class that serves no request "
            "(no handler base): the object's own value, not what a client sent")


# -- a "run command" helper the project defines without a shell ---------------

_SHELL_HELPER = re.compile(r"(?i)^(run_?(cmd|command|shell)|exec(ute)?_?(cmd|command|shell)"
                           r"|shell_?(exec|run|cmd)|system_?(cmd|command))$")
# what starts a process (subprocess, os, asyncio, pexpect, paramiko, fabric)
_LAUNCHERS = frozenset({
    "system", "popen", "Popen", "run", "call", "check_call", "check_output", "getoutput",
    "getstatusoutput", "create_subprocess_shell", "create_subprocess_exec", "spawn", "spawnl",
    "spawnlp", "spawnv", "spawnvp", "execl", "execlp", "execv", "execve", "execvp", "execvpe",
    "startfile", "exec_command", "sudo", "local", "invoke", "Command"})


# modules that start processes: a helper whose module imports one may
# reach it through a call this look does not follow
_PROCESS_MODULES = frozenset({"subprocess", "pexpect", "paramiko", "fabric", "invoke", "sh",
                              "plumbum", "pty", "commands", "popen2"})


def _launches(func: ast.AST, module: ast.AST | None) -> bool:
    if module is None:
        return True
    for n in ast.walk(module):
        names = [a.name for a in n.names] if isinstance(n, ast.Import) else \
            [n.module or ""] if isinstance(n, ast.ImportFrom) else []
        if any(m.split(".")[0] in _PROCESS_MODULES for m in names):
            return True
        if isinstance(n, ast.Attribute) and isinstance(n.value, ast.Name) and n.value.id == "os" \
                and (n.attr in _LAUNCHERS or n.attr.startswith(("exec", "spawn", "popen"))):
            return True
    # a call of the same name hands on to another definition, each judged here
    own = getattr(func, "name", None)
    return any(isinstance(n, ast.Call) and ((name := _name(n)) in _LAUNCHERS
                                            or _SHELL_HELPER.match(name) and name != own)
               for n in ast.walk(func))


def own_command_helper(s: Scopes, line: int, defs) -> str | None:
    """``self.execute_cmd(f"attack {target}")`` where every definition of
    ``execute_cmd`` the project has starts no process and sits in a module
    that imports nothing that does (evennia's in-game command parser): the
    name only sounds like a shell helper. Unknown definitions (none found,
    the walk's bound reached) keep the finding."""
    names = {_name(c) for c in s.calls_on(line) if _SHELL_HELPER.match(_name(c))}
    if len(names) != 1:
        return None
    name = names.pop()
    found = defs(name)
    if not found or defs.unread or any(_launches(f, defs.module_of.get(id(f))) for f in found):
        return None
    return (f"every `{name}` this project defines ({len(found)}) starts no process: "
            "the helper only sounds like a shell command runner")
