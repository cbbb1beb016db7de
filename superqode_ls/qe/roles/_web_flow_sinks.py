"""How each of ``_web_flows``' sinks judges the value that reaches it:
a sanitised path, a fixed URL prefix or host, an HTML content type, an
XPath's own predicate, a template that prints a key unescaped."""

from __future__ import annotations

import ast
import re
from collections.abc import Callable, Iterator

from ...models import Severity
from ._web_sinks import Hit, _const_str, _func_name, _keyword, _name_of, built
from ._web_taint import Raw
from ._web_templates import Read, first_unsafe, unsafe_line

_SAFE_URL = {"url_for", "reverse", "reverse_lazy"}
# the request's own URL: attributes, and methods that give it
_SELF_URLS = {"path", "path_info", "full_path", "url", "base_url"}
_SELF_CALLS = {"get_full_path", "build_absolute_uri", "get_full_path_info"}
# the forms of it that start with the scheme and host: a path alone may be
# ``//evil.com`` (protocol-relative once something is joined to it)
_ABSOLUTE = {"url", "base_url", "build_absolute_uri", "full_url"}
_XPATH_FIND = {"find", "findall", "findtext", "iterfind"}
_CLIENTS = {"requests", "httpx"}
# a constant scheme and host in front of the URL: the request picks a path
_FIXED_HOST = re.compile(r"^[a-zA-Z][\w+.-]*://[^/{}%?#\s]+[/?#]")


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


def _textual(node: ast.AST) -> bool:
    """A string the route builds or passes on, not a dict or a call's result."""
    return isinstance(node, ast.Name | ast.Subscript | ast.Attribute | ast.JoinedStr
                      | ast.BinOp) or (isinstance(node, ast.Call) and built(node))


# a response Flask and Quart serialize as application/json: no page to script
_JSON_CALLS = frozenset({"dict", "jsonify", "JSONResponse", "JsonResponse", "json_response"})


def json_body(node: ast.AST, nodes: list[ast.AST], depth: int = 2) -> bool:
    """A view's return or a response's body that is a dict (a literal,
    ``dict(...)``, ``jsonify(...)``, or a name only ever given one): the
    framework sends it as JSON, never as HTML."""
    if isinstance(node, ast.Dict | ast.DictComp):
        return True
    if isinstance(node, ast.Call):
        return _func_name(node) in _JSON_CALLS
    if isinstance(node, ast.Name) and depth > 0:
        given = [n.value for n in nodes if isinstance(n, ast.Assign | ast.AnnAssign)
                 and n.value is not None and any(
                     isinstance(t, ast.Name) and t.id == node.id
                     for t in (n.targets if isinstance(n, ast.Assign) else [n.target]))]
        bound = [n for n in nodes if isinstance(n, ast.Name) and n.id == node.id
                 and isinstance(n.ctx, ast.Store)]
        return bool(given) and len(given) == len(bound) and all(
            json_body(v, nodes, depth - 1) for v in given)
    return False


def _xss(node: ast.AST, how: str) -> Hit:
    return (node, "reflected-xss", "Request text sent back as HTML unescaped",
            (f"Text from the request goes into the page unescaped ({how}): a link with "
             "<script> in it runs in the victim's browser (reflected XSS). Render it through "
             "an autoescaping template, or escape it (markupsafe.escape)."), Severity.high)


def _resolved(node: ast.AST, values: dict[str, ast.AST]) -> ast.AST:
    return values.get(node.id, node) if isinstance(node, ast.Name) else node


def _path(call: ast.Call, path: ast.AST, raw: Raw) -> Iterator[Hit]:
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


def _url_flow(call: ast.Call, url: ast.AST, values: dict[str, ast.AST], raw: Raw,
              safe: Callable[[ast.AST], bool], hit: Hit) -> Iterator[Hit]:
    """``hit`` where the URL (or the value its name holds) is the request's
    and no part of it is ``safe`` (a fixed prefix or host, url_for())."""
    if not any(safe(part) for part in (url, _resolved(url, values))) and raw.text(url, True):
        yield hit


