"""The server's warm-up (lifecycle_warm.py): a run that asks for bandit while
the warm bandit still loads is served by it once it is up, not by a second
bandit loaded beside it (the policy itself: tests/test_warm_bandit_start.py)."""

from __future__ import annotations

import asyncio
import json
import sys
from pathlib import Path
from types import SimpleNamespace

import pytest

from superqode_ls.qe.roles._bandit_warm import StartingBandit
from superqode_ls.runtime import Runtime
from superqode_ls.server.lifecycle_early import begin_warm_bandit
from superqode_ls.server.lifecycle_warm import WarmUp
from superqode_ls.server.warm_handle import LateAnalyzer
from superqode_ls.workspace import landlock
from superqode_ls.workspace.proc import BARRIER_ENV

PLANTED = "import subprocess\n\n\ndef run(cmd):\n    return subprocess.run(cmd, shell=True)\n"
BANDIT = str(Path(sys.executable).parent / "bandit")


class Runs:
    """The server's run registry, as the warm-up reads it: the runs under way."""

    def __init__(self) -> None:
        self.under_way: list[SimpleNamespace] = []
        self.asked = asyncio.Event()

    def active(self) -> list[SimpleNamespace]:
        self.asked.set()
        return list(self.under_way)


class Server:
    """What the warm-up uses of the language server: its runtime (whose one
    owner it is) and its background tasks."""

    def __init__(self) -> None:
        self.runtime = Runtime(nice=0)
        self.shutting_down = False
        self.tasks: list[asyncio.Task] = []
        self.runs = Runs()

    def background(self, coro, name: str) -> asyncio.Task:
        task = asyncio.get_running_loop().create_task(coro, name=name)
        self.tasks.append(task)
        return task


@pytest.mark.skipif(not Path(BANDIT).exists(), reason="bandit is not installed beside this Python")
@pytest.mark.skipif(landlock.abi() is None, reason="without Landlock the warm bandit serves no run")
async def test_a_run_while_the_warm_bandit_loads_is_served_by_it(tmp_path: Path, isolated_home: Path):
    (tmp_path / "planted.py").write_text(PLANTED)
    ls = Server()
    warm_up = WarmUp(ls)  # type: ignore[arg-type]
    warm_up.start_bandit()
    # What stands for the warm bandit is in the runtime at once, its handle
    # (a StartingBandit) made in a thread: initialize does not wait for it.
    late = ls.runtime.analyzer
    assert isinstance(late, LateAnalyzer)
    try:
        # Asked at once, as the first file's run of an editor that opens it
        # with the server's start: the warm bandit is still loading.
        assert late.serves(BANDIT)
        # A session's run (the warm bandit serves no other): its folder allowed.
        env = {"PATH": "/usr/bin:/bin", BARRIER_ENV: json.dumps([str(tmp_path)])}
        res = await late.run(["-f", "json", "-q", "planted.py"], tmp_path, env, 120)
        assert res is not None  # served: no bandit command started beside it
        assert res.returncode == 1 and "B602" in res.stdout, (res.returncode, res.stderr)
        await asyncio.gather(*ls.tasks)
        # Once up, the runtime's analyzer is still the same one, serving.
        starting = late.handle()
        assert isinstance(starting, StartingBandit) and starting.current() is not None
        assert ls.runtime.analyzer is late and late.serves(BANDIT)
    finally:
        await asyncio.gather(*ls.tasks, return_exceptions=True)
        late.stop()


@pytest.mark.skipif(not Path(BANDIT).exists(), reason="bandit is not installed beside this Python")
@pytest.mark.skipif(landlock.abi() is None, reason="without Landlock the warm bandit serves no run")
async def test_a_warm_bandit_begun_at_the_first_line_is_taken_over(tmp_path: Path, isolated_home: Path):
    """superqode-ls begins the warm bandit before its protocol imports
    (lifecycle_early.py); initialize then takes that one over, starts no
    second, and a session's run is served by it."""
    (tmp_path / "planted.py").write_text(PLANTED)
    ls = Server()
    ls.runtime = begin_warm_bandit(ls.runtime)
    late = ls.runtime.analyzer
    assert isinstance(late, LateAnalyzer)
    assert begin_warm_bandit(ls.runtime) is ls.runtime  # one per server
    warm_up = WarmUp(ls)  # type: ignore[arg-type]
    warm_up.start_bandit()
    try:
        assert ls.runtime.analyzer is late and warm_up.bandit is not None
        await asyncio.gather(*ls.tasks)  # the start is awaited through the same task
        starting = late.handle()
        assert isinstance(starting, StartingBandit) and starting.current() is not None
        env = {"PATH": "/usr/bin:/bin", BARRIER_ENV: json.dumps([str(tmp_path)])}
        res = await late.run(["-f", "json", "-q", "planted.py"], tmp_path, env, 120)
        assert res is not None and res.returncode == 1 and "B602" in res.stdout
    finally:
        await asyncio.gather(*ls.tasks, return_exceptions=True)
        late.stop()


async def test_the_role_imports_pause_while_a_file_is_analysed():
    """The import of every role (in a thread) asks before each module
    whether a file run is in flight and waits for it; it stops once the
    server shuts down."""
    from superqode_ls.engine import roles

    ls = Server()
    asked, done = asyncio.Event(), asyncio.Event()

    async def quiet(timeout: float) -> None:  # LiveRunner.quiet: a file run in flight
        asked.set()
        await asyncio.wait_for(done.wait(), timeout)

    between = WarmUp(ls)._between(quiet)  # type: ignore[arg-type]
    waiting = asyncio.ensure_future(asyncio.to_thread(between))
    await asked.wait()
    assert not waiting.done()  # the import waits for the run
    done.set()
    assert await waiting is True
    ls.shutting_down = True
    calls: list[int] = []
    roles.prewarm(lambda: calls.append(1) or between())
    assert calls == [1]  # nothing imported once the server shuts down


async def test_the_role_imports_pause_while_a_run_qe_is_under_way():
    """"Run QE on this file" asked while the roles are imported: the import
    waits before its next module until the run ends (it held the
    interpreter's lock and CPU the run needs; it started later at the
    default level, whose warm bandit comes up later in its sandbox, so the
    editor's first file run there ran beside it)."""
    ls = Server()

    async def quiet(timeout: float) -> None:  # no automatic run in flight
        return None

    run = asyncio.get_running_loop().create_future()
    ls.runs.under_way.append(SimpleNamespace(task=run))
    between = WarmUp(ls)._between(quiet)  # type: ignore[arg-type]
    waiting = asyncio.ensure_future(asyncio.to_thread(between))
    await asyncio.wait_for(ls.runs.asked.wait(), 60)  # (on this loop: it now awaits the run)
    assert not waiting.done()  # the import waits for the run
    run.set_result(None)
    assert await waiting is True
    # No run under way: it goes on at once.
    ls.runs.under_way.clear()
    assert await asyncio.to_thread(between) is True
