"""Keeping API keys out of everything SuperQode writes.

Keys are read from the environment at request time only; every string that
leaves the agent (events, logs, artifacts, error messages) passes through a
``Redactor`` that knows the keys in play.
"""

from __future__ import annotations

import os
import re
from typing import Any

MASK = "[REDACTED]"

# Shapes of credentials that may show up in tool output even when we did not
# hand them out (a repo's .env read by the agent, an echo in a shell command).
_PATTERNS = (
    re.compile(r"(?i)(authorization\s*[:=]\s*bearer\s+)[^\s'\"]+"),
    re.compile(r"\bsk-[A-Za-z0-9_-]{16,}\b"),
)
# Short values would mask ordinary words; a real key is never this short.
_MIN_SECRET_LEN = 6


class Redactor:
    def __init__(self, secrets: list[str] | None = None):
        self._secrets: set[str] = set()
        for s in secrets or []:
            self.add(s)

    def add(self, secret: str | None) -> None:
        if secret and len(secret) >= _MIN_SECRET_LEN:
            self._secrets.add(secret)

    def add_env(self, *names: str | None) -> None:
        for name in names:
            if name:
                self.add(os.environ.get(name))

    def text(self, value: str) -> str:
        # Longest first so a key that contains another is masked whole.
        for s in sorted(self._secrets, key=len, reverse=True):
            value = value.replace(s, MASK)
        for pat in _PATTERNS:
            value = pat.sub(lambda m: (m.group(1) if m.groups() else "") + MASK, value)
        return value

    def __call__(self, value: Any) -> Any:
        """Scrub a string or any JSON-like structure."""
        if isinstance(value, str):
            return self.text(value)
        if isinstance(value, dict):
            return {self(k) if isinstance(k, str) else k: self(v) for k, v in value.items()}
        if isinstance(value, (list, tuple)):
            return [self(v) for v in value]
        return value
