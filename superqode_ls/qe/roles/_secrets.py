"""Secrets in source and config files: provider-specific token shapes (high
confidence) and high-entropy values assigned to secret-looking names (lower
confidence). Values never leave this module unmasked: findings carry the
flagged line with the secret replaced."""

from __future__ import annotations

import bisect
import hashlib
import math
import re
from collections import Counter
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

from ...models import Severity

MAX_BYTES = 2_000_000


@dataclass(frozen=True)
class SecretRule:
    id: str
    title: str
    pattern: re.Pattern[str]
    severity: Severity
    confidence: float
    group: int = 0  # the regex group holding the secret itself
    # Text every match contains, in the pattern's own case rule: lines
    # without any are never matched against the pattern (see scan_text).
    hints: tuple[str, ...] = ()


RULES: tuple[SecretRule, ...] = (
    SecretRule(
        "secret-private-key",
        "Private key in source",
        re.compile(
            r"-----BEGIN (?:(?:RSA|DSA|EC|OPENSSH|PGP|ENCRYPTED) )?PRIVATE KEY(?: BLOCK)?-----"
        ),
        Severity.critical,
        0.95,
        hints=("-----BEGIN ",),
    ),
    SecretRule(
        "secret-aws-access-key-id",
        "AWS access key id",
        re.compile(
            r"(?<![A-Z0-9])((?:AKIA|ASIA|AGPA|AIDA|AROA|ANPA|ANVA|AIPA)[A-Z0-9]{16})(?![A-Z0-9])"
        ),
        Severity.high,
        0.85,
        1,
        hints=("AKIA", "ASIA", "AGPA", "AIDA", "AROA", "ANPA", "ANVA", "AIPA"),
    ),
    SecretRule(
        "secret-aws-secret-key",
        "AWS secret access key",
        re.compile(r"(?i)aws.{0,20}?(?:secret|private).{0,20}?['\"]([A-Za-z0-9/+=]{40})['\"]"),
        Severity.critical,
        0.85,
        1,
        hints=("aws",),
    ),
    SecretRule(
        "secret-github-token",
        "GitHub token",
        re.compile(
            r"\b((?:ghp|gho|ghu|ghs|ghr)_[A-Za-z0-9]{36,255}|github_pat_[A-Za-z0-9_]{60,255})\b"
        ),
        Severity.critical,
        0.95,
        1,
        hints=("ghp_", "gho_", "ghu_", "ghs_", "ghr_", "github_pat_"),
    ),
    SecretRule(
        "secret-slack-token",
        "Slack token",
        re.compile(r"\b(xox[abposr]-[0-9A-Za-z-]{10,})\b"),
        Severity.high,
        0.9,
        1,
        hints=("xox",),
    ),
    SecretRule(
        "secret-slack-webhook",
        "Slack incoming webhook URL",
        re.compile(
            r"(https://hooks\.slack\.com/services/T[A-Za-z0-9_]+/B[A-Za-z0-9_]+/[A-Za-z0-9_]+)"
        ),
        Severity.high,  # anyone holding it can post as the app: a secret like the others
        0.9,
        1,
        hints=("https://hooks.slack.com/services/T",),
    ),
    SecretRule(
        "secret-google-api-key",
        "Google API key",
        re.compile(r"\b(AIza[0-9A-Za-z_-]{35})\b"),
        Severity.high,
        0.8,
        1,
        hints=("AIza",),
    ),
    SecretRule(
        "secret-stripe-key",
        "Stripe secret key",
        re.compile(r"\b((?:sk|rk)_live_[0-9A-Za-z]{20,})\b"),
        Severity.critical,
        0.95,
        1,
        hints=("_live_",),
    ),
)

