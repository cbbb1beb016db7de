"""Which names of a function hold the sender's text as it came
(``_web_flows``' taint): a handler's parameters, ``request.args.get(...)``,
text formatted or joined from them, and what path and URL calls
(``os.path.join``, ``dict(parse_qsl(...))``) make of it."""

from __future__ import annotations

import ast

from ._web_sinks import _HANDLER_INPUT, Scopes, _func_name, from_request, request_params

# str methods that keep what the text says
_SAME_TEXT = {"strip", "lstrip", "rstrip", "lower", "upper", "title", "replace", "decode",
              "encode", "format", "join"}
# a request's fields that are the sender's text (``request.args.get("q")``), and
# the calls that give its body whole (``request.get_json()``, aiohttp's ``await
# request.post()``/``json()``/``text()``): a dispatcher handed one gets it all
_READS = {"get", "getlist", "getone", "get_data", "getvalue", "getfirst", "read", "get_json",
          "json", "post", "text", "form", "multipart"}
# what a request says that is no text its sender chose
_NOT_TEXT = {"method", "endpoint", "remote_addr", "scheme", "is_secure", "blueprint",
             "url_rule", "host_url", "url_root", "content_length", "is_json"}
# what keeps a path or a URL the sender's (os.path.join(DIR, name))
_CARRY = {"dict", "parse_qs", "parse_qsl", "unquote", "unquote_plus", "str", "bytes", "abspath",
          "normpath", "realpath", "expanduser", "Path", "PurePath", "urljoin", "BytesIO",
          "StringIO", "split", "rsplit", "partition", "splitlines", "get", "findall"}


# what the TLS handshake settled from the server's own lists (ASGI's
# ``scope["extensions"]["tls"]``): no text the sender wrote; the client
# certificate's subject is the client's and stays
_SERVER_TLS = frozenset({"alpn_protocol", "tls_version", "cipher_suite", "server_cert"})


def _server_tls(node: ast.Subscript) -> bool:
    """``request.scope["extensions"]["tls"]["alpn_protocol"]``."""
    key = node.slice.value if isinstance(node.slice, ast.Constant) else None
    inner = node.value
    return (key in _SERVER_TLS and isinstance(inner, ast.Subscript)
            and isinstance(inner.slice, ast.Constant) and inner.slice.value == "tls"
            and any(isinstance(n, ast.Attribute) and n.attr == "scope" for n in ast.walk(inner)))


# where a request's headers are read: ``request.headers``, Django's ``META``, WSGI's ``environ``
_HEADER_MAPS = frozenset({"headers", "META", "environ"})


def _custom_header(node: ast.AST) -> bool:
    """``request.headers.get("X-Ingress-Path")``, ``request.META["HTTP_X_..."]``:
    a custom ``X-`` header. A browser sends one cross-site only after a CORS
    preflight the site must allow; a link or a form cannot set it, so no
    victim's browser can be made to reflect it (a reverse proxy sets it)."""
    if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) \
            and node.func.attr == "get" and node.args:
        mapping, key = node.func.value, node.args[0]
    elif isinstance(node, ast.Subscript):
        mapping, key = node.value, node.slice
    else:
        return False
    name = key.value if isinstance(key, ast.Constant) and isinstance(key.value, str) else ""
    return isinstance(mapping, ast.Attribute) and mapping.attr in _HEADER_MAPS \
        and name.upper().replace("-", "_").startswith(("X_", "HTTP_X_")) \
        and from_request(mapping.value, set())


