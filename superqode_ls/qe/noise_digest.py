"""A weak hash (B303/B324) of a public key, as a protocol fixes it: noise
(after ``noise_evidence``, which keeps a hash whose function speaks of a
certificate or compares it with a peer's value; the WebSocket accept key
is ``context``'s).

SHA-1 (or MD5) of ``public_bytes(...)`` is the OCSP responder key hash and
CertID (RFC 6960), an X.509 subject key id (RFC 5280), an SSH or TLS key
fingerprint. The protocol names the hash, the peer sends the value to
compare with, and the key is public: there is no secret to recover, and
matching a given key's digest needs a second preimage, which SHA-1 and MD5
still resist (their collisions need both inputs chosen).

Every value the hash reads (its argument and each ``update()`` of the hash
object in the same function) must be a ``public_bytes()`` call or a local
given only one. Anything else fed in -- a password, a secret, a private
key's bytes, a value the rule cannot follow -- keeps the finding.
"""

from __future__ import annotations

import ast
from collections.abc import Callable

from ..models import Finding, Severity
from .ast_index import index
from .context import mark_noise
from .noise_defaults import callee
from .noise_library import module_of

Lines = Callable[[str], "list[str] | None"]

RULES = frozenset({"B303", "B324"})
_WEAK = frozenset({"sha1", "SHA1", "md5", "MD5"})
WHY = ("a digest a protocol fixes, of a public key (the key hash a peer compares, an OCSP or "
       "X.509 key id): no secret in it and no second preimage to find")


def _weak_call(c: ast.AST) -> bool:
    """``sha1(x)``, ``hashlib.sha1(x)``, ``hashlib.new("sha1", x)``,
    ``Hash(SHA1())`` (cryptography)."""
    if not isinstance(c, ast.Call):
        return False
    name = callee(c)
    if name in _WEAK:
        return True
    if name == "new" and c.args and isinstance(c.args[0], ast.Constant) \
            and str(c.args[0].value).lower() in ("sha1", "md5"):
        return True
    return name == "Hash" and bool(c.args) and isinstance(c.args[0], ast.Call) \
        and callee(c.args[0]) in _WEAK


def _data(c: ast.Call) -> list[ast.AST]:
    if callee(c) == "new":
        return list(c.args[1:2])
    if callee(c) == "Hash":
        return []
    return list(c.args[:1])


def _public(e: ast.AST, fn: ast.AST, depth: int = 4) -> bool:
    if depth <= 0:
        return False
    if isinstance(e, ast.Call) and callee(e) == "encode" and isinstance(e.func, ast.Attribute):
        return _public(e.func.value, fn, depth - 1)
    if isinstance(e, ast.Call) and callee(e) == "public_bytes":
        return True
    if isinstance(e, ast.Name):
        values = [n.value for n in ast.walk(fn) if isinstance(n, ast.Assign)
                  and any(isinstance(t, ast.Name) and t.id == e.id for t in n.targets)]
        if any(isinstance(n, ast.AugAssign | ast.For | ast.With) and any(
                isinstance(x, ast.Name) and x.id == e.id and isinstance(x.ctx, ast.Store)
                for x in ast.walk(getattr(n, "target", n))) for n in ast.walk(fn)):
            return False
        return bool(values) and all(_public(v, fn, depth - 1) for v in values)
    return False


def protocol_digest(tree: ast.Module, line: int) -> bool:
    """Every weak hash on ``line`` reads only public key bytes."""
    found = index(tree)
    fn = found.function_at(line)
    if fn is None:
        return False
    calls = [c for c in found.calls_over(line) if _weak_call(c)]
    # ``Hash(SHA1())``: the algorithm object is part of the hash it names
    named = {id(c.args[0]) for c in calls if callee(c) == "Hash"}
    calls = [c for c in calls if id(c) not in named]
    if not calls:
        return False
    for c in calls:
        data = _data(c)
        holder = next((t.id for n in ast.walk(fn) if isinstance(n, ast.Assign) and n.value is c
                       for t in n.targets if isinstance(t, ast.Name)), None)
        if holder is not None:
            data += [u.args[0] for u in ast.walk(fn) if isinstance(u, ast.Call)
                     and callee(u) == "update" and isinstance(u.func, ast.Attribute)
                     and isinstance(u.func.value, ast.Name) and u.func.value.id == holder
                     and u.args]
        if not data or not all(_public(d, fn) for d in data):
            return False
    return True


def digest_noise(findings: list[Finding], lines_of: Lines,
                 canonical: Callable[[str], str]) -> list[Finding]:
    trees: dict[str, ast.Module | None] = {}
    out = []
    for f in findings:
        if (f.noise is None and f.file and f.file.endswith(".py") and f.range
                and canonical(f.rule_id) in RULES and f.rule_id.lower() != "weak-password-hash"):
            if f.file not in trees:
                lines = lines_of(f.file)
                trees[f.file] = module_of(lines) if lines is not None else None
            tree = trees[f.file]
            if tree is not None and protocol_digest(tree, f.range.start_line):
                f = mark_noise(f, WHY, Severity.low)
        out.append(f)
    return out
