"""What the code proves about text that looks dangerous where it is used
(``_web_quiet`` calls these; low noise, never dropped):

- **a template whose text is the code's own** (``template-injection``): the
  template source is literals and zero-argument method calls whose every
  definition in the project returns only literal text (changedetection.io's
  ``env.from_string(form.extra_form_content())``: each processor form's
  method returns a Jinja literal). The object may come from a request; the
  method's text does not. A method with a parameter, one that formats a
  value into its text, or one the project does not define stays;
- **a connection string in text shown to a person** (``hardcoded-db-
  password``): an input's placeholder or help text (``render_kw=
  {"placeholder": "http://user:pass@...:3128"}``, ``help_text=``), or a
  message given to gettext: an example of the form, no credential;
- **SQL whose identifiers a method's callers quote** (``sql-injection``):
  a method parameter formatted into SQL where every ``self.method(...)``
  call in its class passes text the caller's own flow proves safe (glances'
  ``export(plugin, creation_list, ...)``, whose callers build the list from
  ``_quote_identifier(key)`` and a dict of literal types). A caller that
  passes anything else, or a method called from outside the module, stays;
- **request text checked by an anchored regex that admits no markup**
  (``reflected-xss``): eve's JSONP ``callback`` must match
  ``^[a-zA-Z_$][\\w$.]*$`` or the view aborts before it is written into the
  response: no ``<``, ``>``, ``&`` or quote can reach the page. A pattern
  with ``.``, a negated class or no end anchor, or a check the response does
  not wait for, stays.
"""

from __future__ import annotations

import ast
import re
import re._constants as sre_c
import re._parser as sre_parse
from collections.abc import Callable
from pathlib import Path

from ...workspace.pyast import parse as parse_python
from ..codegen import Scopes
from ..noise_library import python_files
from ._common import read_head
from ._web_defs import safe_at
from ._web_quiet_sql import assigned_values
from ._web_sinks import from_request

_SKIP = frozenset({".git", ".venv", "venv", "node_modules", "__pycache__", ".tox", ".nox",
                   "build", "dist", ".superqode", "site-packages"})
_MAX_FILES = 3000
_DEPTH = 6
_TEMPLATE_SINKS = frozenset({"from_string", "Template", "render_template_string"})
# Where text is shown to a person, not used: an input's placeholder, help, an example.
_SHOWN_KEYS = frozenset({"placeholder", "help_text", "help", "description", "title", "label",
                         "example", "examples", "hint", "tooltip", "default_text"})
_GETTEXT = frozenset({"_", "_l", "gettext", "lazy_gettext", "ugettext", "gettext_lazy",
                      "ugettext_lazy", "ngettext", "pgettext"})
_ABORT = frozenset({"abort", "exit", "_exit"})
_MARKUP = frozenset("<>&\"'`")
_REGEX_CALLS = frozenset({"match", "fullmatch"})


# -- a template of the code's own text ---------------------------------------


def literal_template(s: Scopes, line: int, root: Path | None,
                     defs: Callable[[str], list[ast.AST] | None]) -> str | None:
    """Why the template compiled on ``line`` is the code's own text, or None."""
    calls = [c for c in s.calls_on(line) if _name(c) in _TEMPLATE_SINKS and c.args]
    if not calls or root is None:
        return None
    methods: set[str] = set()
    for c in calls:
        func = s.function_of(c)
        parts = _parts(c.args[0], func, _DEPTH)
        if parts is None:
            return None
        methods.update(parts)
    if not methods:
        return None  # literals only: the rule does not report those
    for name in methods:
        found = defs(name)
        if not found or not all(_returns_literal(fn) for fn in found):
            return None
    return ("the template's text is the code's own: literals and "
            f"{', '.join(sorted(m + '()' for m in methods))}, whose every definition in the "
            "project returns literal text; no value from outside becomes template source")


def _name(c: ast.Call) -> str:
    return c.func.attr if isinstance(c.func, ast.Attribute) else getattr(c.func, "id", "")


