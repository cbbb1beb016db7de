"""Web-application flaws bandit misses or rates too low (security_tester's
``superqode-patterns`` tool), found on the syntax tree of one file:

- ``sql-injection``: SQL text built by ``%``, ``.format``, an f-string or
  ``+`` from a value that is not a constant, passed to ``execute()``,
  SQLAlchemy's ``text()`` or a helper that runs it (``_web_sinks``), also
  through a local variable of the same function: high, whatever bandit's
  confidence in its own B608;
- ``template-injection`` and ``xxe``: see ``_web_sinks``;
- ``path-traversal``, ``open-redirect``, ``reflected-xss``,
  ``xpath-injection``, ``ssrf``, ``stored-xss``: see ``_web_flows``;
- ``template-autoescape-off``: ``autoescape=False`` given to a template
  engine (jinja2 ``Environment``, ``aiohttp_jinja2.setup``...), or
  ``env.autoescape = False``: stored XSS;
- ``debug-mode``: ``app.run(debug=True)`` (the Werkzeug debugger runs code),
  ``Application(debug=True)``, ``DEBUG = True`` in a settings module;
- ``insecure-cookie``: a session store or cookie made readable by JavaScript
  (``httponly=False``), ``SESSION_COOKIE_HTTPONLY = False``;
- ``hardcoded-db-password``: a literal password in a config dict
  (``{"password": "..."}``) or a connection URL/DSN with a password in it
  (not in a docstring: an example there is documentation; not a regular
  expression that finds a password in text);
- ``weak-password-hash``: md5/sha1 over something named a password;
- ``command-injection``: a command line built from a value by formatting
  and handed to a helper named for running one (``run_cmd(f"ps {arg}")``,
  ``helpers.run_command("curl " + url)``): its body is often in another
  module, where bandit sees only ``os.popen(cmd)`` of a parameter;
- ``cors-credentials``, ``csrf-disabled``: see ``_web_settings``.

These are syntax checks; request data is followed through the project's
own functions (``_web_calls``: a helper whose parameter reaches a sink is
a sink for its callers) and stored XSS is ``_web_stored``'s.
"""

from __future__ import annotations

import ast
import functools
import re
from collections.abc import Callable, Iterator

from ...models import Severity
from ._secrets import MESSAGE
from ._secrets_values import is_regex
from ._web_calls import Callees, arguments, imported, where
from ._web_flows import CWE as _FLOW_CWE
from ._web_flows import SQL_RULE, _root, request_flows, summarize
from ._web_flows import needs as _needs_flows
from ._web_settings import CWE as _SETTINGS_CWE
from ._web_settings import needs as _needs_settings
from ._web_settings import web_settings
from ._web_sinks import CWE as _SINK_CWE
from ._web_sinks import (
    Hit,
    Scopes,
    _const_str,
    _func_name,
    _in_order,
    _is_false,
    _is_true,
    _keyword,
    _name_of,
    _non_constant,
    built,
    scoped,
    sql_argument,
    sql_helpers,
    template_injection,
    walk,
    xxe,
)

# the weakness each rule reports (security_tester's tags for them)
CWE = _SINK_CWE | _FLOW_CWE | _SETTINGS_CWE | {"command-injection": ("CWE-78",)}

_SQL = re.compile(r"(?is)\b(select\s.+\bfrom|insert\s+into|update\s.+\bset\b|delete\s+from"
                  r"|create\s+table|drop\s+table|alter\s+table|where\s)\b")
_PASSWORD_NAME = re.compile(r"(?i)(pass(word|wd)?|pwd)")
_PASSWORD_KEY = re.compile(r"(?i)^(db_?|database_?)?(pass(word|wd)?|pwd)$")
_DSN_PASSWORD = re.compile(r"(?i)(?:\b[a-z][a-z0-9+.-]*://[^:/\s@]+:([^@\s/]+)@"
                           r"|\bpassword=([^\s{}'\"]+))")
