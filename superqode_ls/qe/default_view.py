"""The default view (noise.py, after the path classes, style and threat
steps): what is shown by default is decided by the evidence behind a
finding, not by one more rule per harmless case.

The static analyzers report two kinds of finding. Some carry their own proof
that the code is wrong: a name that raises ``NameError`` when the line runs,
a format string whose arguments never match, a flow from a request into a
sink that a data-flow check traced, a committed provider token, TLS
verification switched off. Others say only that a call or a name is there:
``subprocess`` with ``shell=True``, ``pickle.loads``, a variable named
``password``, an unused import. Judged by hand on real projects, the first
kind was worth acting on nearly every time (undefined names 24 of 24, a
logging call's wrong argument count 12 of 12); the second almost never
(bandit's call patterns and the generic password names 0 to 2 per rule, an
unused import 12 of 42), each harmless for a reason of its own (a demo
setting, an allow-listed shell argument, a feature working as designed).

So a static finding that no earlier step made noise stays shown only with
strong evidence (``strong``); any other becomes noise whose reason starts
``advisory:`` and names what is missing (``advisory: a subprocess call, no
input traced to it``). It stays counted and one click away
(``--show-noise``, SARIF ``note``, JSONL, the editor's hint) and never fails
the verdict. Strong evidence:

- **code that fails when it runs**: the lint rules rated high by themselves
  (undefined names, ``E9``, ``PLE``, ``F63x``, ``F70x``), ``%``/``.format``
  mismatches (``F50x``, ``F52x``), a repeated dict key, an unused local
  name, ``raise`` of a literal (``B016``), a closure over a loop
  variable (``B023``), pylint's warnings that are a bug wherever they fire
  (an exception built and never raised, an ``except`` of ``A or B``...), a debugger
  left in, ``sys.version`` misread;
- **security**: a traced flow (tags ``data-flow``/``taint``), SuperQode's own
  checks (tool ``superqode-*`` or merged with one: SQL injection, autoescape
  off, weak password hashing, debug mode, insecure cookies, a signing key's
  default...), a provider's token or a private key, a password name whose
  value the secrets scan also judges a secret, and settings that are
  dangerous with no input at all (TLS verification off ``B501``, weak TLS
  versions ``B502``-``B504``, paramiko's ``AutoAddPolicy`` ``B507``, Flask's
  debugger ``B201``), and Django's ``mark_safe`` (``B308``, ``B703``) over
  text the context step could not prove literal, translated or escaped,
  and pseudo-random numbers (``B311``) where the line names the secret they
  make;
- **a request in reach**: a sink pattern (SQL, shell, eval, pickle, YAML,
  ``mark_safe``, XML, ``urlopen``, a hard-coded password...) inside a
  function that reads the web request (a ``request`` name or attribute,
  ``request.GET``...) or one such a function of the module calls by name:
  the input the pattern fears is at hand, so the pattern stays shown; and a
  literal signing key (``SECRET_KEY``) in the module that builds the web
  application (``Flask(...)``), the running application's own key.

Categories other than lint, security and secrets (failing tests, syntax and
type errors, mutants), and tools other than bandit, ruff and the secrets
scan (an agent's review, a plugin role), are evidence of their own and are
not judged here.
``qe.default_view: all`` turns the step off.
"""

from __future__ import annotations

import ast
import re
from collections.abc import Callable

from ..models import Finding, Severity
from . import ast_index
from .context import mark_noise
from .noise_library import module_of
from .ruff_rules import ruff_severity

Lines = Callable[[str], "list[str] | None"]
Canonical = Callable[[str], str]

ADVISORY = "advisory:"
_FLOW_TAGS = frozenset({"data-flow", "dataflow", "taint"})
# What this step judges: the pattern analyzers' findings (bandit, ruff, the
# secrets scan). An agent's review, a plugin role's finding or SuperQode's
# own checks are evidence of another kind.
_JUDGED = frozenset({"lint", "security", "secrets"})
_JUDGED_TOOLS = frozenset({"bandit", "ruff", "superqode-secrets"})

