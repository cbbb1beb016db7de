"""The guard's vocabulary: ``GuardVerdict``, the DYN marker, quoting for
messages and the ``qe.git_guard`` allow/block patterns.

Stdlib only and import-light: the sandbox's git shim loads this on every git
call that leaves its shell fast path.
"""

from __future__ import annotations

import os

if False:  # typing only; the shim must not pay for importing typing
    from collections.abc import Iterable, Sequence
    from typing import Any

# Marks a word (or part of one) whose value is only known at run time:
# command substitutions, unknown variables, xargs input.
DYN = "\x00"

CONFIG_HINT = "add a pattern to qe.git_guard.allow in superqode.yaml if this is intended"

INTERNAL_ENV = "SUPERQODE_INTERNAL_GIT"


class GuardVerdict:
    """The guard's answer for one git invocation (a plain class: dataclasses
    would cost the shim an import on every git call)."""

    __slots__ = ("allowed", "command", "reason", "suggestion")

    def __init__(self, allowed: bool, reason: str, suggestion: str, command: str):
        self.allowed = allowed
        self.reason = reason
        self.suggestion = suggestion
        self.command = command

    def __eq__(self, other: object) -> bool:
        return isinstance(other, GuardVerdict) and self._t() == other._t()

    def __hash__(self) -> int:
        return hash(self._t())

    def _t(self) -> tuple:
        return (self.allowed, self.reason, self.suggestion, self.command)

    def __repr__(self) -> str:
        return (
            f"GuardVerdict(allowed={self.allowed!r}, reason={self.reason!r}, "
            f"suggestion={self.suggestion!r}, command={self.command!r})"
        )

    @property
    def blocked(self) -> bool:
        return not self.allowed

    def line(self) -> str:
        if self.allowed:
            return f"allowed: {self.command}"
        return f"blocked: {self.reason} ({self.suggestion})"


_SAFE_CHARS = frozenset("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789@%+=:,./-_")


def _quote(argv: Sequence[str]) -> str:
    out = []
    for a in argv:
        a = a.replace(DYN, "$(...)")
        if a and all(c in _SAFE_CHARS for c in a):
            out.append(a)
        else:
            out.append("'" + a.replace("'", "'\"'\"'") + "'")
    return " ".join(out)


def _glob(text: str, pattern: str) -> bool:
    """fnmatch for the guard's own key tables (no re import on the hot path)."""
    if "*" not in pattern:
        return text == pattern
    pre, suf = pattern.split("*", 1)
    return len(text) >= len(pre) + len(suf) and text.startswith(pre) and text.endswith(suf)


# --------------------------------------------------------------------------
# Configuration (duck-typed: anything with enabled/allow/block)


def _cfg_lists(cfg: Any) -> tuple[bool, list[list[str]], list[list[str]]]:
    if cfg is None:
        return True, [], []
    enabled = bool(getattr(cfg, "enabled", True))
    return (
        enabled,
        _patterns(getattr(cfg, "allow", ()) or ()),
        _patterns(getattr(cfg, "block", ()) or ()),
    )


def _patterns(items: Iterable[str]) -> list[list[str]]:
    out = []
    for item in items:
        if "'" in item or '"' in item or "\\" in item:
            import shlex  # only for quoted patterns: shlex costs the shim an `re` import

            try:
                words = shlex.split(item)
            except ValueError:
                words = item.split()
        else:
            words = item.split()
        if words and os.path.basename(words[0]) == "git":
            words = words[1:]
        if words:
            out.append(words)
    return out


def _matches(pattern: list[str], sub: str, args: Sequence[str]) -> str | None:
    """``pattern`` = [SUBCOMMAND, WORD...]: the subcommand must match and every
    further word must match some argument (fnmatch, any order)."""
    import fnmatch

    if not fnmatch.fnmatchcase(sub, pattern[0]):
        return None
    for word in pattern[1:]:
        if not any(fnmatch.fnmatchcase(a, word) for a in args):
            return None
    return "git " + " ".join(pattern)
