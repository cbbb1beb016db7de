"""Noise rules for web findings that the code guards and for values that
are documentation's, not secrets (called through ``qe/noise_idioms.py``):

- a path, template, URL or redirect built from a request value inside
  ``if name in allowed:`` (CTFd's admin page opens ``plugins/<name>/config.html``
  only for a plugin folder it listed itself): the value is one the server
  chose. A list that comes from the request itself, or a line that also
  reads the request, stays;
- debug mode on an application server run on the loopback address only
  (``app.run(debug=True, host="127.0.0.1")`` in a developer's ``serve.py``):
  the debugger is reachable from this machine alone. With another host, or
  none given where the server's default is not named, it stays;
- AWS's documented example keys (``AKIAIOSFODNN7EXAMPLE``,
  ``wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY``) and other token-shaped values
  that spell ``EXAMPLE`` in capitals, say they are fake (``FAKE``,
  ``DoNotUse``) or hold x's where the key would be (``sk_live_xxxxxxxx``):
  documentation's or a demo's values, which no account accepts; in CI
  files and tests as anywhere else.
"""

from __future__ import annotations

import ast
import re

from .codegen import Scopes

# The web rules (canonical ids) whose value an allow-list check constrains.
GUARDED_RULES = frozenset({"PATH-TRAVERSAL", "TEMPLATE-INJECTION", "OPEN-REDIRECT", "SSRF"})
DEBUG_RULES = frozenset({"DEBUG-MODE", "B201"})


def _statement(scopes: Scopes, node: ast.AST) -> ast.AST:
    while node in scopes.parent and not isinstance(node, ast.stmt):
        node = scopes.parent[node]
    return node


def allow_listed(scopes: Scopes, line: int) -> str | None:
    """Why the flagged statement on ``line`` uses a value the server chose,
    or None."""
    stmts = [n for n in ast.walk(scopes.tree) if isinstance(n, ast.stmt)
             and n.lineno == line and not isinstance(n, (ast.If, ast.For, ast.While, ast.With,
                                                          ast.Try, ast.FunctionDef,
                                                          ast.AsyncFunctionDef, ast.ClassDef))]
    if not stmts:
        return None
    stmt = stmts[-1]
    if "request" in ast.unparse(stmt):
        return None
    up = scopes.parent.get(stmt)
    while up is not None and not isinstance(up, (ast.FunctionDef, ast.AsyncFunctionDef)):
        if isinstance(up, ast.If) and _inside(stmt, up.body):
            name = _membership(up.test)
            if name and _mentions(scopes, stmt, up, name):
                return (f"{name} is checked against a list the server made first (if {name} in "
                        "...): only a value it chose gets here")
        up = scopes.parent.get(up)
    fn = up
    if fn is not None and (name := _rejected_before(fn, stmt)):
        return (f"{name} is refused first unless it is in a list the server made (if {name} "
                "not in ...: raise): only a value it chose gets here")
    return None


def _rejected_before(fn: ast.AST, stmt: ast.stmt) -> str | None:
    """A name ``stmt`` reads that a statement of the function's own body
    before it refuses unless it is in a list the server made: ``if name not
    in X: raise`` (or return), also ``if name and name not in X:`` -- an
    empty value gets past, and opens nothing (django-silk's file_path)."""
    loads = {n.id for n in ast.walk(stmt) if isinstance(n, ast.Name) and isinstance(n.ctx, ast.Load)}
    for node in getattr(fn, "body", []):
        if node.lineno >= stmt.lineno:
            break
        if not (isinstance(node, ast.If) and node.body and not node.orelse
                and isinstance(node.body[-1], (ast.Raise, ast.Return))):
            continue
        parts = node.test.values if (isinstance(node.test, ast.BoolOp)
                                     and isinstance(node.test.op, ast.And)) else [node.test]
        tests = [t for t in parts if not isinstance(t, ast.Name)]
        if len(tests) != 1:
            continue
        t = tests[0]
        if (isinstance(t, ast.Compare) and isinstance(t.left, ast.Name) and len(t.ops) == 1
                and isinstance(t.ops[0], ast.NotIn)
                and all(isinstance(x, ast.Name) and x.id == t.left.id for x in parts if x is not t)
                and "request" not in ast.unparse(t.comparators[0])
                and t.left.id in loads):
            return t.left.id
    return None


