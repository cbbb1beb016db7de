"""The git guard: is this git command line safe to run in a QE sandbox?

``check_git_argv`` judges one git invocation (global options, ``-c`` overrides
and ``-c alias.*`` expansions included); ``check_command_line`` finds every git
invocation inside a shell command line (``sh -c``, ``&&``/``||``/``;``/pipes,
``$(...)``, backticks, ``xargs``, ``env``/``nice``/``timeout`` wrappers,
``find -exec``, ``GIT_DIR=...`` prefixes, absolute paths to git...).

The guard's public face; the work is split by responsibility:
``guard_verdict`` (the verdict, config patterns), ``guard_policy`` (tables),
``guard_rules`` (argument-dependent subcommands), ``guard_judge`` (one git
invocation), ``guard_lexer``/``guard_shell`` (shell command lines). The
sandbox shim (``guard_shim``) imports ``guard_judge`` directly, never this
module, so its Python path does not load the shell reader or ``re``.

The policy: reading is allowed; anything that writes repository state (refs,
HEAD, index, config, hooks, stash, object store), discards work, talks to
remotes, points git at another repository or swaps out the guard's hooks is
blocked. Dynamic parts a static reader cannot resolve (``git $CMD``) are
treated as the worst case.
"""

from __future__ import annotations

from .guard_judge import check_git_argv
from .guard_rules import _KNOWN_SUBCOMMANDS, _is_git_word
from .guard_shell import scan
from .guard_verdict import CONFIG_HINT, DYN, INTERNAL_ENV, GuardVerdict, _patterns

if False:  # typing only
    from collections.abc import Sequence
    from typing import Any

__all__ = [
    "CONFIG_HINT",
    "DYN",
    "INTERNAL_ENV",
    "_KNOWN_SUBCOMMANDS",
    "GuardVerdict",
    "_is_git_word",
    "_patterns",
    "check_command_line",
    "check_git_argv",
    "command_is_blocked",
]


def check_command_line(cmd: str | Sequence[str], cfg: Any = None) -> list[GuardVerdict]:
    """Every git invocation found in ``cmd`` (a shell string, or an argv list of
    one command), each with its verdict. Empty when no git runs."""
    return scan(cmd, cfg, check_git_argv)


def command_is_blocked(cmd: str | Sequence[str], cfg: Any = None) -> GuardVerdict | None:
    """The first blocking verdict in ``cmd``, or None."""
    for v in check_command_line(cmd, cfg):
        if not v.allowed:
            return v
    return None
