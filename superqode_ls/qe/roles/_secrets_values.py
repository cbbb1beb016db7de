"""What a value a tool calls a secret is: a placeholder, an identifier, a
message, a name about a secret, or a credential the code runs with whatever
it looks like (a signing key's setting, a password compared against a
literal). The secrets scan (``_secrets``), bandit's password rules
(``_bandit_results``) and the context step ask these questions; the
scanning itself (token shapes, masking, files) is in ``_secrets``."""

from __future__ import annotations

import math
import re
from collections import Counter

# Names that hold *about* a secret, not the secret: api_key_env = "MY_VAR".
_NOT_SECRET_NAME = re.compile(
    r"(?i)[_.-]?(env|name|file|path|url|uri|header|type|field|id|prefix|len|length|var"
    r"|setting|label|param|hash|format|pattern|regex|policy|expiry|expires|ttl)s?$"
)
_ENV_VAR_NAME = re.compile(r"^[A-Z][A-Z0-9_]{2,}$")

# A value that tells the reader to replace it ("changeme", "changethis",
# "your-password", isso's "please_choose_a_strong_password"): a vocabulary,
# not a proof. Java's "changeit" is a real default keystore password and is
# not in it.
_PLACEHOLDER = re.compile(
    r"(?i)^(?:<.*>|\$\{.*\}|\$[A-Z_]+|%\(.*\)s|\{\{.*\}\}|\{.*\}|x{4,}|\*{3,}|\.{3,}"
    r"|change[_-]?(?:me|this).*|your[_-].*|dummy.*|fake.*|test.*|example.*|sample.*|placeholder.*"
    r"|please[_-].*|(?:choose|enter|insert|replace|put)[_-](?:a|an|the|your)[_-].*"
    r"|none|null|true|false|redacted.*)$"
)


def entropy(value: str) -> float:
    counts = Counter(value)
    n = len(value)
    return -sum(c / n * math.log2(c / n) for c in counts.values())



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
# Python's dotted path to a class, as a setting names the class to load
# (wger's ``HEADLESS_TOKEN_STRATEGY = 'wger.utils.headless_auth.WgerJWTTokenStrategy'``):
# lowercase module names, then a capitalised class name. A JWT's or a key's
# dotted parts are base64, with capitals and digits throughout: the class
# name is words (an acronym among them), a digit at most at its end.
# The class name may open with an acronym (django-oauth-toolkit's
# ``"oauth2_provider.admin.IDTokenAdmin"``).
_CLASS_PATH = re.compile(r"^[a-z_][a-z0-9_]*(?:\.[a-z_][a-z0-9_]*)+\.(?:[A-Z]+[a-z]+)+[A-Z]*\d?$")


def _squash(name: str) -> str:
    return re.sub(r"[^a-z0-9]", "", name.lower())


# A message shown to a user ("'Password': 'Updated.'" in a response): letters
# in words, ending in a full stop or an exclamation mark; no digit or symbol.
MESSAGE = re.compile(r"^[A-Za-z]+(?:[ ,'-][A-Za-z]+)*[.!?]$")
# Lowercase words joined by '-' ("legacy-detour", "read-only-mode"): no
# digit, capital or symbol, which every generated token has.
_HYPHEN_WORDS = re.compile(r"^[a-z]{2,}(?:-[a-z]{2,})+$")


# An address (an OAuth token endpoint, a sync token's namespace URL): no
# user:password@ part and no query, where an API key would ride.
_PLAIN_URL = re.compile(r"(?i)^https?://[\w.-]+(?::\d+)?(?:/[\w./%~-]*)?$")


# A regular expression (a lexer's token table, `tokens = r"H{1,2}|h{1,2}|..."`):
# alternatives with a quantifier, a group or a class escape, which no
# generated key holds.
_REGEX_PART = re.compile(r"\{\d+(?:,\d*)?\}|\(\?[:=!<P]|\\[dswbDSWB]|\[\^?[^\]]+\][*+?]")


def is_regex(value: str) -> bool:
    return "|" in value and len(_REGEX_PART.findall(value)) >= 2


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
    if _CREDENTIALED_URL.search(value):
        return None  # whatever name holds it, a URL that logs in is a credential
    if value.endswith(("...", "\u2026")):
        return ("cut short with '...' (an example of the format in a comment or a "
                "template), not a secret")
    if (slot := _formatted_words(value, line)) is not None:
        return (f"built at run time from {slot}: what is written is words and punctuation "
                "(a CSS property, a grammar symbol), no secret")
    if (shape := value_shape(value, line)) is not None:
        return shape
    if _IDENTIFIER.match(value):
        return "an identifier"
    if _CLASS_PATH.match(value):
        return "a dotted path to a class (the class a setting loads), not a secret"
    if is_regex(value):
        return "a regular expression (alternatives and quantifiers), not a secret"
    if not any(c.isalnum() for c in value):
        return "punctuation only (a set of characters, not a secret)"
    if _PLAIN_URL.match(value):
        return "a URL with no credentials in it (an address, not a secret)"
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
            # ("Bearer": oauthlib's default_token, a token type's name)
            if (word.isalpha() and (word.islower() or word.istitle())
                    and not re.search(r"pass|pwd", name)):
                return "a plain word (a token type or mode, not a token)"
    return None


