"""Is a ``markupsafe.Markup(...)`` call (bandit B704) marking text that is
already HTML-safe? Markup is how code says "this is HTML, do not escape
it"; the XSS bandit warns of is text from outside marked so. It is not one
where the text was made safe on the way (``qe/context.py`` marks these as
noise, saying which):

- the text comes from an escape or render call (``escape``, ``html.escape``,
  a number (``str(int(...))``), text already marked safe (a helper's
  ``SafeString(...)`` of such text),
  Django's ``format_html``, ``pygments.highlight``, ``render_template``,
  ``markdown``, wtforms' ``html_params``...), a routed URL (``url_for``, a
  view's ``get_url('.endpoint')``), a number (``size // 1024``), a literal
  (or literals joined by ``+``) filled (``%``, ``.format``) with such text, or
  one literal of a dict of literals (``{True: 'true'}[value]``), also through
  local names, string templates, ``+``, ``"".join`` of a list the function
  fills, string methods (``strip``, ``replace``) and local helper functions
  whose every return is such text; a literal is safe too; so is what
  ``esc(value)`` gives when ``esc`` is Django's escaper picked by the
  ``autoescape`` flag (``conditional_escape``, or no change where the
  template turned autoescaping off);
- the call is a template engine's own escaping: inside ``if ...autoescape``
  (the engine marks what its autoescaping produced), in an ``__html__``
  method (the object renders itself), or in the engine's own package;
- ``return Markup(value)`` in a method of a class whose other method
  serialised ``value`` from an object's ``__html__()`` (flask's session tag
  for Markup): a round trip of HTML already marked safe.

Text from a parameter, request data or anything this module cannot follow
keeps the finding (it is only marked on proof).
"""

from __future__ import annotations

import ast
import re

from .codegen import Scopes, _own_nodes
from .noise_defaults import callee

# Calls whose result is escaped or rendered HTML.
_SAFE_CALL = re.compile(
    r"(?i)^(escape|escape_html|html_escape|conditional_escape|format_html|xmlattr|highlight|"
    r"render|render_template|render_to_string|render_string|markdown|markdownify|"
    r"clean|sanitize|sanitize_html|linkify|urlize|striptags|html_params|"
    # diff-match-patch's HTML view escapes &, < and > of both texts itself
    r"diff_prettyHtml|diff_pretty_html|"
    # named for the escaped text it gives (a sandboxed jinja's render_fully_escaped)
    r"render_\w*_escaped|\w*html_escaped)$")
# URL-encoding calls: their output is letters, digits, ``%XX`` and
# ``_.-~/+=&`` (never ``<>"'``), so safe in HTML text and a quoted attribute
# -- unless a ``safe=`` argument lets such characters through. ``json.dumps``
# is not one: it leaves ``</script>`` and ``<`` in strings as they are.
_URL_QUOTE = re.compile(r"^(urlencode|quote|quote_plus|urlquote|urlquote_plus|iri_to_uri)$")
_HTML_SPECIAL = frozenset('<>"\'')
# Calls whose result is a number: its text is digits, a sign and a point.
_NUMBER_CALL = frozenset({"int", "float", "len", "round", "abs"})


def _quotes_html(call: ast.Call) -> bool:
    """The URL-encoding ``call`` leaves no HTML-special character: no
    ``safe`` argument, or a constant one without any."""
    extra = [k.value for k in call.keywords if k.arg == "safe"]
    if call.args[1:] and callee(call) in ("quote", "quote_plus", "urlquote"):
        extra.append(call.args[1])
    return all(isinstance(v, ast.Constant) and isinstance(v.value, str)
               and not _HTML_SPECIAL & set(v.value) for v in extra)


def _shell_quote(scopes: Scopes, call: ast.Call) -> bool:
    """``shlex.quote`` (or ``pipes.quote``): a shell's quoting, which keeps
    ``<`` and adds ``'``, no URL encoding."""
    f = call.func
    if isinstance(f, ast.Attribute):
        return ast.unparse(f.value) in ("shlex", "pipes")
    return isinstance(f, ast.Name) and any(
        isinstance(n, ast.ImportFrom) and n.module in ("shlex", "pipes")
        and any((a.asname or a.name) == f.id for a in n.names) for n in ast.walk(scopes.tree))


