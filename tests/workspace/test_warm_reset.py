"""The warm sandbox's reset (workspace/warmreset.py): only the files that
differ are written, never through a link the previous session left, and
what the previous session wrote is found even where stat data was forged."""

from __future__ import annotations

import os
import subprocess

from superqode_ls.workspace.fingerprint import compare, take_fingerprint
from superqode_ls.workspace.session import IsolatedSession

from ..conftest import run_git
from .helpers import disk_state, porcelain, tree_state

FILES = {"app.py": "x = 1\n", "pkg/__init__.py": "", "pkg/core.py": "def f():\n    return 1\n",
         "pkg/util.py": "U = 1\n", "docs/a.txt": "a\n"}


def _listing(index, git_dir) -> list[str]:
    env = {**os.environ, "GIT_INDEX_FILE": str(index), "GIT_DIR": str(git_dir)}
    out = subprocess.run(["git", "ls-files", "-s", "-z"], env=env, capture_output=True,
                         check=True, cwd=git_dir).stdout
    return sorted(r.decode() for r in out.split(b"\0") if r)


def _tree(tree, git_dir) -> list[str]:
    env = {**os.environ, "GIT_DIR": str(git_dir)}
    out = subprocess.run(["git", "ls-tree", "-r", "-z", tree], env=env, capture_output=True,
                         check=True, cwd=git_dir).stdout
    # "mode blob sha\tpath" -> "mode sha 0\tpath", as ls-files -s says it
    recs = []
    for r in out.split(b"\0"):
        if r:
            meta, path = r.decode().split("\t", 1)
            mode, _, sha = meta.split(" ")
            recs.append(f"{mode} {sha} 0\t{path}")
    return sorted(recs)


def test_the_reset_tracks_the_users_whole_state_and_rewrites_only_what_differs(make_repo):
    repo = make_repo(FILES)
    with IsolatedSession.create_sync(repo) as first:
        (first.sandbox / "app.py").write_text("scribbled\n")  # the session's own edit
        (first.sandbox / "stray.py").write_text("left behind\n")
    (repo / "pkg" / "core.py").write_text("def f():\n    return 2\n")  # staged
    run_git(repo, "add", "pkg/core.py")
    (repo / "docs" / "a.txt").write_text("unstaged\n")
    (repo / "new.py").write_text("untracked\n")
    s = IsolatedSession.create_sync(repo)
    try:
        assert s.reused
        assert tree_state(s.sandbox) == tree_state(repo)
        assert porcelain(s.sandbox) == porcelain(repo)
        assert not (s.sandbox / "stray.py").exists()
        # SuperQode's tracking index holds the whole state carried in (what
        # the baseline is), not the staged one: the session's first look at
        # its changes compares stat data instead of re-reading the files
        # the user has unstaged or untracked.
        assert s.store is not None and s.baseline is not None
        assert _listing(s.tree.index, s.store.path) == _tree(s.store.tree(s.baseline), s.store.path)
        assert s.changes_sync().empty
    finally:
        v = s.close_sync()
    assert v.verified


def test_links_left_by_the_previous_session_are_not_written_through(make_repo):
    repo = make_repo(FILES)
    with IsolatedSession.create_sync(repo) as first:
        sb = first.sandbox
        # A tracked folder and a tracked file swapped for links to the user's own.
        for rel in ("pkg/core.py", "pkg/util.py", "pkg/__init__.py"):
            (sb / rel).unlink()
        (sb / "pkg").rmdir()
        os.symlink(repo / "pkg", sb / "pkg")
        (sb / "app.py").unlink()
        os.symlink(repo / "app.py", sb / "app.py")
    # The user edits exactly those files: the reset must write them.
    (repo / "pkg" / "core.py").write_text("def f():\n    return 3\n")
    (repo / "app.py").write_text("x = 2\n")
    before = disk_state(repo)
    fp = take_fingerprint(repo)
    with IsolatedSession.create_sync(repo) as s:
        assert not (s.sandbox / "pkg").is_symlink() and not (s.sandbox / "app.py").is_symlink()
        assert tree_state(s.sandbox) == tree_state(repo)
        assert disk_state(s.sandbox) == disk_state(repo)
    assert disk_state(repo) == before
    assert compare(fp, take_fingerprint(repo)) == []


def test_a_file_rewritten_with_its_size_and_mtime_kept_is_found(make_repo):
    """The user's ``core.trustctime=false`` is carried into SuperQode's own git
    dir; a session could then hide an edit from a stat comparison by keeping
    the size and setting the mtime back. Its ctime still moved."""
    repo = make_repo(FILES)
    run_git(repo, "config", "core.trustctime", "false")
    with IsolatedSession.create_sync(repo) as first:
        target = first.sandbox / "pkg" / "util.py"
        st = target.stat()
        target.write_text("U = 9\n")  # same size
        os.utime(target, ns=(st.st_atime_ns, st.st_mtime_ns))
    with IsolatedSession.create_sync(repo) as s:
        assert s.reused
        assert (s.sandbox / "pkg" / "util.py").read_text() == "U = 1\n"
        assert tree_state(s.sandbox) == tree_state(repo)


def test_an_exec_bit_the_previous_session_set_is_gone(make_repo):
    """With the user's ``core.fileMode=false`` carried, a stat comparison
    would let a mode the session changed stand."""
    repo = make_repo(FILES)
    run_git(repo, "config", "core.fileMode", "false")
    with IsolatedSession.create_sync(repo) as first:
        os.chmod(first.sandbox / "pkg" / "util.py", 0o755)
    with IsolatedSession.create_sync(repo) as s:
        assert s.reused
        assert not os.stat(s.sandbox / "pkg" / "util.py").st_mode & 0o111
        assert tree_state(s.sandbox) == tree_state(repo)


