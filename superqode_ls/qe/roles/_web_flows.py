"""Request data that reaches a web application's file, redirect, response
and XPath calls in one function (``_web``'s other checks), on the syntax
tree of one file:

- ``path-traversal``: ``open()``, ``send_file()``, ``FileResponse()`` of a
  path the request names (``open(request.args["f"])``,
  ``send_file(os.path.join(DIR, name))`` with ``name`` a route parameter):
  ``../`` reads any file the server can. ``secure_filename()``,
  ``os.path.basename()`` or ``safe_join()`` on the way make it safe;
- ``open-redirect``: ``redirect()`` / ``RedirectResponse()`` /
  ``HttpResponseRedirect()`` to a URL the request gives whole (a fixed
  prefix such as ``"/user/" + name``, ``url_for()``/``reverse()``, or a
  check with ``url_has_allowed_host_and_scheme()`` makes it safe);
- ``reflected-xss``: request text put unescaped into a response:
  ``make_response()``, ``HttpResponse()``, ``HTMLResponse()``, a Flask or
  Bottle route returning it (a FastAPI route's string is JSON, not HTML);
  text that passed through a call (``escape()``, ``render_template()``,
  ``jsonify()``) is not raw, unless the template prints it with ``|safe``
  or under ``{% autoescape false %}`` (``_web_templates``);
- ``xpath-injection``: an XPath expression built from request data
  (``tree.xpath("//user[name='%s']" % name)``);
- ``ssrf``: ``requests.get()``, ``httpx.post()``, ``urlopen()``... of a URL
  the request gives whole or names the host of (``"http://" + host``):
  the server fetches addresses only it can reach (cloud metadata, admin
  ports). A fixed scheme and host in front (``"https://api.x.com/" +
  path``) or a check of the parsed URL's host in the function keeps it
  quiet;
- ``xxe`` (lxml's defaults): ``etree.fromstring()``/``parse()``/``XML()``
  of request data with lxml's default parser, which before lxml 5.0
  resolves entities (``_web_sinks`` covers a parser made unsafe on
  purpose).

- ``stored-xss``: a database read rendered through ``|safe``, autoescape
  off or ``Markup()`` (``_web_stored``);
- any of these through the project's own functions: request data handed
  to a helper whose parameter reaches the sink is reported at the call
  (``_web_calls``' summaries, which ``summarize`` makes with the same
  checks seeded with one parameter). A helper's shell call is not one:
  bandit reports every non-constant one at its own line (B602/B605), and a
  second finding at each caller pushed other flaws out of the first ten.

Request data is what ``_web_sinks.from_request`` knows (``request.*``, an
``http.server`` handler's ``self.path``) plus a handler's parameters the
sender fills in (``_web_sinks.request_params``: routes, class-based views,
graphene resolvers).
"""

from __future__ import annotations

import ast
import re
from collections.abc import Iterator

from ...models import Severity
from ._web_calls import (
    DEPTH,
    Callees,
    FuncSummary,
    Summary,
    Table,
    arguments,
    imported,
    params_of,
    where,
)
from ._web_flow_sinks import (
    _XPATH_FIND,
    _fetched,
    _host_checked,
    _html_type,
    _path,
    _redirect,
    _ssrf,
    _template_xss,
    _textual,
    _xpath,
    _xss,
    json_body,
    site_url,
    slash_checks,
)
from ._web_sinks import (
    Hit,
    Scopes,
    _func_name,
    _in_order,
    _keyword,
    _name_of,
    class_handlers,
    registered,
    request_params,
    route,
    sql_argument,
)
from ._web_stored import _MARK_SAFE, db_read, owners_of, stored_xss, writes
from ._web_taint import Raw, own_attributes, readers
from ._web_templates import RENDERS, Read, rendered

CWE = {"path-traversal": ("CWE-22",), "open-redirect": ("CWE-601",),
       "reflected-xss": ("CWE-79",), "xpath-injection": ("CWE-643",),
       "ssrf": ("CWE-918",), "stored-xss": ("CWE-79",)}