# Lint rules whose finding is the bug itself (beyond those ruff_rules rates
# high): a format string and its arguments that never match, a dict key
# given twice, a local assigned and never read, ``raise`` of a
# literal or of ``NotImplemented``, a closure that keeps the loop's last
# value, an ``except`` of something no exception is, pylint's warnings that
# are wrong wherever they fire, a debugger call, ``sys.version`` misread.
# Not the format rules that run fine (F504, F522, F523: an argument too
# many is ignored), F811 (a name defined twice: mostly one definition per
# branch, a ``TYPE_CHECKING`` import beside the real one), B003
# (``os.environ = ...``, a test client's deliberate swap), PLW0127 and
# PLW0128 (``x = x``, ``a, a = ...``: no-ops) or PLW1508
# (``os.environ.get("N", 0)``, which works as meant): true, harmless where
# they were judged.
_BUG = re.compile(
    r"^(F50[1235-9]|F52[1457]|F60[12]|F62[12]|F841|F901|B002|B016|B023|B025|B029|B030|B031|"
    r"B032|B033|B035|PLW0129|PLW0131|PLW0133|PLW0177|PLW0245|PLW0711|"
    r"PLW1501|PLW2101|T10\d|YTT\d+)$")
# Settings dangerous with no input at all: verification off, weak protocols,
# a host key accepted unseen, the interactive debugger served.
# (Not bandit's B701/B702, a template engine left at its default: a static
# site's own templates as often as a web page; autoescape turned off
# explicitly is SuperQode's own check, kept as such.)
_DANGEROUS_SETTING = frozenset({"B201", "B501", "B502", "B503", "B504", "B507"})
# Django's ``mark_safe`` over text the context step could not prove the
# project's own or escaped (``noise_operator``: a literal, a translation, an
# escape call): a parameter or a stored value marked safe, as
# django-helpdesk's user comment put into an e-mail's HTML. (Not ``B704``,
# markupsafe's ``Markup``: over a renderer's own HTML output in the projects
# judged.)
_UNPROVEN_MARKUP = frozenset({"B308", "B703"})
# Pseudo-random numbers whose line says they make a secret (a key, a token,
# a password, an OTP: vulpy's API key from ``random.getrandbits``, pygoat's
# OTP); a game's dice roll is an advisory.
_SECRET_RANDOM = frozenset({"B311"})
_SECRET_USE = re.compile(r"(?i)token|passw|secret|\bkey\b|api_?key|nonce|salt|otp|csrf")
# A sink pattern stays shown inside a function that reads the request.
_SINKS = frozenset({
    "B102", "B202", "B301", "B302", "B303", "B304", "B305", "B307", "B308", "B310", "B312",
    "B320", "B324", "B506", "B601", "B602", "B603", "B604", "B605", "B606", "B607", "B608",
    "B609", "B610", "B611", "B701", "B702", "B703", *(f"B3{n}" for n in range(13, 21)),
    # a password compared or set where the request is read: a login's
    # hard-coded credentials
    "B105", "B106", "B107"})
# A literal signing key in the module that builds the web application is
# that application's key (vulpy's ``app.config['SECRET_KEY'] = 'aaaaaaa'``),
# not a settings template's or a demo's.
_SIGNING_KEY = re.compile(r"(?i)\bsecret_?key\b")
_PASSWORD_RULES = frozenset({"B105", "B106", "B107", "S105", "S106", "S107"})
_PASSWORD = frozenset({"B105", "B106", "B107", "SECRET-GENERIC"})
_APP_CLASSES = frozenset({"Flask", "Quart", "FastAPI", "Starlette", "Application", "Sanic"})
# Names and attributes through which a handler reads the web request.
_REQUEST_NAMES = frozenset({"request", "req"})
_REQUEST_ATTRS = frozenset({"request", "GET", "POST", "FILES", "COOKIES", "META", "form",
                            "args", "cookies", "query_params", "match_info", "get_json",
                            "query_string"})