# String methods that add no text of their own (a constant argument at most).
_KEEPS = frozenset({"strip", "lstrip", "rstrip", "replace", "removeprefix", "removesuffix",
                    "lower", "upper", "rpartition", "partition"})
# Template engines whose own modules mark their output safe by design.
ENGINE_PACKAGES = frozenset({"jinja2", "markupsafe", "mako", "chameleon", "genshi"})
_DEPTH = 12
# Arithmetic other than ``+``/``*``/``%`` gives a number (or raises), never text.
_ARITHMETIC = (ast.FloorDiv, ast.Div, ast.Sub, ast.Pow)


def _markup_call(call: ast.Call) -> bool:
    f = call.func
    name = f.id if isinstance(f, ast.Name) else f.attr if isinstance(f, ast.Attribute) else ""
    # Django's mark_safe is B308/B703, and so is its SafeString class
    return name in ("Markup", "mark_safe", "SafeString", "SafeText")


def already_safe(scopes: Scopes, line: int, rel: str) -> str | None:
    """Why every ``Markup(...)`` call on ``line`` marks safe text, or None
    (also when there is no such call)."""
    calls = [c for c in scopes.calls_on(line) if _markup_call(c)]
    if not calls:
        return None
    parts = rel.split("/")
    package = parts[1] if parts[0] in ("src", "lib") and len(parts) > 2 else parts[0]
    if package in ENGINE_PACKAGES:
        return "the template engine's own escaping code (it marks what it rendered)"
    reasons = set()
    for call in calls:
        why = _why(scopes, call)
        if why is None:
            return None
        reasons.add(why)
    return min(reasons)


def _why(scopes: Scopes, call: ast.Call) -> str | None:
    scope = scopes.function_of(call)
    if isinstance(scope, (ast.FunctionDef, ast.AsyncFunctionDef)) and scope.name == "__html__":
        return "an __html__ method: the object renders itself as HTML"
    if _under_autoescape(scopes, call):
        return "the template engine marks what its autoescaping produced"
    if _html_round_trip(scopes, call):
        return ("it restores text its own class serialised from an object's __html__() "
                "(a round trip of HTML already marked safe)")
    if call.args and _safe(scopes, call.args[0], scope, _DEPTH):
        return "the text is already escaped or rendered (an escape or render call, or a literal)"
    return None


def _under_autoescape(scopes: Scopes, node: ast.AST) -> bool:
    """Inside the body of an ``if`` whose test reads ``autoescape``."""
    child = node
    up = scopes.parent.get(node)
    while up is not None:
        if isinstance(up, ast.If) and child in up.body and any(
                (isinstance(n, ast.Name) and n.id == "autoescape")
                or (isinstance(n, ast.Attribute) and n.attr == "autoescape")
                for n in ast.walk(up.test)):
            return True
        if isinstance(up, (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda)):
            return False
        child, up = up, scopes.parent.get(up)
    return False


def _html_round_trip(scopes: Scopes, call: ast.Call) -> bool:
    """``return Markup(value)`` in a method whose class has another method
    returning ``value.__html__()`` (flask's session tag for Markup: the
    serialiser writes what ``__html__`` gave, the loader marks it again)."""
    scope = scopes.function_of(call)
    cls = scopes.class_of(call)
    if cls is None or not isinstance(scopes.parent.get(call), ast.Return) or not (
            call.args and isinstance(call.args[0], ast.Name) and isinstance(
            scope, (ast.FunctionDef, ast.AsyncFunctionDef))
            and call.args[0].id in {a.arg for a in scope.args.args}):
        return False
    for method in cls.body:
        if method is scope or not isinstance(method, (ast.FunctionDef, ast.AsyncFunctionDef)):
            continue
        for node in ast.walk(method):
            if isinstance(node, ast.Return) and node.value is not None and any(
                    isinstance(n, ast.Call) and isinstance(n.func, ast.Attribute)
                    and n.func.attr == "__html__" for n in ast.walk(node.value)):
                return True
    return False



