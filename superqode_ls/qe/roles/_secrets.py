"""Secrets in source and config files: provider-specific token shapes (high
confidence) and high-entropy values assigned to secret-looking names (lower
confidence). Values never leave this module unmasked: findings carry the
flagged line with the secret replaced."""

from __future__ import annotations

import ast
import bisect
import hashlib
import re
from collections.abc import Iterator
from dataclasses import dataclass, replace
from pathlib import Path

from ...models import Severity
from ...workspace.pyast import parse as parse_python
from ._secrets_values import (
    _ENV_VAR_NAME,
    _NOT_SECRET_NAME,
    _PLACEHOLDER,
    _SLOT,
    MESSAGE,
    assigned_password,
    built_in_credential,
    entropy,
    not_a_secret,
    plausible,
)

# What a value is (placeholder, identifier, built-in credential...) is
# _secrets_values' question; the names other modules read here stay here.
__all__ = ["GENERIC", "MESSAGE", "RULES", "SecretHit", "SecretRule", "assigned_password",
           "built_in_credential", "digest", "entropy", "mask", "mask_quoted", "not_a_secret",
           "plausible", "scan_file", "scan_text"]

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
            r"\b((?:ghp|gho|ghu|ghr)_[A-Za-z0-9]{36,255}|github_pat_[A-Za-z0-9_]{60,255})\b"
        ),
        Severity.critical,
        0.95,
        1,
        hints=("ghp_", "gho_", "ghu_", "ghr_", "github_pat_"),
    ),
    # A GitHub App's installation token expires an hour after it is issued:
    # a leak while it lives, recorded data once it has (noise_paths).
    SecretRule(
        "secret-github-app-token",
        "GitHub App installation token",
        re.compile(r"\b(ghs_[A-Za-z0-9]{36,255})\b"),
        Severity.high,
        0.95,
        1,
        hints=("ghs_",),
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
# Provider tokens in test files are usually fixtures.
TEST_PENALTY = 0.15

# Lines that opt out, in the spellings other scanners use too.
_ALLOW = re.compile(
    r"(?i)(#\s*nosec|pragma:\s*allowlist[ -]secret|superqode:\s*ignore|gitleaks:allow)"
)



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


_PRESIGNED = ("X-Amz-Credential=", "AWSAccessKeyId=")


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
                if value and len(set(value)) == 1:
                    continue  # "XXXX...XXXX": the format's placeholder, no key
                if line[:m.start(rule.group)].endswith(_PRESIGNED):
                    # a presigned URL's credential scope: the key's id is
                    # public there by design, its secret is not in the URL
                    continue
                if line[m.end(rule.group):].startswith(("...", "\u2026")):
                    # cut short ("xoxb-4426949411-aEM7..." in a config
                    # template's comment): the format's example, no key
                    continue
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
    text = raw.decode("utf-8", "replace")
    hits = scan_text(text, in_test=in_test, config=config, python=path.suffix == ".py")
    if path.suffix == ".py" and any(h.rule is GENERIC for h in hits):
        hits = _docstring_examples(hits, text)
    if hits and translation_catalog(path):
        # "user-password": "Benutzerpasswort" is a label for the user; a key
        # in a known format (AWS, a private key block) still counts there.
        hits = [h for h in hits if h.rule is not GENERIC and h.rule is not CONFIG_PASSWORD]
    return hits


def _docstring_examples(hits: list[SecretHit], text: str) -> list[SecretHit]:
    """A generic hit inside a docstring is documentation's example
    (oauthlib's RFC 6749 response, ``"access_token":"2YotnFZFEjr1zCsicMWpAA"``):
    its confidence lowered as "EXAMPLE" values' are; a key in a known
    format keeps its own."""
    try:
        tree = parse_python(text)
    except (SyntaxError, ValueError):
        return hits
    spans = [(n.body[0].lineno, n.body[0].end_lineno or n.body[0].lineno)
             for n in ast.walk(tree)
             if isinstance(n, (ast.Module, ast.ClassDef, ast.FunctionDef, ast.AsyncFunctionDef))
             and n.body and isinstance(n.body[0], ast.Expr)
             and isinstance(n.body[0].value, ast.Constant) and isinstance(n.body[0].value.value, str)]
    return [replace(h, confidence=min(h.confidence, 0.3),
                    note=" (in a docstring: documentation's example)")
            if h.rule is GENERIC and any(a <= h.line <= b for a, b in spans) else h
            for h in hits]


# A locale's name: en, de-DE, pt_BR, zh-Hant-TW.
_LOCALE = re.compile(r"^[a-z]{2,3}(?:[-_][A-Za-z]{2,4}){0,2}$")
_CATALOG_SUFFIXES = frozenset({".json", ".yaml", ".yml", ".toml", ".properties", ".ini"})


def translation_catalog(path: Path) -> bool:
    """Whether ``path`` is one language's file of a translation catalog:
    named for a locale, beside at least two more locales' files of the same
    kind (mealie's frontend/lang/messages/de-DE.json, ja-JP.json...)."""
    suffix = path.suffix.lower()
    if suffix not in _CATALOG_SUFFIXES or not _LOCALE.match(path.stem):
        return False
    try:
        siblings = sum(1 for p in path.parent.iterdir()
                       if p.suffix.lower() == suffix and p.name != path.name
                       and _LOCALE.match(p.stem))
    except OSError:
        return False
    return siblings >= 2