_WEAK = {"md5", "sha1", "md4", "sha"}
_ALREADY_HASHED = re.compile(r"(?i)(hash|digest)")
_BACKREF = re.compile(r"\\(?:\d+|g<\w+>)")
_SETTINGS_FILE = re.compile(r"(?i)(settings|config|conf)[^/]*\.py$")
_PLACEHOLDER = re.compile(r"(?i)^(|\*+|x+|<.*>|\$\{.*\}|\{.*\}|%\(.*\)s|%s|change[_-]?me|"
                          r"password|secret|none|null)$")

# What each check needs in the text: most files hold none of it and are not
# walked (a walk of a large tree's syntax is seconds).
_NEEDS_SQL = re.compile(r"(?i)\.(execute|executemany|executescript|mogrify|raw|fetch\w*)\s*\(")
# SQL run through SQLAlchemy's text() or an imported query helper (_web_sinks)
_NEEDS_SQL_TEXT = re.compile(r"\btext\s*\(")
_NEEDS_SQL_HELPER = re.compile(r"(?i)\b(query_?db|db_?query|run_?(sql|query)|exec(ute)?_?(sql|query)"
                               r"|raw_?query|sql_?(query|exec(ute)?))\b")
# an SQL statement written in the file (it may be run by a project module's helper)
_NEEDS_SQL_STATEMENT = re.compile(r"(?i)[\"'(]\s*(select\s[^\"']*\bfrom|insert\s+into|update\s+\w+\s+set"
                                  r"|delete\s+from)\b")
_NEEDS_SQL_WORD = re.compile(r"(?i)\b(select|insert|update|delete|create|drop|alter|where)\b")
_NEEDS_CALLS = re.compile(
    r"(?i)(autoescape\s*=\s*False|debug\s*=\s*True|httponly\s*=\s*False|set_cookie"
    r"|(pass(word|wd)?|pwd)['\"]?\s*[:=]\s*[rbu]?['\"]|://[^:/\s@'\"]+:[^@\s/'\"]+@"
    r"|password=[^\s{}'\"]|\b(md5|sha1|new)\s*\()")
# a helper that runs a command line, by its name (its body may be elsewhere)
_SHELL_HELPER = re.compile(r"(?i)^(run_?(cmd|command|shell)|exec(ute)?_?(cmd|command|shell)"
                           r"|shell_?(exec|run|cmd)|system_?(cmd|command))$")
_NEEDS_SHELL = re.compile(r"(?i)\b(run_?(cmd|command|shell)|exec(ute)?_?(cmd|command|shell)"
                          r"|shell_?(exec|run|cmd)|system_?(cmd|command))\s*\(")
_NEEDS_SINKS = re.compile(r"render_template_string|\bTemplate\s*\(|\.from_string\s*\(|XMLParser\s*\(")


def may_match(text: str) -> bool:
    return not text.isascii() or bool(_needs(text))


@functools.lru_cache(maxsize=2)
def _needs(text: str) -> frozenset[str]:
    # Asked twice of each file (may_match, then web_patterns): its regular
    # expressions over a large file cost more than most checks it gates.
    out = set()
    if ((_NEEDS_SQL.search(text) or _NEEDS_SQL_HELPER.search(text))
            and _NEEDS_SQL_WORD.search(text)) \
            or ("sqlalchemy" in text and _NEEDS_SQL_TEXT.search(text)) \
            or _NEEDS_SQL_STATEMENT.search(text):
        out.add("sql")
    if _NEEDS_CALLS.search(text):
        out.add("calls")
    if _NEEDS_SINKS.search(text):
        out.add("sinks")
    if _needs_flows(text):
        out.add("flows")
    if _NEEDS_SHELL.search(text):
        out.add("shell")
    if _needs_settings(text):
        out.add("settings")
    return frozenset(out)


def _sql_text(node: ast.AST) -> str:
    """The constant text of a string expression (its SQL, if any)."""
    if isinstance(node, ast.JoinedStr):
        return "".join(_const_str(v) or " " for v in node.values)
    if isinstance(node, ast.BinOp):
        return _sql_text(node.left) + " " + _sql_text(node.right)
    if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute):
        return _sql_text(node.func.value)
    return _const_str(node) or ""


