"""The warm bandit's handle made off the event loop (server/warm_handle.py
``LateAnalyzer``): what stands for it in the runtime from ``initialize`` on
keeps StartingBandit's policy while the handle is made: one run waits and is
served by it, any other runs the command at once, a handle that could not be
made or came after the server stopped serves nothing (fail closed)."""

from __future__ import annotations

import asyncio
import json
import sys
import threading
import time

from superqode_ls.qe.roles._bandit_warm import StartingBandit
from superqode_ls.runtime import Runtime
from superqode_ls.server.warm_handle import LateAnalyzer
from superqode_ls.workspace.proc import BARRIER_ENV

SESSION = {BARRIER_ENV: json.dumps(["/nowhere"])}  # a session's run names its folders
BANDIT = "/opt/venv/bin/bandit"


class _Served:
    """A started warm bandit: serves every run, records it."""

    def __init__(self):
        self.runs: list[list[str]] = []
        self.stopped = 0

    def serves(self, tool: str) -> bool:
        return True

    async def run(self, argv, cwd, env, timeout):
        self.runs.append(argv)
        return "served"

    def stop(self) -> None:
        self.stopped += 1


def _late(handle_of) -> tuple[LateAnalyzer, threading.Event]:
    """A LateAnalyzer whose handle ``handle_of()`` gives once the event is set."""
    release = threading.Event()

    def make():
        assert release.wait(30)
        return handle_of()

    return LateAnalyzer(make), release


def _starting(served: _Served) -> StartingBandit:
    """A real StartingBandit (the handle the server makes), begun, whose
    start gives ``served``."""
    starting = StartingBandit(Runtime.foreground(), sys.executable, starter=lambda rt, py: served)
    starting.begin()
    return starting


async def test_a_run_before_the_handle_exists_waits_and_is_served_by_it():
    served = _Served()
    late, release = _late(lambda: _starting(served))
    late.begin()
    tool = f"{sys.executable[:sys.executable.rfind('/')]}/bandit"
    assert late.serves(tool)  # nobody waits yet: the first run will
    first = asyncio.create_task(late.run(["-q", "a.py"], "/", SESSION, 60))
    await asyncio.sleep(0)  # the first run is now waiting for the handle
    assert not late.serves(tool)
    # A second run meanwhile runs the command at once (the warm bandit
    # serves one run at a time; it would not serve this one anyway).
    assert await late.run(["-q", "b.py"], "/", SESSION, 60) is None
    release.set()
    assert await first == "served"
    assert served.runs == [["-q", "a.py"]]
    assert await late.made() and late.serves(tool)
    late.stop()
    assert served.stopped == 1


async def test_a_handle_that_could_not_be_made_leaves_every_run_to_the_command():
    def broken():
        raise OSError("no Landlock here")

    late, release = _late(broken)
    late.begin()
    release.set()
    assert await late.run(["-q", "a.py"], "/", SESSION, 60) is None
    assert not await late.made()
    assert not late.serves(BANDIT)
    none, release = _late(lambda: None)  # no bandit installed
    none.begin()
    release.set()
    assert await none.run(["-q", "a.py"], "/", SESSION, 60) is None


class _SlowToStop(_Served):
    """Its stop takes a while (a server killed and reaped)."""

    def stop(self) -> None:
        time.sleep(0.3)
        super().stop()


async def test_a_handle_made_after_stop_is_stopped_and_serves_nothing():
    """A run told "none" never leaves the late handle still running: it is
    stopped before the run hears (it was told first, then the handle
    stopped, and a loaded CI saw the run's check before the stop)."""
    served = _SlowToStop()
    late, release = _late(lambda: served)
    late.begin()
    waiting = asyncio.create_task(late.run(["-q", "a.py"], "/", SESSION, 60))
    await asyncio.sleep(0)
    late.stop()  # the server exits while the handle is made
    release.set()
    assert await waiting is None
    assert served.runs == [] and served.stopped == 1
    assert not late.serves(BANDIT)


async def test_the_wait_for_the_handle_keeps_to_the_runs_own_time():
    served = _Served()
    late, release = _late(lambda: served)
    late.begin()
    try:
        assert await late.run(["-q", "a.py"], "/", SESSION, 0.05) is None  # the command runs it
        assert served.runs == []
    finally:
        release.set()
        await late.made()
        late.stop()
    assert served.stopped == 1


async def test_not_begun_it_serves_nothing():
    late = LateAnalyzer(lambda: _Served())
    assert not late.serves(BANDIT)
    assert await late.run(["-q", "a.py"], "/", SESSION, 60) is None
