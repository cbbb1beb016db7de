"""Recovery: sessions found from directory names alone, interrupted sessions,
clean and worktree registrations, fingerprint unchanged."""

from __future__ import annotations

import json
import os
import shutil
import time

from tests.conftest import run_git
from tests.safety_helpers import (
    LiveSession,
    content_fingerprint,
    crash_session,
    leftovers,
    lock_holders,
    registrations,
)

from superqode_ls.workspace import recovery
from superqode_ls.workspace.coordinator import Coordinator
from superqode_ls.workspace.paths import SessionPaths, new_session_id, repo_dir
from superqode_ls.workspace.session import IsolatedSession


def _dirty(repo):
    (repo / "README.md").write_text("edited, not staged\n")
    (repo / "untracked.txt").write_text("new\n")


def test_crashed_session_is_interrupted_and_clean_removes_everything(make_repo):
    repo = make_repo({"README.md": "hi\n", "src/a.py": "x = 1\n"})
    _dirty(repo)
    before = content_fingerprint(repo)
    sid = crash_session(repo, edits={"src/a.py": "x = 2\n"})
    [info] = recovery.scan()
    assert info.id == sid and info.state == "interrupted" and not info.alive
    assert info.repo == repo.resolve() and info.mode == "quick"
    assert info.sandbox.is_dir() and registrations(repo) == [sid]
    assert lock_holders() == [sid]  # the dead owner's lock is still on disk
    assert [s.id for s in recovery.interrupted_sessions(repo)] == [sid]

    report = recovery.clean_sessions(recovery.scan(), verify_after=True)
    assert [s.id for s in report.removed] == [sid] and not report.errors
    assert report.verifications == [(sid, True, report.verifications[0][2])]
    assert "Verified" in report.verifications[0][2]
    assert leftovers() == [] and registrations(repo) == [] and lock_holders() == []
    assert content_fingerprint(repo) == before
    assert run_git(repo, "worktree", "list").count("\n") == 1


def test_sessions_found_from_names_alone(make_repo):
    repo = make_repo()
    qe = repo_dir(repo) / "qe"
    qe.mkdir(parents=True)
    only_private = new_session_id()
    (qe / f".{only_private}.d").mkdir()
    only_sandbox = "qe-20200101-000000-abcdef"
    (qe / only_sandbox).mkdir()
    (qe / "not-a-session").mkdir()
    (qe / "qe-notes.txt").write_text("x")
    found = {s.id: s for s in recovery.scan(repo)}
    assert set(found) == {only_private, only_sandbox}
    assert all(s.state == "incomplete" and s.record is None for s in found.values())
    # Without a record a young leftover may still be starting: clean waits...
    report = recovery.clean_sessions(found.values())
    assert [s.id for s in report.removed] == [only_sandbox]
    assert dict((s.id, w) for s, w in report.skipped)[only_private].startswith("may still")
    # ...unless forced.
    report = recovery.clean_sessions(recovery.scan(repo), force=True)
    assert [s.id for s in report.removed] == [only_private]
    assert sorted(os.listdir(qe)) == ["not-a-session", "qe-notes.txt"]


def test_record_of_another_session_is_not_trusted(make_repo):
    repo = make_repo()
    sid = crash_session(repo)
    paths = SessionPaths(repo, sid)
    other = "qe-20200101-000000-000000"
    shutil.copy(paths.record, paths.record.with_name(f"{other}.json"))
    found = {s.id: s for s in recovery.scan(repo)}
    assert found[sid].state == "interrupted" and found[other].record is None
    recovery.clean_sessions(found.values(), force=True)
    assert leftovers() == []


def test_live_session_is_left_alone_unless_forced(make_repo):
    repo = make_repo()
    before = content_fingerprint(repo)
    live = LiveSession(repo, mode="deep")
    try:
        [info] = recovery.scan(repo)
        assert info.alive and info.state == "running" and info.mode == "deep"
        report = recovery.clean_sessions([info])
        assert report.removed == [] and "still running" in report.skipped[0][1]
        assert info.sandbox.is_dir() and lock_holders() == [live.id]
        report = recovery.clean_sessions(recovery.scan(repo), force=True)
        assert [s.id for s in report.removed] == [live.id]
        assert leftovers() == [] and registrations(repo) == [] and lock_holders() == []
    finally:
        live.stop()
    assert content_fingerprint(repo) == before