GENERIC = SecretRule(
    "secret-generic",
    "Hardcoded secret",
    re.compile(
        r"(?i)\b([\w.-]*(?:password|passwd|pwd|secret|token|api[_-]?key|apikey|access[_-]?key"
        r"|auth[_-]?key|private[_-]?key|client[_-]?secret)[\w.-]*)['\"]?\s*(?::=|=|:|=>)\s*"
        r"[rbuf]{0,2}(['\"])([^'\"\s]{8,})\2"
    ),
    Severity.high,
    0.7,
    3,
    hints=("password", "passwd", "pwd", "secret", "token", "api", "access", "auth", "private"),
)
# ``password: postgres`` in a YAML/INI/TOML/.env file: values there are
# unquoted, so GENERIC (quoted values only) cannot see them.
CONFIG_PASSWORD = SecretRule(
    "secret-config-password",
    "Password written in a configuration file",
    re.compile(
        r"(?i)^\s*[\"']?((?:db|database|postgres|mysql|redis|smtp|mail)?[_.-]?"
        r"(?:password|passwd|pwd))[\"']?\s*[:=]\s*[\"']?([^\s\"'#,;]+)"
    ),
    Severity.medium,
    0.8,
    2,
    hints=("pass", "pwd"),
)
# A signing key's fallback in Python settings: ``SECRET_KEY =
# os.environ.get("SECRET_KEY", "dev-key")`` or ``... or "you-will-never-guess"``.
# Wherever the variable is not set (a forgotten deployment setting) the app
# signs sessions with a key anyone with the source has: whatever the literal
# looks like, it is the key (see _SIGNING_KEY). Spans lines (a wrapped call).
SIGNING_KEY_DEFAULT = SecretRule(
    "secret-signing-key-default",
    "Signing key with a hard-coded fallback",
    re.compile(
        r"(?m)^[ \t]*(?:[\w.]+\[\s*['\"])?([A-Z_]*(?:SECRET_KEY|JWT_SECRET(?:_KEY)?|SIGNING_KEY"
        r"|SESSION_SECRET|COOKIE_SECRET))(?:['\"]\s*\])?\s*=\s*"
        r"(?:os\.)?(?:environ\.get|getenv|env\.str|env|config)\(\s*['\"][\w.-]+['\"]\s*"
        r"(?:,\s*(?:default\s*=\s*)?[rbu]?(['\"])([^'\"\n]+)\2\s*\)"
        r"|\)\s*or\s*[rbu]?(['\"])([^'\"\n]+)\4)"),
    Severity.high,
    0.8,
    3,
    hints=("SECRET", "SIGNING_KEY"),
)
CONFIG_SUFFIXES = (".yaml", ".yml", ".ini", ".cfg", ".toml", ".env", ".conf", ".properties")
# Names that hold *about* a secret, not the secret: api_key_env = "MY_VAR".
_NOT_SECRET_NAME = re.compile(
    r"(?i)[_.-]?(env|name|file|path|url|uri|header|type|field|id|prefix|len|length|var"
    r"|setting|label|param|hash|format|pattern|regex|policy|expiry|expires|ttl)s?$"
)
_ENV_VAR_NAME = re.compile(r"^[A-Z][A-Z0-9_]{2,}$")
# Provider tokens in test files are usually fixtures.
TEST_PENALTY = 0.15

_PLACEHOLDER = re.compile(
    r"(?i)^(?:<.*>|\$\{.*\}|\$[A-Z_]+|%\(.*\)s|\{\{.*\}\}|\{.*\}|x{4,}|\*{3,}|\.{3,}"
    r"|change[_-]?me.*|your[_-].*|dummy.*|fake.*|test.*|example.*|sample.*|placeholder.*"
    r"|none|null|true|false|redacted.*)$"
)
# Lines that opt out, in the spellings other scanners use too.
_ALLOW = re.compile(
    r"(?i)(#\s*nosec|pragma:\s*allowlist[ -]secret|superqode:\s*ignore|gitleaks:allow)"
)


def entropy(value: str) -> float:
    counts = Counter(value)
    n = len(value)
    return -sum(c / n * math.log2(c / n) for c in counts.values())


def digest(value: str) -> str:
    return hashlib.sha256(value.encode("utf-8", "surrogateescape")).hexdigest()[:16]


def mask(value: str) -> str:
    """The value as stars, one per character (its length is the hint). A
    value of 16 characters or more keeps its first 4, which for tokens name
    the provider (``AKIA``, ``ghp_``, ``xoxb``) and leave 12+ unknown."""
    if len(value) >= 16:
        return value[:4] + "*" * (len(value) - 4)
    return "*" * len(value)


