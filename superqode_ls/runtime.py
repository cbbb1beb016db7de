"""What a front end decides for the processes it runs: one ``Runtime``.

The editor and the terminal want different things from the same engine: the
language server keeps its tools below the editor (a nice value, a CPU kept
free) and asks the user through the editor; ``superqe run`` runs tools as
the user would by hand and asks on the terminal. Each front end makes one
``Runtime`` and hands it down (``QERequest.runtime`` -> ``RoleContext.runtime``
-> ``workspace.proc``); nothing below reads a module global for it, so two
front ends (or two tests) in one process never see each other's choice.

Frozen: a change (the server's asker, installed once the client is up; its
warm analyzer, once started) is a new object that its one owner, the front
end, puts in place of the old (``dataclasses.replace``); a run keeps the
object it was started with.

The bottom layer (stdlib and ``errors`` only): the engine's layers all read it.
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import logging
import os
import threading
import time
from collections.abc import Mapping
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any, Generic, Protocol, TypeVar, runtime_checkable

from .errors import UsageError

log = logging.getLogger(__name__)

# Tools started for the editor run this many nice steps below the server: a
# language server answering requests must not wait for CPU behind them.
BACKGROUND_NICE = 10
NICE_ENV = "SUPERQODE_NICE"  # when set, decides in both front ends (0: no lowering)


@runtime_checkable
class Asker(Protocol):
    """Answers an agent tool's ``ask`` permission (agent/permissions.py)."""

    async def ask(self, tool: str, summary: str) -> bool:
        """True when the user allows ``tool`` to do what ``summary`` says."""
        ...


class WarmAnalyzer(Protocol):
    """An analyzer process kept running between runs (the language server's
    warm bandit, qe/roles/_bandit_warm.py); a run that it cannot serve
    starts the command instead."""

    def serves(self, tool: str) -> bool: ...

    async def run(self, argv: list[str], cwd: Path, env: dict[str, str],
                  timeout: float | None) -> Any: ...  # workspace.proc.ProcResult or None

    def stop(self) -> None: ...


class OneWaiter:
    """While something starts in a thread (``started``), ONE caller waits for
    it (the one it would serve), at most ``limit`` s or the caller's own time
    left; any other is told at once not to wait (it runs the command). The
    wait of ``MadeInThread`` (the warm bandit's start, its handle's making)."""

    def __init__(self, started: concurrent.futures.Future, limit: float):
        self._started = started
        self._limit = limit
        self._waiting = False

    def free(self) -> bool:
        """Whether a caller now would not be turned away (none waits, or it is over)."""
        return self._started.done() or not self._waiting

    async def wait(self, timeout: float | None) -> tuple[bool, float | None]:
        """(whether the start is over, the caller's time left). Shielded: a
        cancelled caller does not cancel the start's own future."""
        if self._started.done():
            return True, timeout
        if self._waiting:
            return False, timeout
        self._waiting = True  # (before the first await: the next caller is turned away)
        t0 = time.monotonic()
        wait = self._limit if timeout is None else max(0.0, min(self._limit, timeout))
        try:
            await asyncio.wait_for(asyncio.shield(asyncio.wrap_future(self._started)), wait)
        except TimeoutError:
            return False, timeout
        finally:
            self._waiting = False
        if timeout is not None:  # the run keeps to the caller's budget
            timeout = max(0.0, timeout - (time.monotonic() - t0))
        return True, timeout


_Made = TypeVar("_Made", bound=WarmAnalyzer)