def test_stale_registration_is_unlocked_and_removed_but_users_own_are_kept(make_repo, tmp_path):
    repo = make_repo()
    # The user's own worktrees: one alive, one whose folder is gone (stale).
    run_git(repo, "worktree", "add", "-q", str(tmp_path / "mine"), "-b", "mine")
    run_git(repo, "worktree", "add", "-q", str(tmp_path / "gone"), "-b", "gone")
    shutil.rmtree(tmp_path / "gone")
    sid = crash_session(repo)
    info = recovery.find_session(sid)
    assert (repo / ".git" / "worktrees" / sid / "locked").exists()
    # Simulate an engine that removed the sandbox folder but not git's entry.
    shutil.rmtree(info.sandbox)
    pruned = recovery.prune_worktrees(repo)
    assert pruned == [sid]
    assert registrations(repo) == ["gone", "mine"]  # no blanket prune of the user's
    recovery.clean_sessions([info])
    assert leftovers() == []


def test_prune_runs_git_prune_when_only_ours_are_stale(make_repo):
    repo = make_repo()
    sid = crash_session(repo)
    shutil.rmtree(recovery.find_session(sid).sandbox)
    assert recovery.prune_worktrees(repo) == [sid]
    assert registrations(repo) == [] and not (repo / ".git" / "worktrees").exists()
    assert recovery.prune_worktrees(repo) == []  # nothing left: a no-op


def test_live_registration_is_not_pruned(make_repo):
    repo = make_repo()
    with IsolatedSession.create_sync(repo) as s:
        assert recovery.prune_worktrees(repo) == []
        assert registrations(repo) == [s.id]


def test_discard_after_project_was_deleted(make_repo):
    repo = make_repo()
    sid = crash_session(repo)
    shutil.rmtree(repo)
    [info] = recovery.scan()
    assert info.id == sid and info.repo is not None and not info.repo.exists()
    report = recovery.clean_sessions([info], verify_after=True)
    assert [s.id for s in report.removed] == [sid] and not report.errors
    assert leftovers() == []


def test_mark_kept_and_activity(make_repo):
    repo = make_repo()
    sid = crash_session(repo)
    info = recovery.find_session(sid)
    recovery.mark_kept(info)
    again = recovery.find_session(sid)
    assert again.state == "kept" and again.record.state == "kept"
    # Top-level directory mtime is not activity; the heartbeat is.
    old = again.created.timestamp() - 3600
    for p in (again.heartbeat, again.record_path):
        os.utime(p, (old, old))
    gitdir = recovery._sandbox_gitdir(again.sandbox)
    for p in (gitdir / "index", gitdir / "logs" / "HEAD"):
        if p.exists():
            os.utime(p, (old, old))
    os.utime(again.sandbox, None)
    assert again.last_activity() == again.created.timestamp()
    os.utime(again.heartbeat, None)
    assert again.last_activity() > again.created.timestamp()
    recovery.clean_sessions([again])
    assert leftovers() == []


def test_clear_dead_locks_in_tidy(make_repo):
    repo = make_repo()
    sid = crash_session(repo)
    info = recovery.find_session(sid)
    # The session folder vanished by hand; only its lock survives.
    shutil.rmtree(info.sandbox)
    shutil.rmtree(info.private)
    info.record_path.unlink()
    info.heartbeat.unlink(missing_ok=True)
    assert lock_holders() == [sid]
    report = recovery.CleanReport()
    assert recovery.tidy_repo(info.base, repo, report) == [sid]
    assert report.locks_cleared == 1 and lock_holders() == []
    assert Coordinator(repo).holders() == []


def test_repo_marker_is_read(make_repo):
    repo = make_repo()
    crash_session(repo)
    marker = recovery.read_repo_marker(repo_dir(repo))
    assert marker and marker["repo"] == str(repo.resolve())
    (repo_dir(repo) / "repo.json").write_text(json.dumps({"owner": "someone-else"}))
    assert recovery.read_repo_marker(repo_dir(repo)) is None
    recovery.clean_sessions(recovery.scan(), force=True)