def _built_sql(node: ast.AST) -> bool:
    """SQL text made from a non-constant value by formatting or ``+``.
    Another piece of SQL text (``base_query + " WHERE id = %s"``) is not a
    value; anything else joined to SQL text is."""
    return built(node, _SQL_PIECE) and bool(_SQL.search(_sql_text(node))) \
        and not _numbers_only(node)


# a %-conversion: its flags, width, precision and type letter
_CONVERSION = re.compile(r"%(?:\([^)]*\))?[#0 +-]*(?:\*|\d+)?(?:\.(?:\*|\d+))?[hlL]?(.)")


def _numbers_only(node: ast.AST) -> bool:
    """``"... rownum %% %d = 1" % size``: every value goes in through a
    numeric conversion (%d, %i, %f...), which takes nothing but a number
    (a string raises TypeError): no quote or keyword can get in. ``%s``,
    ``%r`` and ``%c`` (one character of a string) can."""
    if not (isinstance(node, ast.BinOp) and isinstance(node.op, ast.Mod)):
        return False
    text = _const_str(node.left)
    kinds = [k for k in _CONVERSION.findall(str(text or "")) if k != "%"]
    return bool(kinds) and all(k in "diouxXeEfFgG" for k in kinds)


_SQL_PIECE = re.compile(r"(?i)(sql|query|stmt|statement|clause|where|^q)$")


def _project_runs(scopes: Scopes, rel: str, read: Callable[[str], str | None] | None,
                  helpers: dict[str, int]) -> dict[int, tuple[ast.AST, str]]:
    """Calls of an imported project module's helper whose parameter reaches
    ``execute()``/``text()``/``raw()`` (``_web_flows``' summaries), whatever
    its name, handed SQL text built in this file: each call's SQL argument
    and the chain to where it runs (``fetch_all() → execute() at db.py:4``)."""
    if read is None or not scopes:
        return {}
    # only calls through a name the module imports can reach another module
    bound = {a.asname or a.name.split(".")[0] for n in scopes[0][1]
             if isinstance(n, ast.Import | ast.ImportFrom) for a in n.names}
    candidates = [n for _s, nodes in scopes for n in nodes
                  if isinstance(n, ast.Call) and _root(n) in bound and (n.args or n.keywords)
                  and sql_argument(n, helpers) is None]
    if not candidates:
        return {}
    built_names = {t.id for _s, nodes in scopes for n in nodes
                   if isinstance(n, ast.Assign | ast.AugAssign) and _built_sql(n.value)
                   for t in (n.targets if isinstance(n, ast.Assign) else [n.target])
                   if isinstance(t, ast.Name)}
    calls = [n for n in candidates
             if any(_built_sql(a) or isinstance(a, ast.Name) and a.id in built_names
                    for a in [*n.args, *(k.value for k in n.keywords)])]
    wanted = {r for c in calls if (r := _root(c))}
    if not wanted:
        return {}
    callees: Callees = imported(scopes, rel, read, summarize, wanted=wanted)
    out: dict[int, tuple[ast.AST, str]] = {}
    for call in calls:
        found = callees.lookup(call)
        if found is None:
            continue
        name, (params, sinks) = found
        for param, arg in arguments(call, params).items():
            summary = sinks.get(param)
            if summary is not None and summary[0] == SQL_RULE:
                out[id(call)] = (arg, where(name, summary))
                break
    return out


