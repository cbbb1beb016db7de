"""What the code around a finding says about it: context that proves a rule
wrong, or the finding not worth acting on, marks it as noise (``noise``
names why, the severity goes down); a real injection sink or secret stays
worth acting on whatever the tool's confidence.

- jinja2 ``Environment`` (bandit B701) with ``autoescape`` set to True or
  ``select_autoescape`` next to it (``options.setdefault("autoescape",
  True)`` on the line above): wrong, shown as info noise;
- an undefined name (F821) used only in an annotation that is never
  evaluated (``from __future__ import annotations``, a string annotation, a
  local variable's annotation, ``qe/lazy_annotations.py``): info noise;
- ``eval``/``exec`` (B307, B102) of code the module writes itself (a
  literal, a code template, a ``compile(...)`` result: ``qe/codegen.py``):
  code generation, low noise; code from a parameter, input, argv, the
  environment, request data or a file stays;
- an all-interfaces address (B104) that is only a peer's (passed to
  ``receive_datagram``/``sendto``/``connect``), or a message's text (through
  a ``format_*`` call, into an exception), binds nothing;
- an all-interfaces address (B104) that is only compared against
  (``if host == "0.0.0.0":``, an item of ``ALLOWED_HOSTS``) or only shown
  (a log line, also through the name it is assigned to), never bound: info
  noise;
- ``Markup(...)`` (B704) on escaped or rendered text, or in a template
  engine's own escaping (``qe/rendered.py``): low noise;
- a weak hash (B324) whose output is a cache or lookup key, an ETag or a
  checksum (the line or the name of the function it is in says so), or
  that a protocol mandates (RFC 6455's SHA-1, HOTP/TOTP, git object ids);
- a password in an example file or a CI job's test database, a weak hash
  that only makes a rate-limit or cache key (``qe/noise_rules.py``);
- a weak hash of fresh randomness or as an HMAC's digest, a module-level
  ``x = x`` re-export, a mutable default only read, debug on in a
  development configuration whose production one has it off, newer syntax
  in a development script (``qe/noise_idioms.py``);
- ``pickle``/``marshal`` loads (B301/B302) of a cache the module writes
  itself; "pass" the verb in a name bandit took for a password;
- deliberate re-exports (PLC0414 ``import y as y``, F401 in an
  ``__init__.py`` without ``__all__``); an environment default converted
  at once (PLW1508 in ``int(os.environ.get("N", 1))``);
- bandit's advisories (``assert``, try/except/pass, subprocess or exec
  without a shell, pseudo-random numbers not used for a secret, "consider the
  implications of importing X"): noise;
- raised, not lowered: ``eval``/``exec``, pickle/marshal or ``yaml.load``
  of web request data (``request.POST[...]``, a cookie, the query's
  ``params``, also through local names): high, as remote code execution
  (bandit says medium); the same calls on a parameter keep bandit's rating;
- a finding below ``qe.confidence_threshold``: noise, except the sinks
  (``SINK_RULES``), which stay;
- a static finding in test code, fixtures, docs or examples (the path
  classes): shown one level lower and noise, except a provider's token
  (a real key leaks wherever it is committed).
"""

from __future__ import annotations

import ast
import re
from collections.abc import Callable, Iterable

from ..models import Finding, Severity
from . import ast_index
from .codegen import Scopes, fixed_command, generated_code, reads_own_constant, runs_request_data
from .lazy_annotations import LazyAnnotations
from .noise_binds import not_bound
from .noise_idioms import idiom_noise, is_idiom_rule
from .noise_pylint import pylint_disabled
from .noise_rules import (
    ci_test_database,
    dev_settings_key,
    example_placeholder,
    fixed_shell_list,
    identifier_hash,
    reraise_helper,
    self_reread,
    storage_key,
    unused_import_redefined,
    unused_imports,
)
from .rendered import already_safe, text_template

