"""Watcher: debounced batches, ignore patterns, event kinds, epoch, async API."""

from __future__ import annotations

import asyncio
import os
import queue
import shutil
import time

import pytest

from superqode_ls.workspace.coordinator import Coordinator
from superqode_ls.workspace.watcher import ChangeBatch, FileEvent, Watcher, _coalesce
from tests.waiting import wait_for, wait_for_async

WAIT = 10  # generous upper bound for an event to arrive; never a timing assertion


def _collect(q: queue.Queue[ChangeBatch], want, limit=WAIT):
    """Merge batches until ``want(events)`` holds; return all events seen."""
    seen: list = []
    deadline = limit
    while True:
        try:
            batch = q.get(timeout=deadline)
        except queue.Empty:
            return seen
        seen.extend(batch.events)
        if want(seen):
            return seen


def _kinds(events):
    return {(e.kind, e.path) for e in events}


@pytest.fixture
def watched(make_repo):
    repo = make_repo({"src/app.py": "x = 1\n", "README.md": "hi\n"})
    q: queue.Queue = queue.Queue()
    w = Watcher(repo, q.put, debounce=0.1)
    w.start()
    yield repo, w, q
    w.stop()


def test_created_modified_deleted_moved(watched):
    repo, _w, q = watched
    (repo / "src" / "new.py").write_text("y = 2\n")
    (repo / "src" / "app.py").write_text("x = 3\n")
    (repo / "README.md").unlink()
    events = _collect(q, lambda ev: {("created", "src/new.py"), ("modified", "src/app.py"),
                                     ("deleted", "README.md")} <= _kinds(ev))
    assert {("created", "src/new.py"), ("modified", "src/app.py"),
            ("deleted", "README.md")} <= _kinds(events)
    os.rename(repo / "src" / "new.py", repo / "src" / "moved.py")
    events = _collect(q, lambda ev: any(e.kind == "moved" for e in ev))
    moved = [e for e in events if e.kind == "moved"]
    assert moved and moved[0].path == "src/moved.py" and moved[0].src_path == "src/new.py"


def test_ignored_paths_produce_nothing(watched):
    repo, _w, q = watched
    (repo / "node_modules" / "pkg").mkdir(parents=True)
    (repo / "node_modules" / "pkg" / "index.js").write_text("1")
    (repo / ".superqode").mkdir()
    (repo / ".superqode" / "x.json").write_text("{}")
    (repo / "src" / "__pycache__").mkdir()
    (repo / "src" / "__pycache__" / "app.cpython-311.pyc").write_bytes(b"\0")
    (repo / ".git" / "scratch").write_text("git internals")
    # A marker written last: once it arrives, everything before it has been seen.
    (repo / "marker.txt").write_text("m")
    events = _collect(q, lambda ev: ("created", "marker.txt") in _kinds(ev))
    assert ("created", "marker.txt") in _kinds(events)
    assert [e.path for e in events if e.path != "marker.txt"] == []


def test_ignore_patterns_match_repo_relative_paths(make_repo, tmp_path):
    # The repository lives under a directory called node_modules: only paths
    # inside the repository are matched, so nothing of it is ignored.
    parent = tmp_path / "node_modules"
    parent.mkdir()
    repo = make_repo(name="node_modules/inner")
    w = Watcher(repo, debounce=0.1, bump_epoch=False, extra_ignore=["build/"])
    assert not w.ignored("src/a.py")
    assert w.ignored("node_modules/x/y.js")
    assert w.ignored("build", is_directory=True)
    assert w.ignored("build/out.o")
    assert w.ignored(".git/index")
    assert not w.ignored("docs/build.md")
    assert w.relative(str(repo / "a" / "b.py")) == "a/b.py"
    assert w.relative(str(tmp_path / "outside.py")) is None


def test_burst_is_debounced_into_one_batch_and_bumps_epoch(make_repo):
    repo = make_repo()
    c = Coordinator(repo)
    q: queue.Queue = queue.Queue()
    with Watcher(repo, q.put, debounce=0.5, coordinator=c):
        lock = c.acquire("qe-a", "quick")
        for i in range(20):
            (repo / f"f{i}.txt").write_text(str(i))
        batch = q.get(timeout=WAIT)
    created = {e.path for e in batch.events}
    # Usually one batch; a slow machine may split the burst, never lose files.
    rest = []
    while not q.empty():
        rest.extend(q.get().events)
    assert created | {e.path for e in rest} == {f"f{i}.txt" for i in range(20)}
    assert len(batch.events) == len(created)  # one event per path
    assert batch.epoch is not None and batch.epoch >= 2
    assert c.is_result_stale(lock)
    c.release(lock)


