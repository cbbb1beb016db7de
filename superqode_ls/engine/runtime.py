"""What a front end needs to make its one ``Runtime`` (superqode_ls/runtime.py)
beyond the object itself: who asks on a terminal, and the warm analyzer the
language server keeps between runs.

The front end owns its ``Runtime`` and passes it down with each request;
nothing here keeps state."""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    import selectors

    from ..qe.roles._bandit_spare import Spare
    from ..qe.roles._bandit_warm import StartingBandit
    from ..runtime import Asker, Runtime

__all__ = ["adopt_spare_analyzer", "drop_spare_analyzer", "reuse_kept_probe", "spare_analyzer",
           "terminal_asker", "warm_analyzer"]


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


def spare_analyzer(sel: selectors.BaseSelector) -> Spare:
    """The warm helper's holder of a warm bandit started ahead of each run
    (qe/roles/_bandit_spare.py): the helper owns it, on its selector."""
    from ..qe.roles._bandit_spare import Spare

    return Spare(sel)


def adopt_spare_analyzer(runtime: Runtime) -> StartingBandit | None:
    """In a run the warm helper forked: the spare it took, as the run's warm
    analyzer, where it is the one the run would start (else None)."""
    from ..qe.roles import _bandit_spare

    return _bandit_spare.adopt(runtime)


def drop_spare_analyzer() -> None:
    """In a run that uses no warm analyzer: stop the spare it took, if any."""
    from ..qe.roles import _bandit_spare

    _bandit_spare.drop()


def reuse_kept_probe() -> None:
    """In a run the warm helper forked: the helper's probe of the namespace
    sandbox, where the client's environment reads the same variables (else
    the run probes anew, as a new process)."""
    from ..workspace import namespaces

    namespaces.reuse_kept()
