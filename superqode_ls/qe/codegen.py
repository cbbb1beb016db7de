"""Is an ``eval``/``exec`` call code generation? True when the code it runs
is text the module writes itself: a string literal, a template whose own
text is code (``f"def {name}(self):"``, lines joined with ``"\\n"``), or a
code object: a ``compile(...)`` result (also through a name, or a ``self.co``
property that returns one) or a parameter typed ``CodeType`` (where it was
compiled from is not followed). Code that comes from outside stays a
finding: a function parameter run as it is, ``input()``, ``sys.argv``, ``os.environ``, request
data, a file's contents. Anything this module cannot follow also stays (a
finding is only hidden on proof).
"""

from __future__ import annotations

import ast
import re

_RUNNERS = frozenset({"eval", "exec"})
# Text that makes a template code rather than glue around a value: a
# statement keyword, an assignment, a call, a block or a line break.
_CODE_TEXT = re.compile(r"\b(def|class|lambda|return|import|for|if|yield|self)\b|[=(:\n]")
# Values from outside the program: run as code, they are an injection.
_OUTSIDE_CALLS = frozenset({"input", "getenv", "read", "readline", "readlines", "read_text",
                            "read_bytes", "recv", "urlopen"})
_OUTSIDE_NAMES = frozenset({"request", "req", "argv", "environ", "stdin", "form", "args",
                            "query_params", "json", "data", "cookies", "headers"})
_DEPTH = 4


def generated_code(scopes: Scopes, line: int) -> bool:
    """Whether every ``eval``/``exec`` call on ``line`` runs code the module
    builds itself (False when there is none)."""
    calls = [c for c in scopes.calls_on(line) if _runner(c)]
    return bool(calls) and all(
        c.args and scopes.built(c.args[0], scopes.function_of(c), _DEPTH) for c in calls)


# Calls that run or deserialise their first argument: remote code execution
# when it is request data (bandit rates eval/exec, pickle and yaml medium).
_LOADERS = frozenset({"eval", "exec", "loads", "load", "unsafe_load", "full_load"})
# Web request data: Flask/Django/aiohttp's request, a handler's parsed query.
_REQUEST_NAMES = frozenset({"request", "req", "params", "query_params"})
_REQUEST_ATTRS = frozenset({"request", "GET", "POST", "FILES", "COOKIES", "form", "cookies",
                            "files", "params", "query_params", "get_json"})


def _round_trip(arg: ast.AST) -> bool:
    """``loads(dumps(x))``: the program's own object copied, not data received."""
    return any(_call_name(n) in ("dumps", "dump") for n in ast.walk(arg))


def runs_request_data(scopes: Scopes, line: int) -> str | None:
    """The call on ``line`` that runs or deserialises request data (its
    name), or None."""
    for call in scopes.calls_on(line):
        name = _call_name(call)
        if name in _LOADERS and call.args and not _round_trip(call.args[0]) and scopes.from_request(
                call.args[0], scopes.function_of(call), _DEPTH):
            return name
    return None


# The XML parsers bandit flags (B313-B320): what they read is the question.
_XML_PARSE = frozenset({"parse", "fromstring", "XML", "iterparse", "parseString",
                        "XMLID", "fromstringlist"})
# Shell runners: a fixed command line is no injection.
_SHELL_RUN = frozenset({"system", "popen", "Popen", "run", "call", "check_call",
                        "check_output", "getoutput", "getstatusoutput"})


def reads_own_constant(scopes: Scopes, line: int, names: frozenset[str] = _XML_PARSE) -> bool:
    """Every parse (or shell) call on ``line`` reads text the module fixes
    itself (a literal path, a module-level XML string); False when there is
    none or one reads anything else."""
    calls = [c for c in scopes.calls_on(line) if _call_name(c) in names and c.args]
    return bool(calls) and all(
        scopes.constant(c.args[0], scopes.function_of(c)) for c in calls)


def fixed_command(scopes: Scopes, line: int) -> bool:
    """Every shell call on ``line`` runs a command line fixed in the code."""
    return reads_own_constant(scopes, line, _SHELL_RUN)


def _runner(call: ast.Call) -> bool:
    f = call.func
    if isinstance(f, ast.Name):
        return f.id in _RUNNERS
    return (isinstance(f, ast.Attribute) and f.attr in _RUNNERS
            and isinstance(f.value, ast.Name) and f.value.id == "builtins")


