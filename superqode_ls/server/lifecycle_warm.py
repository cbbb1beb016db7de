"""The server's warm-up, in the order the first file opened needs it.

bandit's warm process starts first, at ``initialize``: it loads while the
client finishes starting and the first file opens (a file analysed before
it is up gets a cold bandit: waiting for the warm one delayed ruff's
findings and brought bandit's no sooner). It runs at the priority of the
automatic runs it serves (live_runtime.py). The import of the engine and
every role comes last, once the automatic runs the client's first files
asked for (and a Run QE already under way) are done: on two cores, that import (seconds under load), the
warm bandit's start and a cold bandit loading at the same time made the
first file's security findings take seconds more.
"""

from __future__ import annotations

import asyncio
import dataclasses
import logging
from collections.abc import Awaitable, Callable

from ..engine import roles
from ..engine.runtime import start_warm_analyzer
from .live_runtime import live_runtime
from .server import SuperQodeServer

log = logging.getLogger(__name__)

# How long the role imports wait for the first automatic runs to end; past
# it they go ahead (a user typing without pause keeps runs in flight).
QUIET_WAIT = 10.0


class WarmUp:
    """The one owner of the warm-up's tasks (made at ``initialize``)."""

    def __init__(self, ls: SuperQodeServer):
        self.ls = ls
        self.bandit: asyncio.Task | None = None  # the warm bandit's start
        self.imports: asyncio.Task | None = None

    def start_bandit(self) -> None:
        """Start the warm bandit in a worker thread (its start blocks while
        bandit loads); runs started once it is up use it."""
        if self.bandit is None and not self.ls.shutting_down:
            self.bandit = self.ls.background(self._start_bandit(), "warm bandit")

    async def _start_bandit(self) -> None:
        warm = await asyncio.to_thread(start_warm_analyzer, live_runtime(self.ls.runtime))
        if warm is not None:  # the runtime's one owner is the server (ls)
            self.ls.runtime = dataclasses.replace(self.ls.runtime, analyzer=warm)

    def start_imports(self, quiet: Callable[[float], Awaitable[None]]) -> None:
        """Import the engine and the roles in a worker thread (``initialize``
        stays fast and the first Run QE does not stall the event loop on
        imports), after the warm bandit is up, ``quiet`` (the first
        automatic runs done, at most QUIET_WAIT s) returned and no other run
        is under way."""
        if self.imports is None:
            self.imports = self.ls.background(self._imports(quiet), "prewarm")

    async def _imports(self, quiet: Callable[[float], Awaitable[None]]) -> None:
        if self.bandit is not None:
            await asyncio.wait([self.bandit])
        while not self.ls.shutting_down:
            await quiet(QUIET_WAIT)
            # A Run QE already under way imports its own roles; the import of
            # all of them beside it took CPU from its tools (below us): it
            # waits for the run's end.
            busy = [r.task for r in self.ls.runs.active() if r.task is not None and not r.task.done()]
            if not busy:
                break
            await asyncio.wait(busy)
        if not self.ls.shutting_down:
            await asyncio.to_thread(roles.prewarm)


def warm_of(ls: SuperQodeServer) -> WarmUp:
    """The server's one WarmUp, made at its first use."""
    warm = getattr(ls, "warm", None)
    if warm is None:
        warm = ls.warm = WarmUp(ls)
    return warm