def test_ignored_leftovers_and_empty_folders_of_the_previous_session_go(make_repo):
    repo = make_repo({**FILES, ".gitignore": "build/\n*.log\n"})
    with IsolatedSession.create_sync(repo) as first:
        (first.sandbox / "build" / "deep").mkdir(parents=True)
        (first.sandbox / "build" / "deep" / "out.bin").write_bytes(b"\0" * 10)
        (first.sandbox / "run.log").write_text("log\n")
        (first.sandbox / "empty" / "nested").mkdir(parents=True)
    (repo / "docs" / "a.txt").unlink()  # the user deletes a tracked file
    with IsolatedSession.create_sync(repo) as s:
        assert s.reused
        for rel in ("build", "run.log", "empty", "docs"):
            assert not (s.sandbox / rel).exists(), rel
        assert tree_state(s.sandbox) == tree_state(repo)
        assert porcelain(s.sandbox) == porcelain(repo)


def test_index_bits_of_the_previous_state_take_the_full_reset(make_repo):
    """The parked tracking index carries the old state's skip-worktree bit (a
    sparse file, absent on disk: git does not compare it); the next state
    has the file back: the reset that trusts a status of the index must not
    be the one taken, or the file would stay missing."""
    repo = make_repo(FILES)
    run_git(repo, "update-index", "--skip-worktree", "pkg/util.py")
    (repo / "pkg" / "util.py").unlink()  # sparse: not on disk, not a deletion
    with IsolatedSession.create_sync(repo) as first:
        assert not (first.sandbox / "pkg" / "util.py").exists()
    run_git(repo, "update-index", "--no-skip-worktree", "pkg/util.py")
    run_git(repo, "checkout", "--", "pkg/util.py")
    with IsolatedSession.create_sync(repo) as s:
        assert s.reused
        assert (s.sandbox / "pkg" / "util.py").read_text() == "U = 1\n"
        assert tree_state(s.sandbox) == tree_state(repo)
        assert porcelain(s.sandbox) == porcelain(repo)


def test_a_file_the_user_has_in_crlf_is_their_bytes_after_the_reset(make_repo):
    repo = make_repo({"app.py": "x = 1\n", ".gitattributes": "*.txt text eol=crlf\n",
                      "notes.txt": "one\r\ntwo\r\n"})
    with IsolatedSession.create_sync(repo):
        pass
    (repo / "notes.txt").write_bytes(b"one\r\nthree\r\n")
    with IsolatedSession.create_sync(repo) as s:
        assert s.reused
        assert (s.sandbox / "notes.txt").read_bytes() == b"one\r\nthree\r\n"
        assert tree_state(s.sandbox) == tree_state(repo)
        assert s.changes_sync().empty


def test_the_sandbox_is_scanned_while_the_users_state_is_read(make_repo, monkeypatch):
    """A next session runs the parked sandbox's clean and status (warmreset.scan)
    beside the reading of the user's state, and still proves the result: the
    user's state is read only after the scan here, and what the previous
    session left is gone."""
    import threading

    from superqode_ls.workspace import session_build, warmreset
    from superqode_ls.workspace import worktree as wt

    repo = make_repo(FILES)
    with IsolatedSession.create_sync(repo) as first:
        (first.sandbox / "app.py").write_text("scribbled\n")
        (first.sandbox / "stray.py").write_text("left behind\n")
    (repo / "docs" / "a.txt").write_text("unstaged\n")
    scanned = threading.Event()
    real_scan, real_capture = warmreset.scan, wt.capture_user_state

    def scan(*a, **kw):
        out = real_scan(*a, **kw)
        scanned.set()
        return out

    def capture(*a, **kw):
        # Before, the state was read first and the sandbox scanned after: this
        # wait ran out and the session was made without a scan beside it.
        assert scanned.wait(60), "the user's state was read before the sandbox's scan"
        return real_capture(*a, **kw)

    monkeypatch.setattr(warmreset, "scan", scan)
    monkeypatch.setattr(wt, "capture_user_state", capture)
    monkeypatch.setattr(session_build, "BESIDE", True)  # (one CPU: False)
    s = IsolatedSession.create_sync(repo)
    try:
        assert s.reused
        assert tree_state(s.sandbox) == tree_state(repo)
        assert not (s.sandbox / "stray.py").exists()
        assert s.changes_sync().empty
    finally:
        v = s.close_sync()
    assert v.verified


def test_a_failed_read_of_the_users_state_fails_the_next_session(make_repo, monkeypatch):
    """The state is read in a thread beside the claim: its failure still ends
    the session's making, with nothing left registered in the user's git."""
    import pytest

    from superqode_ls.workspace import session_build
    from superqode_ls.workspace import worktree as wt
    from superqode_ls.workspace.errors import WorkspaceError

    repo = make_repo(FILES)
    with IsolatedSession.create_sync(repo):
        pass
    before = take_fingerprint(repo)

    def capture(*a, **kw):
        raise WorkspaceError("the user's state could not be read (test)")

    monkeypatch.setattr(wt, "capture_user_state", capture)
    for beside in (True, False):  # more than one CPU, and one
        monkeypatch.setattr(session_build, "BESIDE", beside)
        with pytest.raises(WorkspaceError, match="could not be read"):
            IsolatedSession.create_sync(repo)
        assert compare(before, take_fingerprint(repo)) == []
        assert run_git(repo, "worktree", "list", "--porcelain").count("worktree ") == 1