def test_registration_half_written_by_a_killed_git(make_repo):
    repo = make_repo()
    sid = crash_session(repo)
    info = recovery.find_session(sid)
    reg = repo / ".git" / "worktrees" / sid
    # As if `git worktree add` died right after making the entry.
    shutil.rmtree(info.sandbox)
    shutil.rmtree(reg)
    reg.mkdir()
    (reg / "locked").write_text("initializing")
    # A user's broken entry and a young session-like one are not touched by prune.
    user = repo / ".git" / "worktrees" / "feature"
    user.mkdir()
    (user / "locked").write_text("initializing")
    young = repo / ".git" / "worktrees" / "qe-20200101-000000-abcdef"
    young.mkdir()
    assert recovery.prune_worktrees(repo) == []
    old = time.time() - 2 * recovery.INCOMPLETE_GRACE_S
    os.utime(young, (old, old))
    assert recovery.prune_worktrees(repo) == ["qe-20200101-000000-abcdef"]
    # The session's own half-made entry goes with the session.
    recovery.clean_sessions(recovery.scan(repo))
    assert registrations(repo) == ["feature"] and leftovers() == []


def test_recover_api_actions(make_repo):
    import pytest

    from superqode_ls.workspace.errors import WorkspaceError

    repo = make_repo()
    sid = crash_session(repo, edits={"README.md": "fixed\n"})
    info = recovery.find_session(sid)
    with pytest.raises(WorkspaceError, match="unknown recover action 'explode'"):
        recovery.recover(info, "explode")
    kept = recovery.recover(info, "extract", keep=True)
    assert kept.kept and kept.files == 1 and kept.patch.is_file()
    assert recovery.find_session(sid).state == "kept"
    gone = recovery.recover(recovery.find_session(sid), "discard")
    assert gone.verified is True and "Verified" in gone.line and leftovers() == []
    live = LiveSession(repo)
    try:
        with pytest.raises(WorkspaceError, match="still running"):
            recovery.recover(recovery.find_session(live.id), "discard")
    finally:
        live.stop()
    recovery.clean_sessions(recovery.scan())
    assert leftovers() == []


def test_sandbox_whose_git_link_was_replaced_by_a_repository(make_repo):
    repo = make_repo()
    before = content_fingerprint(repo)
    sid = crash_session(repo)
    sandbox = recovery.find_session(sid).sandbox
    (sandbox / ".git").unlink()  # an agent ran `rm -rf .git && git init`
    run_git(sandbox, "init", "-q")
    report = recovery.clean_sessions(recovery.scan(), verify_after=True)
    assert [s.id for s in report.removed] == [sid] and not report.errors
    assert report.verifications[0][1] is True
    assert leftovers() == [] and registrations(repo) == [] and lock_holders() == []
    assert content_fingerprint(repo) == before


def test_temp_files_of_a_cut_short_write_belong_to_the_session(make_repo):
    repo = make_repo()
    sid = crash_session(repo)
    qe = repo_dir(repo) / "qe"
    (qe / f".{sid}.json.k2j3h4").write_text("{half")
    (qe / f".{sid}.heartbeat.x").write_text("")
    [info] = recovery.scan(repo)
    assert info.id == sid
    recovery.clean_sessions([info])
    assert leftovers() == []


def test_verify_after_discard_uses_the_fingerprint_read_before(make_repo):
    repo = make_repo()
    sid = crash_session(repo)
    info = recovery.find_session(sid)
    recovery.discard(info)
    assert not info.private.exists()
    ok, line = recovery.verify(info)
    assert ok is True and line.startswith("Verified")
    (repo / "README.md").write_text("changed since\n")
    info.record.barrier_abi = None  # no kernel barrier: nobody can tell who did it
    ok, line = recovery.verify(info)
    assert ok is False and "README.md" in line
    info.record.barrier_abi = 7  # the barrier kept the session out: it was the user
    ok, line = recovery.verify(info)
    assert ok is True and "changed outside the session (kept): README.md" in line
