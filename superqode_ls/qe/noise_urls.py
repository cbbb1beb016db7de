"""``urlopen``/``urlretrieve``/``Request`` (B310) of a URL the code roots at
an ``http(s)://`` address: a literal or f-string passed inline, a local
name given only such, or a chain through a method's parameter and an
attribute (noise_trusted.py's B310 step):
poetry-core's SPDX updater, ``urlopen(url)`` in ``get_licenses(self, url)``,
called only as ``self.get_licenses(self._base_url + "licenses.json")``, where
``self._base_url`` is only ever set from ``__init__(self, base_url=BASE_URL)``
and ``BASE_URL = "https://raw.githubusercontent.com/..."``. The module
constant rule reads a constant passed directly and misses this chain.

Every link must hold in the module: each call of the function passes a value
whose text starts with the literal address (a literal, a ``+`` or f-string
whose first part is one, a local name, a parameter whose default is one, an
attribute every assignment of which is one). A caller that passes anything
else, a function never called in the module, or an address from a call keeps
the finding.

The URL may be given as ``url=`` and may travel in a ``Request`` built from
it (flask-security's ``pwned()``: ``req = urllib.request.Request(url=
f"https://api.pwnedpasswords.com/range/{prefix}", ...)`` then
``urlopen(req)``). The literal must fix the host as well as the scheme:
``"https://" + host`` or ``f"https://{host}/..."`` keeps the finding.
"""

from __future__ import annotations

import ast
import re

from .ast_index import index

_HTTP = ("https://", "http://")
_DEPTH = 14
# what B310 flags that opens the URL it is given (mitmproxy's release script
# downloads with ``urlretrieve(url, tmp)``, ``url = f"https://github.com/..."``)
_OPENS = frozenset({"urlopen", "urlretrieve", "Request"})


def default_url(tree: ast.Module, line: int) -> str | None:
    """Why every ``urlopen`` on ``line`` opens an http(s) address the code
    fixes at its start, or None."""
    parent = index(tree).parents
    calls = [c for c in ast.walk(tree) if isinstance(c, ast.Call) and c.lineno <= line
             <= (c.end_lineno or c.lineno) and _name(c.func) in _OPENS and url_of(c)]
    if not calls:
        return None
    for call in calls:
        scope = _function_of(parent, call) or tree  # a module-level call: the module's names
        if not _rooted(tree, parent, url_of(call), scope, _DEPTH):
            return None
    return ("the URL starts with the http(s) address the code fixes (its parameter's callers "
            "and defaults all root it there): no file: or custom scheme reaches it")


def url_of(call: ast.Call) -> ast.AST | None:
    """The URL a ``urlopen``/``Request``/``urlretrieve`` call is given: its
    first argument or its ``url=`` (None when unpacked or absent)."""
    if call.args:
        return None if isinstance(call.args[0], ast.Starred) else call.args[0]
    return next((k.value for k in call.keywords if k.arg == "url"), None)


def fixed_host(text: str, prefix: bool) -> bool:
    """``text`` starts with an http(s) scheme and a host it fixes: a host
    written out, and when more text follows (``prefix``), ended in the
    literal by a path, query or port."""
    if not text.startswith(_HTTP):
        return False
    rest = text.split("://", 1)[1]
    host = re.split(r"[/?#:]", rest, maxsplit=1)[0]
    if not host or "@" in host:
        return False
    return not prefix or len(host) < len(rest)


def _name(f: ast.AST) -> str:
    return f.id if isinstance(f, ast.Name) else f.attr if isinstance(f, ast.Attribute) else ""


def _function_of(parent: dict, node: ast.AST) -> ast.FunctionDef | ast.AsyncFunctionDef | None:
    up = parent.get(node)
    while up is not None and not isinstance(up, (ast.FunctionDef, ast.AsyncFunctionDef)):
        up = parent.get(up)
    return up


def _rooted(tree: ast.Module, parent: dict, e: ast.AST, scope: ast.AST, depth: int,
            prefix: bool = False) -> bool:
    """``e``'s text starts with a literal http(s) address, host included
    (``prefix``: more text follows ``e``)."""
    if depth <= 0:
        return False
    if isinstance(e, ast.Constant):
        return isinstance(e.value, str) and fixed_host(e.value, prefix)
    if isinstance(e, ast.BinOp) and isinstance(e.op, ast.Add):
        return _rooted(tree, parent, e.left, scope, depth - 1, True)
    if isinstance(e, ast.JoinedStr):
        return bool(e.values) and _rooted(tree, parent, e.values[0], scope, depth - 1,
                                          prefix or len(e.values) > 1)
    if isinstance(e, ast.Call) and _name(e.func) == "Request" and (url := url_of(e)):
        # urllib's Request carries the URL it was built from to urlopen
        return _urllib_request(tree, e.func) and _rooted(tree, parent, url, scope, depth - 1)
    if isinstance(e, ast.Name):
        return _name_rooted(tree, parent, e.id, scope, depth - 1, prefix)
    if (isinstance(e, ast.Attribute) and isinstance(e.value, ast.Name)
            and e.value.id in ("self", "cls")):
        cls = _class_of(parent, scope)
        values = [(v, f) for v, f in _attr_assigned(parent, cls, e.attr)] if cls else []
        return bool(values) and all(_rooted(tree, parent, v, f, depth - 1, prefix)
                                    for v, f in values)
    return False