def test_session_started_after_quiet_tree_is_not_stale(make_repo):
    repo = make_repo()
    c = Coordinator(repo)
    q: queue.Queue = queue.Queue()
    with Watcher(repo, q.put, debounce=0.1, coordinator=c):
        lock = c.acquire("qe-a", "quick")
        (repo / "docs").mkdir()
        (repo / "docs" / "a.md").write_text("x")
        _collect(q, lambda ev: ("created", "docs/a.md") in _kinds(ev))
    assert c.is_result_stale(lock)
    fresh = c.acquire("qe-b", "quick")
    assert not c.is_result_stale(fresh)


def test_a_session_started_after_a_save_inside_the_window_is_not_stale(make_repo):
    """A save, then "Run QE" before the watcher's batch is delivered: the
    sandbox has the saved file, so the result is current. The batch's
    delivery used to bump the epoch again and call it stale."""
    repo = make_repo({"app.py": "x = 1\n"})
    c = Coordinator(repo)
    q: queue.Queue = queue.Queue()
    with Watcher(repo, q.put, debounce=1.0, coordinator=c):
        (repo / "app.py").write_text("x = 2\n")
        wait_for(lambda: c.epoch() >= 1, WAIT)
        time.sleep(0.1)  # past the bump gap: every event of the save is counted
        lock = c.acquire("qe-a", "quick")
        batch = q.get(timeout=WAIT)  # delivered after the session began
        assert "app.py" in {e.path for e in batch.events}
        assert not c.is_result_stale(lock)
        (repo / "app.py").write_text("x = 3\n")  # a change after the start
        wait_for(lambda: c.is_result_stale(lock), WAIT)
    c.release(lock)


def test_a_change_right_after_a_bump_still_makes_a_session_stale(make_repo):
    """Bumps are spaced out; an event inside the gap owes one, paid at its
    end, so a session begun between the two events is still told."""
    repo = make_repo()
    c = Coordinator(repo)
    q: queue.Queue = queue.Queue()
    with Watcher(repo, q.put, debounce=5.0, coordinator=c):
        (repo / "a.txt").write_text("a")
        wait_for(lambda: c.epoch() >= 1, WAIT)
        lock = c.acquire("qe-a", "quick")
        (repo / "b.txt").write_text("b")
        wait_for(lambda: c.is_result_stale(lock), WAIT)
        assert q.empty()  # told as the change came, not when the batch was delivered
    c.release(lock)


def test_coalescing_rules():
    c, m, d = (FileEvent(k, "a") for k in ("created", "modified", "deleted"))
    assert _coalesce(None, m) == m
    assert _coalesce(c, m) == c
    assert _coalesce(c, d) is None
    assert _coalesce(m, d) == d
    assert _coalesce(d, c) == FileEvent("modified", "a")


def test_pending_events_are_delivered_on_stop(make_repo):
    repo = make_repo()
    got: list[ChangeBatch] = []
    w = Watcher(repo, got.append, debounce=30, bump_epoch=False).start()
    (repo / "late.txt").write_text("x")
    # Once inotify has reported it, stop long before the debounce ends.
    wait_for(lambda: w._pending, WAIT, "the watcher to hold late.txt")
    w.stop()
    assert any("late.txt" in b.paths for b in got)


def test_deleting_a_directory_tree(watched):
    repo, _w, q = watched
    shutil.rmtree(repo / "src")
    events = _collect(q, lambda ev: ("deleted", "src") in _kinds(ev))
    assert ("deleted", "src") in _kinds(events)


async def test_async_iteration(make_repo):
    repo = make_repo()
    w = Watcher(repo, debounce=0.1, bump_epoch=False)
    agen = w.batches()
    first = asyncio.ensure_future(agen.__anext__())
    # The watcher starts inside the generator; its observer is set once
    # observer.start() has added the inotify watches.
    await wait_for_async(lambda: w._observer is not None, WAIT, "the watcher to start")
    (repo / "async.txt").write_text("a")
    batch = await asyncio.wait_for(first, WAIT)
    assert "async.txt" in batch.paths
    await agen.aclose()
    assert w._observer is None  # leaving the loop stopped the watcher


async def test_async_for_on_the_watcher_itself(make_repo):
    repo = make_repo()
    w = Watcher(repo, debounce=0.1, bump_epoch=False)
    w.start()  # watching once it returns: observer.start() adds the inotify watches
    try:
        (repo / "direct.txt").write_text("d")
        async def first():
            async for batch in w:
                return batch
        batch = await asyncio.wait_for(first(), WAIT)
        assert batch.paths == ["direct.txt"] and batch.events[0].kind == "created"
    finally:
        w.stop()
