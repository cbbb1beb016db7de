"""Two rule classes shown only on positive evidence that they matter.

A weak hash (bandit B324/B303, ruff S324/S303) is a flaw when an attacker
gains from a collision or a preimage: the digest protects a secret, signs
or authenticates something, or is checked against what a user sends. The
hash is worth acting on when the code says so: what is hashed (or fed to
the hash object's ``update``), where the digest goes (the name, attribute,
key or argument it is given to, a caller's use where the function returns
it), the enclosing function's or class's name or its parameters speak of a
password, secret, token, credential, signature, auth, salt, nonce, OTP,
session, CSRF, API or private key, HMAC, encryption, a certificate, integrity
or a code mailed to a user (activation, confirmation, invitation); or the
digest is verified (``compare_digest``, or ``==`` against a request's or
a user's value); or the call says ``usedforsecurity=True``. Anything else,
``md5(path.encode()).hexdigest()`` as a file or cache id, is noise.
SuperQode's own WEAK-PASSWORD-HASH already carries its evidence and is
left as it is.

A mutable default (ruff B006, pylint W0102) is a bug when one call's
changes reach the next: the function (or a function nested in it) mutates
the parameter or something inside it (a mutating method, an item or
attribute assigned or deleted, ``+=``), or lets it outlive the call
(returns or yields it, stores it in an attribute, an item, a global, or
with ``append``/``setdefault``/``setattr``), directly or through a local
alias, or hands it to a function or class of the same module that does so
with it. Handing it to any other call is not evidence: what that call does
is not in sight. Without evidence the default is noise.

Never hidden: such a finding stays in the report, marked noise with the
reason, one click away.
"""

from __future__ import annotations

import ast
import re
from collections.abc import Callable
from typing import Any

from ..models import Finding, Severity
from .ast_index import index
from .context import mark_noise
from .noise_defaults import callee
from .noise_library import module_of

Lines = Callable[[str], "list[str] | None"]
HASH_RULES = frozenset({"B324", "B303"})
DEFAULT_RULES = frozenset({"B006", "W0102"})
WHY_HASH = "weak hash with no secret or signature in sight (an identifier or checksum)"
WHY_DEFAULT = "mutable default that the function never changes"


def evidence_noise(findings: list[Finding], lines_of: Lines,
                   canonical: Callable[[str], str]) -> list[Finding]:
    modules: dict[str, _Module | None] = {}
    out = []
    for f in findings:
        r = f.range
        if f.noise is None and f.file and f.file.endswith(".py") and r is not None:
            rule = canonical(f.rule_id)
            hash_rule = rule in HASH_RULES and f.rule_id.lower() != "weak-password-hash"
            if hash_rule or rule in DEFAULT_RULES:
                if f.file not in modules:
                    lines = lines_of(f.file)
                    tree = module_of(lines) if lines is not None else None
                    modules[f.file] = _Module(tree) if tree is not None else None
                m = modules[f.file]
                if m is not None:
                    if hash_rule:
                        if m.hash_without_evidence(r.start_line):
                            f = mark_noise(f, WHY_HASH, Severity.low)
                    elif m.default_without_evidence(r.start_line, r.start_col - 1):
                        f = mark_noise(f, WHY_DEFAULT, Severity.info)
        out.append(f)
    return out


# -- words that say a value protects something ------------------------------

_PROTECTS = frozenset({
    "password", "passwords", "passwd", "passphrase", "pwd", "pw", "pass",
    "secret", "secrets", "token", "tokens", "credential", "credentials", "cred", "creds",
    "signature", "signatures", "sign", "signs", "signed", "signer", "signing",
    "auth", "salt", "salts", "salted", "nonce", "nonces", "otp", "totp", "hotp",
    "session", "sessions", "sessionid", "csrf", "xsrf", "apikey", "hmac",
    "certificate", "cert", "integrity", "login", "captcha",
    # codes mailed to a user are tokens (a guessable md5(email + time) among them)
    "activation", "confirmation", "verification", "invite", "invitation",
})
_PROTECTS_PREFIX = ("passw", "authent", "authori", "credential", "signatur", "secret",
                    "crypt", "encrypt", "decrypt", "cipher")
