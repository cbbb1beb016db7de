"""The fingerprint sees every kind of change to the user's state, and nothing else."""

from __future__ import annotations

import os
import subprocess

import pytest

from superqode_ls.workspace.fingerprint import compare, take_fingerprint

from ..conftest import run_git


@pytest.fixture
def repo(make_repo):
    r = make_repo({"a.py": "a = 1\n", "b/c.txt": "c\n", ".gitignore": "*.log\n"})
    (r / "debug.log").write_text("ignored but the user's\n")
    os.symlink("a.py", r / "link")
    return r


CHANGES = {
    "content": lambda r: (r / "a.py").write_text("a = 2\n"),
    "same size content": lambda r: (r / "a.py").write_text("a = 9\n"),
    "ignored file": lambda r: (r / "debug.log").write_text("changed\n"),
    "chmod": lambda r: os.chmod(r / "a.py", 0o755),
    "symlink target": lambda r: (os.unlink(r / "link"), os.symlink("b/c.txt", r / "link")),
    "new file": lambda r: (r / "new.txt").write_text("n"),
    "deleted file": lambda r: (r / "b/c.txt").unlink(),
    "empty dir": lambda r: (r / "emptydir").mkdir(),
    "index": lambda r: run_git(r, "add", "debug.log", "-f"),
    "HEAD/refs": lambda r: run_git(r, "commit", "-q", "--allow-empty", "-m", "x"),
    "branch": lambda r: run_git(r, "branch", "feature"),
    "stash": lambda r: ((r / "a.py").write_text("s\n"), run_git(r, "stash", "-q")),
    "config": lambda r: run_git(r, "config", "user.name", "Someone Else"),
    "hook": lambda r: (r / ".git/hooks/pre-commit").write_text("#!/bin/sh\n"),
    "touch only": lambda r: os.utime(r / "a.py", (1, 1)),
    "skip-worktree flag": lambda r: run_git(r, "update-index", "--skip-worktree", "a.py"),
    "assume-unchanged flag": lambda r: run_git(r, "update-index", "--assume-unchanged", "a.py"),
    "packed ref value": lambda r: (run_git(r, "branch", "p"), run_git(r, "pack-refs", "--all"),
                                   run_git(r, "commit", "-q", "--allow-empty", "-m", "y"),
                                   run_git(r, "update-ref", "refs/heads/p", "HEAD")),
    "detached HEAD": lambda r: run_git(r, "checkout", "-q", "--detach"),
    "merge in progress": lambda r: (r / ".git/MERGE_HEAD").write_text(
        run_git(r, "rev-parse", "HEAD")),
    "sparse-checkout": lambda r: (r / ".git/info/sparse-checkout").write_text("/b/\n"),
    "hook mode": lambda r: (r / ".git/hooks/x").write_text("#!/bin/sh\n") or
                           (r / ".git/hooks/x").chmod(0o755),
}


def test_git_housekeeping_is_no_change(repo):
    """gc, pack-refs, a refreshed index, fetch/ORIG_HEAD scratch, locks."""
    for i in range(3):
        (repo / f"n{i}").write_text(f"{i}\n")
        run_git(repo, "add", f"n{i}")
        run_git(repo, "commit", "-q", "-m", f"n{i}")
    before = take_fingerprint(repo)
    run_git(repo, "gc", "-q")
    run_git(repo, "pack-refs", "--all")
    run_git(repo, "update-server-info")
    run_git(repo, "status")  # may rewrite the index (optional locks on)
    (repo / ".git/ORIG_HEAD").write_text(run_git(repo, "rev-parse", "HEAD"))
    (repo / ".git/packed-refs.lock").write_text("")
    assert (repo / ".git/packed-refs").exists() and not (repo / ".git/refs/heads").joinpath(
        run_git(repo, "symbolic-ref", "--short", "HEAD").strip()).exists()
    assert compare(before, take_fingerprint(repo)) == []


def test_a_linked_worktree_project_sees_the_main_index_and_ignores_gc(repo, tmp_path):
    wt = tmp_path / "wt"
    run_git(repo, "worktree", "add", "-q", "--detach", str(wt))
    before = take_fingerprint(wt)
    run_git(wt, "gc", "-q")
    run_git(wt, "status")
    assert compare(before, take_fingerprint(wt)) == []
    (repo / "a.py").write_text("a = 22\n")
    run_git(repo, "add", "a.py")
    diffs = compare(before, take_fingerprint(wt))
    assert any(d.startswith("staged: .git/index a.py") for d in diffs), diffs


@pytest.mark.parametrize("name", sorted(CHANGES))
def test_every_change_is_seen(repo, name):
    before = take_fingerprint(repo)
    CHANGES[name](repo)
    diffs = compare(before, take_fingerprint(repo))
    assert diffs, f"{name} went unnoticed"


def test_reading_and_superqode_folder_are_not_changes(repo):
    before = take_fingerprint(repo)
    (repo / "a.py").read_text()
    (repo / ".superqode/qe-artifacts").mkdir(parents=True)
    (repo / ".superqode/qe-artifacts/x.json").write_text("{}")
    # git status with optional locks off does not rewrite the index
    subprocess.run(["git", "status"], cwd=repo, capture_output=True,
                   env={**os.environ, "GIT_OPTIONAL_LOCKS": "0"})
    assert compare(before, take_fingerprint(repo)) == []


