"""The warm bandit's handle while it is still being made.

The handle (``engine.runtime.warm_analyzer``: a ``StartingBandit``) imports
the sandbox and workspace modules, 0.1-0.5 s under load. Made on the event
loop at ``initialize`` it held the answer back by that much, and with it the
client's first ``didOpen``. Made in a worker thread, the runtime still needs
an analyzer at once: a run keeps the runtime it started with, so a file
opened before the handle exists must still be served by the warm bandit.

``LateAnalyzer`` is that analyzer: put in the runtime at ``initialize``,
before any run can start; once made, it hands every call to the handle, whose
policy (``qe/roles/_bandit_warm.py`` ``StartingBandit``) decides. While the
handle is made it keeps the same policy (both are ``runtime.MadeInThread``): ONE run waits for it (the one it
would serve; a second runs the command at once), at most ``MAKE_WAIT`` s or
its own time left; a handle that could not be made (no bandit, no Landlock,
an error) leaves every run to the command, the sandboxed path (fail closed).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Protocol

from ..runtime import MadeInThread, WarmAnalyzer

# How long a run waits for the handle (an import: tenths of a second, a few
# seconds on a loaded machine); then the command runs it. StartingBandit's
# own wait for the start follows, on the time the run has left.
MAKE_WAIT = 15.0


class Handle(WarmAnalyzer, Protocol):
    """A warm analyzer that starts in the background (``StartingBandit``)."""

    async def started(self) -> bool:
        """Once its start is over: whether it came up."""
        ...


class LateAnalyzer(MadeInThread[Handle]):
    """A ``WarmAnalyzer`` whose handle ``make`` returns, made in a thread of
    its own by :meth:`begin` (``make`` also begins it). It adds nothing to
    ``MadeInThread``'s policy: what the handle serves, the handle decides."""

    def __init__(self, make: Callable[[], Handle | None]):
        super().__init__(MAKE_WAIT, "superqode-warm-handle")
        self._make_handle = make

    def _make(self) -> Handle | None:
        return self._make_handle()

    def handle(self) -> Handle | None:
        """The handle once made (None before, or when there is none)."""
        return self.current()
