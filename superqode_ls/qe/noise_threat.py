"""A library's threat model (noise.py, after the shipped-code step).

A library (a project that builds a distribution and is no deployable
application: ``noise_shipped.survey``) runs inside its users' programs, with
the inputs those programs choose. A security pattern in its shipped code
says that a dangerous call is made, not that anyone but the calling program
reaches it: SQL naming the tables a pipeline's own classes declare, a hash a
wire protocol mandates (HTTP digest, htpasswd's ``{SHA}``, a k-anonymity
range API), a template scaffolding the developer's new project, ``urlopen``
of the URL the developer configured, a random number that keys a cache.
Without evidence that outside input reaches the sink, such a finding is
shown one level lower as noise, one click away:

- **kept**: a finding a data-flow check traced from a request (tags
  ``data-flow``/``taint``, SuperQode's web rules that follow request data:
  reflected and stored XSS, open redirect, path traversal, SSRF, XPath and
  template injection, XXE); an injection sink (shell, SQL) whose text a
  public function builds from its caller's value (a parameter that may hold
  text, or a local built from one: ``"tar czf " + directory``), the
  library's API boundary (a private helper's arguments come from the
  library itself);
  a rule that is wrong whatever the input (TLS or
  host-key verification off, a weak protocol or key, ``eval``/``exec``,
  unsafe YAML or JWT decoding, a request without a timeout, ``extractall``
  without a member check, a debugger on, autoescape explicitly off, an
  insecure cookie or CORS/CSRF setting the library sets for its users);
- **the caller's own token**: an unverified ``jwt.decode`` of the token a
  client class is given and hands back raw to be sent (``__init__`` keeps
  it in ``self.X``, a method returns ``self.X``), in a module that reads no
  request: the client reads its own credential's expiry, the server it is
  presented to verifies it (noise);
- **noise**: every other security pattern of bandit, ruff's ``S`` rules and
  SuperQode's own patterns (SQL built from values, shell commands, pickle,
  weak hashes, ``urlopen``, XML parsers, templates left at the default...).

A value every install of a distribution carries is no secret from its
users: a literal that a password rule or the generic secrets rule flags in
shipped code (a site's public API key that a scraper must send, a default)
is noise; a password or a signing key (the line names one: ``SECRET_KEY``,
a credential to some system), a provider's token (an account owns it), a
private key and a default signing key stay.

An application (no distribution, or a deployable one: ``manage.py``, a
``Dockerfile``...) is not judged here: its code is what runs on its server.
"""

from __future__ import annotations

import ast
import re
from collections.abc import Callable

from ..models import Finding
from .noise_dedupe import canonical_rule
from .noise_library import module_of
from .noise_paths import join_reasons, provider_token
from .noise_shipped import inside

_FLOW_TAGS = frozenset({"data-flow", "dataflow", "taint"})
_JWT = "jwt-no-verify"
# SuperQode's rules that fire only where request data reaches the sink, and
# those wrong whatever the input.
_KEEP_OWN = frozenset({
    "reflected-xss", "stored-xss", "open-redirect", "path-traversal", "ssrf", "xpath-injection",
    "template-injection", "xxe", "template-autoescape-off", "debug-mode", "insecure-cookie",
    "cors-credentials", "csrf-disabled", "tls-no-hostname-check", "jwt-no-verify",
    "yaml-unsafe-load", "secret-signing-key-default", "secret-private-key",
})
# bandit's (and ruff's S) rules wrong whatever the input: TLS and SSH host
# checks off, weak protocols and keys, code execution, unsafe YAML, no
# timeout, archive extraction, a debugger, a network logging listener.
_KEEP_BANDIT = frozenset({
    "B102", "B201", "B202", "B307", "B323", "B501", "B502", "B503", "B504", "B505", "B506",
    "B507", "B113", "B612",
})
# Sinks whose danger is the text built into them: shell commands and SQL.
_INJECTION = frozenset({"B601", "B602", "B604", "B605", "B609", "B608", "B610", "B611",
                        "SQL-INJECTION", "COMMAND-INJECTION"})
# A password, or a key that signs sessions or tokens (Django's SECRET_KEY):
# a credential to some system even in a library's code.
_CREDENTIAL = re.compile(r"(?i)pass(word|wd|phrase)?\b|passw|pwd|\bsecret_?key\b|signing_?key"
                         r"|jwt_?secret")
Lines = Callable[[str], "list[str] | None"]
_SECRET_VALUE = frozenset({"secret-generic", "secret-config-password", "hardcoded-db-password",
                           "b105", "b106", "b107", "s105", "s106", "s107"})