def _this_page(node: ast.AST) -> bool:
    """The URL of the request itself (``redirect(request.path)`` after a
    POST): this site's page, wherever the link came from."""
    if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute):
        node, names = node.func, _SELF_CALLS
    else:
        names = _SELF_URLS
    return isinstance(node, ast.Attribute) and node.attr in names \
        and _name_of(node.value) == "request"


def _parts(node: ast.AST) -> list[ast.AST]:
    """The pieces a URL is joined from, in order (``a + "?n=" + b``,
    ``f"{a}?n={b}"``); [] for anything else."""
    if isinstance(node, ast.JoinedStr):
        return [v.value if isinstance(v, ast.FormattedValue) else v for v in node.values]
    if isinstance(node, ast.BinOp) and isinstance(node.op, ast.Add):
        left: ast.AST = node
        rights: list[ast.AST] = []
        while isinstance(left, ast.BinOp) and isinstance(left.op, ast.Add):
            rights.append(left.right)
            left = left.left
        return [left, *reversed(rights)]
    return []


def _leading_text(node: ast.AST) -> str:
    """The constant text a piece starts with ("" where it starts with a value)."""
    if isinstance(node, ast.JoinedStr) and node.values:
        node = node.values[0]
    while isinstance(node, ast.BinOp) and isinstance(node.op, ast.Add):
        node = node.left
    return str(_const_str(node) or "")


def _own_origin(node: ast.AST, values: dict[str, ast.AST]) -> bool:
    """The request's own URL or a piece cut from its start
    (``request.url[:request.url.find("/api")]``, also through names):
    this site's scheme and host, which no link can change."""
    for _ in range(3):
        if isinstance(node, ast.Subscript) and isinstance(node.slice, ast.Slice) \
                and node.slice.lower is None:
            node = node.value
        elif isinstance(node, ast.Name) and node.id in values:
            node = values[node.id]
        else:
            break
    if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute):
        node = node.func
    return isinstance(node, ast.Attribute) and node.attr in _ABSOLUTE \
        and _name_of(node.value) == "request"


def _slash_checked(node: ast.AST, checked: frozenset[str]) -> bool:
    """The request's own path, where the function tests it for a leading
    ``//`` (``if request.path.startswith("//"): raise``): joined to the
    code's text it stays a path of this site (tornado's StaticFileHandler)."""
    return _this_page(node) and ast.dump(node) in checked


def slash_checks(nodes: list[ast.AST]) -> frozenset[str]:
    """The expressions a function tests with ``.startswith("//")``."""
    return frozenset(ast.dump(n.func.value) for n in nodes
                     if isinstance(n, ast.Call) and isinstance(n.func, ast.Attribute)
                     and n.func.attr == "startswith" and n.args
                     and any(isinstance(c, ast.Constant) and c.value == "//"
                             for c in ast.walk(n.args[0])))


def _site_target(node: ast.AST, values: dict[str, ast.AST], raw: Raw,
                 checked: frozenset[str]) -> bool:
    """A URL whose scheme, host and path the request does not pick:

    - this site's route then the code's own text (``reverse_lazy('login')
      + f'?next={request.path}'``, ``url_for('index') + "logs/" + name``):
      the request fills a query or a path under the route. A route followed
      by nothing but slashes (``url_for('index') + name``: ``/`` then
      ``/evil.com``) is not this;
    - a target the request does not give, then a query or fragment
      (``settings.LOGIN_URL + "?next=" + request.path``);
    - this site's own origin cut from the request's URL, then only what the
      code gives (``request.url[:n] + target`` where ``target`` is a route),
      or its path tested for a leading ``//`` then the code's text.
    """
    parts = _parts(node)
    if len(parts) < 2:
        return False
    head, after = parts[0], _leading_text(parts[1])
    if isinstance(head, ast.Call) and _func_name(head) in _SAFE_URL:
        return bool(after.strip("/\\"))
    if after[:1] in ("?", "#") and not isinstance(head, ast.Constant) \
            and not raw.text(head, True):
        return True
    return (_own_origin(head, values) or _slash_checked(head, checked)) \
        and not any(raw.text(p, True) for p in parts[1:])