def _urllib_request(tree: ast.Module, func: ast.AST) -> bool:
    """``Request`` as urllib's: ``urllib.request.Request``, ``request.Request``
    or a bare ``Request`` the module imports from urllib (a class of the
    project's or a web framework's by that name is not)."""
    if isinstance(func, ast.Attribute):
        return isinstance(func.value, (ast.Name, ast.Attribute)) and _name(func.value) in (
            "request", "urllib2")
    return any(isinstance(n, ast.ImportFrom) and n.module in ("urllib.request", "urllib2")
               and any(a.name == "Request" and a.asname in (None, "Request") for a in n.names)
               for n in ast.walk(tree))


def _name_rooted(tree: ast.Module, parent: dict, name: str, scope: ast.AST, depth: int,
                 prefix: bool = False) -> bool:
    if isinstance(scope, (ast.FunctionDef, ast.AsyncFunctionDef)):
        args = scope.args
        positional = [*args.posonlyargs, *args.args]
        if name in {a.arg for a in [*positional, *args.kwonlyargs]}:
            return _param_rooted(tree, parent, scope, name, depth, prefix)
    values = _assigned(scope, name)
    if not values and isinstance(scope, (ast.FunctionDef, ast.AsyncFunctionDef)):
        cls = _class_of(parent, scope)
        values = _assigned(cls, name) if cls is not None else []
        scope = cls if values else scope
        if not values:
            values, scope = _assigned(tree, name), tree
    return bool(values) and all(_rooted(tree, parent, v, scope, depth, prefix) for v in values)


def _param_rooted(tree: ast.Module, parent: dict, func: ast.FunctionDef | ast.AsyncFunctionDef,
                  name: str, depth: int, prefix: bool = False) -> bool:
    """A parameter: its default (if any) and every call's value for it in
    the module are rooted; ``__init__``'s calls are the class's."""
    args = func.args
    positional = [*args.posonlyargs, *args.args]
    default = _default(args, name)
    if default is not None and not _rooted(tree, parent, default, func, depth, prefix):
        return False
    cls = _class_of(parent, func)
    callee = cls.name if func.name == "__init__" and cls is not None else func.name
    method = cls is not None and positional[:1] and positional[0].arg in ("self", "cls")
    index = next((i for i, a in enumerate(positional) if a.arg == name), None)
    if index is not None and method:
        index -= 1
    calls = [c for c in ast.walk(tree) if isinstance(c, ast.Call) and _name(c.func) == callee]
    if not calls and default is None:
        return False  # nothing in the module says what it is given
    for c in calls:
        given = next((k.value for k in c.keywords if k.arg == name), None)
        if given is None and index is not None and index < len(c.args):
            given = c.args[index]
        if any(isinstance(a, ast.Starred) for a in c.args) or any(
                k.arg is None for k in c.keywords):
            return False
        if given is None:
            if default is None:
                return False
            continue
        where = _function_of(parent, c) or tree
        if not _rooted(tree, parent, given, where, depth - 1, prefix):
            return False
    return True


def _default(args: ast.arguments, name: str) -> ast.AST | None:
    positional = [*args.posonlyargs, *args.args]
    offset = len(positional) - len(args.defaults)
    for i, a in enumerate(positional):
        if a.arg == name:
            return args.defaults[i - offset] if i >= offset else None
    for a, d in zip(args.kwonlyargs, args.kw_defaults, strict=True):
        if a.arg == name:
            return d
    return None


def _class_of(parent: dict, node: ast.AST) -> ast.ClassDef | None:
    up = parent.get(node)
    while up is not None and not isinstance(up, ast.ClassDef):
        up = parent.get(up)
    return up


def _assigned(scope: ast.AST, name: str) -> list[ast.AST]:
    """The values ``name`` is given directly in ``scope``'s body (a loop, a
    tuple or an augmented assignment gives an unknown value: the empty list
    is returned only when there is none at all)."""
    out: list[ast.AST] = []
    body = getattr(scope, "body", [])
    # nested functions' assignments count too: more values, never fewer
    for node in [n for s in body for n in ast.walk(s)]:
        if isinstance(node, ast.Assign):
            for t in node.targets:
                if isinstance(t, ast.Name) and t.id == name:
                    out.append(node.value)
                elif any(isinstance(x, ast.Name) and x.id == name for x in ast.walk(t)):
                    out.append(ast.Name(id="<unpacked>"))
        elif isinstance(node, (ast.AnnAssign, ast.AugAssign)) and isinstance(
                node.target, ast.Name) and node.target.id == name:
            out.append(node.value if isinstance(node, ast.AnnAssign) and node.value
                       else ast.Name(id="<changed>"))
        elif isinstance(node, (ast.For, ast.With, ast.NamedExpr)) and any(
                isinstance(x, ast.Name) and x.id == name and isinstance(x.ctx, ast.Store)
                for x in ast.walk(getattr(node, "target", node))):
            out.append(ast.Name(id="<changed>"))
    return out


def _attr_assigned(parent: dict, cls: ast.ClassDef, attr: str) -> list[tuple[ast.AST, ast.AST]]:
    """(value, the function it is assigned in) for every ``self.attr = ...``
    in the class; a changed or unpacked assignment gives an unknown value."""
    out: list[tuple[ast.AST, ast.AST]] = []
    for node in ast.walk(cls):
        targets = node.targets if isinstance(node, ast.Assign) else [node.target] if isinstance(
            node, (ast.AnnAssign, ast.AugAssign)) else []
        for t in targets:
            if any(isinstance(x, ast.Attribute) and x.attr == attr for x in ast.walk(t)):
                value = node.value if isinstance(t, ast.Attribute) and not isinstance(
                    node, ast.AugAssign) and node.value is not None else ast.Name(id="<changed>")
                out.append((value, _function_of(parent, node) or cls))
    return out
