"""TLS checks turned off on the user's say (called from ``qe/noise_idioms.py``):
``check_hostname = False`` (tls-no-hostname-check) in one branch of an
``if`` whose other branch turns the checks on (``check_hostname = True`` or
``verify_mode = CERT_REQUIRED``, or ``ssl.create_default_context()`` with
nothing turned off: redis-py's HTTP client, ``if self.verify_tls:`` with the
default context, ``else:`` the checks off): scrapy's ``if verify_setting: ... else:
ctx.check_hostname = False``. The code verifies by default and a setting
the user writes decides, so the off branch is a documented choice, not a
hole. So is a function that matches the certificate's names against the
host itself (urllib3's ``match_hostname`` where ``ssl`` cannot check what
it checks), and the attribute's default in a class that is an SSL context
itself. Turned off unconditionally, or with no branch that turns the
checks on, it stays."""

from __future__ import annotations

import ast

from .ast_index import index
from .codegen import Scopes


def _turns_on(stmts: list[ast.stmt]) -> bool:
    """One of ``stmts`` (or a statement inside them) sets
    ``check_hostname = True`` or ``verify_mode = CERT_REQUIRED``."""
    for stmt in stmts:
        for n in ast.walk(stmt):
            if not isinstance(n, ast.Assign):
                continue
            for t in n.targets:
                if not isinstance(t, ast.Attribute):
                    continue
                if (t.attr == "check_hostname" and isinstance(n.value, ast.Constant)
                        and n.value.value is True):
                    return True
                v = n.value
                name = v.attr if isinstance(v, ast.Attribute) else getattr(v, "id", "")
                if t.attr == "verify_mode" and name == "CERT_REQUIRED":
                    return True
    return False


def _turns_off(stmts: list[ast.stmt]) -> bool:
    """One of ``stmts`` sets ``check_hostname = False`` or ``verify_mode = CERT_NONE``."""
    for n in (n for stmt in stmts for n in ast.walk(stmt)):
        if isinstance(n, ast.Assign):
            v = n.value
            name = v.attr if isinstance(v, ast.Attribute) else getattr(v, "id", "")
            if any(isinstance(t, ast.Attribute) and (
                    t.attr == "check_hostname" and isinstance(v, ast.Constant) and v.value is False
                    or t.attr == "verify_mode" and name == "CERT_NONE") for t in n.targets):
                return True
    return False


# ssl's default context checks the chain and the host name (CERT_REQUIRED,
# check_hostname on): a branch that makes one and turns nothing off verifies.
_DEFAULT_CONTEXT = frozenset({"create_default_context"})


def _verifies(stmts: list[ast.stmt]) -> bool:
    return _turns_on(stmts) or (any(_calls(s, _DEFAULT_CONTEXT) for s in stmts)
                                and not _turns_off(stmts))


def _calls(tree: ast.AST, names: frozenset[str]) -> bool:
    return any(isinstance(n, ast.Call) and (getattr(n.func, "attr", None) in names
                                            or getattr(n.func, "id", None) in names)
               for n in ast.walk(tree))


# Matching a certificate's names against the host, done by the code itself
# (urllib3: ``ssl``'s check off where it cannot check what urllib3 checks,
# then ``match_hostname(cert, host)`` on the connection).
_OWN_MATCH = frozenset({"match_hostname", "_match_hostname", "verify_hostname",
                        "_verify_hostname"})


def _context_default(scopes: Scopes, assign: ast.Assign) -> str | None:
    """``self.check_hostname = False`` in ``__init__`` of a class that is an
    SSL context itself (it has ``wrap_socket``): the attribute's default,
    which its user sets as on ``ssl.SSLContext`` (urllib3's PyOpenSSLContext)."""
    target = assign.targets[0] if len(assign.targets) == 1 else None
    if not (isinstance(target, ast.Attribute) and isinstance(target.value, ast.Name)
            and target.value.id == "self"):
        return None
    fn = scopes.parent.get(assign)
    cls = scopes.parent.get(fn) if fn is not None else None
    if (isinstance(fn, ast.FunctionDef) and fn.name == "__init__" and isinstance(cls, ast.ClassDef)
            and any(isinstance(m, ast.FunctionDef) and m.name == "wrap_socket" for m in cls.body)):
        return (f"the default of {cls.name}.check_hostname, a context class like ssl.SSLContext: "
                "its user turns the check on or off")
    return None


def verify_chosen(scopes: Scopes, line: int) -> str | None:
    """Why ``check_hostname = False`` on ``line`` is the user's choice, or None."""
    assign = next((n for n in index(scopes.tree).nodes_at(line) if isinstance(n, ast.Assign)),
                  None)
    if assign is None:
        return None
    if why := _context_default(scopes, assign):
        return why
    fn = index(scopes.tree).function_at(line)
    if fn is not None and _calls(fn, _OWN_MATCH):
        return ("the function matches the certificate's names against the host itself "
                "(match_hostname) where the ssl module's own check is off")
    child: ast.AST = assign
    while child in scopes.parent:
        parent = scopes.parent[child]
        if isinstance(parent, (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda, ast.ClassDef,
                               ast.Module)):
            return None
        if isinstance(parent, ast.If) and parent.orelse:
            mine, other = ((parent.body, parent.orelse) if child in parent.body
                           else (parent.orelse, parent.body) if child in parent.orelse
                           else (None, None))
            if mine is not None and other is not None and _verifies(other) \
                    and not _turns_on(mine):
                test = ast.unparse(parent.test)
                return (f"the checks are off only where `{test}` says so; the other branch "
                        "turns them on: a setting the user chooses, verified by default")
        child = parent
    return None