def _safe(scopes: Scopes, e: ast.AST, scope: ast.AST, depth: int,
          seen: frozenset[str] = frozenset()) -> bool:
    """``e`` is HTML-safe text: a literal or built only from escaped or
    rendered text. ``seen``: the names being followed (``s = f"<p>{s}</p>"``
    is safe when the other values of ``s`` are)."""
    if isinstance(e, ast.Name) and e.id in seen:
        return True
    if depth <= 0:
        return False
    if isinstance(e, ast.Constant):
        return isinstance(e.value, str)
    if isinstance(e, ast.JoinedStr):
        return all(_safe(scopes, v.value, scope, depth - 1, seen)
                   for v in e.values if isinstance(v, ast.FormattedValue))
    if isinstance(e, ast.BinOp) and isinstance(e.op, ast.Add):
        return all(_safe(scopes, x, scope, depth - 1, seen) for x in (e.left, e.right))
    if isinstance(e, ast.BinOp) and isinstance(e.op, ast.Mod) and _literal(e.left):
        # '<pre>%s</pre>' % escape(value): a literal filled with safe text (also one
        # written as literals joined by +, filled from a dict of safe values)
        items = e.right.elts if isinstance(e.right, ast.Tuple) else [e.right]
        return all(_safe(scopes, x, scope, depth - 1, seen) for x in items)
    if isinstance(e, ast.BinOp) and isinstance(e.op, _ARITHMETIC):
        return True  # ``value.length // 1024``: a number, or a TypeError
    if isinstance(e, ast.Dict):  # {True: 'true', None: 'null'}[value]: one of its literals
        return all(v is not None and _safe(scopes, v, scope, depth - 1, seen) for v in e.values)
    if isinstance(e, ast.IfExp):
        return all(_safe(scopes, x, scope, depth - 1, seen) for x in (e.body, e.orelse))
    if isinstance(e, ast.Call):
        name = callee(e)
        if _SAFE_CALL.match(name) or name in _NUMBER_CALL or _routed_url(e):
            return True
        if (_markup_call(e) or name == "str") and len(e.args) == 1 and not e.keywords:
            # text already marked (or made a string) is as safe as what it marks
            return _safe(scopes, e.args[0], scope, depth - 1, seen)
        if _URL_QUOTE.match(name) and _quotes_html(e) and not _shell_quote(scopes, e):
            return True
        if isinstance(e.func, ast.Attribute) and name in _KEEPS and all(
                isinstance(a, ast.Constant) for a in e.args):
            return _safe(scopes, e.func.value, scope, depth - 1, seen)
        if isinstance(e.func, ast.Attribute) and name == "format" and isinstance(
                e.func.value, ast.Constant):  # '<a href="{v}">'.format(v=escape(v))
            return all(_safe(scopes, x, scope, depth - 1, seen)
                       for x in [*e.args, *(k.value for k in e.keywords)])
        if isinstance(e.func, ast.Attribute) and name == "join" and len(e.args) == 1:
            return (_safe(scopes, e.func.value, scope, depth - 1, seen)
                    and _safe_items(scopes, e.args[0], scope, depth - 1, seen))
        if isinstance(e.func, ast.Name):
            if _chosen_escaper(scopes, e.func.id, scope):
                return True
            helper = _local_function(scopes, e.func.id, scope)
            return helper is not None and _returns_safe(scopes, helper, depth - 1)
        return False
    if isinstance(e, ast.Subscript):  # a part of safe text
        return _safe(scopes, e.value, scope, depth - 1, seen)
    if isinstance(e, ast.Name):
        value = _reaching(scopes, e, scope)
        if value is not None:
            return _safe(scopes, value, scope, depth - 1, seen)
        return _name_safe(scopes, e.id, scope, depth - 1, seen)
    return False


