"""engine.recovery, the one recovery both front ends call: each action's
effect on the session, and a change that cannot be read is an error, never
a patch."""

from __future__ import annotations

import pytest

from superqode_ls.engine import recovery, sessions
from superqode_ls.engine.errors import WorkspaceError
from tests.safety_helpers import LiveSession, content_fingerprint, crash_session

EDIT = {"app.py": "print('changed')\n"}


def _patches(repo, sid):
    folder = repo / ".superqode" / "qe-artifacts" / "patches"
    return sorted(p.name for p in folder.glob(f"{sid}-*"))


def test_save_changes_leaves_the_session_and_resume_keeps_it(make_repo):
    repo = make_repo({"app.py": "print('hi')\n"})
    before = content_fingerprint(repo)
    sid = crash_session(repo, edits=EDIT)
    saved = recovery.save_changes(sid)
    assert saved.patch is not None and saved.patch.name == f"{sid}-recovered.patch"
    assert saved.files == 1 and "+print('changed')" in saved.patch.read_text()
    assert sessions.find(sid).state == "interrupted"  # only saved: still offered
    resumed = recovery.resume(sid)
    assert resumed.patch == saved.patch and resumed.kept
    info = sessions.find(sid)
    assert info.state == "kept" and (info.sandbox / "app.py").read_text() == EDIT["app.py"]
    assert _patches(repo, sid) == [f"{sid}-recovered.patch"]
    assert content_fingerprint(repo) == before
    gone = recovery.recover(sid)  # saved again, then removed and verified
    assert gone.verified is True and not info.sandbox.exists()
    assert sessions.list_sessions(repo) == []


def test_a_change_that_cannot_be_read_is_an_error_not_a_patch(make_repo, tmp_path):
    repo = make_repo({"app.py": "print('hi')\n"})
    sid = crash_session(repo, edits=EDIT)
    info = sessions.find(sid)
    # The sandbox swapped for a link elsewhere (what a session's code could do).
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    moved = info.sandbox.with_name(info.sandbox.name + ".moved")
    info.sandbox.rename(moved)
    info.sandbox.symlink_to(elsewhere)
    for action in (recovery.save_changes, recovery.resume, recovery.recover):
        with pytest.raises(WorkspaceError):
            action(sid)
    assert _patches(repo, sid) == []
    assert sessions.find(sid).state == "interrupted"
    info.sandbox.unlink()
    moved.rename(info.sandbox)
    sessions.revert([sessions.find(sid)], force=True)


def test_a_running_session_is_not_recovered(make_repo):
    repo = make_repo()
    live = LiveSession(repo)
    try:
        for action in (recovery.save_changes, recovery.resume, recovery.recover):
            with pytest.raises(WorkspaceError, match="still running"):
                action(live.id)
    finally:
        live.stop()
        sessions.revert(sessions.list_sessions(repo), force=True)