# What each advisory lacks, by rule (else by kind, below).
_MISSING = {
    "F401": "unused import (seldom a bug)",
    "B105": "a password-like name, the secrets scan confirms no secret",
    "B106": "a password-like name, the secrets scan confirms no secret",
    "B107": "a password-like name, the secrets scan confirms no secret",
    "SECRET-GENERIC": "a secret-looking name, no provider's format or password rule "
                      "confirms it",
    "B104": "binds all interfaces, a deployment choice",
    "B108": "a temporary path, no input traced to it",
    "B113": "a request without a timeout, a robustness note",
    "B704": "Markup over text, no input traced to it",
    "B324": "a weak hash, no password or signature traced to it",
    "B311": "pseudo-random numbers, no secret use on the line",
    "B701": "a template engine at its default escaping, no request in the function",
    "B702": "a template engine at its default escaping, no request in the function",
    "B202": "an archive extraction, no untrusted archive traced to it",
}
_KIND = (
    (re.compile(r"^B60[2-7]$"), "a subprocess call, no input traced to it"),
    (re.compile(r"^B608$"), "SQL built from values, no input traced to it"),
    (re.compile(r"^B60[19]$|^B61[01]$"), "a shell or SQL call, no input traced to it"),
    (re.compile(r"^B30[12]$|^B403$"), "deserialisation, no untrusted input traced to it"),
    (re.compile(r"^B102$|^B307$"), "eval/exec, no input traced to it"),
    (re.compile(r"^B506$"), "an unsafe YAML load, no untrusted input traced to it"),
    (re.compile(r"^B31[3-9]$|^B320$|^B4\d\d$"), "an XML parser or import, no input traced to it"),
    (re.compile(r"^B\d+$"), "a call pattern, no input traced to it"),
)


def _rules(f: Finding, canonical: Canonical) -> set[str]:
    """The finding's rule and those merged into it, each by its tool's name
    and its one name (``E999`` is ``SYNTAX-ERROR``, ``S608`` is ``B608``)."""
    named = (f.rule_id, *f.related_rules)
    return {r.upper() for r in named} | {canonical(r) for r in named}


def _own_check(f: Finding) -> bool:
    """SuperQode's own web and pattern checks, as the lead or merged in."""
    if f.tool.startswith("superqode-") and f.category == "security":
        return True
    # (an own rule merged under bandit's lead keeps its lowercase name; the
    # secrets scan's merged rules are judged by _confirmed_secret)
    return any(t.startswith("also:superqode-") and not t.startswith("also:superqode-secrets")
               for t in f.tags) or any(
        "-" in r and r == r.lower() and not r.startswith("secret-") for r in f.related_rules)


def _confirmed_secret(f: Finding) -> bool:
    """A secret the scan recognises by its format or its setting (a provider's
    token, a private key, a configured password or default signing key), or
    a password rule's value the scan also judged a secret by its shape
    (``B105`` with ``secret-generic`` merged in: two checks agree). Either
    check alone is no confirmation."""
    rules = [r.lower() for r in (f.rule_id, *f.related_rules)]
    if any(r.startswith("secret-") and r != "secret-generic" for r in rules):
        return True
    return "secret-generic" in rules and any(r.upper() in _PASSWORD_RULES for r in rules)


def _lint_bug(rule: str) -> bool:
    return ruff_severity(rule) is Severity.high or bool(_BUG.match(rule))


def strong(f: Finding, canonical: Canonical) -> bool:
    """Whether the evidence behind ``f`` alone keeps it in the default view
    (the request check is ``in_handler``, which needs the code)."""
    if f.category not in _JUDGED or f.tool not in _JUDGED_TOOLS:
        return True
    if any(t in _FLOW_TAGS for t in f.tags) or _own_check(f) or _confirmed_secret(f):
        return True
    rules = _rules(f, canonical)
    if rules & (_DANGEROUS_SETTING | _UNPROVEN_MARKUP):
        return True
    return any(_lint_bug(r) for r in rules)


def missing(f: Finding, canonical: Canonical) -> str:
    """The advisory's reason: what evidence it lacks."""
    rule = canonical(f.rule_id)
    if rule in _MISSING:
        return f"{ADVISORY} {_MISSING[rule]}"
    if f.category == "lint" and not f.rule_id.upper().startswith("S"):
        return f"{ADVISORY} a lint rule's opinion, not a definite bug"
    for pattern, why in _KIND:
        if pattern.match(rule):
            return f"{ADVISORY} {why}"
    return f"{ADVISORY} a pattern, no input traced to it"