def mask_quoted(text: str, value: str) -> str | None:
    """``text`` with ``value`` masked where it stands as a quoted string
    (``'v'`` or ``"v"``), the words around it untouched: replacing every
    occurrence turned bandit's "hardcoded password: 'a'" into
    "h*rdcoded p*ssword: '*'". None when ``value`` is not quoted there, so a
    caller can leave the text out rather than show the secret."""
    out, found = text, False
    for q in ("'", '"'):
        quoted = f"{q}{value}{q}"
        if quoted in out:
            out, found = out.replace(quoted, f"{q}{mask(value)}{q}"), True
    return out if found else None


# ``ctx["password_status"] = "..."``: a subscript's quote and bracket too
_TARGET = re.compile(r"([\w.]+)['\"]?\]?\s*(?::=|==|!=|=|:)\s*[rbuf]{0,2}$", re.IGNORECASE)


def plausible(value: str, line: str | None = None) -> bool:
    """Whether a value bandit calls a password could be one: not empty, a
    placeholder, an environment variable's name, a number, a sentence, a URL
    without credentials or a short low-entropy word ("bearer"), and (when the
    source ``line`` is given) not assigned to a name that holds *about* a
    secret (``TOKEN_URL``, ``password_field``)."""
    if not (
        len(value) >= 6
        and not any(c.isspace() for c in value)
        and not _PLACEHOLDER.match(value)
        and not _ENV_VAR_NAME.match(value)
        and not value.isdigit()
        and not ("://" in value and "@" not in value)
        and entropy(value) >= 2.5
    ):
        return False
    if line:
        for q in ("'", '"'):
            at = line.find(f"{q}{value}{q}")
            m = _TARGET.search(line[:at]) if at > 0 else None
            if m and _NOT_SECRET_NAME.search(m.group(1)):
                return False
    return True


# Names that hold *about* a secret, for bandit's password rules: narrower
# than _NOT_SECRET_NAME (a password's hash is still worth a look).
_ABOUT_SECRET = re.compile(r"(?i)[_.-](name|file|path|url|uri|env|var|field|label|header"
                           r"|prefix|type|id|format|pattern|regex|status|state|msg|message)s?$")
# Identifiers, not secrets: "_sa_default", "refresh_token", "client_credentials",
# and a dotted path to where a value is read ("body.access_token").
_IDENTIFIER = re.compile(r"^(?:_[a-z_]+|[a-z]+(?:_[a-z]+)+|[a-z]+(?:_[a-z]+)*(?:\.[a-z]+(?:_[a-z]+)*)+)$")


def _squash(name: str) -> str:
    return re.sub(r"[^a-z0-9]", "", name.lower())


# A message shown to a user ("'Password': 'Updated.'" in a response): letters
# in words, ending in a full stop or an exclamation mark; no digit or symbol.
MESSAGE = re.compile(r"^[A-Za-z]+(?:[ ,'-][A-Za-z]+)*[.!?]$")
# Lowercase words joined by '-' ("legacy-detour", "read-only-mode"): no
# digit, capital or symbol, which every generated token has.
_HYPHEN_WORDS = re.compile(r"^[a-z]{2,}(?:-[a-z]{2,})+$")


def not_a_secret(value: str, line: str | None = None) -> str | None:
    """Why a value a tool calls a password is clearly none (a placeholder,
    an identifier, the name of the variable it is assigned to...), or None
    when it may be one."""
    if not value.strip():
        return "empty"
    if _PLACEHOLDER.match(value):
        return "a placeholder"
    if len(value) < 4:
        return "too short to be a secret"
    if _ENV_VAR_NAME.match(value):
        return "the name of an environment variable"
    if _IDENTIFIER.match(value):
        return "an identifier"
    if not any(c.isalnum() for c in value):
        return "punctuation only (a set of characters, not a secret)"
    if MESSAGE.match(value):
        return "a message (words and a full stop), not a secret"
    if _HYPHEN_WORDS.match(value) and entropy(value) < 4.0:
        # "legacyToken": "legacy-detour" is a label or slug; a passphrase
        # (words joined by '-') held by a password's name stays one.
        name = _target(line, value, _ASSIGNED_TO) or _target(line, value, _COMPARED_TO) or ""
        # A signing key's setting is the key whatever it looks like.
        if not re.search(r"(?i)pass|pwd", name) and built_in_credential(value, line) is None:
            return "words joined by '-' (a label or slug), not a secret"
    for q in ("'", '"'):
        at = (line or "").find(f"{q}{value}{q}")
        m = _TARGET.search(line[:at]) if line and at > 0 else None
        if m and _ABOUT_SECRET.search(m.group(1)):
            return f"held by a name about a secret ({m.group(1).rsplit('.', 1)[-1]}), not the secret"
        if m:
            name, squashed = _squash(m.group(1).rsplit(".", 1)[-1]), _squash(value)
            if squashed and (squashed in name or name in squashed):
                return "its own variable's name (an enum-like constant)"
            word = value[1:] if value[:1] in "#@.:-" else value  # "#bygroup": a marker
            if word.isalpha() and word.islower() and not re.search(r"pass|pwd", name):
                return "a plain word (a token type or mode, not a token)"
    return None