def _call_name(node: ast.AST) -> str | None:
    if not isinstance(node, ast.Call):
        return None
    f = node.func
    return f.id if isinstance(f, ast.Name) else f.attr if isinstance(f, ast.Attribute) else None


class Scopes:
    """One parsed module, for the questions above (built once per file)."""

    def __init__(self, tree: ast.Module):
        self.tree = tree
        self.parent: dict[ast.AST, ast.AST] = {}
        # The calls and functions in walk order, listed in the one walk: a
        # walk of the module per question was most of the noise filter's time.
        self._calls: list[ast.Call] = []
        self._functions: list[ast.FunctionDef | ast.AsyncFunctionDef] = []
        for node in ast.walk(tree):
            if isinstance(node, ast.Call):
                self._calls.append(node)
            elif isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
                self._functions.append(node)
            for child in ast.iter_child_nodes(node):
                self.parent[child] = node

    @property
    def functions(self) -> list[ast.FunctionDef | ast.AsyncFunctionDef]:
        """The module's functions, nested ones too, in walk order."""
        return self._functions

    def calls_on(self, line: int) -> list[ast.Call]:
        return [n for n in self._calls if n.lineno <= line <= (n.end_lineno or n.lineno)]

    def function_of(self, node: ast.AST) -> ast.AST:
        while node in self.parent:
            node = self.parent[node]
            if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda)):
                return node
        return self.tree

    def function_name(self, line: int) -> str:
        """The name of the innermost function around ``line`` ("" at module level)."""
        best = None
        for node in self._functions:
            if (node.lineno <= line <= (node.end_lineno or node.lineno)
                    and (best is None or node.lineno > best.lineno)):
                best = node
        return best.name if best is not None else ""

    def class_of(self, node: ast.AST) -> ast.ClassDef | None:
        while node in self.parent:
            node = self.parent[node]
            if isinstance(node, ast.ClassDef):
                return node
        return None

    # -- what a value is -------------------------------------------------
    def built(self, e: ast.AST, scope: ast.AST, depth: int) -> bool:
        """``e`` is code text (or a code object) the module writes itself."""
        if depth <= 0:
            return False
        if isinstance(e, ast.Constant):
            return isinstance(e.value, (str, bytes))
        if _call_name(e) == "compile" and isinstance(e, ast.Call) and isinstance(e.func, ast.Name):
            return True  # a code object: what it was compiled from is the finding of its own
        literal, values = _template(e)
        if literal is not None:
            if _CODE_TEXT.search(literal):
                # The module writes the code; the values fill in names.
                return not any(self.outside(v, scope, depth - 1) for v in values)
            return all(self.built(v, scope, depth - 1) for v in values)
        if isinstance(e, ast.Name):
            if _code_object_param(e.id, scope):
                return True  # typed a code object: compiled, not text
            return self._name_built(e.id, scope, depth - 1)
        if (isinstance(e, ast.Call) and isinstance(e.func, ast.Attribute)
                and e.func.attr == "replace"):  # code.replace(co_name=...), text.replace(...)
            return self.built(e.func.value, scope, depth - 1)
        if isinstance(e, ast.Attribute) and e.attr == "__forward_code__":
            return True  # typing.ForwardRef's code object, compiled from an annotation
        if (isinstance(e, ast.Attribute) and isinstance(e.value, ast.Name)
                and e.value.id == "self"):
            return self._attr_built(e.attr, scope, depth - 1)
        return False

    def outside(self, e: ast.AST, scope: ast.AST, depth: int) -> bool:
        """``e`` may come from outside: it holds a parameter, input(), argv,
        the environment, request data or a file's contents, also through
        the local names it is built from (past ``depth``: outside). The
        items of a parameter a loop goes over are not (names filling in a
        template), the parameter itself is."""
        if depth <= 0:
            return True
        params = _params(scope)
        for node in ast.walk(e):
            if isinstance(node, ast.Name) and (node.id in _OUTSIDE_NAMES or node.id in params):
                return True
            if isinstance(node, ast.Attribute) and node.attr in _OUTSIDE_NAMES:
                return True
            if _call_name(node) in _OUTSIDE_CALLS:
                return True
        return any(self.outside(v, scope, depth - 1)
                   for node in ast.walk(e) if isinstance(node, ast.Name)
                   for v in (*self._assigned(node.id, scope), *self._appended(node.id, scope))
                   if not (isinstance(v, _Items) and isinstance(v.value, ast.Name)
                           and v.value.id in params))

    def from_request(self, e: ast.AST, scope: ast.AST, depth: int) -> bool:
        """``e`` holds web request data (``request.POST[...]``, a cookie, the
        query's ``params``), also through the local names it is built from.
        Narrower than ``outside``: a parameter is not request data."""
        if depth <= 0:
            return False
        for node in ast.walk(e):
            if isinstance(node, ast.Name) and node.id in _REQUEST_NAMES:
                return True
            if isinstance(node, ast.Attribute) and node.attr in _REQUEST_ATTRS:
                return True
        return any(self.from_request(v, scope, depth - 1)
                   for node in ast.walk(e) if isinstance(node, ast.Name)
                   for v in self._assigned(node.id, scope))

    def constant(self, e: ast.AST, scope: ast.AST, depth: int = _DEPTH) -> bool:
        """``e`` is text the module fixes itself: a literal, constant text
        joined, or a name (of the function or the module, not a parameter)
        only ever given such text (``USERS_XML = "<users>..."``)."""
        if depth <= 0:
            return False
        if isinstance(e, ast.Constant):
            return isinstance(e.value, (str, bytes))
        if isinstance(e, ast.JoinedStr):
            return all(isinstance(v, ast.Constant) for v in e.values)
        if isinstance(e, ast.BinOp) and isinstance(e.op, ast.Add):
            return self.constant(e.left, scope, depth - 1) and self.constant(e.right, scope, depth - 1)
        if isinstance(e, ast.Name) and e.id not in _params(scope):
            values = self._assigned(e.id, scope) or (
                self._assigned(e.id, self.tree) if scope is not self.tree else [])
            return bool(values) and all(self.constant(v, self.tree, depth - 1) for v in values)
        return False

    def _name_built(self, name: str, scope: ast.AST, depth: int) -> bool:
        if name in _params(scope):
            return False
        # ``code = code.replace(...)`` keeps what ``code`` was
        values = [v for v in self._assigned(name, scope) if not _rewrites(v, name)]
        appended = self._appended(name, scope)
        if not values:
            return False
        return all(self._element_built(v, name, scope, depth) for v in values) and all(
            self.built(v, scope, depth) for v in appended)

    def _element_built(self, v: ast.AST, name: str, scope: ast.AST, depth: int) -> bool:
        if isinstance(v, (ast.List, ast.Tuple)):  # lines = ["def f():", ...]
            return all(self.built(x, scope, depth) for x in v.elts)
        return self.built(v, scope, depth)

    def _attr_built(self, attr: str, scope: ast.AST, depth: int) -> bool:
        """``self.attr``: a property of the class that returns built code,
        or every ``self.attr = ...`` in the class built."""
        cls = self.class_of(scope)
        if cls is None:
            return False
        values: list[tuple[ast.AST, ast.AST]] = []
        for node in cls.body:
            if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)) and node.name == attr:
                values += [(r.value, node) for r in ast.walk(node)
                           if isinstance(r, ast.Return) and r.value is not None]
        for node in ast.walk(cls):
            if isinstance(node, ast.Assign):
                for t in node.targets:
                    if (isinstance(t, ast.Attribute) and t.attr == attr
                            and isinstance(t.value, ast.Name) and t.value.id == "self"):
                        values.append((node.value, self.function_of(node)))
        return bool(values) and all(self.built(v, s, depth) for v, s in values)

    def _assigned(self, name: str, scope: ast.AST) -> list[ast.AST]:
        """The values ``name`` is given in ``scope`` (its own body); a target
        that is not a plain name (a tuple, a loop) gives an unknown value."""
        out: list[ast.AST] = []
        for node in _own_nodes(scope):
            if isinstance(node, ast.Assign):
                for t in node.targets:
                    if isinstance(t, ast.Name) and t.id == name:
                        out.append(node.value)
                    elif _binds(t, name):  # unpacked: the whole value, never built
                        out.append(ast.Tuple(elts=[node.value, ast.Name(id="<unpacked>")]))
            elif isinstance(node, (ast.AnnAssign, ast.AugAssign)) and node.value is not None:
                if isinstance(node.target, ast.Name) and node.target.id == name:
                    out.append(node.value)
            elif isinstance(node, (ast.For, ast.AsyncFor, ast.comprehension)):
                if _binds(node.target, name):
                    out.append(_Items(value=node.iter, attr="<item>"))
            elif isinstance(node, (ast.With, ast.AsyncWith)):
                for item in node.items:
                    if item.optional_vars is not None and _binds(item.optional_vars, name):
                        out.append(item.context_expr)
            elif isinstance(node, ast.NamedExpr) and node.target.id == name:
                out.append(node.value)
        return out

    def _appended(self, name: str, scope: ast.AST) -> list[ast.AST]:
        """What ``name.append(x)`` / ``name.extend(x)`` add in ``scope``."""
        out: list[ast.AST] = []
        for node in _own_nodes(scope):
            if (isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute)
                    and node.func.attr in ("append", "extend", "insert")
                    and isinstance(node.func.value, ast.Name) and node.func.value.id == name):
                out.extend(node.args[-1:])
        return out