def _sql_injection(scopes: Scopes, rel: str = "",
                   read: Callable[[str], str | None] | None = None) -> Iterator[Hit]:
    helpers = sql_helpers(scopes)
    project = _project_runs(scopes, rel, read, helpers)
    for _scope, nodes in scopes:
        built_in: dict[str, ast.AST] = {}  # variable -> the expression that built SQL into it
        runs = {id(n): a for n in nodes if isinstance(n, ast.Call)
                and (a := sql_argument(n, helpers)) is not None}
        runs.update({i: a for n in nodes if (i := id(n)) in project and (a := project[i][0])})
        # SQLAlchemy's text() holds SQL whatever its words (a bare WHERE
        # clause: filter(text("title = '%s'" % t)))
        texts = {i for i, n in ((id(n), n) for n in nodes if isinstance(n, ast.Call))
                 if i in runs and _func_name(n) == "text"}
        # Most scopes run no SQL: only those that do are put in source order
        # (the sort was half of the scan's time on a 700-file project).
        if not runs:
            continue
        seen: set[int] = set()
        for node in _in_order(nodes):
            if isinstance(node, ast.Assign) and len(node.targets) == 1 \
                    and isinstance(node.targets[0], ast.Name):
                if _built_sql(node.value):
                    built_in[node.targets[0].id] = node.value
            elif isinstance(node, ast.AugAssign) and isinstance(node.target, ast.Name) \
                    and isinstance(node.op, ast.Add) and _non_constant(node.value) \
                    and not _const_str(node.value) and not isinstance(node.value, ast.Name):
                if _built_sql(node.value) or node.target.id in built_in:
                    built_in.setdefault(node.target.id, node.value)
            elif id(node) in runs:
                arg = runs[id(node)]
                where: ast.AST | None = None
                if _built_sql(arg) or (id(node) in texts and built(arg, _SQL_PIECE)
                                        and not _numbers_only(arg)):
                    where = arg
                elif isinstance(arg, ast.Name) and arg.id in built_in:
                    where = built_in[arg.id]
                # one SQL text run twice is one flaw
                if where is not None and id(where) not in seen:
                    seen.add(id(where))
                    name = project[id(node)][1] if id(node) in project else f"{_func_name(node)}()"
                    yield (
                        where, "sql-injection", "SQL built from a value by string formatting",
                        (f"This SQL text is built by formatting a value into it and run by "
                         f"{name} (line {node.lineno}): SQL injection. Pass the "
                         "values as query parameters instead."),
                        Severity.high,
                    )


def _shell_helpers(tree: ast.AST) -> Iterator[Hit]:
    """A command line built from a value, handed to a helper named for
    running it; a constant command (``run_cmd("uptime")``) stays quiet."""
    for node in walk(tree):
        if isinstance(node, ast.Call) and node.args and _SHELL_HELPER.match(_func_name(node)) \
                and not (isinstance(node.func, ast.Attribute)
                         and _name_of(node.func.value) in ("os", "subprocess")) \
                and built(node.args[0]):
            yield (node.args[0], "command-injection", "Command line built from a value",
                   (f"This command line is built by formatting a value into it and run by "
                    f"{_func_name(node)}() (line {node.lineno}): a quote or ';' in the value "
                    "runs other commands (command injection). Pass an argument list without "
                    "a shell (subprocess.run([...])) and never format values into a command."),
                   Severity.high)


def _calls(tree: ast.AST, rel: str) -> Iterator[Hit]:
    # A docstring's example URL (httpx's "https://user:a%20secret@host") is
    # documentation, not a connection the code makes.
    docs = {id(n.value) for n in walk(tree) if isinstance(n, ast.Expr)
            and _const_str(n.value) is not None}
    for node in walk(tree):
        if isinstance(node, ast.Call):
            name = _func_name(node)
            if _is_false(_keyword(node, "autoescape")):
                yield (node, "template-autoescape-off", "Template autoescaping turned off",
                       (f"{name}(autoescape=False) renders values into HTML unescaped: any "
                        "stored or reflected text becomes script (XSS). Keep autoescape on "
                        "(jinja2.select_autoescape()) and mark trusted HTML with Markup."),
                       Severity.high)
            debug = _keyword(node, "debug")
            if _is_true(debug):
                if name == "run":
                    yield (node, "debug-mode", "Application run in debug mode",
                           ("run(debug=True) serves the interactive debugger, which runs "
                            "Python for whoever reaches the page; take debug from the "
                            "environment and keep it off in production."), Severity.high)
                elif name in ("Application", "Flask", "Starlette", "FastAPI", "Sanic"):
                    yield (node, "debug-mode", "Application created in debug mode",
                           (f"{name}(debug=True) shows tracebacks and internals to clients; "
                            "take debug from the environment, off by default."),
                           Severity.medium)
            if _is_false(_keyword(node, "httponly")) and not _csrf_cookie(node):
                yield (node, "insecure-cookie", "Cookie readable by JavaScript (httponly=False)",
                       (f"{name}(httponly=False) lets any script on the page read the cookie: "
                        "one XSS steals the session. Leave httponly on."), Severity.medium)
            elif name == "set_cookie" and _session_cookie(node) and _keyword(node, "httponly") is None \
                    and not _clears_cookie(node):
                yield (node, "insecure-cookie", "Session cookie set without httponly",
                       ("set_cookie for a session cookie without httponly=True: scripts on "
                        "the page can read it. Add httponly=True (and secure=True)."),
                       Severity.medium)
            yield from _password_hash(node)
            for kw in node.keywords:
                if kw.arg and _PASSWORD_KEY.match(kw.arg):
                    yield from _literal_password(kw.value, kw.arg)
        elif isinstance(node, ast.Dict):
            for k, v in zip(node.keys, node.values):
                key = _const_str(k) if k is not None else None
                if key and _PASSWORD_KEY.match(key):
                    yield from _literal_password(v, key)
        elif isinstance(node, ast.Assign):
            yield from _assignment(node, rel)
        if isinstance(node, ast.Constant) and isinstance(node.value, str) and id(node) not in docs \
                and ("=" in node.value or "://" in node.value):
            m = _DSN_PASSWORD.search(node.value)
            # a regular expression's replacement (r"password=xxxx\2"): the
            # group references go, what is left is the mask
            secret = m and _BACKREF.sub("", m.group(1) or m.group(2))
            # ":password", "?", "@pw": a bound parameter of a query, not a value;
            # "(.+?)": a regular expression's group
            if secret and not _PLACEHOLDER.match(secret) \
                    and not secret.startswith(("$", "%", "{", ":", "?", "@", "(")):
                yield (node, "hardcoded-db-password", "Password in a connection string",
                       ("A database/service password is written into a connection string in "
                        "the code; load it from the environment or a secret store."),
                       Severity.high)


