"""A file the user ignores everywhere (their global git excludes) is not
handed to a session, and a session cannot change the rules that keep it out.

The user keeps ``secret.env`` in their project, ignored only by
``core.excludesFile`` (no ``.gitignore`` names it). A session behind its
barrier searches everything it was given (its sandbox, its private folders,
the tree SuperQode recorded as its baseline) for the secret's bytes, and
tries to empty, replace or redirect SuperQode's copy of the rules in its
private folder so that SuperQode's next hash, or the next session made in
the parked sandbox, carries the file. Nothing of it may work."""

from __future__ import annotations

import subprocess

import pytest

from superqode_ls.workspace import excludes, landlock
from superqode_ls.workspace.proc import supervise
from superqode_ls.workspace.session import IsolatedSession

from ..safety_helpers import content_fingerprint

pytestmark = pytest.mark.skipif(
    landlock.abi() is None,
    reason="this kernel has no Landlock: a session could write anywhere",
)

SECRET = "sk-live-0123456789-users-own"


def _as_session(s: IsolatedSession, script: str) -> subprocess.CompletedProcess:
    env = s.env()
    return subprocess.run(supervise(["sh", "-c", script], env), cwd=s.sandbox, env=env,
                          capture_output=True, text=True, timeout=60, check=False)


def _search(s: IsolatedSession) -> str:
    """What the session finds of the secret in what it was handed."""
    places = " ".join(f"'{p}'" for p in (s.sandbox, s.private / "git", s.private / "tmp",
                                         s.private / "scratch", s.private / "xdg"))
    proc = _as_session(s, f"grep -rl -- {SECRET} {places} 2>/dev/null; true")
    return proc.stdout.strip()


def test_a_globally_ignored_secret_is_not_handed_to_a_session(world, isolated_home):
    repo = world["repo"]
    (isolated_home / "global-ignore").write_text("*.env\n")
    subprocess.run(["git", "config", "--global", "core.excludesFile", "~/global-ignore"],
                   check=True)
    (repo / "secret.env").write_text(f"TOKEN={SECRET}\n")
    before = content_fingerprint(repo)
    s = IsolatedSession.create_sync(repo)
    try:
        assert _search(s) == "", "the user's globally ignored secret reached the session"
        assert s.store is not None and s.baseline is not None
        listing = s.store.run(["ls-tree", "-r", "--name-only", s.baseline]).stdout.decode()
        assert "secret.env" not in listing.split()
        rules = s.private / excludes.NAME
        kept = rules.read_bytes()
        attempts = {
            "empty": f": > '{rules}'",
            "remove": f"rm -f '{rules}'",
            "link": f"ln -sf /dev/null '{rules}'",
            "rename": f"mv '{rules}' '{s.private / 'tmp' / 'gone'}'",
        }
        for name, script in attempts.items():
            proc = _as_session(s, script)
            assert proc.returncode != 0, f"the session could {name} SuperQode's ignore rules"
            assert not rules.is_symlink() and rules.read_bytes() == kept, name
        (s.sandbox / "leak.env").write_text(f"{SECRET}\n")  # the session's own copy
        assert [c.path for c in s.changes_sync().changes] == []
    finally:
        s.close_sync()
    assert s.verification.verified, s.verification.differences
    nxt = IsolatedSession.create_sync(repo)
    try:
        assert nxt.reused
        assert _search(nxt) == "", "the parked sandbox handed the secret to the next session"
    finally:
        nxt.close_sync()
    assert content_fingerprint(repo) == before
