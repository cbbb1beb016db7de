"""Dangerous patterns bandit does not look for (security_tester's
``superqode-patterns`` tool): ``yaml.unsafe_load``, ``jwt.decode`` without
signature verification, TLS hostname checking turned off.

Two of them have a harmless twin told apart by the code around them:

- an unverified ``jwt.decode`` that only peeks at a token's claims (to pick
  the issuer or key) whose token the same flow then decodes verified (in
  the same function, or in the file's function that calls the peeking one
  with it): the signature is checked before the claims are trusted;
- ``check_hostname = False`` under ``if ... == ssl.CERT_NONE`` (ssl refuses
  CERT_NONE while hostname checking is on: the caller asked for no
  verification, which is where a finding belongs), or in a function that
  connects only to fetch the peer's certificate (``getpeercert(True)``)
  and sends nothing over the channel."""

from __future__ import annotations

import ast

from ...models import Severity
from ..noise_defaults import callee
from ._web_sinks import walk


def call_name(node: ast.Call) -> tuple[str | None, str | None]:
    """(module, function) of ``mod.func(...)`` or (None, func) of ``func(...)``."""
    func = node.func
    if isinstance(func, ast.Attribute) and isinstance(func.value, ast.Name):
        return func.value.id, func.attr
    if isinstance(func, ast.Name):
        return None, func.id
    return None, None


def may_match(text: str) -> bool:
    """False when :func:`patterns` cannot find anything in this source, so it
    need not be parsed: each pattern names an identifier, and in ASCII source
    an identifier is spelled as the tree holds it (elsewhere the parser
    normalises it, NFKC, so the text proves nothing)."""
    if not text.isascii():
        return True
    return ("unsafe_load" in text or "check_hostname" in text
            or ("jwt" in text and "decode" in text))


def patterns(tree: ast.AST):
    """(node, rule id, title, message, severity) for what bandit misses."""
    context: _Context | None = None
    for node in walk(tree):
        if isinstance(node, ast.Call):
            mod, name = call_name(node)
            if mod == "yaml" and name == "unsafe_load":
                yield (
                    node,
                    "yaml-unsafe-load",
                    "yaml.unsafe_load builds arbitrary Python objects",
                    "yaml.unsafe_load can run code from the document; use yaml.safe_load.",
                    Severity.high,
                )
            if mod == "jwt" and name == "decode" and _jwt_unverified(node):
                context = context or _Context(tree)
                if context.verified_later(node):
                    continue
                yield (
                    node,
                    "jwt-no-verify",
                    "JWT decoded without verifying its signature",
                    (
                        "jwt.decode with signature verification turned off accepts forged tokens; "
                        "verify the signature and pass the expected algorithms."
                    ),
                    Severity.high,
                )
        elif isinstance(node, ast.Assign):
            for target in node.targets:
                if (
                    isinstance(target, ast.Attribute)
                    and target.attr == "check_hostname"
                    and isinstance(node.value, ast.Constant)
                    and node.value.value is False
                ):
                    context = context or _Context(tree)
                    if context.tls_off_by_need(node):
                        continue
                    yield (
                        node,
                        "tls-no-hostname-check",
                        "TLS hostname checking turned off",
                        (
                            "check_hostname = False lets any certificate for any host through "
                            "(man in the middle); keep it on."
                        ),
                        Severity.high,
                    )


def _jwt_unverified(node: ast.Call) -> bool:
    for kw in node.keywords:
        if kw.arg == "verify" and isinstance(kw.value, ast.Constant) and kw.value.value is False:
            return True
        if kw.arg == "options" and isinstance(kw.value, ast.Dict):
            for k, v in zip(kw.value.keys, kw.value.values):
                if (
                    isinstance(k, ast.Constant)
                    and k.value == "verify_signature"
                    and isinstance(v, ast.Constant)
                    and v.value is False
                ):
                    return True
    return False


# what a function that wraps a socket may send over it
_SENDS = frozenset({"send", "sendall", "sendto", "sendfile", "write", "request", "urlopen",
                    "putrequest", "makefile"})


