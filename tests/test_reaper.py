"""Reaper: idle sessions and orphans go, only what carries our marker, and no
single failure stops it."""

from __future__ import annotations

import os
import shutil
import time

from superqode_ls.config import Config
from superqode_ls.workspace import reaper, recovery
from superqode_ls.workspace.paths import repo_dir, working_root
from tests.safety_helpers import LiveSession, crash_session, leftovers, registrations

HOUR = 3600.0


def _age_everything(info: recovery.SessionInfo, when: float) -> None:
    """Make every activity signal of a session as old as ``when``."""
    paths = [info.heartbeat, info.record_path]
    gitdir = recovery._sandbox_gitdir(info.sandbox)
    if gitdir is not None:
        paths += [gitdir / "index", gitdir / "logs" / "HEAD"]
    for p in paths:
        if p.exists():
            os.utime(p, (when, when))


def test_idle_threshold_comes_from_config(make_repo):
    repo = make_repo()
    sid = crash_session(repo)
    cfg = Config.model_validate({"workspace": {"cleanup_after_hours": 2}})
    now = time.time()
    report = reaper.reap(cfg, now=now + 1 * HOUR)
    assert report.removed == [] and (sid, "recently active") in report.kept
    report = reaper.reap(cfg, now=now + 3 * HOUR)
    assert report.idle == [sid] and report.orphans == [] and not report.errors
    assert leftovers() == [] and registrations(repo) == []


def test_heartbeat_keeps_an_old_session_and_top_dir_mtime_does_not(make_repo):
    repo = make_repo()
    sid = crash_session(repo)
    info = recovery.find_session(sid)
    now = time.time() + 48 * HOUR
    _age_everything(info, now - 30 * HOUR)
    os.utime(info.heartbeat, (now - 60, now - 60))  # touched a minute ago
    report = reaper.reap(now=now)
    assert (sid, "recently active") in report.kept
    # A fresh top-level mtime (an `ls` tool creating a file and deleting it)
    # is no activity.
    _age_everything(info, now - 30 * HOUR)
    os.utime(info.sandbox, (now, now))
    report = reaper.reap(now=now)
    assert report.idle == [sid]


def test_index_activity_keeps_a_session(make_repo):
    repo = make_repo()
    sid = crash_session(repo)
    info = recovery.find_session(sid)
    now = time.time() + 48 * HOUR
    _age_everything(info, now - 30 * HOUR)
    gitdir = recovery._sandbox_gitdir(info.sandbox)
    os.utime(gitdir / "index", (now - 5, now - 5))
    assert (sid, "recently active") in reaper.reap(now=now).kept


def test_live_owner_is_never_reaped(make_repo):
    repo = make_repo()
    live = LiveSession(repo)
    try:
        report = reaper.reap(now=time.time() + 1000 * HOUR)
        assert report.removed == [] and (live.id, "owner still running") in report.kept
        assert recovery.find_session(live.id).sandbox.is_dir()
    finally:
        live.stop()
    reaper.reap(now=time.time() + 1000 * HOUR)
    assert leftovers() == []


def test_orphans_of_deleted_and_moved_repositories(make_repo, tmp_path):
    deleted = make_repo(name="deleted")
    moved = make_repo(name="moved")
    kept = make_repo(name="kept")
    a, b, c = crash_session(deleted), crash_session(moved), crash_session(kept)
    shutil.rmtree(deleted)
    os.rename(moved, tmp_path / "moved-elsewhere")
    report = reaper.reap()  # no idle time needed for orphans
    assert sorted(report.orphans) == sorted([a, b]) and not report.errors
    assert sorted(report.repo_dirs) == sorted([repo_dir(deleted).name, repo_dir(moved).name])
    assert (c, "recently active") in report.kept
    assert not repo_dir(deleted).exists() and repo_dir(kept).is_dir()
    assert [s.id for s in recovery.scan()] == [c]


def test_only_marked_directories_are_deleted(make_repo):
    repo = make_repo()
    sid = crash_session(repo)
    qe = repo_dir(repo) / "qe"
    stranger = qe / "qe-20200101-000000-aaaaaa"  # looks like a session, no record
    stranger.mkdir()
    (stranger / "precious.txt").write_text("not ours")
    unmarked = working_root() / "someone-else-12345678"
    (unmarked / "qe" / "qe-20200101-000000-bbbbbb").mkdir(parents=True)
    report = reaper.reap(now=time.time() + 1000 * HOUR)
    assert report.idle == [sid]
    assert ("qe-20200101-000000-aaaaaa", "no ownership marker (record)") in report.kept
    assert (stranger / "precious.txt").exists() and unmarked.is_dir()
    # Even when the repository is gone, an unowned leftover keeps its folder.
    shutil.rmtree(repo)
    report = reaper.reap(now=time.time() + 1000 * HOUR)
    assert (stranger / "precious.txt").exists()
    assert any(name == repo_dir(repo).name for name, _ in report.kept)


def test_one_failure_does_not_stop_the_rest(make_repo, monkeypatch):
    r1, r2 = make_repo(), make_repo()
    s1, s2 = crash_session(r1), crash_session(r2)
    real = recovery.discard

    def flaky(info):
        if info.id == s1:
            raise OSError("disk on fire")
        real(info)

    monkeypatch.setattr(reaper, "discard", flaky)
    report = reaper.reap(now=time.time() + 1000 * HOUR)
    assert report.errors == [(s1, "disk on fire")] and report.idle == [s2]
    monkeypatch.setattr(reaper, "discard", real)
    assert reaper.reap(now=time.time() + 1000 * HOUR).idle == [s1]
    assert leftovers() == []


def test_branch_reaper_runs_with_the_reap_and_its_failure_is_reported(make_repo, monkeypatch):
    from superqode_ls.workspace import branches

    calls = []

    def fake(config=None, now=None):
        calls.append((config, now))
        return "branch-report"

    monkeypatch.setattr(branches, "reap_branch_worktrees", fake)
    cfg = Config()
    report = reaper.reap(cfg, now=123.0)
    assert calls == [(cfg, 123.0)] and report.branches == "branch-report"

    def broken(config=None, now=None):
        raise RuntimeError("branches broke")

    monkeypatch.setattr(branches, "reap_branch_worktrees", broken)
    report = reaper.reap()
    assert ("branches", "branches broke") in report.errors


def test_empty_home_is_fine():
    report = reaper.reap()
    assert report.removed == [] and report.errors == []


def test_maybe_reap_runs_at_most_once_per_interval(make_repo):
    repo = make_repo()
    sid = crash_session(repo)
    later = time.time() + 100 * HOUR
    first = reaper.maybe_reap(now=later)
    assert first is not None and first.idle == [sid]
    sid2 = crash_session(repo)
    assert reaper.maybe_reap(now=later + 60) is None  # within the hour: skipped
    again = reaper.maybe_reap(now=later + 2 * HOUR + 100 * HOUR)
    assert again is not None and again.idle == [sid2]


def test_on_start_lists_interrupted_sessions(make_repo):
    a, b = make_repo(), make_repo()
    sa, sb = crash_session(a), crash_session(b)
    interrupted, report = reaper.on_start(Config(), repo=a)
    assert [s.id for s in interrupted] == [sa]
    assert report is not None and report.removed == []  # fresh sessions are kept
    assert sorted(s.id for s in reaper.on_start()[0]) == sorted([sa, sb])
