"""The git guard's verdict on a command, as ``superqe guard check`` asks it."""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from ..config import GitGuardConfig
    from ..workspace.guard import GuardVerdict


def check(words: list[str], cfg: GitGuardConfig) -> list[GuardVerdict]:
    """The verdict on each git invocation in ``words``: one argument with
    shell syntax is a whole command line; otherwise an argv, where a leading
    git subcommand or option stands for ``git ...`` (``commit -m x``)."""
    from ..workspace.guard import _KNOWN_SUBCOMMANDS, _is_git_word, check_command_line

    if len(words) == 1 and any(c in words[0] for c in " \t\n;&|`$"):
        return check_command_line(words[0], cfg)  # a whole shell command line
    if not _is_git_word(words[0]) and (words[0] in _KNOWN_SUBCOMMANDS or words[0].startswith("-")):
        words = ["git", *words]
    return check_command_line(words, cfg)