# Injection sinks, unsafe deserialisation, secrets and the web flaws: worth
# acting on whatever the tool's confidence in its own report.
SINK_RULES = frozenset({
    "B608", "SQL-INJECTION", "B506", "YAML-UNSAFE-LOAD", "B301", "B302", "B307", "B102",
    "TEMPLATE-AUTOESCAPE-OFF", "B701", "B201", "DEBUG-MODE", "WEAK-PASSWORD-HASH",
    "HARDCODED-DB-PASSWORD", "JWT-NO-VERIFY", "TLS-NO-HOSTNAME-CHECK", "INSECURE-COOKIE",
    "B105", "B106", "B107", "B602", "B604", "B605", "B501", "TEMPLATE-INJECTION", "XXE",
    "PATH-TRAVERSAL", "OPEN-REDIRECT", "REFLECTED-XSS", "XPATH-INJECTION",
    "SSRF", "COMMAND-INJECTION", "CORS-CREDENTIALS", "CSRF-DISABLED", "STORED-XSS",
})
# Shell rules are sinks only where bandit saw non-constant input (it rates
# those high; a constant command line is low).
_SHELL = frozenset({"B602", "B604", "B605"})

# bandit's advisories: "check this", not a flaw found. Noise unless the line
# says what would make it one (B311: randomness for a secret).
ADVISORY_RULES = frozenset({"B101", "B110", "B112", "B311", "B603", "B606", "B607",
                            *(f"B4{n:02d}" for n in range(1, 16))})
# A weak hash whose output is a cache key, an ETag or a checksum protects nothing.
_NOT_PROTECTING = re.compile(r"(?i)(etag|cache|checksum|fingerprint|digest_key|file_?hash|"
                             r"[a-z]_hash\b|file_?name|"
                             r"(template|module|lookup)_?key)")
# a key into a cache or a lookup table, not a secret key
_CACHE_KEY = re.compile(r"(?i)(cache|template|module|lookup)_?key")
_SECRET_USE = re.compile(r"(?i)(token|passw|secret|key|nonce|salt|otp|session|csrf)")
# Hashes a protocol or a file format mandates: not a choice the code can
# change (RFC 6455's handshake is SHA-1 of the key and a fixed GUID).
_WS_GUID = "258EAFA5-E914-47DA-95CA-C5AB0DC85B11"
_PROTOCOL_HASH = (
    (re.compile(r"(?i)websocket|ws_?accept|ws_?guid|handshake"),
     "SHA-1 as the WebSocket handshake mandates (RFC 6455)"),
    (re.compile(r"(?i)\b[th]otp\b|_[th]otp|[th]otp_|oauth1|hmac_sha1"),
     "the hash a named protocol mandates (HOTP/TOTP, OAuth 1.0 HMAC-SHA1)"),
    (re.compile(r"(?i)\bgit\b|git_|object_?id|\boid\b|b[\"']blob |[\"']blob %"),
     "a git object id, which git defines as SHA-1"),
    (re.compile(r"(?i)kex|key_?exchange|exchange_?hash"),
     "the exchange hash an SSH key exchange defines (RFC 4253, 4462: SHA-1 groups)"),
)
# Names where "pass" is the verb, not a password (jinja's ``pass_arg``).
# Whole names only: ``bypass_password`` still names a password.
_PASS_VERB = re.compile(r"(?i)\b_?(pass_(arg|args|through|context|eval_context|environment|"
                        r"env|fds|mode)|by_?pass(es|ed|ing)?|compass|pass_?thr(ough|u))\b")
_PASSWORD_WORD = re.compile(r"(?i)pas+wo?r?d|passphrase|pwd|token|secret")
# An environment variable's default converted at once: int(getenv("N", 1)).
_CONVERTED_ENV = re.compile(
    r"\b(int|float|bool|str)\(\s*(os\.)?(environ\.get|getenv)\(")
# A cache the module both writes and reads (a bytecode cache).
_CACHE_NAME = re.compile(r"(?i)cache|bucket")
_DUMPS = re.compile(r"\b(pickle|marshal)\.dumps?\(")
_AUTOESCAPE_ON = re.compile(
    r"autoescape['\"]?\s*[,:=]\s*(?:True\b|(?:jinja2\.)?select_autoescape\b)")