def _session_cookie(node: ast.Call) -> bool:
    first = _const_str(node.args[0]) if node.args else _const_str(_keyword(node, "key") or ast.Pass())
    # JSESSIONID is the load balancer's stickiness cookie SockJS servers
    # echo back ("dummy" or the client's own): Python frameworks never name
    # their login session so
    return bool(first and "session" in first.lower() and first.upper() != "JSESSIONID")


_CSRF = re.compile(r"(?i)csrf|xsrf")


def _csrf_cookie(node: ast.Call) -> bool:
    """A double-submit CSRF token (``set_cookie("csrf_token",
    generate_csrf_token(), httponly=False)``): the page's script must read
    it to echo it in a header, so httponly=False is the design; it holds
    no login a script could steal. Told by the cookie's name or value."""
    parts = [*node.args[:2], *(k.value for k in node.keywords if k.arg in ("key", "value"))]
    return any(isinstance(n, ast.Constant) and isinstance(n.value, str) and _CSRF.search(n.value)
               or isinstance(n, ast.Name) and _CSRF.search(n.id)
               or isinstance(n, ast.Attribute) and _CSRF.search(n.attr)
               for part in parts for n in ast.walk(part))


def _literal_password(value: ast.AST, key: str) -> Iterator[Hit]:
    text = _const_str(value)
    # one to three characters ("a", "x1") fill a form in a script or a test:
    # no password anyone deploys with
    # a value that is itself a password setting's name ({"password": "passwd"})
    # renames a key: no password
    if text is None or len(text) < 4 or _PLACEHOLDER.match(text) \
            or text.lower() == key.lower() or _PASSWORD_KEY.match(text) or MESSAGE.match(text) \
            or is_regex(text):  # a pattern that finds a password in text (a log mask)
        return
    yield (value, "hardcoded-db-password", "Hard-coded password in configuration",
           (f"The {key!r} setting is a literal in the code; anyone with the source has it. "
            "Load it from the environment or a secret store."), Severity.high)


def _clears_cookie(call: ast.Call) -> bool:
    """``set_cookie(name, "", expires=0)``: the cookie is deleted (an empty
    value that expires at once), no session a script could read."""
    value = call.args[1] if len(call.args) > 1 else _keyword(call, "value")
    ends = [_keyword(call, k) for k in ("expires", "max_age")]
    return _const_str(value) == "" and any(
        isinstance(e, ast.Constant) and e.value in (0, "0") for e in ends)


