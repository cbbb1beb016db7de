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
handle is made it keeps the same policy: ONE run waits for it (the one it
would serve; a second runs the command at once), at most ``MAKE_WAIT`` s or
its own time left; a handle that could not be made (no bandit, no Landlock,
an error) leaves every run to the command, the sandboxed path (fail closed).
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import logging
import threading
from collections.abc import Callable
from pathlib import Path
from typing import Any, Protocol

from ..runtime import OneWaiter, WarmAnalyzer

log = logging.getLogger(__name__)

# How long a run waits for the handle (an import: tenths of a second, a few
# seconds on a loaded machine); then the command runs it. StartingBandit's
# own wait for the start follows, on the time the run has left.
MAKE_WAIT = 15.0


class Handle(WarmAnalyzer, Protocol):
    """A warm analyzer that starts in the background (``StartingBandit``)."""

    async def started(self) -> bool:
        """Once its start is over: whether it came up."""
        ...


class LateAnalyzer:
    """A ``WarmAnalyzer`` whose handle ``make`` returns, made in a thread of
    its own by :meth:`begin` (``make`` also begins it)."""

    def __init__(self, make: Callable[[], Handle | None]):
        self._make = make
        self._lock = threading.Lock()
        self._closed = False
        self._thread: threading.Thread | None = None
        # The handle, or None: set once by the making thread.
        self._made: concurrent.futures.Future = concurrent.futures.Future()
        self._gate = OneWaiter(self._made, MAKE_WAIT)  # one run waits for the handle

    def begin(self) -> None:
        with self._lock:
            if self._thread is not None or self._closed:
                return
            self._thread = threading.Thread(target=self._run_make, daemon=True,
                                            name="superqode-warm-handle")
            self._thread.start()

    def _run_make(self) -> None:
        try:
            handle = self._make()
        except Exception as e:  # noqa: BLE001 - no handle: the command runs, as without one
            log.info("warm bandit not made: %s", e)
            handle = None
        with self._lock:
            late = handle if self._closed else None
            self._made.set_result(None if late is not None else handle)
        if late is not None:  # stopped while it was made: nobody will use it
            late.stop()

    def handle(self) -> Handle | None:
        """The handle once made (None before, or when there is none)."""
        return self._made.result() if self._made.done() else None

    async def made(self) -> bool:
        """Once the making is over: whether there is a handle. Shielded (a
        cancelled awaiter must not cancel the thread's future)."""
        return await asyncio.shield(asyncio.wrap_future(self._made)) is not None

    def serves(self, tool: str) -> bool:
        if self._thread is None or self._closed:
            return False
        if not self._made.done():
            return self._gate.free()
        handle = self.handle()
        return handle is not None and handle.serves(tool)

    async def run(self, argv: list[str], cwd: Path, env: dict[str, str],
                  timeout: float | None) -> Any:
        """The handle's result, or None: the caller runs the command."""
        if self._thread is None or self._closed:
            return None
        over, timeout = await self._gate.wait(timeout)
        if not over:
            return None  # another run waits, or the making took too long: the command
        handle = self.handle()
        if handle is None or self._closed:
            return None
        return await handle.run(argv, cwd, env, timeout)

    def stop(self) -> None:
        """Stop the handle; one still being made is stopped by its thread."""
        with self._lock:
            self._closed = True
            handle = self.handle()
        if handle is not None:
            handle.stop()
