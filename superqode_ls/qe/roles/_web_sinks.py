"""Sinks of the web checks (``_web``) that need to know where a value goes
or comes from, on the syntax tree of one file, following the names of one
function:

- ``template-injection``: a template's source built from a value
  (``render_template_string(f"...{x}...")``, ``jinja2.Template(s % x)``,
  ``env.from_string(text + x)``) or taken from the request: the template
  language runs code on the server (SSTI). High where request data reaches
  it, medium where only a built string does; a constant template or a
  template name from a parameter stays quiet;
- ``xxe``: an lxml ``XMLParser(resolve_entities=True)`` or
  ``no_network=False``: entities read local files or URLs. High at the
  parse call where request data is parsed with it, medium at the parser
  otherwise;
- where SQL text goes: SQLAlchemy's ``text()`` and the project's own helpers
  (a function of the file that hands its parameter to ``execute``, or an
  imported ``query_db``-like name) count as ``execute`` for ``_web``.

Also the small syntax helpers both modules use.
"""

from __future__ import annotations

import ast
import re
from collections import deque
from collections.abc import Iterator

from ...models import Severity

# (node, rule id, title, message, severity)
Hit = tuple[ast.AST, str, str, str, Severity]
# the weakness each rule here reports (the finding's tags)
CWE = {"template-injection": ("CWE-1336",), "xxe": ("CWE-611",)}

EXECUTE = {"execute", "executemany", "executescript", "mogrify", "raw", "fetch", "fetchrow",
           "fetchval"}
# An imported helper that runs SQL by its name (``from . import query_db``):
# its body is in another file, so its name is the evidence.
_SQL_HELPER = re.compile(r"(?i)^(query_?db|db_?query|run_?(sql|query)|exec(ute)?_?(sql|query)"
                         r"|raw_?query|sql_?(query|exec(ute)?))$")
_TEMPLATE_SINKS = {"render_template_string", "Template", "from_string"}
_PARSE = {"parse", "fromstring", "XML", "iterparse", "XMLID", "fromstringlist"}
# what a request handler reads from its client (http.server's handler)
_HANDLER_INPUT = {"path", "headers", "rfile",
                  # a Tornado handler's readers of the query and the body
                  "get_argument", "get_arguments", "get_query_argument", "get_query_arguments",
                  "get_body_argument", "get_body_arguments"}
# what the server attached to a request, not what its sender wrote
_SERVER_SIDE = {"app", "config", "config_dict", "settings", "user", "registry", "state"}


def _const_str(node: ast.AST | None) -> str | None:
    return node.value if isinstance(node, ast.Constant) and isinstance(node.value, str) else None


def _is_false(node: ast.AST | None) -> bool:
    return isinstance(node, ast.Constant) and node.value is False


def _is_true(node: ast.AST | None) -> bool:
    return isinstance(node, ast.Constant) and node.value is True


def _keyword(node: ast.Call, name: str) -> ast.AST | None:
    for kw in node.keywords:
        if kw.arg == name:
            return kw.value
    return None


def _func_name(node: ast.Call) -> str:
    f = node.func
    if isinstance(f, ast.Attribute):
        return f.attr
    return f.id if isinstance(f, ast.Name) else ""


def _non_constant(node: ast.AST) -> bool:
    return not isinstance(node, ast.Constant) and not (
        isinstance(node, (ast.Tuple, ast.List)) and all(isinstance(e, ast.Constant) for e in node.elts)
    )


def _added(node: ast.AST) -> list[ast.AST]:
    if isinstance(node, ast.BinOp) and isinstance(node.op, ast.Add):
        return _added(node.left) + _added(node.right)
    return [node]


def _name_of(node: ast.AST) -> str:
    if isinstance(node, ast.Name):
        return node.id
    if isinstance(node, ast.Attribute):
        return node.attr
    return ""


Scopes = list[tuple[ast.AST, list[ast.AST]]]