def _reads_request(fn: ast.AST) -> bool:
    for node in ast.walk(fn):
        if isinstance(node, ast.Name) and node.id in _REQUEST_NAMES:
            return True
        if isinstance(node, ast.arg) and node.arg in _REQUEST_NAMES:
            return True
        if isinstance(node, ast.Attribute) and node.attr in _REQUEST_ATTRS:
            return True
    return False


def _called(fn: ast.AST) -> set[str]:
    return {n.func.id for n in ast.walk(fn)
            if isinstance(n, ast.Call) and isinstance(n.func, ast.Name)}


def _reach(tree: ast.Module) -> list[tuple[int, int]]:
    """The line spans of the functions that read the request, and of the
    module's functions they call by name (pygoat's ``command_out(command)``
    given the request's text one call up)."""
    functions = [n for n in ast.walk(tree)
                 if isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef))]
    handlers = [n for n in functions if _reads_request(n)]
    called = set().union(*(_called(h) for h in handlers)) if handlers else set()
    return [(n.lineno, n.end_lineno or n.lineno) for n in functions
            if n in handlers or n.name in called]


def _builds_app(tree: ast.Module) -> bool:
    return any(isinstance(n, ast.Call) and (
        isinstance(n.func, ast.Name) and n.func.id in _APP_CLASSES
        or isinstance(n.func, ast.Attribute) and n.func.attr in _APP_CLASSES)
        for n in ast.walk(tree))


class _Handlers:
    """Per module: the lines within the request's reach, and whether the
    module builds the web application."""

    def __init__(self, lines_of: Lines | None):
        self.lines_of = lines_of
        self._modules: dict[str, tuple[list[tuple[int, int]], bool]] = {}

    def _module(self, rel: str) -> tuple[list[tuple[int, int]], bool]:
        if rel not in self._modules:
            lines = (self.lines_of(rel) if self.lines_of is not None and rel.endswith(".py")
                     else None)
            tree = module_of(lines) if lines else None
            self._modules[rel] = ([], False) if tree is None else (_reach(tree), _builds_app(tree))
        return self._modules[rel]

    def inside(self, f: Finding) -> bool:
        if not f.file or f.range is None:
            return False
        line = f.range.start_line
        return any(a <= line <= b for a, b in self._module(f.file)[0])

    def line(self, f: Finding) -> str:
        """The flagged line (a secret's snippet is not kept)."""
        lines = self.lines_of(f.file) if self.lines_of is not None and f.file else None
        n = f.range.start_line if f.range else 0
        return lines[n - 1] if lines and 1 <= n <= len(lines) else ""

    def app_key(self, f: Finding) -> bool:
        """A literal signing key in the module that builds the application."""
        if not f.file or f.range is None or not self._module(f.file)[1]:
            return False
        return bool(_SIGNING_KEY.search(self.line(f)))


def in_handler(f: Finding, canonical: Canonical, handlers: _Handlers) -> bool:
    """A sink pattern within the request's reach (``_reach``), or the
    application's own literal signing key."""
    if f.category not in ("security", "lint", "secrets"):
        return False
    rules = _rules(f, canonical)
    if rules & _PASSWORD and handlers.app_key(f):
        return True
    if rules & _SECRET_RANDOM and _SECRET_USE.search(handlers.line(f)):
        return True
    return bool(rules & _SINKS) and handlers.inside(f)


def default_view(findings: list[Finding], canonical: Canonical, lines_of: Lines | None = None,
                 mode: str = "evidence") -> list[Finding]:
    """``findings`` with each static finding that is not yet noise and has no
    strong evidence marked as an advisory (noise, severity kept). ``mode``
    ``"all"`` returns them unchanged."""
    if mode == "all":
        return findings
    handlers = _Handlers(lines_of)
    out = []
    try:
        for f in findings:
            if (f.noise is None and not strong(f, canonical)
                    and not in_handler(f, canonical, handlers)):
                f = mark_noise(f, missing(f, canonical))
            out.append(f)
    finally:
        ast_index.clear()  # the handlers' trees are this step's only
    return out
