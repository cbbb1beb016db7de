"""What a front end needs to make its one ``Runtime`` (superqode_ls/runtime.py)
beyond the object itself: who asks on a terminal, and the warm analyzer the
language server keeps between runs.

The front end owns its ``Runtime`` and passes it down with each request;
nothing here keeps state."""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from ..runtime import Asker, Runtime, WarmAnalyzer

__all__ = ["start_warm_analyzer", "terminal_asker"]


def terminal_asker() -> Asker | None:
    """A prompt on the terminal when there is one (None: piped runs deny)."""
    from ..agent.permissions import TerminalAsker

    return TerminalAsker() if TerminalAsker.available() else None


def start_warm_analyzer(runtime: Runtime) -> WarmAnalyzer | None:
    """Start the warm bandit the editor's file runs use (None without bandit);
    its owner puts it in its Runtime (``analyzer``) and stops it at exit."""
    from ..qe.roles import _bandit_warm

    return _bandit_warm.start(runtime)