# A setting that IS a signing key (Flask's/Django's SECRET_KEY, a JWT or
# HMAC secret): a literal there is the key the app signs with, however
# short or placeholder-like ("aaaaaaa", "your-secret-key-here" forge
# sessions as well as a random one).
_SIGNING_KEY = re.compile(r"secretkey|jwtsecret|signingkey|hmackey|hmacsecret|cookiesecret"
                          r"|sessionsecret|appsecret")
_ASSIGNED_TO = re.compile(r"([\w.]+)['\"]?\]?\s*(?::=|=|:)\s*[rbuf]{0,2}$", re.IGNORECASE)
# A password compared against a literal: a credential built into the code.
_COMPARED_TO = re.compile(r"([\w.]+)['\"]?\]?\s*(?:==|!=)\s*[rbuf]{0,2}$", re.IGNORECASE)
_PASSWORD_VAR = re.compile(r"(?i)^(?:\w*_)?(?:password|passwd|pwd|passphrase|pass)$")
# Not a value at all: a template or format slot, an environment variable's name.
_SLOT = re.compile(r"^(?:<.*>|\$\{.*\}|\$[A-Z_]+|%\(.*\)s|\{\{.*\}\}|\{.*\}|%s)$")


def _target(line: str | None, value: str, pattern: re.Pattern[str]) -> str | None:
    """The name ``value`` is assigned to (or compared with) on ``line``."""
    for q in ("'", '"'):
        at = (line or "").find(f"{q}{value}{q}")
        m = pattern.search(line[:at]) if line and at > 0 else None
        if m:
            return m.group(1).rsplit(".", 1)[-1]
    return None


def built_in_credential(value: str, line: str | None) -> str | None:
    """Why a literal is a credential the code runs with whatever it looks
    like: assigned to a signing key's setting, or a password compared
    against it (``password == 'admin_pass'``). None otherwise, and for an
    empty value, a template slot or an environment variable's name."""
    if not value.strip() or _SLOT.match(value) or _ENV_VAR_NAME.match(value):
        return None
    name = _target(line, value, _ASSIGNED_TO)
    if name and _SIGNING_KEY.search(_squash(name)) and not _NOT_SECRET_NAME.search(name):
        return f"{name} is the key the app signs with: anyone with the source forges its tokens"
    if not any(c.isalnum() for c in value):
        return None
    # Every place the literal is compared: ``username == "admin" and
    # password == "admin"`` compares the password too.
    for name in _compared_names(line, value):
        # A marker is no password: ``password == "-"`` reads it from stdin.
        if _PASSWORD_VAR.match(name) and len(value) >= 4 and not _PLACEHOLDER.match(value):
            return f"{name} is compared against a literal: a password built into the code"
    return None


def _compared_names(line: str | None, value: str) -> list[str]:
    """The names compared with ``value`` anywhere on ``line``."""
    names = []
    for q in ("'", '"'):
        at = (line or "").find(f"{q}{value}{q}")
        while line and at > 0:
            m = _COMPARED_TO.search(line[:at])
            if m:
                names.append(m.group(1).rsplit(".", 1)[-1])
            at = line.find(f"{q}{value}{q}", at + 1)
    return names


