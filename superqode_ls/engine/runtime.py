"""What a front end needs to make its one ``Runtime`` (superqode_ls/runtime.py)
beyond the object itself: who asks on a terminal, and the warm analyzer the
language server keeps between runs.

The front end owns its ``Runtime`` and passes it down with each request;
nothing here keeps state."""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from ..qe.roles._bandit_warm import StartingBandit
    from ..runtime import Asker, Runtime

__all__ = ["terminal_asker", "warm_analyzer"]


def terminal_asker() -> Asker | None:
    """A prompt on the terminal when there is one (None: piped runs deny)."""
    from ..agent.permissions import TerminalAsker

    return TerminalAsker() if TerminalAsker.available() else None


def warm_analyzer(runtime: Runtime) -> StartingBandit | None:
    """The warm bandit, to be begun (``begin()``) when its owner wants it
    started (None without bandit); its owner puts it in its Runtime
    (``analyzer``) and stops it at exit. Its runs go as ``runtime`` says."""
    from ..qe.roles import _bandit_warm

    return _bandit_warm.starting(runtime)
