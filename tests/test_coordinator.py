"""Coordinator: shared quick locks, exclusive deep locks, dead holders, epoch."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import threading

import pytest

from superqode_ls.workspace.coordinator import (
    Coordinator,
    LockRecord,
    SessionBusy,
    holder_alive,
    process_start_time,
)
from superqode_ls.workspace.errors import WorkspaceError
from tests.waiting import file_has, wait_for

HOLDER = """
import sys, time
from pathlib import Path
from superqode_ls.workspace.coordinator import Coordinator
c = Coordinator(Path(sys.argv[1]))
lock = c.acquire(sys.argv[2], sys.argv[3], timeout=10)
print("held", flush=True)
time.sleep(60)  # holds the lock until the test kills it
"""


def _spawn_holder(repo, sid, mode):
    proc = subprocess.Popen(
        [sys.executable, "-c", HOLDER, str(repo), sid, mode],
        stdout=subprocess.PIPE, text=True,
    )
    assert proc.stdout.readline().strip() == "held"
    return proc


def _kill(proc):
    proc.send_signal(signal.SIGKILL)
    proc.wait()


def test_quick_sessions_share_the_lock(make_repo):
    c = Coordinator(make_repo())
    a = c.acquire("qe-a", "quick")
    b = c.acquire("qe-b", "quick")
    assert {h.session_id for h in c.holders()} == {"qe-a", "qe-b"}
    with pytest.raises(SessionBusy) as e:
        c.acquire("qe-deep", "deep")
    assert "\n" not in str(e.value) and "qe-a" in str(e.value)
    c.release(a)
    c.release(b)
    deep = c.acquire("qe-deep", "deep")
    assert [h.session_id for h in c.holders()] == ["qe-deep"]
    with pytest.raises(SessionBusy, match="deep session qe-deep"):
        c.acquire("qe-c", "quick")
    c.release(deep)
    c.release(deep)  # twice is harmless
    assert c.holders() == []


def test_session_context_manager_releases_on_error(make_repo):
    c = Coordinator(make_repo())
    with pytest.raises(RuntimeError):
        with c.session("qe-x", "deep") as lock:
            assert lock.mode == "deep" and lock.pid == os.getpid()
            assert lock.pid_start == pytest.approx(process_start_time(os.getpid()))
            raise RuntimeError("boom")
    assert c.holders() == []


def test_unknown_mode_is_a_one_line_error(make_repo):
    with pytest.raises(WorkspaceError, match="unknown session mode 'slow'"):
        Coordinator(make_repo()).acquire("qe-x", "slow")


def test_acquiring_twice_in_one_process_is_idempotent(make_repo):
    c = Coordinator(make_repo())
    first = c.acquire("qe-a", "deep")
    again = c.acquire("qe-a", "deep")
    assert again.session_id == first.session_id and len(c.holders()) == 1


def test_lock_of_killed_process_is_cleared(make_repo):
    repo = make_repo()
    c = Coordinator(repo)
    proc = _spawn_holder(repo, "qe-dead", "deep")
    try:
        with pytest.raises(SessionBusy, match="qe-dead"):
            c.acquire("qe-mine", "quick")
    finally:
        _kill(proc)
    lock = c.acquire("qe-mine", "quick")
    assert [h.session_id for h in c.holders()] == ["qe-mine"]
    c.release(lock)


def test_clear_dead_reports_what_it_removed(make_repo):
    repo = make_repo()
    c = Coordinator(repo)
    proc = _spawn_holder(repo, "qe-gone", "quick")
    live = c.acquire("qe-live", "quick")
    _kill(proc)
    removed = c.clear_dead()
    assert [r.session_id for r in removed] == ["qe-gone"]
    assert [h.session_id for h in c.holders()] == ["qe-live"]
    assert c.clear_dead() == []
    c.release(live)


def test_reused_pid_is_not_mistaken_for_the_holder(make_repo):
    repo = make_repo()
    c = Coordinator(repo)
    # Our own pid, but a start time from long ago: the pid was reused.
    stale = LockRecord(session_id="qe-old", mode="deep", repo=str(repo), pid=os.getpid(),
                       pid_start=(process_start_time(os.getpid()) or 0) - 3600)
    assert not holder_alive(stale)
    other_host = stale.model_copy(update={"session_id": "qe-remote", "host": "elsewhere",
                                          "mode": "quick"})
    assert holder_alive(other_host)
    c.dir.mkdir(parents=True, exist_ok=True)
    c.state_file.write_text(json.dumps({"epoch": 0, "holders": [stale.model_dump(),
                                                                other_host.model_dump()]}))
    lock = c.acquire("qe-new", "quick")
    assert {h.session_id for h in c.holders()} == {"qe-remote", "qe-new"}
    c.release(lock)


def test_corrupt_state_file_does_not_block(make_repo):
    c = Coordinator(make_repo())
    c.dir.mkdir(parents=True, exist_ok=True)
    c.state_file.write_text("{not json")
    with c.session("qe-a", "deep"):
        assert len(c.holders()) == 1


def test_deep_waits_for_quick_and_is_not_starved(make_repo):
    repo = make_repo()
    c = Coordinator(repo)
    q1 = c.acquire("qe-q1", "quick")
    got: list[LockRecord] = []
    t = threading.Thread(target=lambda: got.append(c.acquire("qe-deep", "deep", timeout=20)))
    t.start()
    wait_for(lambda: file_has(c.state_file, '"qe-deep"'), 20, "the deep session to be registered as a waiter")
    with pytest.raises(SessionBusy, match="deep session qe-deep"):
        c.acquire("qe-q2", "quick")  # writer preference: the deep one goes next
    c.release(q1)
    t.join(20)
    assert got and got[0].mode == "deep"
    assert [h.session_id for h in c.holders()] == ["qe-deep"]
    c.release(got[0])
    assert json.loads(c.state_file.read_text())["waiters"] == []


def test_deep_timeout_removes_its_waiter_entry(make_repo):
    c = Coordinator(make_repo())
    q = c.acquire("qe-q", "quick")
    with pytest.raises(SessionBusy):
        c.acquire("qe-deep", "deep", timeout=0.3)
    assert json.loads(c.state_file.read_text())["waiters"] == []
    c.acquire("qe-q2", "quick")  # no leftover waiter blocks quick sessions
    c.release(q)


def test_epoch_and_staleness(make_repo):
    c = Coordinator(make_repo())
    assert c.epoch() == 0
    lock = c.acquire("qe-a", "quick")
    assert not c.is_result_stale(lock)
    assert c.bump_epoch() == 1
    assert c.is_result_stale(lock)
    later = c.acquire("qe-b", "quick")
    assert later.epoch == 1 and not c.is_result_stale(later)
    # Another process sees the same epoch.
    out = subprocess.run(
        [sys.executable, "-c",
         "import sys; from pathlib import Path; from superqode_ls.workspace.coordinator "
         "import Coordinator; print(Coordinator(Path(sys.argv[1])).bump_epoch())", str(c.repo)],
        capture_output=True, text=True, check=True,
    )
    assert out.stdout.strip() == "2" and c.epoch() == 2


def test_concurrent_bumps_are_not_lost(make_repo):
    c = Coordinator(make_repo())
    threads = [threading.Thread(target=lambda: [c.bump_epoch() for _ in range(25)])
               for _ in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert c.epoch() == 100


def test_locks_are_per_repository(make_repo):
    a, b = Coordinator(make_repo()), Coordinator(make_repo())
    with a.session("qe-a", "deep"), b.session("qe-b", "deep"):
        assert a.dir != b.dir


def test_worktree_mutex_is_exclusive_across_processes_and_reentrant(make_repo):
    repo = make_repo()
    c = Coordinator(repo)
    with c.worktree_mutex(), c.worktree_mutex():  # the same thread may nest
        proc = subprocess.Popen(
            [sys.executable, "-c",
             "import sys; from pathlib import Path\n"
             "from superqode_ls.workspace.coordinator import Coordinator\n"
             "with Coordinator(Path(sys.argv[1])).worktree_mutex(): print('got', flush=True)",
             str(repo)],
            stdout=subprocess.PIPE, text=True,
        )
        try:
            proc.wait(0.5)
        except subprocess.TimeoutExpired:
            pass
        assert proc.poll() is None  # blocked while we hold it
    assert proc.communicate(timeout=20)[0].strip() == "got"