_KEY_OWNERS = frozenset({"api", "secret", "private", "access", "signing", "auth", "session"})
# What a user sends: a digest checked against it is a verification.
_USER_VALUE = frozenset({"request", "req", "form", "headers", "header", "cookie", "cookies",
                         "query", "params", "supplied", "provided", "given", "received",
                         "client", "user", "input", "challenge", "response", "answer"})
_PARTS = re.compile(r"[A-Z]?[a-z]+|[A-Z]+(?![a-z])|\d+")


def _parts(text: str) -> list[str]:
    return [p.lower() for word in re.findall(r"\w+", text) for p in _PARTS.findall(word)]


def _protects(texts: list[str]) -> bool:
    for text in texts:
        parts = _parts(text)
        for i, p in enumerate(parts):
            if p in _PROTECTS or p.startswith(_PROTECTS_PREFIX):
                return True
            if p == "key" and i and parts[i - 1] in _KEY_OWNERS:
                return True
    return False


def _words(node: ast.AST | None) -> list[str]:
    """The names, attributes, keywords and string constants in ``node``."""
    out: list[str] = []
    for n in ast.walk(node) if node is not None else ():
        if isinstance(n, ast.Name):
            out.append(n.id)
        elif isinstance(n, ast.Attribute):
            out.append(n.attr)
        elif isinstance(n, ast.keyword) and n.arg:
            out.append(n.arg)
        elif isinstance(n, ast.Constant) and isinstance(n.value, (str, bytes)):
            value = n.value if isinstance(n.value, str) else n.value.decode("latin-1")
            out.append(value[:200])
    return out


_WEAK_NAMES = frozenset({"md5", "sha1", "sha", "md4", "md2", "new"})
_WEAK_ALGOS = frozenset({"md5", "sha1", "sha", "md4", "md2", "sha-1", "ripemd160"})
_FUNCTIONS = (ast.FunctionDef, ast.AsyncFunctionDef)
# Methods that change the object they are called on.
_MUTATORS = frozenset({"append", "extend", "insert", "update", "add", "setdefault", "pop",
                       "popitem", "remove", "discard", "clear", "sort", "reverse",
                       "appendleft", "extendleft", "popleft", "rotate", "difference_update",
                       "intersection_update", "symmetric_difference_update", "__setitem__",
                       "__delitem__", "__iadd__", "__ior__", "move_to_end"})
# Methods of another object that keep what they are given (not a copy of it).
_KEEPERS = frozenset({"append", "insert", "add", "appendleft", "setdefault", "put",
                      "put_nowait", "push", "register", "__setitem__"})
_CONTAINERS = (ast.Tuple, ast.List, ast.Set, ast.Dict, ast.Starred, ast.BoolOp, ast.IfExp,
               ast.NamedExpr)


