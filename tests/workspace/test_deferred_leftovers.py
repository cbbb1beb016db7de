"""A session's own leftovers (its private folder, its snapshot refs) removed
beside what comes after its close (a run's report): the close returns once
the user's tree is verified; the record, the heartbeat and the lock go only
after the removal, in the order a plain close has them; a run is complete
only once all of it is gone. Real sessions on real repositories."""

from __future__ import annotations

import threading

from superqode_ls.qe.pipeline import QERequest, QESession
from superqode_ls.workspace import session as session_mod
from superqode_ls.workspace.coordinator import Coordinator
from superqode_ls.workspace.paths import working_root
from superqode_ls.workspace.session import IsolatedSession

FILES = {"app.py": "import subprocess\n\n\ndef f(x):\n    return subprocess.call(x, shell=True)\n"}
WAIT_S = 120  # a guard against a hang, never a measure


def test_a_deferred_close_returns_verified_while_the_removal_goes_on(make_repo, monkeypatch):
    repo = make_repo(FILES)
    s = IsolatedSession.create_sync(repo)
    s.defer_leftovers = True
    private, record = s.private, s.paths.record
    release, removing = threading.Event(), threading.Event()
    real_remove = session_mod._remove_quietly

    def held_remove(path):
        removing.set()
        assert release.wait(WAIT_S)
        real_remove(path)

    monkeypatch.setattr(session_mod, "_remove_quietly", held_remove)
    closed: list = []
    closer = threading.Thread(target=lambda: closed.append(s.close_sync()))
    closer.start()
    closer.join(WAIT_S)
    try:
        # The old close waited here for the removal.
        assert closed and closed[0].verified, "close waited for SuperQode's own leftovers"
        assert removing.is_set() and private.exists()
        # The record and the lock outlast the removal: recovery still sees the session.
        assert record.exists()
        assert Coordinator(repo).holders()
    finally:
        release.set()
    s.wait_leftovers()
    assert not private.exists() and not record.exists() and not s.paths.heartbeat.exists()
    assert not Coordinator(repo).holders()


def test_a_failed_verification_keeps_the_record_after_a_deferred_removal(make_repo, monkeypatch):
    repo = make_repo(FILES)
    s = IsolatedSession.create_sync(repo)
    s.defer_leftovers = True

    def broken_verify():
        raise OSError("the walk failed")

    monkeypatch.setattr(s, "_verify", broken_verify)
    try:
        s.close_sync()
    except OSError as e:
        assert "the walk failed" in str(e)
    else:
        raise AssertionError("the failed verification was not raised")
    s.wait_leftovers()
    assert not s.private.exists()
    assert s.paths.record.exists()  # for recovery to verify again, as without deferral


async def test_a_run_is_complete_only_with_its_leftovers_gone(make_repo):
    repo = make_repo(FILES)
    session = QESession(QERequest(project=repo, roles=["security_tester"], mode="quick"))
    report = await session.run()
    assert report.verification is not None and report.verification.verified
    qe = next(working_root().glob("*/qe"))
    # What stays is the parked sandbox alone: no private folder, record or heartbeat.
    assert not list(qe.glob(".qe-*.d")) and not list(qe.glob("*.json"))
    assert not list(qe.glob("*.heartbeat"))
    assert not Coordinator(repo).holders()