class _Items(ast.Attribute):
    """A loop variable: the items of ``value``. Items of a parameter (a
    list of names) fill in a code template; the parameter itself pasted
    into one is code from outside."""


def _template(e: ast.AST) -> tuple[str | None, list[ast.AST]]:
    """A template's own text and the values filled in: an f-string,
    ``"..." % x``, ``"...".format(...)``, ``a + b`` or ``"sep".join(xs)``;
    (None, []) when ``e`` is none of these."""
    if isinstance(e, ast.JoinedStr):
        text = "".join(v.value for v in e.values if isinstance(v, ast.Constant)
                       and isinstance(v.value, str))
        return text, [v.value for v in e.values if isinstance(v, ast.FormattedValue)]
    if isinstance(e, ast.BinOp) and isinstance(e.op, ast.Mod) and _is_str(e.left):
        values = e.right.elts if isinstance(e.right, ast.Tuple) else [e.right]
        return e.left.value, list(values)  # type: ignore[attr-defined]
    if isinstance(e, ast.BinOp) and isinstance(e.op, ast.Add):
        parts = [e.left, e.right]
        text = "".join(p.value for p in parts if _is_str(p))  # type: ignore[attr-defined]
        return text, [p for p in parts if not _is_str(p)]
    if (isinstance(e, ast.Call) and isinstance(e.func, ast.Attribute)
            and _is_str(e.func.value)):
        if e.func.attr == "format":
            return e.func.value.value, [*e.args, *(k.value for k in e.keywords)]  # type: ignore[attr-defined]
        if e.func.attr == "join" and len(e.args) == 1:
            arg = e.args[0]
            sep = e.func.value.value  # type: ignore[attr-defined]
            if isinstance(arg, (ast.ListComp, ast.GeneratorExp)):
                return sep, [arg.elt]
            if isinstance(arg, (ast.List, ast.Tuple)):
                return sep, list(arg.elts)
            return sep, [arg]
    return None, []