class Raw:
    """Which names of one function hold the sender's text as it came, in
    source order: a handler's parameter, ``request.args.get(...)``, text
    formatted or joined from them, and (``carry``, for paths and URLs)
    what ``os.path.join``, ``dict(parse_qsl(...))``, ``split`` make of it;
    not what another call returns (a database row looked up by it)."""

    def __init__(self, seed: frozenset[str], readers: frozenset[str] = frozenset(),
                 requests: bool = True, own: frozenset[str] = frozenset()):
        self.names = set(seed)
        # ``self.path``/``self.headers`` the module's classes set themselves
        # (a database's file path): the code's own value, not a handler's input
        self.own = own
        self.readers = readers  # the file's functions that return request data
        # False for a function's summary: only its parameter counts, not the
        # request it may read itself (that is reported where it is read)
        self.requests = requests
        # names that hold request text only through a custom header, and
        # whether the text asked about must come from a victim's browser
        self.proxied: set[str] = set()
        self._page = False

    def page_text(self, node: ast.AST, carry: bool = False) -> bool:
        """Request text a link or a form on another site can make a
        victim's browser send (reflected XSS): not a custom header's."""
        self._page = True
        try:
            return self.text(node, carry)
        finally:
            self._page = False

    def _request(self, node: ast.AST) -> bool:
        if self.own and not any(isinstance(n, ast.Name) and n.id == "request"
                                or isinstance(n, ast.Attribute) and n.attr == "request"
                                for n in ast.walk(node)) and any(
                isinstance(n, ast.Attribute) and n.attr in self.own
                and isinstance(n.value, ast.Name) and n.value.id == "self" for n in ast.walk(node)):
            return False
        return self.requests and from_request(node, set())

    def text(self, node: ast.AST, carry: bool = False) -> bool:
        if isinstance(node, ast.Name):
            return node.id in self.names and not (self._page and node.id in self.proxied)
        if self._page and _custom_header(node):
            return False
        if isinstance(node, ast.Attribute) and node.attr in _NOT_TEXT:
            return False
        if isinstance(node, ast.Subscript) and _server_tls(node):
            return False
        if isinstance(node, ast.Subscript | ast.Attribute):
            return self._request(node) or (isinstance(node, ast.Subscript) or carry) \
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
        if isinstance(node, ast.Await):  # ``await request.post()``: what it gives
            return self.text(node.value, carry)
        if carry and isinstance(node, ast.Tuple | ast.List):
            return any(self.text(e, carry) for e in node.elts)
        if carry and isinstance(node, ast.GeneratorExp | ast.ListComp):
            return self.text(node.elt, carry) or any(self.text(g.iter, carry)
                                                     for g in node.generators)
        if isinstance(node, ast.Call):
            name = _func_name(node)
            if isinstance(node.func, ast.Name) and name in self.readers:
                return True
            if isinstance(node.func, ast.Attribute) and name.startswith("get_") \
                    and name.endswith(("argument", "arguments")):
                return self._request(node.func)  # Tornado's self.get_argument("q")
            if isinstance(node.func, ast.Attribute) and name in _READS:
                return self._request(node.func.value) or self.text(node.func.value, carry)
            if name in _SAME_TEXT or (carry and name in _CARRY):
                value = node.func.value if isinstance(node.func, ast.Attribute) else None
                return (value is not None and self.text(value, carry)) \
                    or any(self.text(a, carry) for a in node.args)
        return False

    def _bind(self, name: str, value: ast.AST) -> None:
        if self.text(value, True):
            page = self.page_text(value, True)  # before the name changes: x = x.replace(...)
            self.names.add(name)
            (self.proxied.discard if page else self.proxied.add)(name)
        else:
            self.names.discard(name)
            self.proxied.discard(name)

    def assign(self, node: ast.AST) -> None:
        if isinstance(node, ast.Assign):
            for t in node.targets:
                if isinstance(t, ast.Name):
                    self._bind(t.id, node.value)
                elif isinstance(t, ast.Tuple | ast.List):
                    value = node.value
                    if isinstance(value, ast.Tuple | ast.List) and len(value.elts) == len(t.elts):
                        pairs = list(zip(t.elts, value.elts, strict=True))  # a, b = x, y
                    else:
                        pairs = [(e, value) for e in t.elts]
                    for e, v in pairs:
                        if isinstance(e, ast.Name):
                            self._bind(e.id, v)
        elif isinstance(node, ast.AugAssign) and isinstance(node.target, ast.Name) \
                and self.text(node.value, True):
            name = node.target.id
            if self.page_text(node.value, True):
                self.proxied.discard(name)
            elif name not in self.names:
                self.proxied.add(name)
            self.names.add(name)


def own_attributes(scopes: Scopes) -> dict[int, frozenset[str]]:
    """By method id: the handler-input names (``path``, ``headers``,
    ``rfile``) its class's own code assigns on ``self`` (``self.path = path``
    in a database class's ``__init__``) or declares as a field (a
    dataclass's ``path: str``): there they are the object's state,
    not what a client sent to an ``http.server`` handler (whose base class
    sets them)."""
    out: dict[int, frozenset[str]] = {}
    for _scope, nodes in scopes:
        for cls in nodes:
            if not isinstance(cls, ast.ClassDef):
                continue
            own = frozenset(t.attr for n in ast.walk(cls) if isinstance(n, ast.Assign | ast.AnnAssign)
                            for target in (n.targets if isinstance(n, ast.Assign) else [n.target])
                            for t in ast.walk(target) if isinstance(t, ast.Attribute) and t.attr in _HANDLER_INPUT
                            and isinstance(t.value, ast.Name) and t.value.id == "self")
            # a field the class declares itself (a dataclass's, attrs' or
            # pydantic's ``path: str | None = None``) is set by whoever builds
            # the object; an ``http.server`` handler declares no ``path``
            own |= frozenset(t.id for n in cls.body
                             if isinstance(n, ast.AnnAssign | ast.Assign)
                             for t in ([n.target] if isinstance(n, ast.AnnAssign) else n.targets)
                             if isinstance(t, ast.Name) and t.id in _HANDLER_INPUT)
            if own:
                out.update((id(f), own) for f in cls.body
                           if isinstance(f, ast.FunctionDef | ast.AsyncFunctionDef))
    return out


def readers(scopes: Scopes, handlers: dict[int, frozenset[str]]) -> frozenset[str]:
    """Functions of the file whose every return is request data
    (``def user_input(): return request.args.get("q", "")``): a call of one
    is request data, one call deep."""
    out = set()
    own = own_attributes(scopes)
    for scope, nodes in scopes:
        if isinstance(scope, ast.FunctionDef | ast.AsyncFunctionDef):
            returns = [n.value for n in nodes if isinstance(n, ast.Return)]
            raw = Raw(request_params(scope, "", None, handlers), own=own.get(id(scope), frozenset()))
            if returns and all(r is not None and raw.text(r, True) for r in returns):
                out.add(scope.name)
    return frozenset(out)