def _security(f: Finding) -> bool:
    if f.category in ("security", "secrets"):
        return True
    rule = f.rule_id.upper()
    return f.category == "lint" and rule[:1] == "S" and rule[1:2].isdigit()


def _line_texts(f: Finding, lines: list[str] | None) -> list[str]:
    texts = [f.snippet or ""] + [e.snippet or "" for e in f.evidence]
    line = f.range.start_line if f.range else 0
    if lines is not None and 1 <= line <= len(lines):
        texts.append(lines[line - 1])
    return texts


class _Module:
    """One flagged module's functions, parsed once per filter run."""

    def __init__(self, tree: ast.Module):
        self.tree = tree
        self.functions = [n for n in ast.walk(tree)
                          if isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef))]

    def bearer_token(self, line: int) -> bool:
        """The unverified ``jwt.decode`` on ``line`` reads a token its class
        holds for its caller: ``__init__`` stores the token parameter raw in
        ``self.X``, the decode is of that parameter or ``self.X``, and a
        method returns ``self.X`` (the client hands the token on to the
        server that verifies it: redis-py's identity-provider token, read for
        its expiry). A module that reads a request, or a token the class does
        not hand back, is no such client."""
        if any(isinstance(n, ast.Name) and n.id == "request"
               or isinstance(n, ast.Attribute) and n.attr == "request" for n in ast.walk(self.tree)):
            return False
        for cls in (n for n in ast.walk(self.tree) if isinstance(n, ast.ClassDef)):
            if not cls.lineno <= line <= (cls.end_lineno or cls.lineno):
                continue
            init = next((m for m in cls.body if isinstance(m, ast.FunctionDef)
                         and m.name == "__init__"), None)
            if init is None:
                return False
            params = {a.arg for a in init.args.args[1:] + init.args.kwonlyargs}
            stored = {t.attr: v.id for n in ast.walk(init) if isinstance(n, ast.Assign)
                      and isinstance(v := n.value, ast.Name) and v.id in params
                      for t in n.targets if isinstance(t, ast.Attribute)
                      and isinstance(t.value, ast.Name) and t.value.id == "self"}
            returned = {r.value.attr for m in cls.body if isinstance(m, ast.FunctionDef)
                        and m.name != "__init__" for r in ast.walk(m)
                        if isinstance(r, ast.Return) and isinstance(r.value, ast.Attribute)
                        and isinstance(r.value.value, ast.Name) and r.value.value.id == "self"}
            held = {a for a in stored if a in returned}
            decoded = [c for c in ast.walk(cls) if isinstance(c, ast.Call)
                       and c.lineno <= line <= (c.end_lineno or c.lineno)
                       and isinstance(c.func, ast.Attribute) and c.func.attr == "decode"
                       and c.args]
            return bool(held) and bool(decoded) and all(
                isinstance(t := c.args[0], ast.Attribute) and isinstance(t.value, ast.Name)
                and t.value.id == "self" and t.attr in held
                or isinstance(t, ast.Name) and t.id in {stored[a] for a in held}
                for c in decoded)
        return False

    def callers_value_built_in(self, line: int) -> bool:
        """The statement at ``line`` builds text (an f-string, ``+``/``%`` with
        a string, ``.format``) from a parameter of its function, or from a
        local the function built that way."""
        fn = None
        for node in self.functions:
            if node.lineno <= line <= (node.end_lineno or node.lineno) and (
                    fn is None or node.lineno > fn.lineno):
                fn = node
        if fn is None or fn.name.startswith("_"):
            return False  # a private helper's arguments come from the library itself
        a = fn.args
        tainted = {x.arg for x in (*a.posonlyargs, *a.args, *a.kwonlyargs, a.vararg, a.kwarg)
                   if x is not None and x.arg not in ("self", "cls") and _may_be_text(x)}
        built: set[str] = set()  # locals holding text built from a caller's value
        stmt = None
        assigns: list[ast.Assign | ast.AugAssign] = []
        for node in ast.walk(fn):
            if isinstance(node, (ast.Assign, ast.AugAssign)) and node.lineno < line:
                assigns.append(node)
            if (isinstance(node, ast.stmt) and node is not fn
                    and node.lineno <= line <= (node.end_lineno or node.lineno)
                    and (stmt is None or node.lineno >= stmt.lineno)):
                stmt = node
        for node in sorted(assigns, key=lambda n: (n.lineno, n.col_offset)):
            names = _built_names(node.value)
            if isinstance(node, ast.AugAssign):
                # ``sql += " AND x = " + name`` / ``cmd += name``
                names |= {n.id for n in ast.walk(node.value) if isinstance(n, ast.Name)}
            targets = node.targets if isinstance(node, ast.Assign) else [node.target]
            for target in targets:
                if not isinstance(target, ast.Name):
                    continue
                if names & (tainted | built):
                    built.add(target.id)
                elif isinstance(node.value, ast.Name) and node.value.id in tainted:
                    tainted.add(target.id)
        if stmt is None:
            return False
        if _built_names(stmt) & (tainted | built):
            return True
        return any(isinstance(n, ast.Name) and n.id in built for n in ast.walk(stmt))


