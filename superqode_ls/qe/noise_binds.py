"""Whether an all-interfaces address (bandit B104) is bound at all (the
context step, qe/context.py): one only compared against, shown to a
person, given as a peer's address or listed among the hosts a request may
name binds nothing."""

from __future__ import annotations

import ast
import re

from .ast_index import index
from .codegen import Scopes

_ALL_INTERFACES = frozenset({"0.0.0.0", "::", "[::]"})


# Calls that show a value to a person (a log line, a message), never bind it.
# Not ``format`` or ``write``: a formatted address may still be bound.
_DISPLAY_CALLS = frozenset({"print", "echo", "secho", "style", "info", "debug", "warning",
                            "warn", "error", "critical", "exception", "log"})
# Calls given a peer's address (where a datagram came from, where to send or
# connect): an all-interfaces address there binds nothing.
_PEER_CALLS = frozenset({"receive_datagram", "datagram_received", "sendto", "connect",
                         "connect_ex", "create_connection"})


# Settings that list the hosts or origins a request may name (Django's
# ALLOWED_HOSTS, INTERNAL_IPS, CSRF_TRUSTED_ORIGINS, django-cors-headers'
# lists): the framework compares each request against them, it binds nothing.
_ALLOW_LIST = re.compile(r"(?i)allowed_hosts|internal_ips|trusted_origins|cors_\w*(origin|host)")


def not_bound(scopes: Scopes, line: int) -> str | None:
    """Why no all-interfaces address on ``line`` is bound: each is only
    compared against (``host == "0.0.0.0"``) or only shown (a log line, a
    message), also through the local name it is assigned to; None when one
    may reach a bind (passed on, returned, stored) or the code is not
    followed."""
    # the nodes that start on the line, from the module's one index: a walk
    # of the module per finding was quadratic in a large module's B104s
    hits = [n for n in index(scopes.tree).nodes_at(line) if isinstance(n, ast.Constant)
            and isinstance(n.value, str) and n.value in _ALL_INTERFACES]
    if not hits:
        return None
    uses = {_use(scopes, node) for node in hits}
    if uses == {"compared"}:
        return "the address is compared against, not bound to"
    if uses <= {"compared", "shown"}:
        return "the address is only shown (a log line or message), not bound to"
    if uses <= {"compared", "shown", "peer"}:
        return ("the address is a peer's, passed where a datagram comes from or goes to "
                "(receive_datagram, sendto, connect): nothing binds to it")
    return None


def _use(scopes: Scopes, node: ast.AST, follow: bool = True) -> str:
    """How a value is used: "compared", "shown" or "other"."""
    up = scopes.parent.get(node)
    while isinstance(up, (ast.Set, ast.Tuple, ast.List, ast.IfExp, ast.BoolOp,
                          ast.FormattedValue, ast.JoinedStr)):
        if isinstance(up, (ast.FormattedValue, ast.JoinedStr)):
            return _text_use(scopes, up, follow)
        node, up = up, scopes.parent.get(up)
    if isinstance(up, ast.Compare):
        return "compared"
    if (isinstance(up, ast.Assign) and isinstance(node, (ast.List, ast.Tuple, ast.Set))
            and any(_ALLOW_LIST.search(ast.unparse(t)) for t in up.targets)):
        return "compared"  # requests' Host or Origin is checked against the list
    if isinstance(up, ast.Call) and node in up.args and _display_call(up):
        return "shown"
    if isinstance(up, ast.Call) and node in up.args and _call_word(up) in _PEER_CALLS:
        return "peer"
    if isinstance(up, ast.Call) and node in up.args and "format" in _call_word(up).lower():
        return _use(scopes, up, follow)  # human.format_address((host, port)): more text
    if (follow and isinstance(up, ast.Assign) and len(up.targets) == 1
            and isinstance(up.targets[0], ast.Name)):
        return _name_use(scopes, up.targets[0].id, scopes.function_of(up), up.lineno)
    return "other"


def _text_use(scopes: Scopes, node: ast.AST, follow: bool) -> str:
    """A value inside an f-string is shown where the string is."""
    while isinstance(scopes.parent.get(node), (ast.FormattedValue, ast.JoinedStr)):
        node = scopes.parent[node]
    return "shown" if _use(scopes, node, follow) in ("shown", "compared") else "other"


def _assigns_back(scopes: Scopes, node: ast.AST, name: str) -> bool:
    up = scopes.parent.get(node)
    while up is not None and not isinstance(up, ast.stmt):
        up = scopes.parent.get(up)
    return isinstance(up, ast.Assign) and any(
        isinstance(t, ast.Name) and t.id == name for t in up.targets)


def _call_word(call: ast.Call) -> str:
    f = call.func
    return f.id if isinstance(f, ast.Name) else f.attr if isinstance(f, ast.Attribute) else ""


def _display_call(call: ast.Call) -> bool:
    """A log or print call, or an exception built with the text (its message)."""
    name = _call_word(call)
    return name in _DISPLAY_CALLS or name.endswith(("Error", "Exception"))


def _name_use(scopes: Scopes, name: str, scope: ast.AST, after: int) -> str:
    """"shown" when every later read of ``name`` in its function is
    compared or shown; "other" otherwise (also when it is never read)."""
    reads = [n for n in ast.walk(scope) if isinstance(n, ast.Name) and n.id == name
             and isinstance(n.ctx, ast.Load) and n.lineno >= after
             and scopes.function_of(n) is scope]
    if not reads or isinstance(scope, ast.Module):
        return "other"
    # ``host = f"[{host}]"`` rewrites the name: its later reads decide
    reads = [n for n in reads if not _assigns_back(scopes, n, name)]
    uses = {_use(scopes, n, follow=False) for n in reads}
    return "shown" if uses <= {"compared", "shown"} and "shown" in uses else (
        "compared" if uses == {"compared"} else "other")


# What a protocol's hash never takes: a password or a secret.
