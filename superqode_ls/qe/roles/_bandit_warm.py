"""The language server's warm bandit (see ``_bandit_server.py``): started
once by the server, used by security_tester for one bandit run at a time.

The owner is the front end that calls :func:`start` (the language server, at
its prewarm): it puts the handle in its ``Runtime`` (``analyzer``), which
every run it starts carries down to the role, and stops it at shutdown. The
CLI never starts one: a single run would pay the start either way. Whenever
it cannot serve (none in the runtime, busy with another run, gone, a
different bandit than SuperQode's), the caller runs the ``bandit`` command
as before.
"""

from __future__ import annotations

import asyncio
import json
import logging
import os
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path

from ...runtime import Runtime
from ...workspace import landlock
from ...workspace.proc import BARRIER_ENV, ProcResult, lower_priority
from . import _bandit_server

log = logging.getLogger(__name__)

SERVER = Path(_bandit_server.__file__)


class WarmBandit:
    def __init__(self, python: str, runtime: Runtime):
        self.python = python
        self.runtime = runtime  # its priority and CPUs: the runs' tools' own
        self._proc: subprocess.Popen | None = None
        self._ready = threading.Event()
        self._busy = asyncio.Lock()
        self._abi = landlock.abi()

    def start(self) -> None:
        """Blocking (imports take a few tenths of a second): call it off the
        event loop."""
        proc = subprocess.Popen([self.python, "-I", str(SERVER)], stdin=subprocess.PIPE,
                                stdout=subprocess.PIPE, stderr=subprocess.DEVNULL,
                                start_new_session=True, text=True, bufsize=1)
        lower_priority(proc.pid, self.runtime)
        self._proc = proc
        line = proc.stdout.readline() if proc.stdout else ""
        if line.strip() == '{"ready": true}':
            self._ready.set()
        else:
            self.stop()

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
            if allow is not None and self._abi is None:
                return None  # a barrier asked for that this kernel lacks: the supervisor decides
            req = {"argv": argv, "cwd": str(cwd), "env": env, "allow": allow, "abi": self._abi}
            t0 = time.monotonic()
            try:
                reply = await asyncio.to_thread(self._exchange, proc, req, timeout)
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

    @staticmethod
    def _exchange(proc: subprocess.Popen, req: dict, timeout: float | None) -> dict | None:
        assert proc.stdin is not None and proc.stdout is not None
        proc.stdin.write(json.dumps(req) + "\n")
        proc.stdin.flush()
        pid = json.loads(proc.stdout.readline())["pid"]
        timer = None
        if timeout is not None:
            timer = threading.Timer(max(0.0, timeout), _kill_group, (pid,))
            timer.daemon = True
            timer.start()
        try:
            line = proc.stdout.readline()
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
        for stream in (proc.stdin, proc.stdout):
            if stream is not None:
                try:
                    stream.close()
                except OSError:
                    pass


def _kill_group(pid: int) -> None:
    try:
        os.killpg(pid, signal.SIGKILL)
    except OSError:
        pass


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