def _inside(stmt: ast.AST, body: list[ast.stmt]) -> bool:
    return any(stmt is n for b in body for n in ast.walk(b))


def _membership(test: ast.AST) -> str | None:
    """``name`` in ``if name in X:`` where X is no request data."""
    if (isinstance(test, ast.Compare) and isinstance(test.left, ast.Name)
            and len(test.ops) == 1 and isinstance(test.ops[0], ast.In)
            and isinstance(test.comparators[0], (ast.Name, ast.Attribute, ast.List, ast.Tuple,
                                                 ast.Set))
            and "request" not in ast.unparse(test.comparators[0])):
        return test.left.id
    return None


def _mentions(scopes: Scopes, stmt: ast.AST, guard: ast.If, name: str) -> bool:
    """``stmt`` reads ``name``, or a local the guarded block set from it."""
    loads = {n.id for n in ast.walk(stmt) if isinstance(n, ast.Name) and isinstance(n.ctx, ast.Load)}
    if name in loads:
        return True
    for node in guard.body:
        for a in ast.walk(node):
            if (isinstance(a, ast.Assign) and a.lineno < getattr(stmt, "lineno", 0)
                    and any(isinstance(t, ast.Name) and t.id in loads for t in a.targets)
                    and any(isinstance(n, ast.Name) and n.id == name for n in ast.walk(a.value))):
                return True
    return False


_LOOPBACK = frozenset({"127.0.0.1", "localhost", "::1"})


def local_debug_server(scopes: Scopes, line: int) -> str | None:
    """Why debug mode on ``line`` is a server on the loopback address only."""
    calls = [c for c in scopes.calls_on(line) if isinstance(c.func, ast.Attribute)
             and c.func.attr in ("run", "run_simple")]
    if not calls:
        return None
    for call in calls:
        host = next((k.value for k in call.keywords if k.arg == "host"), None)
        if host is None and call.func.attr == "run_simple" and call.args:  # type: ignore[union-attr]
            host = call.args[0]
        if not (isinstance(host, ast.Constant) and host.value in _LOOPBACK):
            return None
    return ("the debug server listens on the loopback address only (a developer's runner): its "
            "debugger is reachable from this machine alone")


# A token-shaped value that spells EXAMPLE in capitals, as AWS's
# documentation does (AKIAIOSFODNN7EXAMPLE, ...bPxRfiCYEXAMPLEKEY), or says
# it is fake (ghp_FAKEdvapCanaryGithubToken000..., ...KeyDoNotUse000FAKE).
_EXAMPLE_TOKEN = re.compile(r"[A-Za-z0-9/+]{6,}EXAMPLE(?:KEY)?\b")
_FAKE_TOKEN = re.compile(r"(?<![\w/+-])(?=[\w/+-]{16,})[\w/+-]*(?:FAKE|(?i:do_?not_?use))[\w/+-]*")


# A provider's prefix and then x's where the key would be.
_X_RUN = re.compile(r"(?<![\w/+])[A-Za-z]{2,8}[_.-](?:[A-Za-z]{2,8}[_.-])?[xX]{8,}(?![\w/+])")


def documentation_example(text: str | None) -> str | None:
    """Why the secret on a line of ``text`` is documentation's example."""
    if not text:
        return None
    if _EXAMPLE_TOKEN.search(text):
        return ("a documentation example value (it spells EXAMPLE, as AWS's documented keys "
                "do): no account accepts it")
    if _FAKE_TOKEN.search(text):
        return "a value that says it is fake (FAKE, DoNotUse): made for tests or a demo"
    if _X_RUN.search(text):
        return "a placeholder: the token's body is a run of x's (sk_live_xxxxxxxx...)"
    return None