_FILE_SINKS = {"open", "send_file", "FileResponse"}
_REDIRECTS = {"redirect", "RedirectResponse", "HttpResponseRedirect",
              "HttpResponsePermanentRedirect"}
_URL_CHECKS = {"url_has_allowed_host_and_scheme", "is_safe_url"}
# the project's own check of a URL, by its name (``_allow_redirect(url)``,
# ``is_safe_redirect_url(next)``): a check the rule cannot judge, so it trusts it
_URL_CHECK_NAME = re.compile(r"(?i)(allow|safe|valid|trust|permit).*(url|redirect|next|host|target"
                             r"|domain|location)|(url|redirect|next|host|target)_?(is_)?"
                             r"(allowed|safe|valid|trusted|permitted)")
_RESPONSES = {"make_response", "HttpResponse", "HTMLResponse", "Response"}
_XPATH = {"xpath", "XPath", "ETXPath"}
_LXML_PARSE = {"fromstring", "parse", "XML"}
# an HTTP client's calls (requests, httpx) and urllib's urlopen: where a URL
# goes out from the server (SSRF)
_FETCH = {"get", "post", "put", "patch", "delete", "head", "options", "request", "stream",
          "urlopen"}
# pathlib's own file calls on a path the request names (``Path(d + name).open()``)
_PATH_METHODS = {"open", "read_text", "read_bytes", "write_text", "write_bytes"}
# a summary's mark on a function whose every return is a database read (stored XSS)
_DB_RETURN = "<db>"
_DB_SUMMARY: Summary = ("db-read", "", "", Severity.info, "")
_MAX_FUNCS = 400  # functions of one module summarised per pass
_MAX_PARAMS = 8  # parameters of one function followed
# what runs SQL: a helper whose parameter reaches one runs SQL for its
# callers, whatever its name (``_web``'s sql-injection at the caller)
_SQL_RUNS = {"execute", "executemany", "executescript", "raw", "text", "fetch", "fetchrow",
             "fetchval"}
SQL_RULE = "sql-injection"
_SINK_NAMES = (_FILE_SINKS | _REDIRECTS | _RESPONSES | _XPATH | _XPATH_FIND | _LXML_PARSE
               | _FETCH | _PATH_METHODS | set(RENDERS) | _MARK_SAFE)

# What a file needs for these checks to find anything (most files have
# none and are not walked): a route, or request data and one of the sinks.
_ROUTE_TEXT = re.compile(r"@\w+\.(route|get|post|put|delete|patch|api_route)\(|\.add_url_rule\(")
_REQUEST_TEXT = re.compile(
    r"request\.(args|form|values|GET|POST|FILES|files|json|data|cookies|COOKIES|headers|body"
    r"|query|query_params|path|url|get_json|get_data|params|match_info|stream|rfile|content)"
    r"|self\.(path|rfile)\b|def \w+\(\s*(self,\s*)?request\b")
_SINK_TEXT = re.compile(r"\b(open|send_file|FileResponse|redirect|RedirectResponse|HttpResponse\w*"
                        r"|make_response|HTMLResponse|Response|xpath|XPath|find\w*|fromstring"
                        r"|XML|urlopen|(requests|httpx)\.\w+|render\w*|TemplateResponse)\s*\(")


# a web framework's (or http.server's, lxml's) module: library code that
# only mentions a request is not walked
_FRAMEWORK_TEXT = re.compile(
    r"(?m)^[ \t]*(?:from|import)[ \t]+[^\n]*\b(?:flask|django|fastapi|bottle|starlette|aiohttp"
    r"|pyramid|tornado|falcon|sanic|quart|werkzeug|http\.server|lxml|graphene|rest_framework)\b"
    r"|BaseHTTPRequestHandler")