class _Module:
    def __init__(self, tree: ast.Module) -> None:
        self.tree = tree
        self.index = index(tree)
        self.parent: dict[ast.AST, ast.AST] = {}
        self.defs: dict[str, list[Any]] = {}
        self.functions: list[Any] = []
        for node in ast.walk(tree):
            for child in ast.iter_child_nodes(node):
                self.parent[child] = node
            if isinstance(node, (*_FUNCTIONS, ast.ClassDef)):
                self.defs.setdefault(node.name, []).append(node)
                if not isinstance(node, ast.ClassDef):
                    self.functions.append(node)

    def _up(self, node: ast.AST, kinds) -> Any:
        up = self.parent.get(node)
        while up is not None and not isinstance(up, kinds):
            up = self.parent.get(up)
        return up

    def _statement(self, node: Any) -> Any:
        while not isinstance(node, ast.stmt) and node in self.parent:
            node = self.parent[node]
        return node

    # -- weak hashes --------------------------------------------------------

    def hash_without_evidence(self, line: int) -> bool:
        calls = [c for c in self.index.calls_over(line) if _weak_call(c)]
        on_line = [c for c in calls if c.lineno == line] or calls
        return bool(on_line) and not any(self._hash_matters(c) for c in on_line)

    def _hash_matters(self, call: ast.Call) -> bool:
        for kw in call.keywords:
            if kw.arg == "usedforsecurity" and isinstance(kw.value, ast.Constant):
                return bool(kw.value.value)
        func = self._up(call, _FUNCTIONS)
        texts = [*self._context(call), *_words(_data(call))]
        scope = func or self.tree
        assigned = self.index.assigned(scope)
        for name in (n.id for n in ast.walk(_data(call)) if isinstance(n, ast.Name)):
            for value in assigned.get(name, ())[:4]:  # what a local name holds
                if not _http_response(value):
                    texts += _words(value)
        # where the digest goes: its statement, or the uses of the name given it
        names, returned = self._sink(call, texts)
        for name in names:
            for use in self._loads(scope, name):
                up = self.parent.get(use)
                if isinstance(up, ast.Attribute) and up.attr == "update":
                    texts += _words(self.parent.get(up))  # h.update(data)
                returned = self._sink(use, texts)[1] or returned
        if _protects(texts):
            return True
        return returned and func is not None and self._callers_protect(func)

    def _context(self, node: ast.AST, params: bool = True) -> list[str]:
        """The enclosing function's name and parameters, and its class's name."""
        texts: list[str] = []
        func = self._up(node, _FUNCTIONS)
        if func is not None:
            a = func.args
            texts.append(func.name)
            if params:
                texts += [p.arg for p in (*a.posonlyargs, *a.args, *a.kwonlyargs)]
        cls = self._up(node, ast.ClassDef)
        if cls is not None:
            texts.append(cls.name)
        return texts

    def _sink(self, node: ast.AST, texts: list[str]) -> tuple[list[str], bool]:
        """Adds to ``texts`` the words of where ``node``'s value goes; returns
        the local names it is given and whether it is returned. A value
        verified against another (``compare_digest``, ``==`` with what a
        user sends) adds the word ``signature``."""
        names: list[str] = []
        child, up = node, self.parent.get(node)
        while up is not None and not isinstance(up, ast.stmt):
            if isinstance(up, ast.Call) and child is not up.func:
                texts += [*_words(up.func)]
                if re.search(r"compare_digest|verify", ast.unparse(up.func)):
                    texts.append("signature")
            elif isinstance(up, ast.keyword) and up.arg:
                texts.append(up.arg)
            elif isinstance(up, ast.Dict) and child in up.values:
                key = up.keys[up.values.index(child)]
                texts += _words(key)
            elif isinstance(up, ast.Compare) and isinstance(up.ops[0], (
                    ast.Eq, ast.NotEq, ast.Is, ast.IsNot)):
                other = [o for o in (up.left, *up.comparators) if o is not child]
                texts += [w for o in other for w in _words(o)]
                if any(set(_parts(w)) & _USER_VALUE for o in other for w in _words(o)):
                    texts.append("signature")
            elif isinstance(up, (ast.Yield, ast.YieldFrom, ast.Lambda)):
                return names, True
            child, up = up, self.parent.get(up)
        if isinstance(up, ast.Return):
            return names, True
        if isinstance(up, (ast.Assign, ast.AnnAssign, ast.AugAssign)):
            for target in (up.targets if isinstance(up, ast.Assign) else [up.target]):
                texts += _words(target)
                if isinstance(target, ast.Name):
                    names.append(target.id)
        elif isinstance(up, ast.If):
            texts += _words(up.test)
        return names, False

    def _loads(self, scope: ast.AST, name: str) -> list[ast.Name]:
        return [n for n in ast.walk(scope) if isinstance(n, ast.Name) and n.id == name
                and isinstance(n.ctx, ast.Load)][:20]

    def _callers_protect(self, func: Any) -> bool:
        """``func`` returns the digest: whether a place that uses it speaks of
        what it protects (``digest_method = staticmethod(_lazy_md5)`` in a
        signer, ``hmac.new(key, msg, _sha1)`` in ``sign``). Not the caller's
        parameters: lektor's ``publish(..., credentials)`` compares files by
        the checksums it is handed, which protect nothing."""
        name = getattr(func, "name", "")
        if len(self.defs.get(name, ())) != 1:
            return False
        for n in ast.walk(self.tree):
            if (isinstance(n, ast.Name) and n.id == name) or (
                    isinstance(n, ast.Attribute) and n.attr == name):
                texts = self._context(n, params=False)
                self._sink(n, texts)
                stmt = self._statement(n)
                if isinstance(stmt, (ast.Assign, ast.AnnAssign)):
                    texts += _words(stmt)
                if _protects(texts):
                    return True
        return False

    # -- mutable defaults ---------------------------------------------------

    def default_without_evidence(self, line: int, col: int) -> bool:
        for func in self.functions:
            for arg, default in _defaults(func):
                if default.lineno == line and default.col_offset <= col <= (
                        default.end_col_offset or default.col_offset):
                    return not self._changed(func, arg, 2)
        return False  # not found: left as it is

    def _changed(self, func: Any, param: str, depth: int) -> bool:
        """Whether ``func`` (or a function nested in it) changes ``param``'s
        object or lets it outlive the call."""
        body = getattr(func, "body", [])
        nodes = [n for stmt in body for n in ast.walk(stmt)]
        kept_global = {name for n in nodes if isinstance(n, (ast.Global, ast.Nonlocal))
                       for name in n.names}
        aliases, todo = {param}, [param]
        while todo:
            name = todo.pop()
            for n in nodes:
                if isinstance(n, ast.AugAssign) and isinstance(n.target, ast.Name) \
                        and n.target.id == name:
                    return True  # items += [x]: the list itself grows
                if not (isinstance(n, ast.Name) and n.id == name
                        and isinstance(n.ctx, ast.Load)):
                    continue
                hit = self._use(n, depth)
                if hit is True:
                    return True
                for alias in hit or ():
                    if alias in kept_global:
                        return True
                    if alias not in aliases:
                        aliases.add(alias)
                        todo.append(alias)
        return False

    def _use(self, use: ast.Name, depth: int) -> bool | list[str]:
        """True when this use changes or keeps the object; else the local
        names it is given to (aliases, whose uses count the same)."""
        node: ast.AST = use
        up = self.parent.get(use)
        while up is not None:
            if isinstance(up, (ast.Attribute, ast.Subscript)) and up.value is node:
                if not isinstance(up.ctx, ast.Load):
                    return True  # p.x = ..., p[k] = ..., del p[k]
                call = self.parent.get(up)
                if isinstance(up, ast.Attribute) and isinstance(call, ast.Call) \
                        and call.func is up:
                    return up.attr in _MUTATORS or []
                node, up = up, self.parent.get(up)  # what is inside it
            elif isinstance(up, _CONTAINERS) and not (
                    isinstance(up, ast.IfExp) and up.test is node) and not (
                    isinstance(up, ast.Dict) and node in up.keys):
                node, up = up, self.parent.get(up)
            else:
                break
        if isinstance(up, (ast.Return, ast.Yield, ast.YieldFrom)):
            return True
        if isinstance(up, ast.Lambda) and up.body is node:
            return True
        if isinstance(up, (ast.Assign, ast.AnnAssign)) and up.value is node:
            targets = up.targets if isinstance(up, ast.Assign) else [up.target]
            if not all(isinstance(t, ast.Name) for t in targets):
                return True  # self.x = p, REGISTRY[k] = p
            return [t.id for t in targets if isinstance(t, ast.Name)]
        if isinstance(up, ast.keyword):
            call = self.parent.get(up)
            if isinstance(call, ast.Call) and isinstance(call.func, ast.Attribute) \
                    and call.func.attr in ("update", *_KEEPERS):
                return True  # d.update(k=p): kept in d
            return self._passed(call, use, node, up.arg, depth)
        if isinstance(up, ast.Call) and node in up.args:
            name = callee(up)
            if name == "setattr" or (isinstance(up.func, ast.Attribute) and name in _KEEPERS):
                return True
            return self._passed(up, use, node, up.args.index(node), depth)
        return []

    def _passed(self, call: ast.AST | None, use: ast.Name, node: ast.AST,
                where: int | str | None, depth: int) -> bool | list[str]:
        """Handed to a function or class of this module: whether it changes
        or keeps the parameter that receives it."""
        if depth <= 0 or node is not use or not isinstance(call, ast.Call) or where is None:
            return []
        bound = True  # self.f(p), Class(p), super().f(p): ``self`` is not among the arguments
        target = self._base_method(call)  # super().__init__(p), Base.__init__(self, p)
        if target is not None:
            bound = not isinstance(getattr(call.func, "value", None), ast.Name)
        else:
            named = self.defs.get(callee(call), [])
            if len(named) != 1:
                return []
            target = named[0]
            bound = isinstance(call.func, ast.Attribute) or isinstance(target, ast.ClassDef)
            if isinstance(target, ast.ClassDef):
                target = _method(target, "__init__")
                if target is None:
                    return []
        a = target.args
        params = [p.arg for p in (*a.posonlyargs, *a.args)]
        if params and params[0] in ("self", "cls") and bound:
            params = params[1:]
        if isinstance(where, int):
            if any(isinstance(x, ast.Starred) for x in call.args[:where + 1]):
                return []
            param = params[where] if where < len(params) else None
        else:
            param = where if where in params + [p.arg for p in a.kwonlyargs] else None
        return param is not None and self._changed(target, param, depth - 1) or []


    def _base_method(self, call: ast.Call) -> Any:
        """The method of a base class of this module that ``super().f(...)``
        or ``Base.f(self, ...)`` calls, or None."""
        f = call.func
        if not isinstance(f, ast.Attribute):
            return None
        if isinstance(f.value, ast.Call) and callee(f.value) == "super":
            cls = self._up(call, ast.ClassDef)
            bases = [b.id for b in cls.bases if isinstance(b, ast.Name)] if cls else []
        elif isinstance(f.value, ast.Name):
            bases = [f.value.id]
        else:
            return None
        for base in bases:
            named = self.defs.get(base, [])
            if len(named) == 1 and isinstance(named[0], ast.ClassDef):
                return _method(named[0], f.attr)
        return None


