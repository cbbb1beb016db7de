"""The warm bandit (see ``_bandit_server.py``): started once by a front end,
used by security_tester for one bandit run at a time.

The owner is the front end that makes a :class:`StartingBandit` (the
language server at ``initialize``, ``superqe run`` once its session starts):
it puts it in its ``Runtime`` (``analyzer``), which every run it starts
carries down to the role, and stops it at exit. Whenever it cannot serve
(still starting and another run already waits for it, did not come up,
busy with another run, gone, a different bandit than SuperQode's), the
caller runs the ``bandit`` command as before.

Where the namespace sandbox is available the server itself starts inside one
of its own, for its whole life (``_sandboxed``): the whole file system
read-only (nothing of a run is written: bandit's report comes back on the
pipe), the default secrets masked, no network, its own pid namespace; each
request's child applies its session's Landlock rules below that, which
narrow what it reads to that session's tree, the interpreter's standard
library and the folders bandit was loaded from. A request with no session
behind it, or where there is no Landlock, is not served (fail closed): the
``bandit`` command runs it, behind its own layers. A run whose session hides
more than the server's sandbox does (``sandbox.hide``), or whose folder it
cannot see, is not served: the command runs instead, in the session's own
sandbox.
"""

from __future__ import annotations

import asyncio
import io
import json
import logging
import os
import select
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Callable
from pathlib import Path

from ...config import defaults as default_config
from ...runtime import MadeInThread, Runtime
from ...workspace import landlock, namespaces
from ...workspace.namespaces import SPEC_ENV
from ...workspace.proc import BARRIER_ENV, ProcResult, spawn_tool_blocking
from . import _bandit_server

log = logging.getLogger(__name__)

SERVER = Path(_bandit_server.__file__)