def children(node: ast.AST) -> list[ast.AST]:
    """``ast.iter_child_nodes(node)``, the same nodes in the same order, as a
    list made without its generator per node and per field (the whole-tree
    walks of the security scan spent most of their time in it)."""
    out: list[ast.AST] = []
    for name in node._fields:
        value = getattr(node, name, None)
        if isinstance(value, ast.AST):
            out.append(value)
        elif isinstance(value, list):
            out.extend([v for v in value if isinstance(v, ast.AST)])
    return out


def walk(node: ast.AST) -> Iterator[ast.AST]:
    """``ast.walk(node)``: the same nodes in the same (breadth-first) order."""
    todo = deque([node])
    while todo:
        node = todo.popleft()
        todo.extend(children(node))
        yield node


def scoped(tree: ast.AST) -> Scopes:
    """Each scope (the module, each function) with its own nodes, not those
    of the functions inside it (nor of lambdas), in one walk of the tree:
    the checks share it (a walk per check and function was most of the
    scan's time)."""
    own: dict[int, list[ast.AST]] = {id(tree): []}
    out: Scopes = [(tree, own[id(tree)])]
    todo = [(child, tree) for child in children(tree)]
    while todo:
        node, scope = todo.pop()
        if isinstance(node, ast.Lambda):
            continue
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
            own[id(node)] = []
            out.append((node, own[id(node)]))
            scope = node
        else:
            own[id(scope)].append(node)
        todo.extend([(child, scope) for child in children(node)])
    return out


def _in_order(nodes: list[ast.AST]) -> list[ast.AST]:
    return sorted(nodes, key=lambda n: (getattr(n, "lineno", 0), getattr(n, "col_offset", 0)))


def built(node: ast.AST, piece: re.Pattern[str] | None = None) -> bool:
    """Text made from a non-constant value by formatting or ``+``; a part
    whose name matches ``piece`` is more of the same text, not a value."""
    if isinstance(node, ast.JoinedStr):
        return any(isinstance(v, ast.FormattedValue) for v in node.values)
    if isinstance(node, ast.BinOp) and isinstance(node.op, ast.Mod):
        return _const_str(node.left) is not None and _non_constant(node.right)
    if isinstance(node, ast.BinOp) and isinstance(node.op, ast.Add):
        parts = _added(node)
        # ``[binary] + params``: a list joined to a list, an argument vector
        # (each item one argument, no shell parses it), not text
        if any(isinstance(p, ast.List | ast.Tuple | ast.ListComp) for p in parts):
            return False
        return any(_non_constant(p) and not (piece and piece.search(_name_of(p)))
                   for p in parts)
    if (isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute)
            and node.func.attr == "format" and _const_str(node.func.value) is not None):
        return bool(node.args or node.keywords)
    return False


def from_request(node: ast.AST, tainted: set[str] | frozenset[str]) -> bool:
    """Whether an expression reads the request (``request.args``,
    ``self.request``, a handler's ``self.path``) or a name that holds it.
    What the server attached to the request is not the sender's
    (``request.app``, ``request.user``, ``request.config``...)."""
    own = {id(n.value) for n in ast.walk(node)
           if isinstance(n, ast.Attribute) and n.attr in _SERVER_SIDE and _name_of(n.value) == "request"}
    for n in ast.walk(node):
        if id(n) in own:
            continue
        if isinstance(n, ast.Name) and (n.id == "request" or n.id in tainted):
            return True
        if isinstance(n, ast.Attribute) and (n.attr == "request" or (
                n.attr in _HANDLER_INPUT and isinstance(n.value, ast.Name) and n.value.id == "self")):
            return True
    return False


# A route's decorator (Flask, FastAPI, Bottle, Starlette's routers) and what
# a FastAPI parameter is when it is no request data: an injected dependency.
_ROUTE_DECORATORS = {"route", "get", "post", "put", "delete", "patch", "api_route", "view"}
_INJECTED = {"Depends", "Security", "Session", "AsyncSession", "BackgroundTasks", "Response",
             "Request", "WebSocket", "HTTPConnection", "SecurityScopes"}