def is_sink(f: Finding, canonical: Callable[[str], str]) -> bool:
    rule = canonical(f.rule_id)
    if f.rule_id.lower().startswith("secret-"):
        return f.rule_id != "secret-generic" or f.confidence >= 0.7
    if rule not in SINK_RULES:
        return False
    if rule in _SHELL or rule in ("B105", "B106", "B107"):
        return f.severity.at_least(Severity.high)
    if rule == "B608" and f.rule_id.lower() != "sql-injection":
        # bandit's B608 sees SQL-looking text being formatted, executed or
        # not (an SQL dump written to a file); the sink is such text passed
        # to execute(), which sql-injection establishes.
        return f.severity.at_least(Severity.high)
    return True


def mark_noise(f: Finding, why: str, severity: Severity | None = None) -> Finding:
    update: dict = {"noise": f"{f.noise}; {why}" if f.noise else why}
    if severity is not None and severity.rank < f.severity.rank:
        update["severity"] = severity
        reason = f"{severity.value}: {why}"
        update["severity_reason"] = f"{f.severity_reason}; {reason}" if f.severity_reason else reason
    return f.model_copy(update=update)


def raise_to(f: Finding, severity: Severity, why: str) -> Finding:
    """``f`` at ``severity`` at least, the reason recorded."""
    if f.severity.rank >= severity.rank:
        return f
    reason = f"{f.tool} rates it {f.severity.value}; {why}"
    return f.model_copy(update={
        "severity": severity,
        "severity_reason": f"{f.severity_reason}; {reason}" if f.severity_reason else reason})


# Rules whose call runs or deserialises its argument: eval/exec, pickle,
# marshal, yaml. Request data there is remote code execution.
_RUNS_ARGUMENT = frozenset({"B307", "B102", "B301", "B302", "B506", "YAML-UNSAFE-LOAD"})


class ParsedModules:
    """Per file: the parsed module, and its ``Scopes`` for the code-generation
    question; one parse for the context and the conventions checks."""

    def __init__(self, lines: Callable[[str], list[str] | None]):
        self._lines = lines
        self._trees: dict[str, ast.Module | None] = {}
        self._scopes: dict[str, Scopes | None] = {}

    def tree(self, rel: str) -> ast.Module | None:
        """``rel``'s syntax tree, None where it does not parse."""
        if rel not in self._trees:
            lines = self._lines(rel)
            # (the tree the rules after this step parse again: one parse a run)
            self._trees[rel] = ast_index.parsed("\n".join(lines)) if lines is not None else None
        return self._trees[rel]

    def scopes(self, rel: str) -> Scopes | None:
        if rel not in self._scopes:
            # an empty file has no scopes to ask about
            tree = self.tree(rel) if self._lines(rel) else None
            self._scopes[rel] = Scopes(tree) if tree is not None else None
        return self._scopes[rel]


_AUTOESCAPE_OFF = re.compile(r"autoescape\s*=\s*False\b")
_DEF = re.compile(r"^\s*(async\s+def|def|class)\s")


def _autoescape_on_near(f: Finding, read_line: Callable[[str, int], str | None]) -> bool:
    """``autoescape`` turned on in the call or on the six lines above it
    (not past the start of its function), and not turned off in the call."""
    assert f.file and f.range
    end = max(f.range.end_line or f.range.start_line, f.range.start_line)
    own = [read_line(f.file, n) or "" for n in range(f.range.start_line, end + 1)]
    if any(_AUTOESCAPE_OFF.search(text) for text in own):
        return False
    above = []
    # jupyterhub's ``Environment(loader=loader, **jinja_options)`` with
    # ``jinja_options = dict(autoescape=True, ...)`` further up the function
    spread = [m.group(1) for text in own for m in _SPREAD.finditer(text)]
    for n in range(f.range.start_line - 1, max(0, f.range.start_line - 200), -1):
        text = read_line(f.file, n) or ""
        if _DEF.match(text):
            break
        if len(above) < 6 or any(re.match(rf"\s*{name}\s*=", text) for name in spread):
            above.append(text)
    return any(_AUTOESCAPE_ON.search(text) for text in [*own, *above])