# What a secret's value cannot look like, whichever tool calls it one
# (bandit's B105-B107 or the secrets scan): the shapes of values that name
# or describe something. A random key has none of them: no file extension
# after a '/', no URL that is only an address, no brackets of type names.
_NUMBER = re.compile(r"^[+-]?\d+(?:\.\d+)?(?:[eE][+-]?\d+)?$")
# A template or a file: "security/reset_password.html", a template's name
# without extension ("security/email/reset_notice": lowercase words under
# folders). Base64 has '/' but no '.', and capitals and digits mixed in.
_FILE_PATH = re.compile(r"^/?(?:[\w.-]+/)+[\w-]+\.[A-Za-z][A-Za-z0-9]{0,5}$")
# A file's name alone: only with an extension files have ("reset.html"), as
# "Zq8pLm2vR5.xT9wKe" is a key's shape too.
_FILE_NAME = re.compile(r"(?i)^[\w-]+\.(?:html?|txt|j2|jinja2?|xml|json|ya?ml|md|rst|cfg|ini|toml"
                        r"|pem|crt|cer|key|csv|png|jpe?g|svg|gif|css|js|py|mo|po|db|sqlite3?"
                        r"|log|conf)$")
_TEMPLATE_NAME = re.compile(r"^/?[a-z_][a-z0-9_-]*(?:/[a-z_][a-z0-9_-]*)+/?$")
# A type in quotes (``secret_key: "Optional[str]" = None``): a generic's
# name, then type names in brackets. "Pass[word]1" is no type expression.
_TYPE_EXPR = re.compile(r"^(?:[A-Za-z_]\w*\.)*(?:[A-Z]\w*|list|dict|set|frozenset|tuple|type)\[(.+)\]$")
_TYPE_NAME = re.compile(r"^(?:[A-Za-z_]\w*\.)*(?:[A-Z][A-Za-z0-9]*|str|int|float|bool|bytes"
                        r"|complex|object|list|dict|set|frozenset|tuple|type|None|\.\.\.)$")
# A format slot: "{token}", "{}", "{0}", "%s", "%(name)s", "{{ token }}", "${TOKEN}".
_FORMAT_SLOT = re.compile(r"\{\{[^{}]*\}\}|\$\{[^{}]*\}|\{[\w.]*(?:![rsa])?(?::[^{}]*)?\}"
                          r"|%(?:\([\w.]+\))?[sdr]")
# A hashing or signing scheme's name (flask-security's ``"PASSWORD_HASH":
# "argon2"``, a JWT's ``"HS256"``): what protects the secret, not it.
_ALGORITHM = re.compile(r"(?i)^(?:argon2(?:id|i|d)?|bcrypt(?:_sha256)?|scrypt|pbkdf2(?:_sha\d+)?"
                        r"|(?:sha\d+|md5|des|bsdi)_crypt|sha-?\d+|md5|blake2[bs]?"
                        r"|hmac[-_]?sha-?\d+|[HRE]S\d{3}|PS\d{3}|EdDSA)$")
# An address with a query whose values are all slots ("?token={token}").
_URL_QUERY_SLOTS = re.compile(r"(?i)^(https?://[^?#\s@]+)\?(?:[\w.-]+=\x00&?)+$")


def _is_type_expression(value: str) -> bool:
    m = _TYPE_EXPR.match(value)
    if not m:
        return False
    names = re.split(r"[\[\],|]", m.group(1))
    return all(_TYPE_NAME.match(n.strip()) for n in names if n.strip())


# A rate (Django REST framework's throttle rates, ``"12/hour"``; a limiter's
# ``"100/minute"``): a count per unit of time, which no key has.
_RATE = re.compile(r"(?i)^\d+\s*/\s*\d*\s*(?:s|sec|second|m|min|minute|h|hr|hour|d|day|w|week"
                   r"|month|y|year)s?$")