def registered(scopes: Scopes) -> dict[str, str]:
    """Functions registered as views without a decorator, with their rule:
    ``app.add_url_rule("/x/<name>", view_func=show)`` or ``("/x", "x", show)``."""
    out: dict[str, str] = {}
    for _scope, nodes in scopes:
        for n in nodes:
            if isinstance(n, ast.Call) and _func_name(n) == "add_url_rule" and n.args:
                view = _keyword(n, "view_func") or (n.args[2] if len(n.args) > 2 else None)
                if isinstance(view, ast.Name):
                    out[view.id] = _const_str(n.args[0]) or ""
    return out


def route(func: ast.FunctionDef | ast.AsyncFunctionDef,
          views: dict[str, str] | None = None) -> bool:
    """Decorated as a route: ``@app.route("/x/<name>")``, ``@router.get(...)``,
    or registered with ``add_url_rule`` (``views``)."""
    if views and func.name in views:
        return True
    return any(isinstance(d, ast.Call) and _name_of(d.func) in _ROUTE_DECORATORS
               and isinstance(d.func, ast.Attribute | ast.Name) and (d.args or d.keywords)
               and (not d.args or _const_str(d.args[0]) is None
                    or str(_const_str(d.args[0])).startswith("/"))
               for d in func.decorator_list)


# a parameter that holds a number or an id, whatever the sender wrote
_NUMBERS = {"int", "float", "bool", "UUID", "date", "datetime", "Decimal"}
_CONVERTER = re.compile(r"<(?:int|float|uuid):(\w+)>|\{(\w+):(?:int|float|uuid)\}")


def _converted(func: ast.FunctionDef | ast.AsyncFunctionDef, rule: str = "") -> set[str]:
    """Route parameters the framework converts to numbers (``<int:id>``)."""
    return {m.group(1) or m.group(2) for d in func.decorator_list if isinstance(d, ast.Call)
            for a in d.args[:1] if (text := _const_str(a)) for m in _CONVERTER.finditer(text)} \
        | {m.group(1) or m.group(2) for m in _CONVERTER.finditer(rule)}


# Class-based views: a class deriving from one of these (or a name ending
# in View/ViewSet/Handler) answers requests with its HTTP-method methods.
_VIEW_BASE = re.compile(r"(View|ViewSet|APIView|RequestHandler|Resource)$")
_HTTP_METHODS = {"get", "post", "put", "patch", "delete", "head", "options", "dispatch",
                 "list", "create", "retrieve", "update", "partial_update", "destroy"}
# graphene: a resolver's (and a mutation's) arguments after ``info`` are the query's
_RESOLVER = re.compile(r"^(resolve_\w+|mutate|mutate_and_get_payload)$")


def class_handlers(scopes: Scopes) -> dict[int, frozenset[str]]:
    """Methods that answer a request, by id, with the parameters its sender
    fills in: a class-based view's ``get(self, request, pk)``/``post``...
    (Django ``View``/``APIView``, Flask ``MethodView``, Tornado handlers:
    every parameter after ``self`` but ``request``) and a graphene
    resolver's or mutation's arguments after ``info``."""
    out: dict[int, frozenset[str]] = {}
    for _scope, nodes in scopes:
        for cls in nodes:
            if not isinstance(cls, ast.ClassDef):
                continue
            view = any(_VIEW_BASE.search(_name_of(b)) for b in cls.bases)
            for f in cls.body:
                if not isinstance(f, ast.FunctionDef | ast.AsyncFunctionDef):
                    continue
                a = f.args
                names = [p.arg for p in [*a.posonlyargs, *a.args, *a.kwonlyargs]]
                names += [v.arg for v in (a.vararg, a.kwarg) if v is not None]
                if _RESOLVER.match(f.name) and "info" in names[:2]:
                    out[id(f)] = frozenset(names[names.index("info") + 1:])
                elif view and f.name in _HTTP_METHODS and names[:1] == ["self"]:
                    out[id(f)] = frozenset(n for n in names[1:] if n != "request")
    return out


