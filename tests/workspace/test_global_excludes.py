"""The user's global git excludes (``core.excludesFile``, or git's default
``$XDG_CONFIG_HOME/git/ignore``) decide what a sandbox holds, together with
SuperQode's cache patterns (workspace/excludes.py). Real git, HOME and XDG in
the test's own folder (conftest)."""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

import pytest

from superqode_ls.workspace import excludes
from superqode_ls.workspace.errors import WorkspaceError
from superqode_ls.workspace.fingerprint import compare, take_fingerprint
from superqode_ls.workspace.session import IsolatedSession

from ..conftest import run_git
from .helpers import tree_state

FILES = {"app.py": "x = 1\n", "pkg/core.py": "def f():\n    return 1\n"}
SECRET = "API_TOKEN=only-in-the-users-tree\n"


def _global_via_config(home: Path, patterns: str) -> None:
    """``core.excludesFile = ~/my-ignore`` in the user's global config."""
    (home / "my-ignore").write_text(patterns)
    subprocess.run(["git", "config", "--global", "core.excludesFile", "~/my-ignore"], check=True)


def _global_via_xdg(home: Path, patterns: str) -> None:
    """git's default file, no configuration naming it."""
    path = Path(os.environ["XDG_CONFIG_HOME"]) / "git" / "ignore"
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(patterns)


@pytest.mark.parametrize("where", [_global_via_config, _global_via_xdg],
                         ids=["core.excludesFile", "xdg-default"])
def test_a_file_ignored_only_globally_stays_out_and_the_tree_verifies(make_repo, isolated_home,
                                                                      where):
    repo = make_repo({**FILES, "tracked.env": "committed\n"})
    where(isolated_home, "*.env\n.envrc\nscratch/\n")
    (repo / "secret.env").write_text(SECRET)
    (repo / ".envrc").write_text("export TOKEN=1\n")
    (repo / "scratch").mkdir()
    (repo / "scratch" / "notes.txt").write_text("editor scratch\n")
    (repo / "tracked.env").write_text("edited, tracked: git's rules carry it\n")
    (repo / "new.py").write_text("untracked, not ignored\n")
    assert run_git(repo, "status", "--porcelain", "--untracked-files=all").split() == [
        "M", "tracked.env", "??", "new.py"]  # what the user's git sees
    before = take_fingerprint(repo)
    for attempt in ("cold", "warm"):
        with IsolatedSession.create_sync(repo) as s:
            assert s.reused == (attempt == "warm")
            for rel in ("secret.env", ".envrc", "scratch"):
                assert not (s.sandbox / rel).exists(), f"{attempt}: {rel} was carried"
            assert (s.sandbox / "tracked.env").read_text().startswith("edited, tracked")
            assert (s.sandbox / "new.py").exists()
            assert tree_state(s.sandbox) == tree_state(repo)
            # A file of the same name the session writes is ignored as the user's git
            # ignores it; a plain new file is still a change.
            (s.sandbox / "local.env").write_text("the session's\n")
            (s.sandbox / "made.py").write_text("y = 2\n")
            assert [c.path for c in s.changes_sync().changes] == ["made.py"]
        assert s.verification.verified, s.verification.differences
    assert compare(before, take_fingerprint(repo)) == []


def test_superqodes_cache_patterns_still_apply_over_a_users_negation(make_repo, isolated_home):
    repo = make_repo(FILES)
    _global_via_config(isolated_home, "*.env\n!*.pyc\n!.pytest_cache/\n")
    (repo / "pkg" / "__pycache__").mkdir()
    (repo / "pkg" / "__pycache__" / "core.cpython-311.pyc").write_bytes(b"\0cache")
    (repo / ".pytest_cache").mkdir()
    (repo / ".pytest_cache" / "v").write_text("cache\n")
    (repo / "secret.env").write_text(SECRET)
    with IsolatedSession.create_sync(repo) as s:
        assert not (s.sandbox / "pkg" / "__pycache__").exists()
        assert not (s.sandbox / ".pytest_cache").exists()
        assert not (s.sandbox / "secret.env").exists()
        assert s.changes_sync().empty
    assert s.verification.verified


def test_the_combined_file_follows_the_users_file_and_fails_closed(tmp_path, isolated_home):
    top = tmp_path / "top"
    top.mkdir()
    xdg = Path(os.environ["XDG_CONFIG_HOME"]) / "git" / "ignore"
    assert excludes.user_file([], top) == xdg
    assert excludes.combined([], top) == excludes.CACHE_TEXT  # no file: the caches alone
    listing = [("global", "core.excludesfile", "~/ign"), ("local", "core.excludesFile", "rel")]
    assert excludes.user_file(listing, top) == top / "rel"  # the last one wins, from the top
    assert excludes.user_file(listing[:1], top) == isolated_home / "ign"
    (isolated_home / "ign").write_text("*.env")  # no newline at its end
    text = excludes.combined(listing[:1], top)
    assert text == b"*.env\n" + excludes.CACHE_TEXT
    private = tmp_path / "private"
    private.mkdir()
    (private / excludes.NAME).symlink_to(isolated_home / "ign")
    path = excludes.build(private, listing[:1], top)
    assert not path.is_symlink() and path.read_bytes() == text
    assert (isolated_home / "ign").read_text() == "*.env"  # written not through the link
    (isolated_home / "ign").write_text("*.log\n")
    assert excludes.build(private, listing[:1], top).read_bytes().startswith(b"*.log\n")
    with pytest.raises(WorkspaceError, match="without a value"):
        excludes.user_file([("global", "core.excludesFile", None)], top)
    (isolated_home / "ign").unlink()
    (isolated_home / "ign").mkdir()  # there, but not readable as a file
    with pytest.raises(WorkspaceError, match="cannot read your git excludes file"):
        excludes.combined(listing[:1], top)
    (isolated_home / "ign").rmdir()
    os.mkfifo(isolated_home / "ign")  # refused, not waited on
    with pytest.raises(WorkspaceError, match="not a regular file"):
        excludes.combined(listing[:1], top)


def test_a_hash_refuses_to_run_when_the_rules_are_gone(make_repo, isolated_home):
    """git reads a missing excludes file as no rules: the hash would carry more."""
    repo = make_repo(FILES)
    _global_via_config(isolated_home, "*.env\n")
    s = IsolatedSession.create_sync(repo)
    try:
        (s.sandbox / "local.env").write_text("the session's\n")
        os.unlink(s.private / excludes.NAME)
        with pytest.raises(WorkspaceError, match="ignore rules are missing"):
            s.changes_sync()
    finally:
        s.close_sync()


def test_a_restore_keeps_what_the_hashes_ignore(make_repo, isolated_home):
    """Restoring a snapshot removes the session's untracked files under the
    same rules its hashes use: what they ignore (the user's global patterns,
    the caches) stays, as the snapshot never held it."""
    repo = make_repo(FILES)
    _global_via_config(isolated_home, "*.env\n")
    with IsolatedSession.create_sync(repo) as s:
        assert s.baseline is not None
        (s.sandbox / "made.py").write_text("y = 2\n")
        (s.sandbox / "local.env").write_text("the session's\n")
        (s.sandbox / "pkg" / "__pycache__").mkdir()
        (s.sandbox / "pkg" / "__pycache__" / "core.cpython-311.pyc").write_bytes(b"\0cache")
        s.tree.restore(s.baseline)
        assert not (s.sandbox / "made.py").exists()
        assert (s.sandbox / "local.env").exists()
        assert (s.sandbox / "pkg" / "__pycache__" / "core.cpython-311.pyc").exists()
        assert s.changes_sync().empty