class _Context:
    """Where a hit sits in its file: its enclosing functions and the
    file's calls, made once per file and only for a file with a hit."""

    def __init__(self, tree: ast.AST):
        self.funcs = [n for n in ast.walk(tree)
                      if isinstance(n, ast.FunctionDef | ast.AsyncFunctionDef)]
        self.parent: dict[int, ast.AST] = {}
        for n in ast.walk(tree):
            for child in ast.iter_child_nodes(n):
                self.parent[id(child)] = n

    def _chain(self, node: ast.AST) -> list[ast.AST]:
        out = []
        while id(node) in self.parent:
            node = self.parent[id(node)]
            out.append(node)
        return out

    def _function(self, node: ast.AST) -> ast.FunctionDef | ast.AsyncFunctionDef | None:
        return next((n for n in self._chain(node)
                     if isinstance(n, ast.FunctionDef | ast.AsyncFunctionDef)), None)

    def verified_later(self, call: ast.Call) -> bool:
        """The token this unverified decode reads is decoded with its
        signature checked in the same function, or by each of the file's
        functions that call this one with a token (one that peeks and
        never verifies keeps the finding)."""
        token = _token(call)
        func = self._function(call)
        if token is None or func is None:
            return False
        if _verifies(func, token):
            return True
        callers = [(f, c) for f in self.funcs if f is not func for c in ast.walk(f)
                   if isinstance(c, ast.Call) and callee(c) == func.name]
        return bool(callers) and all(
            c.args and isinstance(c.args[0], ast.Name) and _verifies(f, c.args[0].id)
            for f, c in callers)

    def tls_off_by_need(self, node: ast.AST) -> bool:
        """``check_hostname = False`` because CERT_NONE was asked for, or to
        read the peer's certificate without trusting the channel."""
        for n in self._chain(node):
            if isinstance(n, ast.If) and any(
                    isinstance(c, ast.Compare) and any(isinstance(o, ast.Eq | ast.Is) for o in c.ops)
                    and any(_is_cert_none(x) for x in [c.left, *c.comparators])
                    for c in ast.walk(n.test)) and _inside(node, n.body):
                return True
        func = self._function(node)
        if func is None:
            return False
        # the certificate in binary form (with CERT_NONE the parsed form is
        # empty), nothing sent, and the connection closed here, not handed on
        # (urllib3 checks a fingerprint, then returns the socket: it stays)
        calls = [c for c in ast.walk(func) if isinstance(c, ast.Call)]
        wrapped = {t.id for n in ast.walk(func) if isinstance(n, ast.Assign)
                   and isinstance(n.value, ast.Call) and "wrap" in (callee(n.value) or "")
                   for t in n.targets if isinstance(t, ast.Name)}
        wrapped |= {i.optional_vars.id for n in ast.walk(func)
                    if isinstance(n, ast.With | ast.AsyncWith) for i in n.items
                    if isinstance(i.optional_vars, ast.Name)
                    and isinstance(i.context_expr, ast.Call)
                    and "wrap" in (callee(i.context_expr) or "")}
        closed = {c.func.value.id for c in calls if callee(c) == "close"
                  and isinstance(c.func, ast.Attribute) and isinstance(c.func.value, ast.Name)}
        closed |= {i.optional_vars.id for n in ast.walk(func)
                   if isinstance(n, ast.With | ast.AsyncWith) for i in n.items
                   if isinstance(i.optional_vars, ast.Name)}
        returned = {n.id for r in ast.walk(func) if isinstance(r, ast.Return) and r.value
                    for n in ast.walk(r.value) if isinstance(n, ast.Name)}
        return any(callee(c) == "getpeercert" and _binary_form(c) for c in calls) \
            and not any(callee(c) in _SENDS for c in calls) \
            and bool(wrapped) and wrapped <= closed and not wrapped & returned


def _binary_form(call: ast.Call) -> bool:
    flag = call.args[0] if call.args else next(
        (k.value for k in call.keywords if k.arg == "binary_form"), None)
    return isinstance(flag, ast.Constant) and flag.value is True


def _inside(node: ast.AST, body: list[ast.stmt]) -> bool:
    return any(n is node for stmt in body for n in ast.walk(stmt))


def _is_cert_none(node: ast.AST) -> bool:
    return (isinstance(node, ast.Attribute) and node.attr == "CERT_NONE") or (
        isinstance(node, ast.Name) and node.id == "CERT_NONE")


def _token(call: ast.Call) -> str | None:
    first = call.args[0] if call.args else next(
        (k.value for k in call.keywords if k.arg == "jwt"), None)
    return first.id if isinstance(first, ast.Name) else None


def _verifies(func: ast.AST, token: str) -> bool:
    """``jwt.decode(token, key, algorithms=...)`` in ``func`` with the
    signature checked (a key given, verification left on)."""
    for c in ast.walk(func):
        if isinstance(c, ast.Call) and call_name(c) == ("jwt", "decode") \
                and _token(c) == token and not _jwt_unverified(c) \
                and (len(c.args) > 1 or any(k.arg == "key" for k in c.keywords)):
            return True
    return False