def request_params(scope: ast.AST, rel: str = "",
                   views: dict[str, str] | None = None,
                   handlers: dict[int, frozenset[str]] | None = None) -> frozenset[str]:
    """The parameters of a request handler that the sender fills in: a
    route's path and query parameters and FastAPI's body models (not an
    injected ``Depends(...)``), a Django view's URL arguments after
    ``request`` (in a views module), a class-based view's or a graphene
    resolver's (``handlers``, from ``class_handlers``)."""
    if not isinstance(scope, ast.FunctionDef | ast.AsyncFunctionDef):
        return frozenset()
    if handlers and id(scope) in handlers:
        return handlers[id(scope)]
    args = scope.args
    params = [*args.posonlyargs, *args.args, *args.kwonlyargs]
    defaults = dict(zip([a.arg for a in [*args.posonlyargs, *args.args]][::-1],
                        args.defaults[::-1], strict=False))
    defaults.update({a.arg: d for a, d in zip(args.kwonlyargs, args.kw_defaults, strict=True) if d})
    names = [a.arg for a in params]
    if route(scope, views):
        out = set()
        converted = _converted(scope, (views or {}).get(scope.name, ""))
        for a in params:
            if a.arg in ("self", "cls"):
                continue
            hints = {_name_of(n) for part in (a.annotation, defaults.get(a.arg)) if part is not None
                     for n in ast.walk(part)}
            if not hints & _INJECTED and _name_of(a.annotation or ast.Pass()) not in _NUMBERS \
                    and a.arg not in converted:
                out.add(a.arg)
        return frozenset(out)
    if "view" in rel.rsplit("/", 1)[-1] and "request" in names[:2]:
        return frozenset(names[names.index("request") + 1:])
    return frozenset()


def _targets(node: ast.AST) -> Iterator[str]:
    if isinstance(node, ast.Name):
        yield node.id
    elif isinstance(node, (ast.Tuple, ast.List)):
        for e in node.elts:
            yield from _targets(e)


def bindings(nodes: list[ast.AST], seed: frozenset[str] = frozenset()
             ) -> tuple[dict[str, ast.AST], set[str]]:
    """A scope's names: the value each was last given, and those that hold
    request data (in source order, so ``a = request.x; b = a`` taints b),
    starting from ``seed`` (the handler's ``request_params``)."""
    values: dict[str, ast.AST] = {}
    tainted: set[str] = set(seed)
    for node in nodes:
        if isinstance(node, (ast.Assign, ast.AnnAssign, ast.AugAssign)) and node.value is not None:
            targets = node.targets if isinstance(node, ast.Assign) else [node.target]
            for target in targets:
                names = list(_targets(target))
                if from_request(node.value, tainted):
                    tainted.update(names)
                if isinstance(target, ast.Name) and not isinstance(node, ast.AugAssign):
                    values[target.id] = node.value
    return values, tainted


def _imports(scopes: Scopes) -> Iterator[ast.ImportFrom]:
    for _scope, nodes in scopes:
        yield from (n for n in nodes if isinstance(n, ast.ImportFrom))


def _template_source(node: ast.Call) -> ast.AST | None:
    return node.args[0] if node.args else _keyword(node, "source")


def template_injection(scopes: Scopes, rel: str = "") -> Iterator[Hit]:
    # names imported from ``string``: its Template runs no code
    plain = {a.asname or a.name for n in _imports(scopes) if n.module == "string" for a in n.names}
    handlers = class_handlers(scopes)
    for scope, nodes in scopes:
        sinks = [n for n in nodes if isinstance(n, ast.Call) and _func_name(n) in _TEMPLATE_SINKS
                 and not (_func_name(n) == "Template" and isinstance(n.func, ast.Name)
                          and n.func.id in plain)
                 and not (isinstance(n.func, ast.Attribute) and _name_of(n.func.value) == "string")]
        if not sinks:
            continue
        values, tainted = bindings(_in_order(nodes), request_params(scope, rel, None, handlers))
        for call in sinks:
            source = _template_source(call)
            if source is None:
                continue
            value = values.get(source.id, source) if isinstance(source, ast.Name) else source
            request = from_request(source, tainted) or from_request(value, tainted)
            if not (request or built(value)):
                continue
            name = _func_name(call)
            how = "request data" if request else "a string built from a value"
            yield (call, "template-injection", "Template source built from a value",
                   (f"{name}() compiles {how} as a template: the template language runs "
                    "code on the server (server-side template injection). Keep the template "
                    "constant and pass the values to render() as variables."),
                   Severity.high if request else Severity.medium)