def site_url(part: ast.AST, values: dict[str, ast.AST], raw: Raw,
             checked: frozenset[str] = frozenset()) -> bool:
    """A redirect target on this site whatever the request says: a fixed
    prefix, ``url_for()``/``reverse()``, the request's own page, or
    :func:`_site_target`."""
    return _fixed_prefix(part) or (isinstance(part, ast.Call) and _func_name(part) in _SAFE_URL) \
        or _this_page(part) or _site_target(part, values, raw, checked)


def _redirect(call: ast.Call, url: ast.AST, values: dict[str, ast.AST], raw: Raw,
              checked: frozenset[str] = frozenset()) -> Iterator[Hit]:
    yield from _url_flow(call, url, values, raw, lambda part: site_url(part, values, raw, checked), (
        call, "open-redirect", "Redirect to a URL the request gives",
        (f"{_func_name(call)}() sends the user to a URL taken from the request: a link to "
         "this site forwards to any other (phishing, token theft). Redirect only to "
         "paths of this site (check with url_has_allowed_host_and_scheme) or to a "
         "name looked up in a list."), Severity.medium))


def _fixed_host(part: ast.AST) -> bool:
    text = _template_text(part) if isinstance(part, ast.JoinedStr | ast.BinOp | ast.Call) else ""
    return bool(text and _FIXED_HOST.match(text) and _fixed_prefix(part))


# Werkzeug's ``request.path`` is ``"/" + path.lstrip("/")`` (``full_path``
# that and ``?query``): one slash, never ``//host``. Django's ``request.path``
# keeps a raw ``//evil.com`` and is not one of these.
_ONE_SLASH_PATHS = frozenset({"path", "full_path"})
_PATH_START = re.compile(r"/[^/\\]")


def _path_only(node: ast.AST, werkzeug: bool) -> bool:
    """A reference that can only be a path on the host before it: code
    text starting with one ``/`` and a path character (``"/api/" + name``,
    not ``"/" + name``: ``//evil.com``), or Werkzeug's request path."""
    text = _leading_text(node)
    if text:
        return bool(_PATH_START.match(text))
    return werkzeug and isinstance(node, ast.Attribute) and node.attr in _ONE_SLASH_PATHS \
        and _name_of(node.value) == "request"


def _own_host(part: ast.AST, raw: Raw, werkzeug: bool) -> bool:
    """A URL whose scheme and host the code gives and whose rest the
    request may: ``urljoin(configured_url, request.full_path)`` (Flask), or
    ``base + "/api/" + name``, ``f"{base}{request.path}"``. A relative part
    that can be absolute (``urljoin(base, request.args["u"])``: ``//evil``
    or ``http://evil`` replaces the host), or a base the request gives,
    is not this."""
    if isinstance(part, ast.Call) and _func_name(part) == "urljoin" and len(part.args) == 2:
        base, rel = part.args
        return not raw.text(base, True) and _path_only(rel, werkzeug)
    parts = _parts(part)
    return len(parts) >= 2 and not isinstance(parts[0], ast.Constant) \
        and not raw.text(parts[0], True) and _path_only(parts[1], werkzeug)


def _ssrf(call: ast.Call, url: ast.AST, values: dict[str, ast.AST], raw: Raw,
          werkzeug: bool = False) -> Iterator[Hit]:
    def safe(part: ast.AST) -> bool:
        return _fixed_host(part) or _own_host(part, raw, werkzeug)

    yield from _url_flow(call, url, values, raw, safe, (
        call, "ssrf", "Server fetches a URL the request gives",
        (f"{_func_name(call)}() fetches a URL taken from the request: the server "
         "requests addresses only it can reach (cloud metadata, internal admin ports) "
         "for whoever sends it (SSRF). Fix the scheme and host, or check the parsed "
         "host against an allow-list before fetching."), Severity.high))


def _template_xss(call: ast.Call, r: tuple[str, dict[str, ast.AST]], rel: str, read: Read,
                  raw: Raw) -> Iterator[Hit]:
    name, context = r
    found = first_unsafe(rel, name, [k for k, v in context.items() if raw.page_text(v)], read,
                         unsafe_line)
    if found is not None:
        key, path, line = found
        yield _xss(call, f"{path}:{line} prints {key!r} with |safe or autoescape off")


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


def _xpath(call: ast.Call, name: str, expr: ast.AST, values: dict[str, ast.AST],
           raw: Raw) -> Iterator[Hit]:
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
