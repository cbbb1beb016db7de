"""A QE session's cancel switch and budget: one phase at a time runs under
both. ``cancel`` may come from any thread (a signal handler, the language
server's loop); the phase under way is cancelled on the session's own loop.
"""

from __future__ import annotations

import asyncio
import logging
import threading
from collections.abc import Awaitable

log = logging.getLogger(__name__)


class SessionControl:
    def __init__(self, session_id: str):
        self.session_id = session_id
        self.cancel_requested = False
        self.timed_out = False
        self.abort = threading.Event()  # stops sandbox creation between its steps
        self.loop: asyncio.AbstractEventLoop | None = None  # the loop the session runs on
        self._phase: asyncio.Future | None = None

    @property
    def stopped(self) -> bool:
        """Cancelled or out of time: what is left to do is saving and reverting."""
        return self.cancel_requested or self.timed_out

    def cancel(self) -> None:
        self.cancel_requested = True
        self.abort.set()
        loop = self.loop
        if loop is None or loop.is_closed():
            return
        try:
            running = asyncio.get_running_loop()
        except RuntimeError:
            running = None
        if running is loop:
            self._cancel_phase()
        else:
            loop.call_soon_threadsafe(self._cancel_phase)

    def _cancel_phase(self) -> None:
        if self._phase is not None and not self._phase.done():
            self._phase.cancel()

    async def guarded(self, coro: Awaitable[None], deadline: float, optional: bool = False) -> None:
        """Run one phase under the session budget and the cancel switch.
        ``optional``: a phase whose work only adds to what was found (fix
        verification): out of time it stops, and the session has not timed
        out (its fixes stay "not verified")."""
        loop = asyncio.get_running_loop()
        self._phase = asyncio.ensure_future(coro)
        if self.cancel_requested:
            self._phase.cancel()
        try:
            left = deadline - loop.time()
            done, _ = await asyncio.wait({self._phase}, timeout=max(0.0, left))
            cut = False
            if not done:
                if optional:
                    cut = True
                    log.info("session %s: %s stopped at the budget", self.session_id,
                             "fix verification")
                else:
                    self.timed_out = True
                self._phase.cancel()
            try:
                await self._phase
            except asyncio.CancelledError:
                if not (self.cancel_requested or self.timed_out or cut):
                    raise
        finally:
            self._phase = None