def _dangerous_parser(node: ast.AST) -> bool:
    return (isinstance(node, ast.Call) and _func_name(node) == "XMLParser"
            and (_is_true(_keyword(node, "resolve_entities"))
                 or _is_false(_keyword(node, "no_network"))))


def xxe(scopes: Scopes, rel: str = "") -> Iterator[Hit]:
    for scope, unordered in scopes:
        parsers = [n for n in unordered if _dangerous_parser(n)]
        if not parsers:
            continue
        nodes = _in_order(unordered)
        handlers = class_handlers(scopes)
        values, tainted = bindings(nodes, request_params(scope, rel, None, handlers))
        used: set[int] = set()
        for call in nodes:
            if not (isinstance(call, ast.Call) and _func_name(call) in _PARSE and call.args):
                continue
            parser = call.args[1] if len(call.args) > 1 else _keyword(call, "parser")
            if isinstance(parser, ast.Name):
                parser = values.get(parser.id)
            if parser is None or not _dangerous_parser(parser):
                continue
            used.add(id(parser))
            if from_request(call.args[0], tainted):
                yield (call, "xxe", "XML from the request parsed with external entities on",
                       ("This parses request data with an lxml XMLParser that resolves "
                        "entities (resolve_entities=True / no_network=False): a DOCTYPE in it "
                        "reads local files or URLs (XXE). Use XMLParser(resolve_entities=False, "
                        "no_network=True) or defusedxml."), Severity.high)
            else:
                used.discard(id(parser))
        for parser in parsers:
            if id(parser) not in used:
                yield (parser, "xxe", "XML parser resolves external entities",
                       ("XMLParser(resolve_entities=True / no_network=False) lets a document's "
                        "DOCTYPE read local files or URLs (XXE) if it ever parses outside XML. "
                        "Use resolve_entities=False, no_network=True, or defusedxml."),
                       Severity.medium)


def sql_helpers(scopes: Scopes) -> dict[str, int]:
    """Calls that run their argument as SQL, by name: the index of the SQL
    argument. A function of this file that hands a parameter to execute(),
    SQLAlchemy's text(), an imported query_db-like helper."""
    out: dict[str, int] = {}
    for node in _imports(scopes):
        for a in node.names:
            if (a.name == "text" and (node.module or "").startswith("sqlalchemy")) \
                    or (_SQL_HELPER.match(a.name) and a.name not in EXECUTE):
                out[a.asname or a.name] = 0
    for func, nodes in scopes:
        if isinstance(func, (ast.FunctionDef, ast.AsyncFunctionDef)):
            params = [a.arg for a in func.args.posonlyargs + func.args.args]
            if params and params[0] in ("self", "cls"):
                params = params[1:]
            for n in nodes:
                if not (isinstance(n, ast.Call) and isinstance(n.func, ast.Attribute)
                        and n.func.attr in EXECUTE and n.args):
                    continue
                arg = n.args[0]
                # execute(text(sql)): the parameter is text()'s argument
                if isinstance(arg, ast.Call) and _func_name(arg) == "text" and arg.args:
                    arg = arg.args[0]
                if isinstance(arg, ast.Name) and arg.id in params:
                    out.setdefault(func.name, params.index(arg.id))
    return out


def sql_argument(node: ast.Call, helpers: dict[str, int]) -> ast.AST | None:
    """The SQL text a call runs (None for a call that runs none)."""
    f = node.func
    if isinstance(f, ast.Attribute) and (f.attr in EXECUTE or (
            f.attr == "text" and _name_of(f.value) in ("sqlalchemy", "sa", "sql"))):
        index = 0
    else:
        index = helpers.get(_func_name(node), -1)
    return node.args[index] if 0 <= index < len(node.args) else None