class WarmBandit:
    """One started server (``start``; its front end reaches it through a
    ``StartingBandit``): one run at a time, None for what it cannot serve."""

    def __init__(self, python: str, runtime: Runtime):
        self.python = python
        self.runtime = runtime  # its priority and CPUs: the runs' tools' own
        self._proc: subprocess.Popen | None = None
        self._in: io.TextIOWrapper | None = None  # the protocol over the server's pipes
        self._out: io.TextIOWrapper | None = None
        self._hidden: set[str] | None = None  # what its sandbox masks (None: no sandbox)
        self._ready = threading.Event()
        self._busy = asyncio.Lock()
        self._abi = landlock.abi()

    def start(self) -> None:
        """Blocking (imports take a few tenths of a second): call it off the
        event loop."""
        # From a spawner thread at the tools' nice: what the launcher forks
        # (the supervisor, the server) inherits it.
        self.launch(spawn_tool_blocking)
        self.await_ready()

    def launch(self, spawn: Callable[..., subprocess.Popen]) -> int:
        """Start the server's process with ``spawn`` (``spawn_tool_blocking``,
        or ``spawn_tool`` from a thread that may take the tools' nice and
        CPUs); returns the descriptor its ready line comes on
        (:meth:`await_ready` reads it)."""
        cmd, env, self._hidden = _sandboxed([self.python, "-I", str(SERVER)])
        proc = spawn(cmd, "/", env, stdin=subprocess.PIPE, stderr=subprocess.DEVNULL,
                     runtime=self.runtime)
        self._proc = proc
        self._in = io.TextIOWrapper(proc.stdin, encoding="utf-8", line_buffering=True)
        self._out = io.TextIOWrapper(proc.stdout, encoding="utf-8")
        return proc.stdout.fileno()

    def await_ready(self) -> bool:
        """Blocking: the server's first line; whether it serves."""
        line = self._out.readline() if self._out is not None else ""
        if line.strip() == '{"ready": true}':
            self._ready.set()
            return True
        # (it could not say what its children may read: it serves nothing)
        log.warning("warm bandit not started: %s", line.strip() or "it ended")
        self.stop()
        return False

    @property
    def masks(self) -> set[str] | None:
        """The real paths its sandbox masks (None: it has no namespace sandbox)."""
        return self._hidden

    def pid(self) -> int | None:
        return self._proc.pid if self._proc is not None else None

    def hand_over(self, pidfd: int) -> None:
        """In a forked child of the process that started the server (the warm
        helper): the server is this process's now, though not its child (its
        parent reaps it). ``pidfd`` (the server's, inherited) says when it
        ends, which ``poll`` cannot say of another's child."""
        if self._proc is not None:
            self._proc = _NotMyChild(self._proc, pidfd)

    def release(self) -> None:
        """In the process that started it, once a forked child took it over
        (:meth:`hand_over`): drop this side's pipes, nothing else. The
        server ends when the child closes its own (or stops it)."""
        self._close_pipes()
        self._in = self._out = None
        self._ready.clear()
        self._proc = None

    def _close_pipes(self) -> None:
        for stream in (self._in, self._out):
            if stream is not None:
                try:
                    stream.close()
                except OSError:
                    pass

    def serves(self, tool: str) -> bool:
        """Whether ``tool`` is the bandit this server runs (the same environment)."""
        alive = self._proc is not None and self._proc.poll() is None
        return (alive and self._ready.is_set() and not self._busy.locked()
                and Path(tool).parent == Path(self.python).parent)

    async def run(self, argv: list[str], cwd: Path, env: dict[str, str],
                  timeout: float | None) -> ProcResult | None:
        """bandit's result for ``bandit ARGV`` run in ``cwd``, or None when it
        cannot serve (the caller then starts the command)."""
        if self._busy.locked():
            return None
        async with self._busy:
            proc = self._proc
            if proc is None or proc.poll() is not None or not self._ready.is_set():
                return None
            allow = json.loads(env[BARRIER_ENV]) if BARRIER_ENV in env else None
            if not allow or self._abi is None:
                # No session behind the run (nothing to confine it to), or no
                # Landlock to hold its child: the command runs it, behind
                # whatever layers its environment asks for (fail closed).
                return None
            if not self._covers(env, cwd):
                return None  # the command, in the session's own sandbox, serves it
            req = {"argv": argv, "cwd": str(cwd), "env": env, "allow": allow, "abi": self._abi,
                   "timeout": timeout}
            t0 = time.monotonic()
            try:
                reply = await asyncio.to_thread(self._exchange, req, timeout)
            except (OSError, ValueError) as e:
                log.warning("warm bandit failed (%s); bandit runs as a command", e)
                self.stop()
                return None
            if reply is None:
                return ProcResult(-9, "", "bandit ran out of time", time.monotonic() - t0,
                                  timed_out=True)
            # A barrier that could not be applied ran nothing: bandit "fails"
            # with the barrier's one line, as behind the supervisor.
            rc = (landlock.EXIT_BARRIER_FAILED if reply["rc"] == _bandit_server.BARRIER_FAILED
                  else reply["rc"])
            return ProcResult(rc, reply["out"], reply["err"], time.monotonic() - t0)

    def _covers(self, env: dict[str, str], cwd: Path) -> bool:
        """Whether the server's sandbox hides all the session's does, and
        shows the session's sandbox (not under one of its masks)."""
        if self._hidden is None:
            return True  # no namespace sandbox here: Landlock only, as sessions
        try:
            # No spec: not a session's run, which the command runs with no mask.
            want = json.loads(env[SPEC_ENV]).get("hide", []) if SPEC_ENV in env else []
        except (ValueError, AttributeError):
            return False
        if not isinstance(want, list) or not set(namespaces.masked(want)) <= self._hidden:
            return False
        where = os.path.realpath(cwd)
        return not any(where == m or where.startswith(m + "/") for m in self._hidden)

    def _exchange(self, req: dict, timeout: float | None) -> dict | None:
        self._in.write(json.dumps(req) + "\n")
        # The server kills the run's child on its timeout (only it knows
        # the child's pid, in its pid namespace); this one ends a server
        # that did not answer well after it.
        timer = None
        if timeout is not None:
            timer = threading.Timer(max(0.0, timeout) + _GRACE_S, self.stop)
            timer.daemon = True
            timer.start()
        try:
            line = self._out.readline()
        finally:
            if timer is not None:
                timer.cancel()
        if not line:
            raise OSError("the warm bandit ended")
        reply = json.loads(line)
        if reply["rc"] in (-signal.SIGKILL, 128 + signal.SIGKILL):
            return None
        return reply

    def stop(self) -> None:
        proc, self._proc = self._proc, None
        self._ready.clear()
        if proc is None:
            return
        try:
            os.killpg(proc.pid, signal.SIGKILL)
        except OSError:
            pass
        try:
            proc.wait(timeout=5)
        except subprocess.TimeoutExpired:
            pass
        self._close_pipes()


_GRACE_S = 10.0


class _NotMyChild:
    """The parts of a ``Popen`` a :class:`WarmBandit` uses, for a server whose
    parent is another process: its end is read from a pidfd (``Popen.poll``
    would take "not my child" for "ended")."""

    def __init__(self, proc: subprocess.Popen, pidfd: int):
        self._popen = proc  # kept: its pipes, and no reaping from here
        self.pid, self.stdin, self.stdout, self._pidfd = proc.pid, proc.stdin, proc.stdout, pidfd

    def poll(self) -> int | None:
        return None if not _readable(self._pidfd, 0) else -signal.SIGKILL

    def wait(self, timeout: float | None = None) -> int:
        if not _readable(self._pidfd, timeout):
            raise subprocess.TimeoutExpired("warm bandit", timeout or 0)
        return -signal.SIGKILL