_BLOCKS = ("body", "orelse", "finalbody")


def _reaching(scopes: Scopes, use: ast.Name, scope: ast.AST) -> ast.AST | None:
    """The one value ``use`` can hold: the plain assignment to its name
    that comes last before it on the way in (``s = self.get(k)`` then, in
    ``if s:``, ``s = escape(s)`` and ``Markup(f"{s}...")``: only the
    escaped text reaches the call). None (every value counts) when any
    other binding may come between: one nested in an earlier statement, a
    loop or ``try`` around the use that binds the name again."""
    name = use.id
    child: ast.AST = use
    up = scopes.parent.get(use)
    while up is not None and child is not scope:
        if isinstance(up, (ast.For, ast.AsyncFor, ast.While, ast.Try, ast.TryStar)) and any(
                _binds_name(n, name) for n in ast.walk(up)):
            return None
        for field in _BLOCKS:
            block = getattr(up, field, None)
            if isinstance(block, list) and child in block:
                for stmt in reversed(block[:block.index(child)]):
                    if isinstance(stmt, ast.Assign) and len(stmt.targets) == 1 \
                            and isinstance(stmt.targets[0], ast.Name) \
                            and stmt.targets[0].id == name:
                        return stmt.value
                    if any(_binds_name(n, name) for n in ast.walk(stmt)):
                        return None
        if up is scope or isinstance(up, (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda,
                                          ast.ClassDef)):
            return None
        child, up = up, scopes.parent.get(up)
    return None


def _binds_name(node: ast.AST, name: str) -> bool:
    if isinstance(node, ast.Name):
        return node.id == name and not isinstance(node.ctx, ast.Load)
    if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
        return node.name == name
    if isinstance(node, ast.alias):
        return (node.asname or node.name.split(".")[0]) == name
    return isinstance(node, ast.ExceptHandler) and node.name == name


def _literal(e: ast.AST) -> bool:
    """A string literal, or literals joined by ``+``."""
    if isinstance(e, ast.BinOp) and isinstance(e.op, ast.Add):
        return _literal(e.left) and _literal(e.right)
    return isinstance(e, ast.Constant) and isinstance(e.value, str)


def _routed_url(e: ast.Call) -> bool:
    """``url_for(...)``, or a view's ``get_url('.endpoint', ...)`` of a literal
    endpoint (flask-admin's wrapper of url_for): a URL the router builds, its
    arguments URL-quoted, so no ``<>"'`` in it."""
    name = callee(e)
    if name == "url_for":
        return True
    return name == "get_url" and isinstance(e.func, ast.Attribute) and bool(e.args) \
        and isinstance(e.args[0], ast.Constant) and isinstance(e.args[0].value, str) \
        and e.args[0].value.startswith(".")


def _safe_items(scopes: Scopes, e: ast.AST, scope: ast.AST, depth: int,
                seen: frozenset[str] = frozenset()) -> bool:
    """Every item of the list ``e`` is safe text."""
    if isinstance(e, (ast.List, ast.Tuple)):
        return all(_safe(scopes, x, scope, depth, seen) for x in e.elts)
    if isinstance(e, (ast.ListComp, ast.GeneratorExp)):
        if _item_of(e) and len(e.generators) == 1:
            # ``str(part) for part in parts``: the items of ``parts`` themselves
            return _safe_items(scopes, e.generators[0].iter, scope, depth, seen)
        return _safe(scopes, e.elt, scope, depth, seen)
    if isinstance(e, ast.Name) and depth > 0:
        lists, items = _list_values(e.id, scope)
        items += scopes._appended(e.id, scope)
        seen = seen | {e.id}
        return bool(lists) and all(
            _safe_items(scopes, v, scope, depth - 1, seen) for v in lists) and all(
            _safe(scopes, v, scope, depth - 1, seen) for v in items)
    return False