def _method(cls: ast.ClassDef, name: str) -> Any:
    return next((n for n in cls.body if isinstance(n, _FUNCTIONS) and n.name == name), None)


# An HTTP client's call: what it returns is a response fetched from a URL,
# whatever the words of the request (``session.request(..., verify=...)``,
# a requests.Session, says nothing about the body it returns).
_HTTP_CALLS = frozenset({"request", "get", "post", "put", "patch", "head", "delete", "urlopen",
                         "fetch"})
_HTTP_CLIENTS = frozenset({"requests", "session", "sess", "client", "http", "httpx", "opener",
                           "urllib3", "pool"})
_HTTP_KEYWORDS = frozenset({"headers", "timeout", "proxies", "verify", "allow_redirects",
                            "params", "cookies", "stream"})


def _http_response(value: ast.AST) -> bool:
    """``value`` is an HTTP client's response (``requests.get(url, ...)``,
    ``session.request(method, url, headers=...)``); a mapping's ``get``
    (``form.get("password")``) is not one."""
    if not isinstance(value, ast.Call) or not isinstance(value.func, ast.Attribute) \
            or value.func.attr not in _HTTP_CALLS:
        return False
    owner = value.func.value
    owner_name = owner.id if isinstance(owner, ast.Name) else (
        owner.attr if isinstance(owner, ast.Attribute) else "")
    return owner_name.lower() in _HTTP_CLIENTS or any(
        k.arg in _HTTP_KEYWORDS for k in value.keywords)



def _weak_call(call: ast.Call) -> bool:
    name = callee(call).lower()
    if name not in _WEAK_NAMES:
        return False
    if name != "new":
        return True
    first = call.args[0] if call.args else next(
        (k.value for k in call.keywords if k.arg == "name"), None)
    return not isinstance(first, ast.Constant) or str(first.value).lower() in _WEAK_ALGOS


def _data(call: ast.Call) -> ast.AST:
    """What the call hashes: its arguments (past ``new``'s algorithm name)."""
    args = list(call.args[1:] if callee(call).lower() == "new" else call.args)
    args += [k.value for k in call.keywords if k.arg in ("data", "string", "arg")]
    return ast.Tuple(elts=args, ctx=ast.Load())


def _defaults(func: Any) -> list[tuple[str, ast.expr]]:
    a = func.args
    positional = [*a.posonlyargs, *a.args]
    pairs = [(p.arg, d) for p, d in zip(positional[len(positional) - len(a.defaults):],
                                        a.defaults, strict=True)]
    return pairs + [(p.arg, d) for p, d in zip(a.kwonlyargs, a.kw_defaults, strict=True)
                    if d is not None]