_SPREAD = re.compile(r"\*\*([A-Za-z_]\w*)\b")


_PASSWORD_LIKE = re.compile(r"(?i)passw|pwd|secret|token|salt|credential")
# an avatar's e-mail digest (Gravatar's URLs are the MD5 of the address)
_GRAVATAR = re.compile(r"(?i)avatar.*\bemail|\bemail\b.*avatar")
# What a cache of one's own is not read from.
_FROM_OUTSIDE = re.compile(r"(?i)request|\breq\b|body|recv|socket|cookie|header|form|upload")


def _protocol_hash(f: Finding, text: str, module_text: str) -> str | None:
    if "md5" in text.lower() and _GRAVATAR.search(text) and not _PASSWORD_LIKE.search(text):
        return "the MD5 of an e-mail address, which Gravatar's avatar URL takes"
    if "sha1" not in text.lower() and "sha-1" not in text.lower():
        return None
    if _PASSWORD_LIKE.search(text):
        return None
    if _WS_GUID in module_text.upper() and (
            "GUID" in text.upper() or _PROTOCOL_HASH[0][0].search(text)):
        return _PROTOCOL_HASH[0][1]
    for pattern, why in _PROTOCOL_HASH:
        if pattern.search(text):
            return why
    return None


def _pass_verb(text: str) -> bool:
    """Bandit took a name with "pass" as the verb for a password's name."""
    if not _PASS_VERB.search(text):
        return False
    return not _PASSWORD_WORD.search(_PASS_VERB.sub("", text))


def _own_cache(scopes: Scopes, line: int, module_text: str) -> bool:
    """A load inside a cache class or function of a module that also
    writes that cache with pickle/marshal."""
    if not _DUMPS.search(module_text):
        return False
    names = [scopes.function_name(line)]
    calls = scopes.calls_on(line)
    if any(_FROM_OUTSIDE.search(ast.unparse(a)) for c in calls for a in c.args):
        return False
    if calls:
        cls = scopes.class_of(calls[0])
        names.append(cls.name if cls is not None else "")
    return any(_CACHE_NAME.search(n) for n in names)


def _reexport(f: Finding, rule: str, lines: Callable[[str], list[str] | None] | None) -> str | None:
    """A lint finding about an import that is a deliberate re-export."""
    if rule == "PLC0414":
        return "a deliberate re-export (`import y as y` is PEP 484's explicit re-export)"
    if rule == "F401" and f.file and f.file.rsplit("/", 1)[-1] == "__init__.py":
        text = lines(f.file) if lines is not None else None
        if text is not None and not any(re.match(r"\s*__all__\s*[:+]?=", t) for t in text):
            return "a package's __init__.py re-exports what it imports (it has no __all__)"
    return None


# bandit's XML parser rules (B313-B320): a risk where the XML is untrusted.
_XML_RULES = frozenset(f"B{n}" for n in range(313, 321))
_SHELL_RULES = frozenset({"B602", "B604", "B605"})
# A migration makemigrations wrote: its imports and style are the tool's.
_MIGRATION = re.compile(r"(^|/)migrations/\d{4}_\w+\.py$")


def _own_input(f: Finding, rule: str, modules: ParsedModules | None) -> str | None:
    """Why the code the finding is about is the project's own fixed input
    or generated code: an XML parser reading a literal path or a module's
    XML constant, a shell running a fixed command line (bandit: "seems
    safe"), lint in a Django migration. None otherwise."""
    if not (f.file and f.range):
        return None
    if f.category == "lint" and _MIGRATION.search(f.file):
        return "in a migration Django's makemigrations wrote (generated code)"
    if rule not in _XML_RULES and rule not in _SHELL_RULES:
        return None
    scopes = modules.scopes(f.file) if modules is not None and f.file.endswith(".py") else None
    if scopes is None:
        return None
    if rule in _XML_RULES and reads_own_constant(scopes, f.range.start_line):
        return "it parses the project's own XML (a literal path or constant), not untrusted input"
    if rule in _SHELL_RULES and f.severity.rank <= Severity.low.rank \
            and fixed_command(scopes, f.range.start_line):
        return "a fixed command line (bandit: seems safe); no input reaches the shell"
    if rule == "B602" and (why := fixed_shell_list(scopes, f.range.start_line)):
        return why
    return None