def _item_of(e: ast.ListComp | ast.GeneratorExp) -> bool:
    """The comprehension gives its loop's items (or their ``str``) as they are."""
    elt = e.elt
    if isinstance(elt, ast.Call) and callee(elt) == "str" and len(elt.args) == 1 \
            and not elt.keywords:
        elt = elt.args[0]
    target = e.generators[0].target
    return isinstance(elt, ast.Name) and isinstance(target, ast.Name) and elt.id == target.id \
        and not e.generators[0].is_async


def _escaper(e: ast.AST) -> bool:
    """``e`` names an escaping function (``conditional_escape``)."""
    name = e.id if isinstance(e, ast.Name) else e.attr if isinstance(e, ast.Attribute) else ""
    return bool(_SAFE_CALL.match(name)) and not name.startswith("render")


def _identity(scopes: Scopes, e: ast.AST, scope: ast.AST) -> bool:
    """``e`` is a function that gives back its one argument unchanged
    (``lambda x: x``, ``def _no_op(x): return x``)."""
    func = e if isinstance(e, ast.Lambda) else (
        _local_function(scopes, e.id, scope) if isinstance(e, ast.Name) else None)
    if func is None or len(func.args.args) != 1:
        return False
    arg = func.args.args[0].arg
    if isinstance(func, ast.Lambda):
        return isinstance(func.body, ast.Name) and func.body.id == arg
    body = [s for s in func.body if not (isinstance(s, ast.Expr) and isinstance(s.value, ast.Constant))]
    return (len(body) == 1 and isinstance(body[0], ast.Return)
            and isinstance(body[0].value, ast.Name) and body[0].value.id == arg)


def _chosen_escaper(scopes: Scopes, name: str, scope: ast.AST) -> bool:
    """The local ``name`` holds the escaping function Django's filters pick
    by the template's ``autoescape`` flag: ``esc = _esc_func(autoescape)``
    whose helper returns ``conditional_escape`` or, when the template
    turned autoescaping off, a function that changes nothing (what the
    template's author asked for). Every value must be an escaper, or that
    pick made from ``autoescape``; a helper that never escapes keeps the
    finding."""
    if not isinstance(scope, (ast.FunctionDef, ast.AsyncFunctionDef)):
        return False  # a lambda's body assigns nothing
    values = scopes._assigned(name, scope)
    if not values:
        return False
    for v in values:
        if _escaper(v) or (_identity(scopes, v, scope) and _autoescape_branch(scopes, v)):
            continue
        if not (isinstance(v, ast.Call) and isinstance(v.func, ast.Name) and any(
                isinstance(n, ast.Name) and n.id == "autoescape"
                for a in [*v.args, *(k.value for k in v.keywords)] for n in ast.walk(a))):
            return False
        helper = _local_function(scopes, v.func.id, scope)
        returns = [n.value for n in ast.walk(helper) if isinstance(n, ast.Return)
                   and scopes.function_of(n) is helper] if helper is not None else []
        if not returns or not any(r is not None and _escaper(r) for r in returns) or not all(
                r is not None and (_escaper(r) or _identity(scopes, r, helper)) for r in returns):
            return False
    return True


def _autoescape_branch(scopes: Scopes, node: ast.AST) -> bool:
    """Inside either branch of an ``if`` whose test reads ``autoescape``
    (``if autoescape: esc = conditional_escape`` / ``else: esc = lambda x: x``)."""
    up = scopes.parent.get(node)
    while up is not None and not isinstance(up, (ast.FunctionDef, ast.AsyncFunctionDef)):
        if isinstance(up, ast.If) and any(isinstance(n, ast.Name) and n.id == "autoescape"
                                          for n in ast.walk(up.test)):
            return True
        up = scopes.parent.get(up)
    return False