def assigned_password(value: str, line: str | None) -> str | None:
    """Why a short literal is still a credential: a password's name is
    given it (``password = "admin"`` for a seeded account, ``User(...,
    password="admin")``). bandit rates those low when the word looks weak,
    but a weak built-in password is the flaw. None for placeholders, slots,
    an environment variable's name, a marker shorter than four characters."""
    if len(value) < 4 or any(c.isspace() for c in value) or not any(c.isalnum() for c in value) \
            or _SLOT.match(value) or _PLACEHOLDER.match(value) or _ENV_VAR_NAME.match(value):
        return None
    name = _target(line, value, _ASSIGNED_TO)
    if name and _PASSWORD_VAR.match(name) and value.lower() != name.lower():
        return f"{name} is given a literal: a password built into the code"
    return None


@dataclass
class SecretHit:
    rule: SecretRule
    line: int
    start_col: int  # 1-based, code points
    end_col: int
    masked_line: str
    confidence: float
    note: str
    digest: str  # of the secret: a stable id that does not reveal it


def _is_text(raw: bytes) -> bool:
    return b"\x00" not in raw[:8192]


def _hint_pattern(rule: SecretRule) -> re.Pattern[str]:
    # The pattern's own case rule, so IGNORECASE folds the same letters here.
    return re.compile("|".join(map(re.escape, rule.hints)), rule.pattern.flags & re.IGNORECASE)


_HINTS = {rule.id: _hint_pattern(rule) for rule in (*RULES, GENERIC)}


def _hint_offsets(rule: SecretRule, text: str, low: str | None) -> Iterator[int]:
    """Where ``rule``'s hints occur in ``text``; ``low``: the text lowercased
    when it is ASCII (then a plain search finds what IGNORECASE would: only
    outside ASCII does it fold letters such as U+017F to "s")."""
    ignore_case = bool(rule.pattern.flags & re.IGNORECASE)
    if ignore_case and low is None or not rule.hints:
        yield from (m.start() for m in _HINTS[rule.id].finditer(text))
        return
    hay = low if ignore_case else text
    for hint in rule.hints:
        needle = hint.lower() if ignore_case else hint
        at = hay.find(needle)
        while at >= 0:
            yield at
            at = hay.find(needle, at + len(needle))


def _candidates(text: str, lines: list[str]) -> dict[int, list[SecretRule]]:
    """Line number -> the rules (in RULES order, GENERIC last) whose hints the
    line holds. Every match of a rule holds one of its hints and no hint holds
    a newline, so a line left out cannot match; most lines are, and a search
    for a few literals per rule replaces a regex per line per rule.
    ``lines``: ``text`` split at newlines, filled in on the first hint found."""
    found: dict[int, list[SecretRule]] = {}
    starts: list[int] = []
    low = text.lower() if text.isascii() else None
    for rule in (*RULES, GENERIC):
        for at in _hint_offsets(rule, text, low):
            if not starts:
                lines[:] = text.split("\n")
                pos = 0
                for ln in lines:
                    starts.append(pos)
                    pos += len(ln) + 1
            rules = found.setdefault(bisect.bisect_right(starts, at), [])
            if not rules or rules[-1] is not rule:
                rules.append(rule)
    return found


def _config_password(line: str, lineno: int, in_test: bool) -> SecretHit | None:
    m = CONFIG_PASSWORD.pattern.match(line)
    if m is None:
        return None
    value = m.group(2)
    if (_PLACEHOLDER.match(value) or value.startswith(("$", "%", "{", "!", "&", "*"))
            or value.lower() in ("password", "passwd", "pwd", "''", '""')):
        return None
    confidence = CONFIG_PASSWORD.confidence - (TEST_PENALTY if in_test else 0.0)
    return _hit(CONFIG_PASSWORD, lineno, line, m.start(2), m.end(2), round(confidence, 2), "")


