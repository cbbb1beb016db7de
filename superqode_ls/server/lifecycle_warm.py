"""The server's warm-up, in the order the first file opened needs it.

At ``initialize``, in worker threads: bandit's warm process starts, unless
``superqode-ls`` began it at its first line (lifecycle_early.py) (its
handle is made in a thread too; what stands for it until then,
``warm_handle.LateAnalyzer``, is put in the runtime at once), and the
imports a file run needs (the pipeline, the live roles, the folder watcher;
the sandbox probe) are made. The client then still finishes starting and
opens its first file; those imports on the event loop held the first file's
run 0.5-1 s under load.

A file run started while the warm bandit still loads is served by it once it
is up (``qe/roles/_bandit_warm.py`` ``StartingBandit``, the policy the CLI's
run shares): before, such a run (in Neovim and Emacs, always
the first file's) started a cold bandit, which loaded bandit a second time on
the same CPUs beside the warm one, and the warm one came up a tenth of a
second after the run had looked for it. Only bandit waits: ruff's findings
are published as soon as they are there (the roles run side by side). The
warm bandit runs at the priority of the automatic runs it serves
(live_runtime.py).

The import of the engine and every other role comes last, once the
automatic runs the client's first files asked for (and a Run QE already
under way) are done, and it pauses between modules while a file opened
meanwhile is analysed: on two cores, that import (1.2 s of CPU, seconds
under load) beside the first file's tools made its findings take seconds
more.
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import Awaitable, Callable, Sequence

from ..engine import roles
from .lifecycle_early import begin_warm_bandit
from .server import SuperQodeServer
from .warm_handle import LateAnalyzer

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
        self.first: asyncio.Task | None = None  # the first file run's imports

    def start_bandit(self) -> None:
        """Start the warm bandit: its handle is made and begun in a thread
        (the import it needs, a tenth of a second or more under load, held
        ``initialize``'s answer on the loop); what stands for it in the
        runtime (``warm_handle.LateAnalyzer``) is there at once, so a file
        opened meanwhile is served by it, and a run started meanwhile waits
        for it (``StartingBandit``'s policy)."""
        if self.bandit is not None or self.ls.shutting_down:
            return
        current = self.ls.runtime.analyzer
        if isinstance(current, LateAnalyzer):  # begun at the server's first line (lifecycle_early.py)
            self.bandit = self.ls.background(self._bandit_up(current), "warm bandit")
            return
        if current is not None:
            return
        # In the runtime before the client can open a file (a run keeps the
        # runtime it started with). Its one owner is the server (ls); it
        # stops the analyzer at exit.
        self.ls.runtime = begin_warm_bandit(self.ls.runtime)
        late = self.ls.runtime.analyzer
        assert isinstance(late, LateAnalyzer)
        self.bandit = self.ls.background(self._bandit_up(late), "warm bandit")

    @staticmethod
    async def _bandit_up(late: LateAnalyzer) -> None:
        """Once the warm bandit is up, or will not be (its handle's start)."""
        handle = late.handle() if await late.made() else None
        if handle is not None:
            await handle.started()

    def import_first(self, names: Sequence[str]) -> None:
        """Import what a file run of the roles ``names`` needs, in a worker
        thread (see the module's docstring)."""
        if self.first is None and not self.ls.shutting_down:
            self.first = self.ls.background(self._first(list(names)), "first imports")

    @staticmethod
    async def _first(names: list[str]) -> None:
        log.debug("first imports begin")
        await asyncio.to_thread(roles.prewarm_live, names)
        log.debug("first imports done")

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
            busy = self._runs()
            if not busy:
                break
            await asyncio.wait(busy)
        if not self.ls.shutting_down:
            log.debug("role imports begin")
            await asyncio.to_thread(roles.prewarm, self._between(quiet))
            log.debug("role imports done")

    def _runs(self) -> list[asyncio.Task]:
        """The Run QE tasks under way (on the loop: the registry's owner)."""
        return [r.task for r in self.ls.runs.active() if r.task is not None and not r.task.done()]

    def _between(self, quiet: Callable[[float], Awaitable[None]]) -> Callable[[], bool]:
        """What the import thread calls before each module: a file opened
        meanwhile, or a Run QE asked meanwhile ("Run QE on this file"), has
        its run first (the import is 1.2 s of CPU, on the CPUs the file's
        tools need, and holds the interpreter's lock the run's own threads
        and event loop need); False once the server shuts down.

        The import starts once the warm bandit is up, which takes longer in
        its namespace sandbox than at "Landlock only": the editor's first
        file run, asked a second or two after the server started, could run
        beside the import's rest at the default level only (seen on a loaded
        2-core machine; the first run there was 1.27x the other level's on
        16 cores, the later runs equal)."""
        loop = asyncio.get_running_loop()

        async def until_quiet() -> None:
            await quiet(QUIET_WAIT)
            runs = self._runs()
            if runs:  # at most QUIET_WAIT: a long whole-project run lets it go on, slowly
                await asyncio.wait(runs, timeout=QUIET_WAIT)

        def between() -> bool:
            if self.ls.shutting_down:
                return False
            try:
                done = asyncio.run_coroutine_threadsafe(until_quiet(), loop)
            except RuntimeError:  # the loop is closed: the server is gone
                return False
            # In short waits: a server that ends meanwhile is not held at exit.
            deadline = time.monotonic() + 2 * QUIET_WAIT + 1
            while not self.ls.shutting_down and not loop.is_closed() and time.monotonic() < deadline:
                try:
                    done.result(0.5)
                    break
                except TimeoutError:
                    continue
                except Exception:  # noqa: BLE001 - quiet() failed: go on importing
                    break
            return not self.ls.shutting_down and not loop.is_closed()

        return between


def warm_of(ls: SuperQodeServer) -> WarmUp:
    """The server's one WarmUp, made at its first use."""
    warm = getattr(ls, "warm", None)
    if warm is None:
        warm = ls.warm = WarmUp(ls)
    return warm