# a class-based view's or a graphene resolver's method (its arguments are request data)
_HANDLER_TEXT = re.compile(r"def (?:resolve_\w+|mutate\w*)\(\s*\w+\s*,\s*info\b"
                           r"|class \w+\([^)]*(?:View|ViewSet|RequestHandler)\b")
# a call into the project's own modules (a summary may make it a sink)
_PROJECT_CALL = re.compile(r"(?m)^(?:from|import)[ \t]+\.|\b\w+\.\w+\(")


def needs(text: str) -> bool:
    request = _REQUEST_TEXT.search(text) or _HANDLER_TEXT.search(text)
    return bool(_ROUTE_TEXT.search(text)
                or (request and (_SINK_TEXT.search(text) or _PROJECT_CALL.search(text))
                    and _FRAMEWORK_TEXT.search(text)))


def _imported(scopes: Scopes, package: str) -> bool:
    """The module imports ``package`` (at its top level, where imports are)."""
    return any(isinstance(n, ast.ImportFrom) and (n.module or "").split(".")[0] == package
               or isinstance(n, ast.Import) and any(a.name.split(".")[0] == package
                                                    for a in n.names)
               for n in scopes[0][1] if isinstance(n, ast.Import | ast.ImportFrom))


class _File:
    """What one file's flow checks share (found once, for the scopes that
    call a sink)."""

    def __init__(self, scopes: Scopes, rel: str, read: Read | None, callees: Callees,
                 handlers: dict[int, frozenset[str]], views: dict[str, str] | None = None):
        self.fastapi = _imported(scopes, "fastapi")
        self.lxml = _imported(scopes, "lxml")
        self.werkzeug = _imported(scopes, "flask") or _imported(scopes, "werkzeug")
        self.readers = readers(scopes, handlers)
        self.rel, self.read, self.callees = rel, read, callees
        self.scopes, self.handlers, self.views = scopes, handlers, views or {}
        self.own = own_attributes(scopes)
        # the first pass's note of the names its calls go through (None: noting nothing)
        self.wanted: set[str] | None = None
        self._checked: dict[int, bool] = {}

    def checked(self, scope: ast.AST) -> bool:
        """The function checks a URL (url_has_allowed_host_and_scheme): once per function."""
        if id(scope) not in self._checked:
            self._checked[id(scope)] = isinstance(scope, ast.FunctionDef | ast.AsyncFunctionDef) \
                and any(isinstance(n, ast.Call) and (
                    _func_name(n) in _URL_CHECKS or _URL_CHECK_NAME.search(_func_name(n)))
                    for n in ast.walk(scope))
        return self._checked[id(scope)]

    def returns_db(self, call: ast.Call) -> bool:
        """A call of a project function that returns a database read."""
        found = self.callees.lookup(call) if self.callees else None
        return found is not None and _DB_RETURN in found[1][1]

    def write(self, owners: set[str], names: set[str]) -> str:
        """Where a function of this file saves request data into what a read
        came from (``owners``), or into a row held by one of ``names``
        (``task.text = request.POST["text"]``); "" if none is found."""
        for scope, unordered in self.scopes:
            if not isinstance(scope, ast.FunctionDef | ast.AsyncFunctionDef):
                continue
            raw = Raw(request_params(scope, self.rel, self.views, self.handlers), self.readers,
                      own=self.own.get(id(scope), frozenset()))
            nodes = _in_order(unordered)
            values = _values(nodes)
            for node in nodes:
                raw.assign(node)
                if isinstance(node, ast.Call) and writes(node, owners, values) and any(
                        raw.text(a, True) for a in [*node.args, *(k.value for k in node.keywords)]):
                    return f"{_func_name(node)}() at {self.rel}:{node.lineno}"
                if isinstance(node, ast.Assign) and isinstance(node.targets[0], ast.Attribute) \
                        and _name_of(node.targets[0].value) in names and raw.text(node.value, True):
                    target = node.targets[0]
                    return f"{_name_of(target.value)}.{target.attr} = ... at {self.rel}:{node.lineno}"
        return ""