def _signing_defaults(text: str, in_test: bool) -> list[SecretHit]:
    """SIGNING_KEY_DEFAULT's hits in Python source."""
    if not any(h in text for h in SIGNING_KEY_DEFAULT.hints):
        return []
    hits = []
    for m in SIGNING_KEY_DEFAULT.pattern.finditer(text):
        group = 3 if m.group(3) is not None else 5
        value = m.group(group)
        if not value.strip() or _SLOT.match(value) or _ENV_VAR_NAME.match(value):
            continue
        lineno = text.count("\n", 0, m.start(group)) + 1
        start = text.rfind("\n", 0, m.start(group)) + 1
        end = text.find("\n", m.start(group))
        line = text[start:end if end >= 0 else len(text)].rstrip("\r")
        if _ALLOW.search(line):
            continue
        col = m.start(group) - start
        confidence = SIGNING_KEY_DEFAULT.confidence - (TEST_PENALTY if in_test else 0.0)
        hits.append(_hit(SIGNING_KEY_DEFAULT, lineno, line, col, col + len(value),
                         round(confidence, 2), ""))
    return hits


def scan_text(text: str, in_test: bool = False, config: bool = False,
              python: bool = False) -> list[SecretHit]:
    """``config``: the text is a configuration file (YAML, INI, TOML,
    .env): an unquoted ``password: value`` counts there too. ``python``:
    Python source, where a signing key's fallback literal counts."""
    hits: list[SecretHit] = _signing_defaults(text, in_test) if python else []
    taken = {h.line for h in hits}
    lines: list[str] = []
    candidates = _candidates(text, lines)
    for lineno in sorted(candidates):
        line = lines[lineno - 1].rstrip("\r")
        if len(line) > 2000 or _ALLOW.search(line) or lineno in taken:
            continue
        found_specific = False
        rules = candidates[lineno]
        for rule in rules:
            if rule is GENERIC:
                continue
            for m in rule.pattern.finditer(line):
                value = m.group(rule.group)
                confidence = rule.confidence
                note = ""
                if "EXAMPLE" in value.upper():
                    confidence, note = 0.3, " (looks like a documentation example)"
                elif in_test:
                    confidence, note = confidence - TEST_PENALTY, " (in a test file)"
                hits.append(
                    _hit(
                        rule,
                        lineno,
                        line,
                        m.start(rule.group),
                        m.end(rule.group),
                        round(confidence, 2),
                        note,
                    )
                )
                found_specific = True
        if found_specific:
            continue
        if config:
            hit = _config_password(line, lineno, in_test)
            if hit is not None:
                hits.append(hit)
                continue
        if rules[-1] is not GENERIC:
            continue
        for m in GENERIC.pattern.finditer(line):
            value = m.group(GENERIC.group)
            if _PLACEHOLDER.match(value) or value.isdigit() or _ENV_VAR_NAME.match(value):
                continue
            if _NOT_SECRET_NAME.search(m.group(1)) or not_a_secret(value, line):
                continue
            e = entropy(value)
            if e < 3.0:
                continue
            confidence = 0.8 if e >= 4.0 else 0.7 if e >= 3.5 else 0.5
            if in_test:
                confidence -= 0.2
            hits.append(
                _hit(
                    GENERIC,
                    lineno,
                    line,
                    m.start(3),
                    m.end(3),
                    round(confidence, 2),
                    f" (entropy {e:.1f} bits/char)",
                )
            )
    # The same key written out again (a commented-out copy of the fallback):
    # one finding, at the line that uses it.
    fallbacks = {h.digest for h in hits if h.rule is SIGNING_KEY_DEFAULT}
    return [h for h in hits if h.rule is not GENERIC or h.digest not in fallbacks]


def _hit(
    rule: SecretRule, lineno: int, line: str, start: int, end: int, confidence: float, note: str
) -> SecretHit:
    value = line[start:end]
    if rule.group:
        masked = line[:start] + mask(value) + line[end:]
    else:
        # A key block's marker; key material may follow on the same line
        # (service-account JSON with "\n" escapes): cut it off.
        masked = line[:end] + ("***" if line[end:].strip() else "")
    return SecretHit(
        rule, lineno, start + 1, end + 1, masked, confidence, note, digest(value or line)
    )


def scan_file(path: Path, in_test: bool = False) -> list[SecretHit]:
    try:
        if path.stat().st_size > MAX_BYTES:
            return []
        raw = path.read_bytes()
    except OSError:
        return []
    if not _is_text(raw):
        return []
    config = path.suffix.lower() in CONFIG_SUFFIXES or path.name.startswith(".env")
    return scan_text(raw.decode("utf-8", "replace"), in_test=in_test, config=config,
                     python=path.suffix == ".py")