def _is_str(e: ast.AST) -> bool:
    return isinstance(e, ast.Constant) and isinstance(e.value, str)


def _params(scope: ast.AST) -> set[str]:
    args = getattr(scope, "args", None)
    if not isinstance(args, ast.arguments):
        return set()
    return {a.arg for a in (*args.posonlyargs, *args.args, *args.kwonlyargs,
                            args.vararg, args.kwarg) if a is not None}


def _rewrites(v: ast.AST, name: str) -> bool:
    return (isinstance(v, ast.Call) and isinstance(v.func, ast.Attribute)
            and v.func.attr == "replace" and isinstance(v.func.value, ast.Name)
            and v.func.value.id == name)


def _code_object_param(name: str, scope: ast.AST) -> bool:
    """A parameter annotated ``CodeType`` (``types.CodeType``)."""
    args = getattr(scope, "args", None)
    if not isinstance(args, ast.arguments):
        return False
    for a in (*args.posonlyargs, *args.args, *args.kwonlyargs):
        if a.arg == name and a.annotation is not None:
            ann = a.annotation
            text = ann.value if isinstance(ann, ast.Constant) else ast.unparse(ann)
            return str(text).rsplit(".", 1)[-1] == "CodeType"
    return False


def _binds(target: ast.AST, name: str) -> bool:
    return any(isinstance(n, ast.Name) and n.id == name for n in ast.walk(target))


def _own_nodes(scope: ast.AST):
    """The nodes of ``scope``'s body, not of a function or class inside it."""
    # a lambda's body is one expression, not a list of statements
    todo = [scope.body] if isinstance(scope, ast.Lambda) else list(getattr(scope, "body", []))
    while todo:
        node = todo.pop()
        yield node
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef, ast.Lambda)):
            continue
        todo.extend(ast.iter_child_nodes(node))