def _parts(e: ast.AST, func: ast.AST, depth: int) -> set[str] | None:
    """The zero-argument methods whose results make up the text ``e``
    (literals aside); None when anything else goes into it."""
    if depth <= 0:
        return None
    if isinstance(e, ast.Constant):
        return set() if isinstance(e.value, str) else None
    if isinstance(e, ast.JoinedStr):
        out: set[str] = set()
        for v in e.values:
            inner = set() if isinstance(v, ast.Constant) else _parts(v.value, func, depth - 1)
            if inner is None:
                return None
            out |= inner
        return out
    if isinstance(e, ast.BinOp) and isinstance(e.op, ast.Add):
        left, right = _parts(e.left, func, depth - 1), _parts(e.right, func, depth - 1)
        return None if left is None or right is None else left | right
    if isinstance(e, ast.Call) and isinstance(e.func, ast.Attribute) and not e.args \
            and not e.keywords and isinstance(e.func.value, ast.Name):
        return {e.func.attr}
    if isinstance(e, ast.Name):
        values = assigned_values(func, e.id)
        if not values:
            return None
        out = set()
        for v in values:
            inner = _parts(v, func, depth - 1)
            if inner is None:
                return None
            out |= inner
        return out
    return None


def _literal_text(e: ast.AST | None, fn: ast.AST, depth: int = _DEPTH) -> bool:
    if e is None:
        return True
    if depth <= 0:
        return False
    if isinstance(e, ast.Constant):
        return e.value is None or isinstance(e.value, str)
    if isinstance(e, ast.JoinedStr):  # an f-string with nothing formatted in ({{ }} only)
        return all(isinstance(v, ast.Constant) for v in e.values)
    if isinstance(e, ast.BinOp) and isinstance(e.op, ast.Add):
        return _literal_text(e.left, fn, depth - 1) and _literal_text(e.right, fn, depth - 1)
    if isinstance(e, ast.IfExp):
        return _literal_text(e.body, fn, depth - 1) and _literal_text(e.orelse, fn, depth - 1)
    if isinstance(e, ast.Name):
        values = assigned_values(fn, e.id)
        return bool(values) and all(_literal_text(v, fn, depth - 1) for v in values)
    return False


def _returns_literal(fn: ast.AST) -> bool:
    """``fn`` takes no argument but ``self``/``cls`` and returns only
    literal text (or None)."""
    if not isinstance(fn, ast.FunctionDef | ast.AsyncFunctionDef):
        return False
    a = fn.args
    params = [p.arg for p in (*a.posonlyargs, *a.args, *a.kwonlyargs)]
    if params not in ([], ["self"], ["cls"]) or a.vararg or a.kwarg:
        return False
    returns = [n for n in ast.walk(fn) if isinstance(n, ast.Return)
               and _owner(n, fn) is fn]
    return all(_literal_text(r.value, fn) for r in returns)


def _owner(node: ast.AST, fn: ast.AST) -> ast.AST | None:
    """The function whose body ``node`` is in (nested ones count apart)."""
    for inner in ast.walk(fn):
        if inner is not fn and isinstance(inner, ast.FunctionDef | ast.AsyncFunctionDef
                                          | ast.Lambda) and any(n is node
                                                                for n in ast.walk(inner)):
            return inner
    return fn


class ProjectDefs:
    """The project's definitions of a function name, found in one bounded
    walk per name (each module's first 256 KB, parsed only where it holds
    ``def NAME(``); the web quiet step's one look beyond the flagged file."""

    def __init__(self, root: Path | None, parse: Callable[[str], ast.AST | None]):
        self.root = root
        self.parse = parse
        self._found: dict[str, list[ast.AST] | None] = {}
        self.module_of: dict[int, ast.AST] = {}  # id of a definition -> its module's tree
        # a module the walk could not read (a link, too large to open): it may
        # hold a definition, so a rule that needs every one of them stays quiet
        self.unread = False

    def __call__(self, name: str) -> list[ast.AST] | None:
        if name not in self._found:
            self._found[name] = self._walk(name)
        return self._found[name]

    def _walk(self, name: str) -> list[ast.AST] | None:
        if self.root is None:
            return None
        needle = re.compile(rf"\bdef\s+{re.escape(name)}\s*\(")
        out: list[ast.AST] = []
        for path in python_files(self.root, _SKIP, _MAX_FILES):
            if path is None:
                return None  # past the bound: unknown, the finding stays
            text = read_head(path, 262144)
            if text is None:
                self.unread = True
                continue
            if not needle.search(text):
                continue
            tree = self.parse(text)
            if tree is None:
                return None
            for n in ast.walk(tree):
                if isinstance(n, ast.FunctionDef | ast.AsyncFunctionDef) and n.name == name:
                    out.append(n)
                    self.module_of[id(n)] = tree
        return out


