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

Request data is what ``_web_sinks.from_request`` knows (``request.*``, an
``http.server`` handler's ``self.path``) plus a handler's parameters the
sender fills in (``_web_sinks.request_params``).
"""

from __future__ import annotations

import ast
import re
from collections.abc import Iterator

from ...models import Severity
from ._web_sinks import (
    Hit,
    Scopes,
    _const_str,
    _func_name,
    _in_order,
    _keyword,
    _name_of,
    built,
    from_request,
    registered,
    request_params,
    route,
)
from ._web_templates import RENDERS, Read, rendered, template_text, unsafe_line

CWE = {"path-traversal": ("CWE-22",), "open-redirect": ("CWE-601",),
       "reflected-xss": ("CWE-79",), "xpath-injection": ("CWE-643",),
       "ssrf": ("CWE-918",)}

_FILE_SINKS = {"open", "send_file", "FileResponse"}
_REDIRECTS = {"redirect", "RedirectResponse", "HttpResponseRedirect",
              "HttpResponsePermanentRedirect"}
_SAFE_URL = {"url_for", "reverse", "reverse_lazy"}
_URL_CHECKS = {"url_has_allowed_host_and_scheme", "is_safe_url"}
_RESPONSES = {"make_response", "HttpResponse", "HTMLResponse", "Response"}
_XPATH = {"xpath", "XPath", "ETXPath"}
_XPATH_FIND = {"find", "findall", "findtext", "iterfind"}
_LXML_PARSE = {"fromstring", "parse", "XML"}
# an HTTP client's calls (requests, httpx) and urllib's urlopen: where a URL
# goes out from the server (SSRF)
_FETCH = {"get", "post", "put", "patch", "delete", "head", "options", "request", "stream",
          "urlopen"}
_CLIENTS = {"requests", "httpx"}
# pathlib's own file calls on a path the request names (``Path(d + name).open()``)
_PATH_METHODS = {"open", "read_text", "read_bytes", "write_text", "write_bytes"}
_SINK_NAMES = (_FILE_SINKS | _REDIRECTS | _RESPONSES | _XPATH | _XPATH_FIND | _LXML_PARSE
               | _FETCH | _PATH_METHODS | set(RENDERS))
# a constant scheme and host in front of the URL: the request picks a path
_FIXED_HOST = re.compile(r"^[a-zA-Z][\w+.-]*://[^/{}%?#\s]+[/?#]")
# str methods that keep what the text says
_SAME_TEXT = {"strip", "lstrip", "rstrip", "lower", "upper", "title", "replace", "decode",
              "encode", "format", "join"}
# a request's fields that are the sender's text (``request.args.get("q")``)
_READS = {"get", "getlist", "getone", "get_data", "getvalue", "getfirst", "read"}
# what a request says that is no text its sender chose
_NOT_TEXT = {"method", "endpoint", "remote_addr", "scheme", "is_secure", "blueprint",
             "url_rule", "host_url", "url_root", "content_length", "is_json"}
# what keeps a path or a URL the sender's (os.path.join(DIR, name))
_CARRY = {"dict", "parse_qs", "parse_qsl", "unquote", "unquote_plus", "str", "bytes", "abspath",
          "normpath", "realpath", "expanduser", "Path", "PurePath", "urljoin", "BytesIO",
          "StringIO", "split", "rsplit", "partition", "splitlines", "get", "findall"}

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
    r"|pyramid|tornado|falcon|sanic|quart|werkzeug|http\.server|lxml)\b|BaseHTTPRequestHandler")


def needs(text: str) -> bool:
    return bool(_ROUTE_TEXT.search(text)
                or (_REQUEST_TEXT.search(text) and _SINK_TEXT.search(text)
                    and _FRAMEWORK_TEXT.search(text)))


def _calls_named(node: ast.AST, names: set[str]) -> bool:
    return any(isinstance(n, ast.Call) and _func_name(n) in names for n in ast.walk(node))


class _Raw:
    """Which names of one function hold the sender's text as it came, in
    source order: a handler's parameter, ``request.args.get(...)``, text
    formatted or joined from them, and (``carry``, for paths and URLs)
    what ``os.path.join``, ``dict(parse_qsl(...))``, ``split`` make of it;
    not what another call returns (a database row looked up by it)."""

    def __init__(self, seed: frozenset[str], readers: frozenset[str] = frozenset()):
        self.names = set(seed)
        self.readers = readers  # the file's functions that return request data

    def text(self, node: ast.AST, carry: bool = False) -> bool:
        if isinstance(node, ast.Name):
            return node.id in self.names
        if isinstance(node, ast.Attribute) and node.attr in _NOT_TEXT:
            return False
        if isinstance(node, ast.Subscript | ast.Attribute):
            return from_request(node, set()) or (isinstance(node, ast.Subscript) or carry) \
                and self.text(node.value, carry)
        if isinstance(node, ast.JoinedStr):
            return any(isinstance(v, ast.FormattedValue) and self.text(v.value, carry)
                       for v in node.values)
        if isinstance(node, ast.BinOp) and isinstance(node.op, ast.Add):
            return self.text(node.left, carry) or self.text(node.right, carry)
        if isinstance(node, ast.BinOp) and isinstance(node.op, ast.Mod):
            right = node.right.elts if isinstance(node.right, ast.Tuple) else [node.right]
            return any(self.text(r, carry) for r in right)
        if isinstance(node, ast.IfExp):
            return self.text(node.body, carry) or self.text(node.orelse, carry)
        if carry and isinstance(node, ast.Tuple | ast.List):
            return any(self.text(e, carry) for e in node.elts)
        if carry and isinstance(node, ast.GeneratorExp | ast.ListComp):
            return self.text(node.elt, carry) or any(self.text(g.iter, carry)
                                                     for g in node.generators)
        if isinstance(node, ast.Call):
            name = _func_name(node)
            if isinstance(node.func, ast.Name) and name in self.readers:
                return True
            if isinstance(node.func, ast.Attribute) and name in _READS:
                return from_request(node.func.value, set()) or self.text(node.func.value, carry)
            if name in _SAME_TEXT or (carry and name in _CARRY):
                value = node.func.value if isinstance(node.func, ast.Attribute) else None
                return (value is not None and self.text(value, carry)) \
                    or any(self.text(a, carry) for a in node.args)
        return False

    def assign(self, node: ast.AST) -> None:
        if isinstance(node, ast.Assign):
            for t in node.targets:
                if isinstance(t, ast.Name):
                    (self.names.add if self.text(node.value, True) else self.names.discard)(t.id)
                elif isinstance(t, ast.Tuple | ast.List):
                    value = node.value
                    if isinstance(value, ast.Tuple | ast.List) and len(value.elts) == len(t.elts):
                        pairs = list(zip(t.elts, value.elts, strict=True))  # a, b = x, y
                    else:
                        pairs = [(e, value) for e in t.elts]
                    for e, v in pairs:
                        if isinstance(e, ast.Name):
                            (self.names.add if self.text(v, True) else self.names.discard)(e.id)
        elif isinstance(node, ast.AugAssign) and isinstance(node.target, ast.Name) \
                and self.text(node.value, True):
            self.names.add(node.target.id)


def _fixed_prefix(node: ast.AST) -> bool:
    """A URL that starts with a constant (``"/user/" + name``)."""
    if isinstance(node, ast.JoinedStr) and node.values:
        return bool(_const_str(node.values[0]))
    if isinstance(node, ast.BinOp):
        left = node.left
        while isinstance(left, ast.BinOp) and isinstance(node.op, ast.Add):
            left = left.left
        text = _const_str(left)
        return bool(text) and not str(text).startswith("%s")
    if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) \
            and node.func.attr == "format":
        text = _const_str(node.func.value)
        return bool(text) and not str(text).startswith("{")
    return False


def _html_type(call: ast.Call) -> bool:
    """A response whose content type, where given, is HTML."""
    for key in ("mimetype", "content_type", "media_type"):
        value = _keyword(call, key)
        if value is not None:
            text = _const_str(value)
            return text is None or "html" in text
    return not (len(call.args) > 2 and _const_str(call.args[2]) not in (None, "text/html"))


def _imported(scopes: Scopes, package: str) -> bool:
    """The module imports ``package`` (at its top level, where imports are)."""
    return any(isinstance(n, ast.ImportFrom) and (n.module or "").split(".")[0] == package
               or isinstance(n, ast.Import) and any(a.name.split(".")[0] == package
                                                    for a in n.names)
               for n in scopes[0][1] if isinstance(n, ast.Import | ast.ImportFrom))


def request_flows(scopes: Scopes, rel: str = "", read: Read | None = None) -> Iterator[Hit]:
    file_facts: tuple[bool, bool, frozenset[str]] | None = None
    views = registered(scopes)  # views registered with add_url_rule
    for scope, unordered in scopes:
        # a Flask or Bottle route's string is the page (a Django view's is no response)
        routed = isinstance(scope, ast.FunctionDef | ast.AsyncFunctionDef) and route(scope, views)
        # most scopes call none of the sinks: skip them before any ordering
        if not routed and not any(isinstance(n, ast.Call) and _func_name(n) in _SINK_NAMES
                                  for n in unordered):
            continue
        if file_facts is None:
            file_facts = (_imported(scopes, "fastapi"), _imported(scopes, "lxml"),
                          _readers(scopes))
        fastapi, lxml, readers = file_facts
        nodes = _in_order(unordered)
        values = _values(nodes)
        raw = _Raw(request_params(scope, rel, views), readers)
        checked = _calls_named(scope, _URL_CHECKS) if scope is not scopes[0][0] else False
        host_checked = _host_checked(unordered)
        for node in nodes:
            raw.assign(node)
            if isinstance(node, ast.Return) and node.value is not None and routed \
                    and not fastapi and raw.text(node.value) and _textual(node.value):
                yield _xss(node.value, "this route returns it")
            if not isinstance(node, ast.Call):
                continue
            name = _func_name(node)
            first = node.args[0] if node.args else None
            if name in _FILE_SINKS and first is not None and not (
                    name == "open" and isinstance(node.func, ast.Attribute)
                    and _name_of(node.func.value) not in ("io", "codecs", "os")):
                yield from _path(node, first, raw)
            elif name in _PATH_METHODS and isinstance(node.func, ast.Attribute) \
                    and _name_of(node.func.value) not in ("io", "codecs", "os") \
                    and raw.text(node.func.value, True):
                yield from _path(node, node.func.value, raw)
            elif name in _REDIRECTS and not checked:
                url = first if first is not None else _keyword(node, "url")
                if url is not None:
                    yield from _redirect(node, url, values, raw)
            elif name in _RESPONSES and first is not None and raw.text(first) \
                    and _html_type(node) and not (name == "Response" and fastapi):
                yield _xss(node, f"{name}() sends it")
            elif read is not None and name in RENDERS \
                    and (r := rendered(node, values)) is not None:
                yield from _template_xss(node, r, rel, read, raw)
            elif name in _FETCH and not host_checked and (url := _fetched(node, name)) is not None:
                yield from _ssrf(node, url, values, raw)
            elif name in _XPATH | _XPATH_FIND and first is not None:
                yield from _xpath(node, name, first, values, raw)
            elif lxml and name in _LXML_PARSE and isinstance(node.func, ast.Attribute) \
                    and _name_of(node.func.value) == "etree" and len(node.args) == 1 \
                    and _keyword(node, "parser") is None and first is not None \
                    and raw.text(first, True):
                yield (node, "xxe", "XML from the request parsed with lxml's default parser",
                       (f"etree.{name}() parses request data with lxml's default parser, "
                        "which before lxml 5.0 resolves entities: a DOCTYPE in it reads local "
                        "files (XXE). Pass XMLParser(resolve_entities=False, no_network=True) "
                        "or use defusedxml."), Severity.medium)


def _values(nodes: list[ast.AST]) -> dict[str, ast.AST]:
    """Each name's last value in the scope (``url = request.GET["next"]``)."""
    return {t.id: n.value for n in nodes if isinstance(n, ast.Assign)
            for t in n.targets if isinstance(t, ast.Name)}


def _readers(scopes: Scopes) -> frozenset[str]:
    """Functions of the file whose every return is request data
    (``def user_input(): return request.args.get("q", "")``): a call of one
    is request data, one call deep."""
    out = set()
    for scope, nodes in scopes:
        if isinstance(scope, ast.FunctionDef | ast.AsyncFunctionDef):
            returns = [n.value for n in nodes if isinstance(n, ast.Return)]
            raw = _Raw(request_params(scope))
            if returns and all(r is not None and raw.text(r, True) for r in returns):
                out.add(scope.name)
    return frozenset(out)


def _textual(node: ast.AST) -> bool:
    """A string the route builds or passes on, not a dict or a call's result."""
    return isinstance(node, ast.Name | ast.Subscript | ast.Attribute | ast.JoinedStr
                      | ast.BinOp) or (isinstance(node, ast.Call) and built(node))


def _xss(node: ast.AST, how: str) -> Hit:
    return (node, "reflected-xss", "Request text sent back as HTML unescaped",
            (f"Text from the request goes into the page unescaped ({how}): a link with "
             "<script> in it runs in the victim's browser (reflected XSS). Render it through "
             "an autoescaping template, or escape it (markupsafe.escape)."), Severity.high)


def _resolved(node: ast.AST, values: dict[str, ast.AST]) -> ast.AST:
    return values.get(node.id, node) if isinstance(node, ast.Name) else node


def _path(call: ast.Call, path: ast.AST, raw: _Raw) -> Iterator[Hit]:
    # secure_filename(), basename() and safe_join() are no carrying calls:
    # the sender's text that went through one is no longer raw, and one
    # applied to another part of the path hides nothing
    if not raw.text(path, True):
        return
    name = _func_name(call)
    yield (call, "path-traversal", "File path taken from the request",
           (f"{name}() opens a path the request names: '../' in it reaches any file the "
            "server can read (path traversal). Pass the name through "
            "werkzeug.utils.secure_filename / os.path.basename, or look it up in a list "
            "of allowed files."), Severity.high)


def _redirect(call: ast.Call, url: ast.AST, values: dict[str, ast.AST], raw: _Raw
              ) -> Iterator[Hit]:
    value = _resolved(url, values)
    for part in (url, value):
        if _fixed_prefix(part) or (isinstance(part, ast.Call) and _func_name(part) in _SAFE_URL):
            return
    if not raw.text(url, True):
        return
    yield (call, "open-redirect", "Redirect to a URL the request gives",
           (f"{_func_name(call)}() sends the user to a URL taken from the request: a link to "
            "this site forwards to any other (phishing, token theft). Redirect only to "
            "paths of this site (check with url_has_allowed_host_and_scheme) or to a "
            "name looked up in a list."), Severity.medium)


def _template_xss(call: ast.Call, r: tuple[str, dict[str, ast.AST]], rel: str, read: Read,
                  raw: _Raw) -> Iterator[Hit]:
    name, context = r
    keys = [k for k, v in context.items() if raw.text(v)]
    found = template_text(rel, name, read) if keys else None
    if found is None:
        return
    path, text = found
    for key in keys:
        line = unsafe_line(text, key)
        if line is not None:
            yield _xss(call, f"{path}:{line} prints {key!r} with |safe or autoescape off")
            return


def _fetched(call: ast.Call, name: str) -> ast.AST | None:
    """The URL an HTTP client's call fetches: ``requests.get(url)``,
    ``httpx.request("GET", url)``, ``urllib.request.urlopen(url)``; None for
    any other object's ``get``."""
    f = call.func
    if name == "urlopen":
        pass
    elif not (isinstance(f, ast.Attribute) and isinstance(f.value, ast.Name)
              and f.value.id in _CLIENTS):
        return None
    index = 1 if name in ("request", "stream") else 0
    if len(call.args) > index:
        return call.args[index]
    return _keyword(call, "url")


def _host_checked(nodes: list[ast.AST]) -> bool:
    """The function compares a parsed URL's host (``urlparse(u).hostname in
    ALLOWED``): an allow-list the check cannot judge, so it trusts it."""
    return any(isinstance(n, ast.Compare) and any(
        isinstance(m, ast.Attribute) and m.attr in ("hostname", "netloc", "host")
        for part in (n.left, *n.comparators) for m in ast.walk(part)) for n in nodes)


def _ssrf(call: ast.Call, url: ast.AST, values: dict[str, ast.AST], raw: _Raw) -> Iterator[Hit]:
    value = _resolved(url, values)
    for part in (url, value):
        text = _template_text(part) if isinstance(part, ast.JoinedStr | ast.BinOp | ast.Call) \
            else ""
        if text and _FIXED_HOST.match(text) and _fixed_prefix(part):
            return
    if not raw.text(url, True):
        return
    yield (call, "ssrf", "Server fetches a URL the request gives",
           (f"{_func_name(call)}() fetches a URL taken from the request: the server "
            "requests addresses only it can reach (cloud metadata, internal admin ports) "
            "for whoever sends it (SSRF). Fix the scheme and host, or check the parsed "
            "host against an allow-list before fetching."), Severity.high)


def _xpath(call: ast.Call, name: str, expr: ast.AST, values: dict[str, ast.AST],
           raw: _Raw) -> Iterator[Hit]:
    value = _resolved(expr, values)
    text = next((t for t in (_template_text(expr), _template_text(value)) if t), "")
    if not (built(expr) or built(value)):
        return
    if name in _XPATH_FIND and not ("[" in text or "@" in text):
        return  # str.find(f"...") is no XPath
    if not (raw.text(expr, True) or raw.text(value, True)):
        return
    yield (call, "xpath-injection", "XPath built from request data",
           (f"{name}() evaluates an XPath expression built from request data: a quote in "
            "it rewrites the query (XPath injection, e.g. ' or '1'='1). Pass the value as "
            "an XPath variable (tree.xpath(\"//user[name=$n]\", n=name)) instead."),
           Severity.high)


def _template_text(node: ast.AST) -> str:
    if isinstance(node, ast.JoinedStr):
        return "".join(_const_str(v) or "" for v in node.values)
    if isinstance(node, ast.BinOp):
        return _template_text(node.left) + _template_text(node.right)
    if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute):
        return _template_text(node.func.value)
    return _const_str(node) or ""