def _list_values(name: str, scope: ast.AST) -> tuple[list[ast.AST], list[ast.AST]]:
    """What the list ``name`` is set to in ``scope`` and what its items
    are set to (``name[i] = ...``); an unpacking or a loop gives a value
    never safe."""
    lists: list[ast.AST] = []
    items: list[ast.AST] = []
    for node in _own_nodes(scope):
        if not isinstance(node, (ast.Assign, ast.AnnAssign, ast.AugAssign, ast.For)):
            continue
        targets = node.targets if isinstance(node, ast.Assign) else [node.target]
        for t in targets:
            if isinstance(t, ast.Name) and t.id == name and not isinstance(node, ast.For):
                if node.value is not None:
                    lists.append(node.value)
            elif (isinstance(t, ast.Subscript) and isinstance(t.value, ast.Name)
                  and t.value.id == name and isinstance(node, ast.Assign)):
                items.append(node.value)
            elif any(isinstance(n, ast.Name) and n.id == name for n in ast.walk(t)):
                lists.append(ast.Name(id="<unknown>"))
    return lists, items


def _name_safe(scopes: Scopes, name: str, scope: ast.AST, depth: int,
               seen: frozenset[str] = frozenset()) -> bool:
    values = scopes._assigned(name, scope)
    return bool(values) and all(_safe(scopes, v, scope, depth, seen | {name}) for v in values)


def _local_function(scopes: Scopes, name: str, scope: ast.AST) -> ast.AST | None:
    """A function defined in ``scope`` (a helper) or at module level."""
    for where in (scope, scopes.tree):
        body = getattr(where, "body", [])
        # a lambda's body is one expression, with no function defined in it
        for node in body if isinstance(body, list) else []:
            if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)) and node.name == name:
                return node
    return None


def _returns_safe(scopes: Scopes, func: ast.AST, depth: int) -> bool:
    returns = [n for n in ast.walk(func) if isinstance(n, ast.Return)
               and scopes.function_of(n) is func]
    return bool(returns) and all(
        r.value is not None and _safe(scopes, r.value, func, depth) for r in returns)


# Where a template's source goes in: its text is the first argument.
_TEMPLATE_FROM_TEXT = frozenset({"Template", "from_string"})
_TEMPLATE_LOADERS = frozenset({"get_template", "select_template", "render_template",
                               "render_to_string", "TemplateResponse",
                               "get_or_select_template"})


def _module_text(scopes: Scopes, name: str) -> str | None:
    """The string a module-level ``name = "..."`` holds, or None."""
    found = None
    for stmt in scopes.tree.body:
        if isinstance(stmt, ast.Assign) and any(
                isinstance(t, ast.Name) and t.id == name for t in stmt.targets):
            if found is not None or not (isinstance(stmt.value, ast.Constant)
                                         and isinstance(stmt.value.value, str)):
                return None  # bound twice, or not to a literal
            found = stmt.value.value
    return found


def text_template(scopes: Scopes, line: int) -> str | None:
    """Why ``autoescape=False`` on ``line`` renders no HTML, or None: every
    template its function renders is a literal of the module (given inline
    or by a module-level name) with no ``<`` in it -- django-silk's curl
    command and generated test code. A template from a file, a loader, a
    parameter or with any markup in it keeps the finding."""
    calls = [c for c in scopes.calls_on(line) if any(
        k.arg == "autoescape" and isinstance(k.value, ast.Constant) and k.value.value is False
        for k in c.keywords)]
    if not calls:
        return None
    scope = scopes.function_of(calls[0])
    if not isinstance(scope, (ast.FunctionDef, ast.AsyncFunctionDef)):
        return None
    texts = []
    for node in ast.walk(scope):
        if not isinstance(node, ast.Call):
            continue
        name = callee(node)
        if name in _TEMPLATE_LOADERS or (isinstance(node.func, ast.Name) and name == "render"):
            return None  # a template from a file (Django's render(request, "x.html"))
        if name in _TEMPLATE_FROM_TEXT:
            arg = node.args[0] if node.args else None
            text = (arg.value if isinstance(arg, ast.Constant) and isinstance(arg.value, str)
                    else _module_text(scopes, arg.id) if isinstance(arg, ast.Name) else None)
            if text is None or "<" in text:
                return None
            texts.append(text)
    if not texts:
        return None
    return ("the template it renders is the module's own plain text with no HTML in it (a "
            "command line, code): there is no markup to escape, and HTML escaping would "
            "corrupt the text")