def _calls_sink(nodes: list[ast.AST], callees: Callees) -> bool:
    return any(isinstance(n, ast.Call) and (
        _func_name(n) in _SINK_NAMES | _SQL_RUNS or (callees and callees.lookup(n) is not None))
        for n in nodes)


def request_flows(scopes: Scopes, rel: str = "", read: Read | None = None) -> Iterator[Hit]:
    """The file's hits: first with its sinks alone, noting the calls that
    get request data (or feed a render); then, only if there are any, again
    for those scopes with the summaries of just the functions they call."""
    views = registered(scopes)  # views registered with add_url_rule
    handlers = class_handlers(scopes)
    file: _File | None = None
    again: list[tuple[ast.AST, list[ast.AST], bool]] = []
    for scope, unordered in scopes:
        # a Flask or Bottle route's string is the page (a Django view's is no response)
        routed = isinstance(scope, ast.FunctionDef | ast.AsyncFunctionDef) and route(scope, views)
        params = request_params(scope, rel, views, handlers)
        # most scopes call none of the sinks and read no request: skip them before any ordering
        if not routed and not params and not any(
                isinstance(n, ast.Call) and _func_name(n) in _SINK_NAMES
                or isinstance(n, ast.Name | ast.Attribute) and _name_of(n) == "request"
                for n in unordered):
            continue
        if file is None:
            file = _File(scopes, rel, read, Callees(), handlers, views)
            file.wanted = set()
        before = len(file.wanted)
        for hit, _where in _scope_hits(scope, unordered, Raw(params, file.readers,
                                                           own=file.own.get(id(scope), frozenset())),
                                       file, routed):
            yield hit
        if len(file.wanted) > before or (file.wanted and _calls_any(unordered, file.wanted)):
            again.append((scope, unordered, routed))
    if file is None or not file.wanted:
        return
    file.callees = _callees(scopes, rel, read, file.wanted)
    if not file.callees:
        return
    file.wanted = None
    for scope, unordered, routed in again:
        raw = Raw(request_params(scope, rel, views, handlers), file.readers,
                  own=file.own.get(id(scope), frozenset()))
        for hit, _where in _scope_hits(scope, unordered, raw, file, routed):
            yield hit  # what the first pass found comes again: web_patterns keeps one


def _root(call: ast.Call) -> str:
    """The name a call goes through: ``f`` of ``f(x)``, ``helpers`` of ``helpers.f(x)``."""
    f = call.func
    if isinstance(f, ast.Name):
        return f.id
    if isinstance(f, ast.Attribute) and isinstance(f.value, ast.Name):
        return f.value.id
    return ""


def _calls_any(nodes: list[ast.AST], roots: set[str]) -> bool:
    return any(isinstance(n, ast.Call) and _root(n) in roots for n in nodes)


def _callees(scopes: Scopes, rel: str, read: Read | None, wanted: set[str]) -> Callees:
    """The summaries of the functions this file calls with request data:
    its imports' (only those ``wanted``) and its own."""
    outside = imported(scopes, rel, read, summarize, wanted=wanted)
    own = {s.name for s, _n in scopes if isinstance(s, ast.FunctionDef | ast.AsyncFunctionDef)}
    local = summarize(scopes, rel, outside, DEPTH) if wanted & (own | {"self", "cls"}) else {}
    return Callees(local, outside.names, outside.modules)