def apply_context(
    findings: Iterable[Finding], *, read_line: Callable[[str, int], str | None],
    lines: Callable[[str], list[str] | None] | None = None,
    canonical: Callable[[str], str] = str.upper, modules: ParsedModules | None = None,
) -> list[Finding]:
    """The findings with what their context proves (see the module doc);
    ``canonical`` names a rule the same whichever tool reports it (ruff's
    S110 is bandit's B110); ``modules``: the parses to share (over ``lines``)."""
    annotations = LazyAnnotations(lines) if lines is not None else None
    if modules is None and lines is not None:
        modules = ParsedModules(lines)
    findings = list(findings)
    unused = unused_imports(findings)
    out = []
    for f in findings:
        rule = canonical(f.rule_id)
        if (rule in _RUNS_ARGUMENT and f.file and f.range and modules is not None
                and f.noise is None and f.file.endswith(".py")):
            scopes = modules.scopes(f.file)
            name = runs_request_data(scopes, f.range.start_line) if scopes else None
            if name is not None:
                f = raise_to(f, Severity.high, f"{name}() of request data runs what the "
                                               "sender wrote (remote code execution)")
        if f.noise is None and (why := _own_input(f, rule, modules)):
            f = mark_noise(f, why, Severity.info)
        elif f.file and f.range and f.rule_id.upper() in ("B701", "S701"):
            if _autoescape_on_near(f, read_line):
                f = mark_noise(f, "autoescape is turned on next to the Environment",
                               Severity.info)
        elif (rule == "B701" and f.file and f.range and modules is not None
              and f.file.endswith(".py") and (scopes := modules.scopes(f.file)) is not None
              and (why := text_template(scopes, f.range.start_line))):
            f = mark_noise(f, why, Severity.low)
        elif (f.file and f.range and annotations is not None
              and rule in ("F821", "NAME-DEFINED") and f.file.endswith((".py", ".pyi"))):
            col = f.range.start_col - 1  # ruff counts code points; close enough in code
            if annotations.covers(f.file, f.range.start_line, col):
                f = mark_noise(f, "the name is used only in an annotation Python does not "
                                  "evaluate", Severity.info)
        elif (rule in ("B307", "B102") and f.file and f.range and modules is not None
              and f.noise is None and f.file.endswith(".py")):
            scopes = modules.scopes(f.file)
            if scopes is not None and generated_code(scopes, f.range.start_line):
                f = mark_noise(f, "code generation: it runs code the module writes itself",
                               Severity.low)
        elif (rule == "B104" and f.file and f.range and modules is not None
              and f.noise is None and f.file.endswith(".py")):
            scopes = modules.scopes(f.file)
            why = not_bound(scopes, f.range.start_line) if scopes is not None else None
            if why is not None:
                f = mark_noise(f, why, Severity.info)
        elif (rule in ("B704", "B308", "B703") and f.file and f.range and modules is not None
              and f.noise is None and f.file.endswith(".py")):
            scopes = modules.scopes(f.file)
            why = already_safe(scopes, f.range.start_line, f.file) if scopes else None
            if why is not None:
                f = mark_noise(f, f"Markup on safe text: {why}", Severity.low)
        elif (rule in ("B105", "B106", "B107") and f.file and f.range and f.noise is None
              and _pass_verb(read_line(f.file, f.range.start_line) or "")):
            f = mark_noise(f, "not a secret: the name says pass (the verb), not password",
                           Severity.info)
        elif ((rule == "B105" or f.rule_id.lower() == "secret-generic") and f.file and f.range
              and modules is not None and f.noise is None and f.file.endswith(".py")
              and (scopes := modules.scopes(f.file)) is not None
              and (why := storage_key(scopes, f.range.start_line))):
            f = mark_noise(f, why, Severity.info)
        elif (rule in ("B301", "B302") and f.file and f.range and modules is not None
              and f.noise is None and f.file.endswith(".py") and lines is not None):
            scopes = modules.scopes(f.file)
            if scopes is not None and _own_cache(scopes, f.range.start_line,
                                                 "\n".join(lines(f.file) or [])):
                f = mark_noise(f, "it reads back a cache the module writes itself (safe while "
                                  "the cache's location is trusted)", Severity.low)
        elif rule in ("PLC0414", "F401") and f.noise is None and (why := _reexport(f, rule, lines)):
            f = mark_noise(f, why, Severity.info)
        elif (rule == "PLW1508" and f.file and f.range and f.noise is None
              and _CONVERTED_ENV.search(read_line(f.file, f.range.start_line) or "")):
            f = mark_noise(f, "the value is converted at once (int(...)): a default that is no "
                              "str works", Severity.info)
        elif rule == "F811" and f.noise is None and (why := unused_import_redefined(f, unused)):
            f = mark_noise(f, why, Severity.info)
        elif f.noise is None and f.rule_id.lower().startswith("secret-") and (
                why := example_placeholder(f) or ci_test_database(
                    f, lines(f.file) if lines is not None and f.file else None)) or (f.noise is None and lines is not None and (
                rule in ("B105", "B106") or f.rule_id.lower().startswith("secret-"))
              and (why := dev_settings_key(f, lines))):
            f = mark_noise(f, why, Severity.low)
        elif (rule == "PLW0642" and f.file and f.range and modules is not None
              and f.noise is None and f.file.endswith(".py")):
            scopes = modules.scopes(f.file)
            if scopes is not None and (why := self_reread(scopes, f.range.start_line)):
                f = mark_noise(f, why, Severity.info)
        elif (rule == "PLE0704" and f.file and f.range and modules is not None
              and f.noise is None and f.file.endswith(".py")
              and (scopes := modules.scopes(f.file)) is not None
              and (why := reraise_helper(scopes, f.range.start_line))):
            f = mark_noise(f, why, Severity.info)
        elif rule in ADVISORY_RULES and f.noise is None:
            text = read_line(f.file, f.range.start_line) if f.file and f.range else None
            if not (rule == "B311" and text and _SECRET_USE.search(text)):
                f = mark_noise(f, "an advisory (bandit asks for a check, found no flaw)")
        elif f.rule_id.upper() in ("B324", "S324") and f.file and f.range and f.noise is None:
            text = read_line(f.file, f.range.start_line) or ""
            scopes = None
            if modules is not None and f.file.endswith(".py"):
                # the function it is in says what the hash is for: get_cache_key
                scopes = modules.scopes(f.file)
                text += " " + (scopes.function_name(f.range.start_line) if scopes else "")
            module_text = "\n".join(lines(f.file) or []) if lines is not None else ""
            if _NOT_PROTECTING.search(text) and not _SECRET_USE.search(_CACHE_KEY.sub("", text)):
                f = mark_noise(f, "a weak hash for a cache key, a lookup key or an ETag, which "
                                  "protects nothing")
            elif why := _protocol_hash(f, text, module_text):
                f = mark_noise(f, why, Severity.info)
            elif scopes is not None and (why := identifier_hash(scopes, f.range.start_line)):
                f = mark_noise(f, why, Severity.low)
        if is_idiom_rule(rule) and f.noise is None and f.file and (hit := idiom_noise(
                f, rule, lambda f=f: modules.scopes(f.file) if modules is not None and f.file
                and f.file.endswith(".py") else None, lines)):
            f = mark_noise(f, *hit)
        if (f.noise is None and f.file and f.range and "pylint" in (
                text := read_line(f.file, f.range.start_line) or "")
                and (why := pylint_disabled(rule, text))):
            f = mark_noise(f, why, Severity.low)
        out.append(f)
    return out