def test_differences_are_described(repo):
    before = take_fingerprint(repo)
    os.chmod(repo / "a.py", 0o700)
    (repo / "b/c.txt").write_text("longer content\n")
    diffs = compare(before, take_fingerprint(repo))
    assert any(d.startswith("mode changed: a.py") for d in diffs)
    assert "modified: b/c.txt" in diffs


def test_plain_folder(tmp_path):
    (tmp_path / "x").write_text("1")
    before = take_fingerprint(tmp_path)
    assert compare(before, take_fingerprint(tmp_path)) == []
    (tmp_path / "x").write_text("2")
    diffs = compare(before, take_fingerprint(tmp_path))
    assert len(diffs) == 1 and diffs[0].endswith(": x") or diffs[0].startswith("touched: x")


def test_roundtrip_json(repo):
    from superqode_ls.workspace.fingerprint import Fingerprint

    fp = take_fingerprint(repo)
    again = Fingerprint.from_json(fp.to_json())
    assert compare(fp, again) == [] and fp.digest == again.digest


def test_a_nested_superqode_folder_of_the_user_is_compared(repo):
    """Only the project's top-level .superqode/ is SuperQode's; ``b/.superqode``
    is the user's unless a session was started for ``b``."""
    (repo / "b/.superqode").mkdir()
    (repo / "b/.superqode/file").write_text("mine\n")
    before = take_fingerprint(repo)
    (repo / "b/.superqode/file").write_text("changed\n")
    assert "modified: b/.superqode/file" in compare(before, take_fingerprint(repo))
    own = take_fingerprint(repo, [".superqode", "b/.superqode"])
    (repo / "b/.superqode/file").write_text("again, longer\n")
    assert compare(own, take_fingerprint(repo, own.own)) == []


def test_superqode_registrations_come_and_go_a_users_qe_worktree_is_compared(repo, tmp_path):
    """Registrations whose gitdir points into $SUPERQODE_HOME/working are
    SuperQode's (another session's may appear or vanish meanwhile); a user's
    worktree that happens to be called qe-mine is theirs."""
    from superqode_ls.workspace.paths import working_root

    before = take_fingerprint(repo)
    reg = repo / ".git" / "worktrees" / "qe-20260101-000000-abcdef"
    reg.mkdir(parents=True)
    (reg / "gitdir").write_text(str(working_root() / "r-1234abcd/qe/qe-20260101-000000-abcdef/.git") + "\n")
    (reg / "HEAD").write_text("0" * 40 + "\n")
    assert compare(before, take_fingerprint(repo)) == []
    run_git(repo, "worktree", "add", "-q", "--detach", str(tmp_path / "qe-mine"))
    diffs = compare(before, take_fingerprint(repo))
    assert any(d.startswith("created: .git/worktrees/qe-mine/") for d in diffs), diffs
    mid = take_fingerprint(repo)
    (tmp_path / "qe-mine" / "new.txt").write_text("n\n")
    run_git(tmp_path / "qe-mine", "add", "new.txt")
    diffs = compare(mid, take_fingerprint(repo))
    assert diffs == ["created: .git/worktrees/qe-mine/index new.txt"], diffs


def test_the_git_section_comes_before_the_worktree_is_registered(repo, monkeypatch):
    """The fingerprint's git section is taken in a thread beside the reading
    of the user's state; the sandbox's worktree is registered in the user's
    git only once it is taken, and not at all when it could not be."""
    from superqode_ls.workspace import pool, session_fingerprint
    from superqode_ls.workspace import worktree as wt
    from superqode_ls.workspace.errors import WorkspaceError
    from superqode_ls.workspace.session import IsolatedSession

    taken = []
    real_part = session_fingerprint.SessionFingerprint.git_part
    real_add, real_claim = wt.add_worktree, pool.claim

    def part(self):
        fp = real_part(self)
        taken.append("git section")
        return fp

    def add(*a, **kw):
        taken.append("registered")
        return real_add(*a, **kw)

    def claim(*a, **kw):
        taken.append("claim")
        return real_claim(*a, **kw)

    monkeypatch.setattr(session_fingerprint.SessionFingerprint, "git_part", part)
    monkeypatch.setattr(wt, "add_worktree", add)
    monkeypatch.setattr(pool, "claim", claim)
    s = IsolatedSession.create_sync(repo)
    try:
        assert taken[0] == "git section" and "registered" in taken
    finally:
        assert s.close_sync().verified

    def broken(self):
        raise OSError("no git section")

    monkeypatch.setattr(session_fingerprint.SessionFingerprint, "git_part", broken)
    before = run_git(repo, "worktree", "list", "--porcelain")
    taken.clear()
    with pytest.raises(WorkspaceError, match="fingerprint"):
        IsolatedSession.create_sync(repo)
    assert "registered" not in taken and "claim" not in taken
    assert run_git(repo, "worktree", "list", "--porcelain") == before
