"""The warm bandit from the moment a front end asks for it
(qe/roles/_bandit_warm.py ``StartingBandit``, the one class the language
server and ``superqe run`` use): while it starts one run waits for it and is
served, any other runs the command; a start that failed, a server that died
mid-run and a run with no session behind it all leave the run to the
command (fail closed)."""

from __future__ import annotations

import asyncio
import json
import os
import signal
import sys
import threading
from pathlib import Path

import psutil
import pytest

from superqode_ls.qe.roles import _bandit_warm
from superqode_ls.qe.roles._bandit_warm import StartingBandit
from superqode_ls.runtime import Runtime
from superqode_ls.workspace import landlock
from superqode_ls.workspace.proc import BARRIER_ENV
from superqode_ls.workspace.session import IsolatedSession

BANDIT = str(Path(sys.executable).parent / "bandit")
SESSION = {BARRIER_ENV: json.dumps(["/nowhere"])}  # a session's run names its folders


class _Fake:
    """A started warm bandit: serves every run, records it."""

    def __init__(self):
        self.runs: list[tuple[list[str], float | None]] = []
        self.stopped = 0

    def serves(self, tool: str) -> bool:
        return True

    async def run(self, argv, cwd, env, timeout):
        self.runs.append((argv, timeout))
        return "served"

    def stop(self) -> None:
        self.stopped += 1


def _gated(made) -> tuple[StartingBandit, threading.Event]:
    """A StartingBandit whose start gives ``made`` once the event is set."""
    release = threading.Event()

    def starter(runtime, python):
        assert release.wait(30)
        return made

    return StartingBandit(Runtime.foreground(), sys.executable, starter=starter), release


def test_while_it_starts_one_run_waits_and_is_served_the_others_run_the_command():
    fake = _Fake()
    warm, release = _gated(fake)
    assert not warm.serves(BANDIT)  # not begun (no session yet): the command
    warm.begin()

    async def scenario():
        assert warm.serves(BANDIT)
        first = asyncio.ensure_future(warm.run(["-r", "."], Path("."), SESSION, 60))
        await asyncio.sleep(0)  # the first run has asked: it waits for the start
        assert not first.done()
        assert not warm.serves(BANDIT)  # a second (bandit's shards) runs the command...
        assert await warm.run(["-r", "b"], Path("."), SESSION, 60) is None  # ...at once
        assert not warm.serves("/elsewhere/bin/bandit")  # not SuperQode's bandit
        release.set()
        return await first

    assert asyncio.run(scenario()) == "served"
    (argv, left), = fake.runs
    assert argv == ["-r", "."] and left is not None and left <= 60  # the wait came off its time
    assert warm.serves(BANDIT)  # up: the next runs use it
    assert not warm.serves("/elsewhere/bin/bandit")  # the server would serve it: not ours
    warm.stop()
    assert fake.stopped == 1 and not warm.serves(BANDIT)


def test_a_start_that_hangs_holds_a_run_no_longer_than_its_time():
    warm, release = _gated(_Fake())
    warm.begin()
    try:
        # A run with 0.05 s left waits at most that, then runs the command.
        assert asyncio.run(warm.run(["-r", "."], Path("."), SESSION, 0.05)) is None
        assert warm.serves(BANDIT)  # the start goes on; one run may wait again
    finally:
        warm.stop()
        release.set()
        warm._thread.join(30)


@pytest.mark.parametrize("outcome", ["none", "raises", "no bandit"])
def test_a_start_that_failed_leaves_every_run_to_the_command(outcome, tmp_path):
    def starter(runtime, python):
        if outcome == "raises":
            raise OSError("the launcher failed")
        if outcome == "none":  # the server did not say it was ready
            return None
        return _bandit_warm.start(runtime, python)  # no bandit beside it: None

    python = sys.executable if outcome == "raises" else str(tmp_path / "bin" / "python")
    if outcome == "no bandit":
        # No bandit beside the interpreter: nothing to start at all.
        assert _bandit_warm.starting(Runtime.foreground(), python) is None
    warm = StartingBandit(Runtime.foreground(), python, starter=starter)
    warm.begin()
    tool = str(Path(python).parent / "bandit")
    assert asyncio.run(warm.started()) is False
    assert not warm.serves(tool)
    assert asyncio.run(warm.run(["-r", "."], Path("."), SESSION, 60)) is None
    warm.stop()


