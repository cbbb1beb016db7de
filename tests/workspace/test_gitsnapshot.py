"""The private snapshot store: hash_tree, commit, changes between snapshots, restore."""

from __future__ import annotations

import os
import subprocess

from superqode_ls.workspace.changes import changes_between
from superqode_ls.workspace.fingerprint import compare, take_fingerprint
from superqode_ls.workspace.gitsnapshot import SnapshotStore

from ..conftest import write_files


def test_snapshots_of_a_plain_folder(tmp_path):
    work = tmp_path / "work"
    write_files(work, {"a.txt": "a\n", "d/b.txt": "b\n"})
    store = SnapshotStore(tmp_path / "store.git")
    idx = tmp_path / "index"
    s1 = store.commit(store.hash_tree(work, idx))
    assert s1.parent_id is None
    listing = subprocess.run(["git", "--git-dir", str(store.path), "ls-tree", "-r", s1.id],
                             capture_output=True, text=True, check=True).stdout
    blob = subprocess.run(["git", "hash-object", str(work / "a.txt")], capture_output=True,
                          text=True).stdout.strip()
    assert f"{blob}\ta.txt" in listing and "d/b.txt" in listing
    (work / "a.txt").write_text("A\n")
    (work / "d/b.txt").unlink()
    (work / "c.txt").write_text("c\n")
    s2 = store.commit(store.hash_tree(work, idx), s1.id)
    assert s2.parent_id == s1.id
    changes = changes_between(store, s1.id, s2.id)
    assert {c.path: c.kind for c in changes.changes} == {
        "a.txt": "modified", "d/b.txt": "deleted", "c.txt": "created"}
    # restore brings back the first state, removing what it did not have
    store.restore(s1.id, work, idx)
    assert (work / "a.txt").read_text() == "a\n"
    assert (work / "d/b.txt").read_text() == "b\n"
    assert not (work / "c.txt").exists()


def test_store_never_writes_into_the_users_git(make_repo, tmp_path):
    repo = make_repo({"a.txt": "a\n"})
    (repo / "a.txt").write_text("dirty, never committed\n")
    (repo / "new.txt").write_text("untracked\n")
    before = take_fingerprint(repo)
    objects_before = sorted(p.name for p in (repo / ".git/objects").rglob("*") if p.is_file())
    from superqode_ls.workspace.worktree import capture_user_state

    store = SnapshotStore(tmp_path / "store.git", alternates=[repo / ".git/objects"])
    state = capture_user_state(repo, store, tmp_path / "scratch", True)
    assert state.full_tree != state.staged_tree
    assert compare(before, take_fingerprint(repo)) == []
    objects_after = sorted(p.name for p in (repo / ".git/objects").rglob("*") if p.is_file())
    assert objects_after == objects_before
    listing = subprocess.run(["git", "--git-dir", str(store.path), "ls-tree", "-r", "--name-only",
                              state.full_tree], capture_output=True, text=True).stdout.split()
    assert listing == ["a.txt", "new.txt"]
    assert os.path.exists(store.path / "objects/info/alternates")


def test_index_copies_keep_their_timestamps(tmp_path):
    """git re-reads entries not older than the index ("racily clean"); a copy
    stamped "now" would make it trust stale stat data."""
    from superqode_ls.workspace.git import copy_index

    src, dst = tmp_path / "index", tmp_path / "copy"
    src.write_bytes(b"DIRC")
    os.utime(src, ns=(1_000_000_000_123, 1_000_000_000_123))
    copy_index(src, dst)
    assert dst.read_bytes() == b"DIRC"
    assert dst.stat().st_mtime_ns == src.stat().st_mtime_ns == 1_000_000_000_123


def test_a_snapshot_commit_is_the_one_git_would_write(tmp_path, monkeypatch):
    """Snapshot commits are written without a git process; each must be the
    very object ``commit-tree`` makes in the store, and the store stays sound."""
    from superqode_ls.workspace import gitsnapshot

    ran: list[str] = []
    real = gitsnapshot.git
    monkeypatch.setattr(gitsnapshot, "git", lambda args, *a, **kw: (ran.extend(args), real(args, *a, **kw))[1])
    work = tmp_path / "work"
    write_files(work, {"a.txt": "a\n"})
    store = SnapshotStore(tmp_path / "store.git")
    tree = store.hash_tree(work, tmp_path / "index")
    env = {**os.environ, "GIT_AUTHOR_DATE": "2000-01-01T00:00:00Z",
           "GIT_COMMITTER_DATE": "2000-01-01T00:00:00Z", "GIT_CONFIG_GLOBAL": os.devnull}
    parent = None
    for message in ("baseline qe-1", "checkpoint qe-1", "snapshot \u00e9t\u00e9"):
        snap = store.commit(tree, parent, message)
        assert "commit-tree" not in ran
        args = ["git", "-c", "user.name=SuperQode", "-c", "user.email=superqode@localhost",
                "--git-dir", str(store.path), "commit-tree", tree, "-m", message]
        if parent:
            args += ["-p", parent]
        by_git = subprocess.run(args, env=env, capture_output=True, text=True,
                                check=True).stdout.strip()
        assert snap.id == by_git
        parent = snap.id
    fsck = subprocess.run(["git", "--git-dir", str(store.path), "fsck", "--strict"],
                          capture_output=True, text=True, check=False)
    assert fsck.returncode == 0, fsck.stderr
    log = subprocess.run(["git", "--git-dir", str(store.path), "log", "--format=%s", parent],
                         capture_output=True, text=True, check=True).stdout.splitlines()
    assert log == ["snapshot \u00e9t\u00e9", "checkpoint qe-1", "baseline qe-1"]