def summarize(scopes: Scopes, rel: str, callees: Callees, rounds: int) -> Table:
    """Which parameters of the file's functions reach a sink, and which:
    ``rounds`` passes, each also through the summaries the last one made
    (a helper calling a helper), each function and parameter bounded."""
    table: Table = {}
    file = _File(scopes, rel, None, Callees(table, callees.names, callees.modules), {})
    funcs = [(s, n) for s, n in scopes if isinstance(s, ast.FunctionDef | ast.AsyncFunctionDef)]
    for _ in range(rounds):
        changed = False
        walked = 0
        for scope, unordered in funcs:
            if scope.name not in table and _returns_db(unordered, file):
                table[scope.name] = (params_of(scope), {_DB_RETURN: _DB_SUMMARY})
                changed = True
            if not _calls_sink(unordered, file.callees):
                continue
            walked += 1
            if walked > _MAX_FUNCS:
                break
            params = params_of(scope)[:_MAX_PARAMS]
            hits: dict[str, Summary] = {}
            for p in params:
                raw = Raw(frozenset({p}), requests=False)
                for (node, rule, title, message, sev), at in _scope_hits(
                        scope, unordered, raw, file, False, summary=True):
                    hits[p] = (rule, title, message, sev,
                               at or f"{_func_name(node)}() at {rel}:{node.lineno}")
                    break
            known = table.get(scope.name)
            # a database read's mark is no parameter: a function both returns
            # a read and runs its parameter (``return db.execute(q).fetchall()``)
            if hits and (known is None or known[0] == params
                         and known[1].keys() - {_DB_RETURN} < hits.keys()):
                if known is not None and _DB_RETURN in known[1]:
                    hits[_DB_RETURN] = _DB_SUMMARY
                table[scope.name] = (params, hits)
                changed = True
        if not changed:
            break
    return table


def _scope_hits(scope: ast.AST, unordered: list[ast.AST], raw: Raw, file: _File, routed: bool,
                summary: bool = False) -> Iterator[tuple[Hit, str]]:
    """One function's hits, each with the chain of calls that led to its
    sink ("" where the sink is in the function itself)."""
    nodes = _in_order(unordered)
    values = _values(nodes)
    checked = file.checked(scope)
    host_checked = _host_checked(unordered)
    fastapi, lxml, read, rel = file.fastapi, file.lxml, file.read, file.rel
    for node in nodes:
        raw.assign(node)
        if isinstance(node, ast.Return) and node.value is not None and routed \
                and not fastapi and raw.page_text(node.value) and _textual(node.value) \
                and not json_body(node.value, nodes):
            yield _xss(node.value, "this route returns it"), ""
        if not isinstance(node, ast.Call):
            continue
        name = _func_name(node)
        first = node.args[0] if node.args else None
        hits: Iterator[Hit] | list[Hit] = []
        if name in _FILE_SINKS and first is not None and not (
                name == "open" and isinstance(node.func, ast.Attribute)
                and _name_of(node.func.value) not in ("io", "codecs", "os")):
            hits = _path(node, first, raw)
        elif name in _PATH_METHODS and isinstance(node.func, ast.Attribute) \
                and _name_of(node.func.value) not in ("io", "codecs", "os") \
                and raw.text(node.func.value, True):
            hits = _path(node, node.func.value, raw)
        elif name in _REDIRECTS and not checked:
            url = first if first is not None else _keyword(node, "url")
            if url is not None:
                hits = _redirect(node, url, values, raw, slash_checks(unordered))
        elif name in _RESPONSES and first is not None and raw.page_text(first) \
                and _html_type(node) and not (name == "Response" and fastapi) \
                and not json_body(first, nodes):
            hits = [_xss(node, f"{name}() sends it")]
        elif read is not None and name in RENDERS \
                and (r := rendered(node, values)) is not None:
            hits = _template_xss(node, r, rel, read, raw)
        elif name in _FETCH and not host_checked and (url := _fetched(node, name)) is not None:
            hits = _ssrf(node, url, values, raw, file.werkzeug)
        elif name in _XPATH | _XPATH_FIND and first is not None:
            hits = _xpath(node, name, first, values, raw)
        elif lxml and name in _LXML_PARSE and isinstance(node.func, ast.Attribute) \
                and _name_of(node.func.value) == "etree" and len(node.args) == 1 \
                and _keyword(node, "parser") is None and first is not None \
                and raw.text(first, True):
            hits = [(node, "xxe", "XML from the request parsed with lxml's default parser",
                     (f"etree.{name}() parses request data with lxml's default parser, "
                      "which before lxml 5.0 resolves entities: a DOCTYPE in it reads local "
                      "files (XXE). Pass XMLParser(resolve_entities=False, no_network=True) "
                      "or use defusedxml."), Severity.medium)]
        elif summary and (sql := _sql_run(node)) is not None:
            if raw.text(sql):
                yield (node, SQL_RULE, "SQL text run", (
                    f"{name}() runs it as SQL: a value formatted into it rewrites the query "
                    "(SQL injection). Pass values as query parameters instead."),
                    Severity.high), ""
            continue
        elif file.callees and (found := file.callees.lookup(node)) is not None:
            yield from _through(node, found, raw, summary)
            continue
        elif file.wanted is not None and (root := _root(node)) \
                and any(raw.text(a, True) for a in [*node.args, *(k.value for k in node.keywords)]):
            file.wanted.add(root)
        for hit in hits:
            yield hit, ""
        if not summary and name in RENDERS.keys() | _MARK_SAFE:
            if file.wanted is not None:  # a project function may return what it renders
                file.wanted.update(r for n in unordered if isinstance(n, ast.Call)
                                   and (r := _root(n)))
            for hit in stored_xss(node, values, rel, read, file.returns_db,
                                  lambda v, k: file.write(owners_of(v, values), _names(v, k))):
                yield hit, ""


