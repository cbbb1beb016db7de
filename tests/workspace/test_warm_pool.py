"""Warm sandboxes are the default, and reuse is safe: a pool per repository,
a reset proved against the new state, and nothing of the previous session
can write into the next one."""

from __future__ import annotations

import asyncio
import os
import signal
import subprocess
import sys
import threading

import pytest

from superqode_ls.cli import main
from superqode_ls.config import Config
from superqode_ls.workspace import landlock, pool
from superqode_ls.workspace.fingerprint import compare, take_fingerprint
from superqode_ls.workspace.proc import supervise
from superqode_ls.workspace.session import IsolatedSession

from ..conftest import run_git
from ..waiting import WaitTimeout, pid_gone, wait_for
from .helpers import porcelain, tree_state, worktree_paths

FILES = {"app.py": "x = 1\n", "pkg/__init__.py": "", "pkg/core.py": "def f():\n    return 1\n"}


async def test_the_second_session_reuses_the_first_sandbox_by_default(make_repo):
    repo = make_repo(FILES)
    async with await IsolatedSession.create(repo) as first:
        assert not first.reused
        made = first.sandbox.stat().st_ino
        (first.sandbox / "app.py").write_text("scribbled\n")
    assert first.verification.verified
    assert len(pool.slots(repo)) == 1
    (repo / "pkg/core.py").write_text("def f():\n    return 2\n")  # the user moves on
    before = take_fingerprint(repo)
    async with await IsolatedSession.create(repo) as second:
        assert second.reused
        # A new folder (inode) around the same files: see the next test.
        assert second.sandbox.stat().st_ino != made
        assert tree_state(second.sandbox) == tree_state(repo)
        assert porcelain(second.sandbox) == porcelain(repo)
        assert (await second.changes()).empty
    assert second.verification.verified
    assert compare(before, take_fingerprint(repo)) == []


async def test_two_sessions_side_by_side_each_get_a_warm_sandbox_next_time(make_repo):
    repo = make_repo(FILES)
    a = await IsolatedSession.create(repo, mode="quick")
    b = await IsolatedSession.create(repo, mode="quick")
    await a.close()
    await b.close()
    assert len(pool.slots(repo)) == 2
    c = await IsolatedSession.create(repo)
    d = await IsolatedSession.create(repo)
    try:
        assert c.reused and d.reused
        assert tree_state(c.sandbox) == tree_state(repo) == tree_state(d.sandbox)
    finally:
        await c.close()
        await d.close()
    assert len(pool.slots(repo)) == 2  # the pool's bound
    e = await IsolatedSession.create(repo, config=Config.model_validate(
        {"workspace": {"warm_pool": 0}}))
    assert e.reused  # a slot is used, and with warm_pool 0 not refilled
    await e.close()
    assert len(pool.slots(repo)) == 1


def test_superqe_clean_removes_parked_sandboxes_and_their_registrations(make_repo, capsys):
    repo = make_repo(FILES)

    async def one() -> None:
        async with await IsolatedSession.create(repo):
            pass
    asyncio.run(one())
    assert len(pool.slots(repo)) == 1
    assert worktree_paths(repo) == [str(repo)]  # parked, it leaves no trace in the repository
    assert not (repo / ".git" / "worktrees").exists()
    assert main(["clean"]) == 0
    assert "removed 1 warm sandbox" in capsys.readouterr().out
    assert pool.slots(repo) == []
    assert worktree_paths(repo) == [str(repo)]


WRITER = r"""
import os, sys, time
# A straggler of the first session: it scrubbed its environment, left the
# sandbox, and keeps a handle on a folder inside it.
fd = os.open(sys.argv[1], os.O_RDONLY | os.O_DIRECTORY)
os.chdir("/")
print("ready", flush=True)
n = 0
while True:
    n += 1
    try:
        os.close(os.open(f"leak-{n}.txt", os.O_CREAT | os.O_WRONLY, 0o644, dir_fd=fd))
        print("wrote", n, flush=True)
    except OSError as e:
        print("refused", type(e).__name__, flush=True)
    time.sleep(0.02)  # the straggler's pace: it keeps trying, not a wait of the test
"""


@pytest.mark.skipif(landlock.abi() is None, reason="no Landlock on this kernel: the reuse "
                    "rests on the process scan alone, tested in test_fault_injection")
async def test_a_straggler_of_the_previous_session_cannot_write_into_the_next(make_repo):
    repo = make_repo(FILES)
    first = await IsolatedSession.create(repo)
    env = {k: v for k, v in first.env().items() if k != "SUPERQODE_SESSION_ID"}
    cmd = supervise([sys.executable, "-c", WRITER, str(first.sandbox / "pkg")], first.env())
    # `env -i` inside the barrier: the writer carries no session id at all.
    sup = subprocess.Popen(cmd[:cmd.index("--") + 1] + ["env", "-i"] + cmd[cmd.index("--") + 1:],
                           env=env, stdout=subprocess.PIPE, text=True, start_new_session=True)
    writer = None
    try:
        assert sup.stdout is not None
        assert sup.stdout.readline().strip() == "ready"
        # The supervisor killed from outside: its command lives on, orphaned.
        kids = subprocess.run(["pgrep", "-P", str(sup.pid)], capture_output=True, text=True,
                              check=False).stdout.split()
        assert kids, "the writer runs below its supervisor"
        writer = int(kids[0])
        said: list[str] = []  # the writer's lines, one per attempt (it shares the pipe)

        def read() -> None:
            for line in sup.stdout:
                said.append(line)

        threading.Thread(target=read, daemon=True).start()
        os.kill(sup.pid, signal.SIGKILL)
        sup.wait()
        wrote = len(said)
        # Orphaned, it tries again; behind namespaces the supervisor's death
        # ends its whole PID namespace instead, and there is no straggler.
        wait_for(lambda: len(said) > wrote or pid_gone(writer), 30,
                 "the orphaned writer to try again (or be gone with its namespace)")
        await first.close()
        second = await IsolatedSession.create(repo)
        try:
            # Reused at all: the writer's files would have failed the reset's proof.
            assert second.reused
            # The writer keeps trying: two attempts after the reuse (one may
            # have been under way as it happened) were made against it.
            tried = len(said)
            wait_for(lambda: len(said) >= tried + 2 or pid_gone(writer), 30,
                     "the writer to try the reused sandbox")
            leaks = [p.name for p in (second.sandbox / "pkg").iterdir() if p.name.startswith("leak-")]
            assert leaks == []
            assert (await second.changes()).empty
            assert tree_state(second.sandbox) == tree_state(repo)
        finally:
            await second.close()
        assert second.verification.verified
    finally:
        for pid in (writer, sup.pid):
            if pid:
                try:
                    os.kill(pid, signal.SIGKILL)
                except ProcessLookupError:
                    pass
        if writer:
            try:
                wait_for(lambda: pid_gone(writer), 2, "the writer to exit")
            except WaitTimeout:
                pass  # conftest's leftover check names it
    assert run_git(repo, "status", "--porcelain") == ""