def _password_hash(node: ast.Call) -> Iterator[Hit]:
    f = node.func
    name = f.attr if isinstance(f, ast.Attribute) else (f.id if isinstance(f, ast.Name) else "")
    if name == "new" and node.args and _const_str(node.args[0]) in _WEAK:
        name = str(_const_str(node.args[0]))
    if name not in _WEAK:
        return
    names = [getattr(n, "id", None) or getattr(n, "attr", None) or ""
             for a in node.args for n in ast.walk(a) if isinstance(n, (ast.Name, ast.Attribute))]
    # the stored hash of a password hashed again (redash's session id,
    # md5 of ``email,password_hash``) gives no password back
    if any(_PASSWORD_NAME.search(n) and not _ALREADY_HASHED.search(n) for n in names):
        yield (node, "weak-password-hash", f"Password hashed with {name}",
               (f"{name} is fast and unsalted: stolen hashes give back the passwords in "
                "seconds. Hash passwords with a slow salted scheme (bcrypt, scrypt, argon2, "
                "hashlib.pbkdf2_hmac)."), Severity.high)


def _assignment(node: ast.Assign, rel: str) -> Iterator[Hit]:
    for target in node.targets:
        name = target.id if isinstance(target, ast.Name) else (
            target.attr if isinstance(target, ast.Attribute) else None)
        if name is None:
            continue
        if name == "autoescape" and isinstance(target, ast.Attribute) and _is_false(node.value):
            yield (node, "template-autoescape-off", "Template autoescaping turned off",
                   ("autoescape = False renders values into HTML unescaped (XSS); keep it on."),
                   Severity.high)
        # CSRF_COOKIE_HTTPONLY = False is Django's default: its double-submit
        # token is meant to be read by the page's script (see _csrf_cookie)
        elif name == "SESSION_COOKIE_HTTPONLY" and _is_false(node.value):
            yield (node, "insecure-cookie", "Session cookie readable by JavaScript",
                   f"{name} = False lets scripts read the cookie; leave it True.", Severity.medium)
        elif name == "DEBUG" and _is_true(node.value) and (
                _SETTINGS_FILE.search(rel) or isinstance(target, ast.Attribute)):
            yield (node, "debug-mode", "Debug mode on in the settings",
                   ("DEBUG = True in the settings shows tracebacks, settings and internals to "
                    "clients; read it from the environment, off by default."), Severity.medium)
        elif name == "debug" and isinstance(target, ast.Attribute) and _is_true(node.value):
            yield (node, "debug-mode", "Application debug mode turned on",
                   "app.debug = True shows internals to clients (and may run a debugger).",
                   Severity.medium)


def web_patterns(tree: ast.AST, rel: str = "", text: str | None = None,
                 read: Callable[[str], str | None] | None = None) -> Iterator[Hit]:
    """The hits in one file's tree; ``text`` (its source) lets checks that
    cannot match it be skipped; ``read`` gives another file of the project
    by its path (the templates a view renders, the modules it imports).
    One rule on one line is one hit (a command line built for ``run_cmd``
    from request data is both a built command and a flow to its shell)."""
    seen: set[tuple[str, int]] = set()
    for hit in _web_hits(tree, rel, text, read):
        key = (hit[1], hit[0].lineno)
        if key not in seen:
            seen.add(key)
            yield hit


def _web_hits(tree: ast.AST, rel: str, text: str | None,
              read: Callable[[str], str | None] | None) -> Iterator[Hit]:
    needs = (_needs(text) if text is not None and text.isascii()
             else {"sql", "calls", "sinks", "flows", "shell", "settings"})
    scopes = scoped(tree) if needs & {"sql", "sinks", "flows", "settings"} else []
    if "sql" in needs:
        yield from _sql_injection(scopes, rel, read)
    if "calls" in needs:
        yield from _calls(tree, rel)
    if "sinks" in needs:
        yield from template_injection(scopes, rel)
        yield from xxe(scopes, rel)
    if "flows" in needs:
        yield from request_flows(scopes, rel, read)
    if "shell" in needs:
        yield from _shell_helpers(tree)
    if "settings" in needs:
        yield from web_settings(scopes, rel)