def _through(call: ast.Call, found: tuple[str, FuncSummary], raw: Raw, summary_only: bool
             ) -> Iterator[tuple[Hit, str]]:
    """Request data handed to a function of the project whose parameter
    reaches a sink: the sink's finding at the call, naming the chain. A
    parameter run as SQL only passes on to the caller's summary: SQL built
    at a call is ``_web``'s sql-injection, whoever built it."""
    name, (params, sinks) = found
    seen = set()
    for param, arg in arguments(call, params).items():
        summary = sinks.get(param)
        if summary is None or summary[0] in seen or (summary[0] == SQL_RULE
                                                     and not summary_only):
            continue
        rule, title, message, severity, _at = summary
        # a helper that redirects to what it is given, given this site's route
        if rule == "open-redirect" and site_url(arg, {}, raw):
            continue
        if (raw.page_text(arg) if rule == "reflected-xss" else raw.text(arg, True)):
            seen.add(rule)
            chain = where(name, summary)
            yield (call, rule, title, (f"Request data reaches {chain} (its {param!r} "
                   f"parameter). {message}"), severity), chain


def _sql_run(call: ast.Call) -> ast.AST | None:
    """The SQL text a call runs (``cur.execute(q)``, ``conn.execute(text(q))``,
    ``Model.objects.raw(q)``); None for any other call."""
    if _func_name(call) not in _SQL_RUNS or not call.args:
        return None
    arg = sql_argument(call, {}) if _func_name(call) != "text" else call.args[0]
    if isinstance(arg, ast.Call) and _func_name(arg) == "text" and arg.args:
        arg = arg.args[0]
    return arg


def _returns_db(unordered: list[ast.AST], file: _File) -> bool:
    """A function whose every return is a database read (``return
    db.execute(...).fetchone()``, also through a local name)."""
    returns = [n.value for n in unordered if isinstance(n, ast.Return)]
    if not returns or any(r is None for r in returns):
        return False
    values = _values(_in_order(unordered))
    return all(r is not None and db_read(r, values, file.returns_db) for r in returns)


def _names(value: ast.AST, key: str) -> set[str]:
    """The names a rendered value goes by (the template's key, the view's variables)."""
    return {key} | {n.id for n in ast.walk(value) if isinstance(n, ast.Name)} - {""}


def _values(nodes: list[ast.AST]) -> dict[str, ast.AST]:
    """Each name's last value in the scope (``url = request.GET["next"]``)."""
    return {t.id: n.value for n in nodes if isinstance(n, ast.Assign)
            for t in n.targets if isinstance(t, ast.Name)}