def _may_be_text(arg: ast.arg) -> bool:
    """A parameter that may carry text: unannotated, or annotated with a type
    that is not only numbers, booleans or classes (``int``, ``type[Table]``)."""
    if arg.annotation is None:
        return True
    return not re.fullmatch(r"(int|float|bool|type\[.*\]|(Optional\[)?(int|float|bool)\]?)"
                            r"( \| None)?", ast.unparse(arg.annotation).strip("'\""))


def _has_text(node: ast.AST) -> bool:
    return any(isinstance(n, ast.Constant) and isinstance(n.value, str) for n in ast.walk(node))


def _built_names(node: ast.AST) -> set[str]:
    """The names read inside text built within ``node``."""
    out: set[str] = set()
    for n in ast.walk(node):
        if (isinstance(n, ast.JoinedStr)
                or (isinstance(n, ast.BinOp) and isinstance(n.op, (ast.Add, ast.Mod))
                    and _has_text(n))
                or (isinstance(n, ast.Call) and isinstance(n.func, ast.Attribute)
                    and n.func.attr == "format")):
            out |= {m.id for m in ast.walk(n) if isinstance(m, ast.Name)}
    return out


def _verdict(f: Finding, lines: list[str] | None, module: _Module | None) -> str | None:
    """Why ``f`` (in a library's shipped code) is noise, or None to keep it."""
    rules = [f.rule_id, *f.related_rules]
    if any(t in _FLOW_TAGS for t in f.tags):
        return None
    if (module is not None and f.range is not None and {r.lower() for r in rules} == {_JWT}
            and module.bearer_token(f.range.start_line)):
        return ("the token the library's caller hands its client, decoded to read its claims "
                "(an expiry) and handed back raw to be sent: the server it is presented to "
                "verifies the signature")
    if any(r.lower() in _KEEP_OWN or canonical_rule(r) in _KEEP_BANDIT for r in rules):
        return None
    if all(r.lower() in _SECRET_VALUE for r in rules):
        if any(_CREDENTIAL.search(t) for t in _line_texts(f, lines)):
            return None
        return ("a value every install of the library carries: public to its users "
                "(a client key, a default), not a secret")
    if provider_token(f):
        return None
    if (module is not None and f.range is not None
            and any(canonical_rule(r) in _INJECTION or r.upper() in _INJECTION for r in rules)
            and module.callers_value_built_in(f.range.start_line)):
        return None
    return ("a pattern in a library's code with no input traced to it: the calling "
            "program decides what reaches it")


def library_threat(findings: list[Finding], folders: list[str],
                   lines_of: Lines | None = None) -> list[Finding]:
    """Security findings in a library's own code (``folders``, from
    ``noise_shipped.survey``) without evidence that outside input reaches
    them: one level lower, noise. ``lines_of``: a file's lines (the filter's
    ``FileLines.lines``)."""
    if not folders:
        return findings
    modules: dict[str, _Module | None] = {}  # this call's only
    out = []
    for f in findings:
        if f.noise is None and f.file and _security(f) and inside(f.file, folders):
            lines = lines_of(f.file) if lines_of is not None else None
            if f.file.endswith(".py") and f.file not in modules:
                tree = module_of(lines) if lines is not None else None
                modules[f.file] = _Module(tree) if tree is not None else None
            why = _verdict(f, lines, modules.get(f.file))
            if why is not None:
                lowered = f.severity.lower()
                f = f.model_copy(update={
                    "severity": lowered, "noise": why, "tags": [*f.tags, "threat:library"],
                    "severity_reason": join_reasons(
                        f.severity_reason,
                        why if lowered is f.severity
                        else f"{why}: shown one level lower than {f.severity.value}")})
        out.append(f)
    return out