def parse_or_none(text: str) -> ast.AST | None:
    try:
        return parse_python(text)
    except (SyntaxError, ValueError):
        return None


# -- a connection string shown to a person ------------------------------------


def shown_text_password(s: Scopes, line: int) -> str | None:
    """Why the connection string on ``line`` is text shown to a person."""
    texts = [n for n in ast.walk(s.tree) if isinstance(n, ast.Constant)
             and isinstance(n.value, str) and getattr(n, "lineno", 0) == line
             and "://" in n.value and "@" in n.value]
    if not texts:
        return None
    for t in texts:
        parent = s.parent.get(t)
        if isinstance(parent, ast.keyword) and parent.arg in _SHOWN_KEYS:
            continue
        if isinstance(parent, ast.Dict) and any(
                v is t and isinstance(k, ast.Constant) and k.value in _SHOWN_KEYS
                for k, v in zip(parent.keys, parent.values, strict=True)):
            continue
        if isinstance(parent, ast.Call) and _name(parent) in _GETTEXT:
            continue
        return None
    return ("the connection string is an example shown to a person (an input's placeholder "
            "or help text, a translated message): no credential the code uses")


# -- SQL from a method's callers' quoted text ---------------------------------


def caller_checked_sql(s: Scopes, func: ast.AST, built: list[ast.AST],
                       values: list[ast.AST]) -> str | None:
    """Why the parameters formatted into the SQL are safe by every caller,
    or None (see the module's docstring)."""
    if not isinstance(func, ast.FunctionDef | ast.AsyncFunctionDef):
        return None
    a = func.args
    positional = [p.arg for p in (*a.posonlyargs, *a.args)]
    names = {n.id for v in values for n in ast.walk(v) if isinstance(n, ast.Name)}
    params = [p for p in positional if p in names and p not in ("self", "cls")]
    if not params or a.vararg or a.kwarg:
        return None
    # a method, called as self.name(...) from its own class (a module
    # function's callers may be anywhere; the migration rule judges those)
    if not (positional and positional[0] in ("self", "cls")):
        return None
    calls = [c for c in ast.walk(s.tree) if isinstance(c, ast.Call) and _name(c) == func.name
             and isinstance(c.func, ast.Attribute) and isinstance(c.func.value, ast.Name)
             and c.func.value.id in ("self", "cls") and s.class_of(c) is s.class_of(func)]
    if not calls:
        return None
    for c in calls:
        if any(isinstance(x, ast.Starred) for x in c.args) or any(
                k.arg is None for k in c.keywords):
            return None
        caller = s.function_of(c)
        if caller is func or not isinstance(caller, ast.FunctionDef | ast.AsyncFunctionDef):
            return None
        for p in params:
            i = positional.index(p) - 1
            arg = next((k.value for k in c.keywords if k.arg == p), None)
            if arg is None and 0 <= i < len(c.args):
                arg = c.args[i]
            if arg is None or not safe_at(s, caller, c, [arg]):
                return None
    if not all(safe_at(s, func, n, values, seed=frozenset(params)) for n in built):
        return None
    return (f"{', '.join(params)} is formatted into this SQL, and every call of "
            f"{func.name}() in the module passes text its caller proves the code's own "
            "(quoted identifiers, literals, a lookup in a dict of literals)")


# -- request text checked by an anchored regex --------------------------------


def regex_checked_reflection(s: Scopes, line: int, function: Callable[[Scopes, int], ast.AST | None]
                             ) -> str | None:
    """Why the request text sent back on ``line`` holds no markup, or None."""
    func = function(s, line)
    if func is None:
        return None
    sink = next((st for st in ast.walk(func) if isinstance(st, ast.stmt)
                 and st.lineno <= line <= (st.end_lineno or st.lineno)
                 and not isinstance(st, ast.FunctionDef | ast.AsyncFunctionDef | ast.If
                                    | ast.For | ast.While | ast.With | ast.Try)), None)
    if sink is None:
        return None
    # a read after the sink reaches it only through a loop around both
    looped = _in_loop(s, sink, func)
    readers = [n for n in ast.walk(func) if isinstance(n, ast.Assign)
               and (looped or n.lineno < sink.lineno) and from_request(n.value, frozenset())]
    if not readers or any(from_request(n, frozenset()) for n in ast.walk(sink)
                          if isinstance(n, ast.expr)):
        return None
    checked = []
    for r in readers:
        if not (len(r.targets) == 1 and isinstance(r.targets[0], ast.Name)):
            return None
        name = r.targets[0].id
        guard = _regex_guard(s, func, name, r, sink)
        if guard is None:
            return None
        checked.append(f"{name} (must match {guard!r})")
    return (f"the request text {', '.join(checked)} is checked against an anchored pattern "
            "that admits no markup (no <, >, & or quote) before the response is made; "
            "a value that fails is refused")


