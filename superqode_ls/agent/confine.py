"""Keeping the agent inside the sandbox root.

Paths are resolved (symlinks followed, ``..`` collapsed) before the check, so
a link the agent made with ``ln -s ~/.ssh keys`` is refused like ``../x``.
Shell commands are pre-checked: git through the workspace guard, and any
argument that names a place outside the sandbox (``/``, ``~``, ``$HOME``,
``../..``) is refused. The shell check is a tripwire, not a jail; the sandbox
and the git shim are the isolation.
"""

from __future__ import annotations

import os
import re
import shlex
import sys
from pathlib import Path


class Refused(Exception):
    """A tool call refused for safety; the message goes back to the model."""


def resolve_inside(root: Path, rel: str, *, for_write: bool = False) -> Path:
    """The real path of ``rel`` under ``root``; Refused when it leaves ``root``."""
    if not isinstance(rel, str) or not rel.strip():
        raise Refused("path is empty")
    if "\x00" in rel:
        raise Refused("path contains a NUL byte")
    if rel.startswith("~") or "$" in rel:
        raise Refused(f"{rel}: outside the sandbox (home and variables are not expanded)")
    root = root.resolve()
    candidate = Path(rel)
    if not candidate.is_absolute():
        candidate = root / candidate
    real = Path(os.path.realpath(candidate))
    if real != root and not real.is_relative_to(root):
        raise Refused(f"{rel}: outside the sandbox")
    inside = real.relative_to(root)
    if for_write and inside.parts and inside.parts[0] == ".git":
        raise Refused(f"{rel}: the sandbox's .git is not writable by the agent")
    return real


def relative(root: Path, path: Path) -> str:
    return path.resolve().relative_to(root.resolve()).as_posix() or "."


# Read-only system locations a test command legitimately names.
_SYSTEM_PREFIXES = (
    "/usr/",
    "/bin/",
    "/sbin/",
    "/lib",
    "/opt/",
    "/dev/null",
    "/dev/stdout",
    "/dev/stderr",
    "/proc/self/",
)
_HOME_RE = re.compile(r"(^|[^\w])(~|\$HOME\b|\$\{HOME\}|\$USER\b)")
_DANGEROUS_RE = re.compile(
    r"\b(sudo|su|mkfs\w*|dd|shutdown|reboot|chown|crontab|ssh|scp|curl|wget|nc)\b"
)


def _allowed_prefixes() -> tuple[str, ...]:
    extra = {os.path.realpath(sys.prefix) + "/", os.path.realpath(sys.base_prefix) + "/"}
    return _SYSTEM_PREFIXES + tuple(sorted(extra))


def shell_refusal(command: str, root: Path) -> str | None:
    """Why ``command`` may not run in the sandbox at ``root``, or None."""
    if _HOME_RE.search(command):
        return "refers to the home directory"
    try:
        tokens = shlex.split(command, comments=False, posix=True)
    except ValueError as e:
        return f"cannot parse the command ({e})"
    m = _DANGEROUS_RE.search(" ".join(tokens))
    if m:
        return f"{m.group(1)} is not available to the agent"
    root = root.resolve()
    prefixes = _allowed_prefixes()
    for tok in tokens:
        for part in _path_like_parts(tok):
            if part.startswith("/"):
                real = os.path.realpath(part)
                if real == str(root) or Path(real).is_relative_to(root):
                    continue
                if any(real.startswith(p) or real + "/" == p for p in prefixes):
                    continue
                return f"{part}: outside the sandbox"
            if ".." in Path(part).parts:
                resolved = Path(os.path.realpath(root / part))
                if resolved != root and not resolved.is_relative_to(root):
                    return f"{part}: outside the sandbox"
    return None


def _path_like_parts(token: str) -> list[str]:
    # "--out=/etc/x" and "a:/b" carry paths after a separator.
    parts = [token]
    for sep in ("=", ":"):
        if sep in token:
            parts.extend(p for p in token.split(sep)[1:] if p)
    return [p for p in parts if p.startswith("/") or ".." in p]