def _readable(fd: int, timeout: float | None) -> bool:
    try:
        return bool(select.select([fd], [], [], timeout)[0])
    except (OSError, ValueError):
        return True  # no pidfd to ask: taken as ended (it serves nothing more)


def _sandboxed(cmd: list[str]) -> tuple[list[str], dict[str, str] | None, set[str] | None]:
    """(the command line, its environment, the real paths masked) for the
    server: inside a namespace sandbox of its own
    where there is one; else as it is (each request's child applies Landlock
    itself: the "Landlock only" level of the sessions)."""
    if not namespaces.active():
        return cmd, None, None
    # Nothing writable: bandit prints its report on the pipe, and each
    # child's Landlock rules narrow its reads to its session's tree.
    env = namespaces.scrub_env(os.environ)
    env[BARRIER_ENV] = "[]"
    env[SPEC_ENV] = namespaces.spec(default_config(), env)  # default masks, no network
    hidden = set(namespaces.masked(json.loads(env[SPEC_ENV])["hide"]))
    return cmd, env, hidden


def server_masks() -> set[str] | None:
    """What a server started now, from this environment, would mask (None:
    no namespace sandbox): a server started elsewhere serves as this
    process's own only where it is the same."""
    return _sandboxed([])[2]


def start(runtime: Runtime, python: str | None = None) -> WarmBandit | None:
    """A started warm bandit whose analyses run as ``runtime`` says (the
    caller owns it: it stops it); None when bandit is missing or did not
    come up. Blocking: call it off the event loop."""
    python = python or sys.executable
    if not (Path(python).parent / "bandit").exists():
        return None
    warm = WarmBandit(python, runtime)
    try:
        warm.start()
    except OSError as e:
        log.info("warm bandit not started: %s", e)
        return None
    if not warm._ready.is_set():
        return None
    return warm


# How long at most a run waits for a warm bandit still starting (bandit's
# imports: a few tenths of a second, seconds under load) before the command
# runs it: a start that hangs must not hold the security role.
STARTING_WAIT = 15.0


class StartingBandit(MadeInThread[WarmBandit]):
    """The warm bandit from the moment its front end asks for it (the one
    class both front ends use: the language server begins it at
    ``initialize``, ``superqe run`` when its session starts, beside the
    sandbox's making). The policy, the same for both (``MadeInThread``'s,
    with two refusals of its own):

    - before :meth:`begin`, or once stopped, it serves nothing (the command);
    - while it starts, ONE run waits for it: the one it would serve. The
      server serves one run at a time, so a second waiter (bandit's shards,
      two files opened together) would be sent to the command anyway once
      the first holds it, only later: it runs the command at once instead;
    - a run waits at most ``STARTING_WAIT`` s, or its own time left if less;
      then the command runs it (the start goes on: later runs use it);
    - only the bandit beside its interpreter is served (:meth:`serves`);
    - a run with no session behind it is refused before any wait (the
      server would refuse it: nothing to confine it to) (:meth:`run`);
    - a start that failed (no bandit, no "ready", an exception), or a
      server that died (mid-run or between runs), leaves every later run to
      the command, which is the sandboxed path: fail closed. A dead server
      is not restarted (what killed it would likely kill the next).

    ``starter`` makes the server (``start``; tests give their own)."""

    def __init__(self, runtime: Runtime, python: str | None = None,
                 starter: Callable[[Runtime, str], WarmBandit | None] | None = None):
        super().__init__(STARTING_WAIT, "superqode-warm-bandit")
        self.python = python or sys.executable
        self._runtime = runtime  # the runs' priority and CPUs (WarmBandit)
        self._starter = starter or start

    def _make(self) -> WarmBandit | None:
        return self._starter(self._runtime, self.python)

    async def started(self) -> bool:
        """Once the start is over: whether it came up (shielded: a front end
        cancelling its await at exit must not fail the start's thread)."""
        return await self.made()

    def serves(self, tool: str) -> bool:
        if Path(tool).parent != Path(self.python).parent:
            return False  # a different bandit than SuperQode's
        return super().serves(tool)

    async def run(self, argv: list[str], cwd: Path, env: dict[str, str],
                  timeout: float | None) -> ProcResult | None:
        """bandit's result, or None: the caller runs the command."""
        if not env.get(BARRIER_ENV):
            # No session behind the run: the server would refuse it, so it
            # does not take the one wait either (fail closed).
            return None
        return await super().run(argv, cwd, env, timeout)


def starting(runtime: Runtime, python: str | None = None) -> StartingBandit | None:
    """A warm bandit to :meth:`~StartingBandit.begin`, for the interpreter
    SuperQode runs in; None when no bandit is installed beside it, or where
    there is no Landlock (``guard only``: it would serve no run, so nothing
    is started for nothing)."""
    python = python or sys.executable
    if not (Path(python).parent / "bandit").exists() or landlock.abi() is None:
        return None
    return StartingBandit(runtime, python)