class MadeInThread(Generic[_Made]):
    """A ``WarmAnalyzer`` standing for the one ``_make`` makes in a thread of
    its own (:meth:`begin`; the making blocks while it imports). The part
    shared by the warm bandit's start (``qe/roles/_bandit_warm.py``
    ``StartingBandit``) and its handle's making (``server/warm_handle.py``
    ``LateAnalyzer``); each adds its own refusals in front of ``serves`` and
    ``run``. The policy:

    - before :meth:`begin`, or once stopped, it serves nothing (the command);
    - while it is made, ONE run waits for it (``OneWaiter``: at most
      ``limit`` s or the run's own time left), any other runs the command;
    - once made it hands every call to what was made; nothing made (None, an
      exception) leaves every run to the command: fail closed;
    - stopped while it is made: its thread stops what comes, nobody uses it."""

    def __init__(self, limit: float, thread_name: str):
        self._thread_name = thread_name
        self._lock = threading.Lock()
        self._closed = False
        self._thread: threading.Thread | None = None
        # What was made, or None: set once by the making thread.
        self._made: concurrent.futures.Future = concurrent.futures.Future()
        self._gate = OneWaiter(self._made, limit)  # one run waits for the making

    def _make(self) -> _Made | None:
        """Blocking, in the thread: the analyzer, or None where there is none."""
        raise NotImplementedError

    def begin(self) -> None:
        """Make it, in a thread of its own; once only, never after :meth:`stop`."""
        with self._lock:
            if self._thread is not None or self._closed:
                return
            self._thread = threading.Thread(target=self._run_make, daemon=True,
                                            name=self._thread_name)
            self._thread.start()

    def _run_make(self) -> None:
        try:
            made = self._make()
        except Exception as e:  # noqa: BLE001 - none made: the command runs, as without one
            log.info("%s: none made: %s", self._thread_name, e)
            made = None
        with self._lock:
            # A cancelled future (nothing should cancel it: awaits are
            # shielded) is a making nobody can take: stopped like a late one.
            late = made if self._closed or self._made.cancelled() else None
            if late is None and not self._made.cancelled():
                self._made.set_result(made)
        if late is not None:
            # Stopped while it was made: nobody will use it. Stopped before
            # anyone hears there is none, so a run told "none" never leaves
            # a server of its own still starting.
            late.stop()
            if not self._made.cancelled():
                self._made.set_result(None)

    def current(self) -> _Made | None:
        """What was made, once made (None before, or when there is none)."""
        done = self._made.done() and not self._made.cancelled()
        return self._made.result() if done else None

    async def made(self) -> bool:
        """Once the making is over: whether something was made. Shielded: the
        awaiting task is cancelled when its front end exits, and an
        unshielded await would cancel the thread's own future with it."""
        return await asyncio.shield(asyncio.wrap_future(self._made)) is not None

    def serves(self, tool: str) -> bool:
        if self._thread is None or self._closed:
            return False
        if not self._made.done():
            return self._gate.free()
        made = self.current()
        return made is not None and made.serves(tool)

    async def run(self, argv: list[str], cwd: Path, env: dict[str, str],
                  timeout: float | None) -> Any:
        """The made analyzer's result, or None: the caller runs the command."""
        if self._thread is None or self._closed:
            return None
        over, timeout = await self._gate.wait(timeout)
        if not over:
            return None  # another run waits, or the making took too long: the command
        made = self.current()
        if made is None or self._closed:
            return None
        return await made.run(argv, cwd, env, timeout)

    def stop(self) -> None:
        """Stop what was made; one still being made is stopped by its thread
        once it comes (a front end shutting down does not wait for it)."""
        with self._lock:
            self._closed = True
            made = self.current()
        if made is not None:
            made.stop()


def nice_from_env(default: int, environ: Mapping[str, str] | None = None) -> int:
    """``SUPERQODE_NICE`` when set, else ``default``; a value that is not a
    whole number is bad input (one line, nothing started)."""
    raw = (os.environ if environ is None else environ).get(NICE_ENV)
    if raw is None:
        return default
    try:
        return int(raw)
    except ValueError:
        raise UsageError(f"{NICE_ENV}={raw!r} is not a whole number") from None


@dataclass(frozen=True)
class Runtime:
    """``nice``: steps below this process for the tools (0 or less: none);
    ``tool_cpus``: the CPUs tools may run on (None: all of ours); ``asker``:
    who answers ``ask`` permissions (None: nobody, so no); ``analyzer``: the
    warm bandit when the front end keeps one (None: the command runs)."""

    nice: int = BACKGROUND_NICE
    tool_cpus: frozenset[int] | None = None
    asker: Asker | None = None
    analyzer: WarmAnalyzer | None = None

    @classmethod
    def background(cls, **kw: Any) -> Runtime:
        """The editor's (and a library caller's) default: tools below us."""
        return cls(nice=nice_from_env(BACKGROUND_NICE), **kw)

    @classmethod
    def foreground(cls, **kw: Any) -> Runtime:
        """The terminal's: tools at the user's own priority. The lowered
        scheduler group loses to every other process on a busy machine
        (bandit took 5-10x as long as bandit alone, 281 s against 50-88 s on
        sqlalchemy), and there is no editor to protect."""
        return cls(nice=nice_from_env(0), **kw)

    def sparing(self, n: int) -> Runtime:
        """This runtime with tools kept off ``n`` of this process's CPUs.

        Nice values decide who gets the CPU over time, not how soon a waking
        process gets it: with every CPU busy running analyzers, each request
        the language server answers waits a scheduler slice or two. A CPU
        kept free of tools makes that wait go away, at the cost of the
        session's throughput (most on a 2-CPU machine). Without a CPU to
        spare (or ``n`` <= 0) tools may use all of them."""
        mine = _own_cpus()
        return replace(self, tool_cpus=frozenset(mine[:-n]) if 0 < n < len(mine) else None)

    def cpu_count(self) -> int:
        """How many CPUs the tools started under this runtime may use at once."""
        if self.tool_cpus is not None:
            return len(self.tool_cpus)
        return len(_own_cpus()) or os.cpu_count() or 1


def _own_cpus() -> list[int]:
    try:
        return sorted(os.sched_getaffinity(0))
    except (OSError, AttributeError):
        return []