def _in_loop(s: Scopes, node: ast.AST, func: ast.AST) -> bool:
    while node in s.parent and node is not func:
        node = s.parent[node]
        if isinstance(node, ast.For | ast.AsyncFor | ast.While):
            return True
    return False


def _regex_guard(s: Scopes, func: ast.AST, name: str, read: ast.stmt, sink: ast.stmt
                 ) -> str | None:
    """The pattern of an ``if not re.match(PATTERN, name): abort(...)`` that
    follows ``read`` in its own block (so every path from the read passes
    it) before ``sink``."""
    parent = s.parent.get(read)
    block = next((b for b in (getattr(parent, f, None) for f in ("body", "orelse", "finalbody"))
                  if isinstance(b, list) and read in b), None)
    if block is None:
        return None
    for node in block[block.index(read) + 1:]:
        if not (isinstance(node, ast.If) and node.lineno < sink.lineno
                and node.body and _leaves(node.body[-1])):
            continue
        test = node.test
        if not (isinstance(test, ast.UnaryOp) and isinstance(test.op, ast.Not)
                and isinstance(test.operand, ast.Call)):
            continue
        call = test.operand
        if not (_name(call) in _REGEX_CALLS and isinstance(call.func, ast.Attribute)
                and isinstance(call.func.value, ast.Name) and call.func.value.id == "re"
                and len(call.args) >= 2 and isinstance(call.args[1], ast.Name)
                and call.args[1].id == name and isinstance(call.args[0], ast.Constant)
                and isinstance(call.args[0].value, str)):
            continue
        pattern = call.args[0].value
        if _no_markup(pattern, whole=_name(call) == "fullmatch"):
            return pattern
    return None


def _leaves(st: ast.stmt) -> bool:
    return isinstance(st, ast.Return | ast.Raise) or (
        isinstance(st, ast.Expr) and isinstance(st.value, ast.Call)
        and _name(st.value) in _ABORT)


def _no_markup(pattern: str, whole: bool) -> bool:
    """``pattern`` matches only whole strings (anchored at the end, or used
    with ``fullmatch``) made of characters none of which is markup."""
    try:
        parsed = sre_parse.parse(pattern)
    except (re.error, RecursionError):
        return False
    items = list(parsed)
    if not whole and not (items and items[-1][0] is sre_c.AT
                          and items[-1][1] in (sre_c.AT_END, sre_c.AT_END_STRING)):
        return False
    return _safe_items(items)


def _safe_items(items: list) -> bool:
    for op, arg in items:
        if op is sre_c.LITERAL:
            if chr(arg) in _MARKUP:
                return False
        elif op is sre_c.AT:
            continue
        elif op is sre_c.IN:
            if not _safe_class(arg):
                return False
        elif op in (sre_c.MAX_REPEAT, sre_c.MIN_REPEAT, sre_c.POSSESSIVE_REPEAT):
            if not _safe_items(list(arg[2])):
                return False
        elif op is sre_c.SUBPATTERN:
            if not _safe_items(list(arg[-1])):
                return False
        elif op is sre_c.BRANCH:
            if not all(_safe_items(list(b)) for b in arg[1]):
                return False
        else:
            return False  # ., a negated class, a back reference, a lookaround
    return True


def _safe_class(items: list) -> bool:
    for op, arg in items:
        if op is sre_c.LITERAL:
            if chr(arg) in _MARKUP:
                return False
        elif op is sre_c.RANGE:
            lo, hi = arg
            if any(lo <= ord(c) <= hi for c in _MARKUP):
                return False
        elif op is sre_c.CATEGORY:
            if arg not in (sre_c.CATEGORY_WORD, sre_c.CATEGORY_DIGIT):
                return False
        else:
            return False  # a negated class
    return True
