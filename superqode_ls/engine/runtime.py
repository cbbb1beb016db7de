"""Process-wide knobs a front end sets once, at its start: the priority and
CPUs of tool processes, the warm analyzer, who answers an agent tool's
permission prompt.

These are module state of the engine today (``workspace.proc``,
``agent.permissions``, the warm bandit); the front ends reach them only here,
so they can become one settings object passed down without touching the
front ends' callers again."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

from ..workspace import proc  # the tools' priority (BACKGROUND_NICE) and CPUs

__all__ = [
    "keep_cpus_free", "proc", "set_editor_asker", "start_warm_analyzer", "stop_warm_analyzer",
    "terminal_asker", "use_asker",
]


def keep_cpus_free(n: int) -> None:
    """Keep sessions' tools off ``n`` CPUs (the editor's and the server's)."""
    proc.keep_cpus_free(max(0, n))


def start_warm_analyzer() -> None:
    """Start the warm bandit a file run in the editor uses (no-op without bandit)."""
    from ..qe.roles import _bandit_warm

    _bandit_warm.start()


def stop_warm_analyzer() -> None:
    from ..qe.roles import _bandit_warm

    _bandit_warm.stop()


def set_editor_asker(asker: Any) -> None:
    """Who answers agent tools set to ``ask`` in this process (the editor)."""
    from ..agent.permissions import set_default_asker

    set_default_asker(asker)


def terminal_asker() -> Any:
    """A prompt on the terminal when there is one (None: piped runs deny)."""
    from ..agent.permissions import TerminalAsker

    return TerminalAsker() if TerminalAsker.available() else None


@contextmanager
def use_asker(asker: Any) -> Iterator[Any]:
    """``asker`` answers permission prompts inside the block."""
    from ..agent.permissions import use_asker as _use

    with _use(asker) as a:
        yield a