def test_a_run_with_no_session_is_refused_without_waiting():
    fake = _Fake()
    warm, release = _gated(fake)
    warm.begin()
    try:
        # Still starting: refused at once (it would not be served), no wait.
        assert asyncio.run(warm.run(["-r", "."], Path("."), {}, None)) is None
        release.set()
        assert asyncio.run(warm.started()) is True
        assert asyncio.run(warm.run(["-r", "."], Path("."), {"PATH": "/bin"}, None)) is None
        assert fake.runs == []  # nothing reached the server
    finally:
        release.set()
        warm.stop()


def test_a_run_that_ends_while_it_starts_does_not_wait_and_leaves_nothing():
    fake = _Fake()
    warm, release = _gated(fake)
    warm.begin()
    warm.stop()  # returns at once: an early error's line is not held back
    assert fake.stopped == 0
    release.set()
    warm._thread.join(30)
    assert fake.stopped == 1  # what came up after the run ended is stopped
    warm.begin()  # never again once stopped
    assert not warm._thread.is_alive()
    assert asyncio.run(warm.run(["-r", "."], Path("."), SESSION, None)) is None


@pytest.mark.skipif(not Path(BANDIT).exists(), reason="bandit is not installed beside this Python")
@pytest.mark.skipif(landlock.abi() is None, reason="without Landlock the warm bandit serves no run")
def test_a_server_that_dies_mid_run_leaves_the_run_and_the_next_to_the_command(make_repo):
    repo = make_repo({"app.py": "x = 1\n"})
    warm = _bandit_warm.starting(Runtime.background())
    assert warm is not None
    warm.begin()
    with IsolatedSession.create_sync(repo) as s:
        # bandit's read of a FIFO blocks until it has a writer: a run in flight.
        fifo = s.sandbox / "slow.py"
        os.mkfifo(fifo)

        async def scenario():
            assert await warm.started()
            server = warm.current()
            asking = asyncio.ensure_future(warm.run(["-f", "json", "-q", "slow.py"], s.sandbox,
                                                    s.env(), 120))
            # Returns once the run's child opened the FIFO: the run is mid-way.
            w = await asyncio.to_thread(os.open, fifo, os.O_WRONLY)
            top = psutil.Process(server._proc.pid)
            procs = [top, *top.children(recursive=True)]
            os.killpg(server._proc.pid, signal.SIGKILL)  # the server dies
            return await asking, procs, w

        res, procs, w = asyncio.run(scenario())
        try:
            assert res is None  # the caller runs the command
            assert not warm.serves(BANDIT)
            assert asyncio.run(warm.run(["-f", "json", "app.py"], s.sandbox, s.env(), 60)) is None
            # Nothing of it runs on: the run's child (in its own process
            # group, still blocked on the FIFO) died with the server.
            _, alive = psutil.wait_procs(procs, timeout=30)
            assert not alive, alive
        finally:
            os.close(w)
    warm.stop()


def test_a_front_end_exiting_while_it_starts_stops_it_cleanly():
    """The language server cancels its task awaiting ``started()`` at exit,
    then stops the analyzer: neither may raise, and the server that comes up
    afterwards is stopped (a TCP server ended with exit 1 here)."""
    fake = _Fake()
    warm, release = _gated(fake)
    warm.begin()

    async def scenario():
        waiter = asyncio.ensure_future(warm.started())
        await asyncio.sleep(0)
        waiter.cancel()
        with pytest.raises(asyncio.CancelledError):
            await waiter

    asyncio.run(scenario())
    warm.stop()  # while still starting: returns at once
    release.set()
    warm._thread.join(30)
    assert not warm._thread.is_alive() and fake.stopped == 1
    assert not warm.serves(BANDIT)