# A condition on another field (a form's visibility rule, ``"sms_provider=ovh"``,
# ``"sms_password_recovery=true&sms_provider=ovh"``): field names in
# snake_case, each given a plain lowercase word. A generated value has digits
# or capitals; a condition on a secret's own field (``db_password=...``) stays.
_CONDITION = re.compile(r"^[a-z][a-z0-9]*(?:_[a-z0-9]+)+=[a-z]+"
                        r"(?:&[a-z][a-z0-9]*(?:_[a-z0-9]+)+=[a-z]+)*$")
_SECRET_WORD = re.compile(r"(?i)pass|pwd|secret|token|key|auth|cred")
_FLAGS = frozenset({"true", "false", "on", "off", "yes", "no"})


def value_shape(value: str, line: str | None = None) -> str | None:
    """Why ``value`` has the shape of something other than a secret: a
    number, a file's or a template's path, a URL with no credentials, a
    quoted type expression, a format template whose only variable part is a
    slot. None when it may be a secret: a URL with ``user:pass@`` in it, and
    a number given to a password (``password = "123456"``) among them."""
    if _NUMBER.match(value):
        name = (_target(line, value, _ASSIGNED_TO) or "") + " " + " ".join(
            _compared_names(line, value))
        if not re.search(r"(?i)pass|pwd|(?:\b|_)pin(?:_|\b)", name):
            return "a number, not a secret"
        return None
    if _RATE.match(value) and not _PASSWORD_VAR.match(_target(line, value, _ASSIGNED_TO) or ""):
        return "a rate (a count per unit of time, a throttle's setting), not a secret"
    if _CONDITION.match(value) and not any(
            _SECRET_WORD.search(name) and word not in _FLAGS
            for name, word in (part.split("=", 1) for part in value.split("&"))):
        return ("a condition on another field (field=value, a form's visibility rule), "
                "not a secret")
    if _ALGORITHM.match(value) and not _PASSWORD_VAR.match(_target(line, value, _ASSIGNED_TO) or ""):
        return "the name of a hashing or signing algorithm, not a secret"
    if "@" in value.split("?", 1)[0] and "://" in value:
        return None  # credentials in a URL stay a finding
    if "://" not in value and (_FILE_PATH.match(value) or _FILE_NAME.match(value)
                                or _TEMPLATE_NAME.match(value)):
        return "a file's or a template's path, not a secret"
    if _is_type_expression(value):
        return "a type expression (an annotation in quotes), not a secret"
    if _FORMAT_SLOT.search(value):
        written = _FORMAT_SLOT.sub("\x00", value)
        url = _URL_QUERY_SLOTS.match(written)
        if _PLAIN_URL.match((url.group(1) if url else written).replace("\x00", "x")):
            return "a URL template (its only variable part a slot), no credentials in it"
        if _WORDS_AND_MARKS.match(written.replace("\x00", "")):
            return "a format template whose only variable part is a slot, not a secret"
    return None


# ``scheme://user:password@``, the password written out (not a slot).
_CREDENTIALED_URL = re.compile(r"^[a-z][\w+.-]*://[^/@\s:]+:(?!\{|%\(|\$)[^/@\s]+@", re.IGNORECASE)


# An f-string's written part: letters and punctuation only (WeasyPrint's
# ``css_token = f'string-set::{string_name}'``). A digit or a long run of
# letters and digits mixed (``f'sk_live_9aF3{suffix}'``) may be a key's
# written half, so it stays.
_WORDS_AND_MARKS = re.compile(r"^[A-Za-z:;,./_ ()-]{0,40}$")
_SLOTS = re.compile(r"\{([A-Za-z_][\w.]*)(?:![rsa])?(?::[^{}]*)?\}")


def _formatted_words(value: str, line: str | None) -> str | None:
    """The name an f-string formats in, when the rest of it is words and marks."""
    if not line or "{" not in value:
        return None
    at = max(line.find(f"'{value}'"), line.find(f'"{value}"'))
    if at <= 0 or line[at - 1] not in "fF":
        return None
    slots = _SLOTS.findall(value)
    rest = _SLOTS.sub("", value)
    if not slots or "{" in rest or not _WORDS_AND_MARKS.match(rest):
        return None
    return slots[0]


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
        if at < 0 and (head := _source_head(value)):
            # an escape in the literal (``'F12Zr47j\\3yX'``): the source
            # spells the value otherwise; its head up to the escape is the same
            at = (line or "").find(f"{q}{head}")
        m = pattern.search(line[:at]) if line and at > 0 else None
        if m:
            return m.group(1).rsplit(".", 1)[-1]
    return None


def _source_head(value: str) -> str | None:
    """The part of ``value`` before its first character that the source
    writes as an escape (a control character, a backslash), when that part
    is long enough to find the literal by (eight characters)."""
    for i, c in enumerate(value):
        if not c.isprintable() or c in "\\'\"":
            return value[:i] if i >= 8 else None
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
