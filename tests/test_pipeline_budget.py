"""Fix verification adds to what the roles found: when it has no time left
it stops, and the session has not timed out (its findings are whole, the
fixes stay unverified); a role out of time still times the session out."""

from __future__ import annotations

import asyncio
import time

import pytest

from superqode_ls.events import EventBus
from superqode_ls.models import Finding, Range, Severity
from superqode_ls.qe import pipeline, role_runs, role_time, verify_step
from superqode_ls.qe.noise_context import UNFILTERED
from superqode_ls.qe.pipeline import QERequest, QESession
from superqode_ls.qe.roles import REGISTRY
from superqode_ls.qe.roles.base import Role, RoleContext, RoleOutput
from tests import qe_testroles

APP = "import os\n\n\ndef f():\n    x = 'PLANTED'\n    return x\n\n\ndef g():\n    return 'PLANTED'\n"


@pytest.fixture(autouse=True)
def toy_roles(monkeypatch):
    qe_testroles.register(monkeypatch)


def test_verification_out_of_time_is_no_session_timeout(make_repo, monkeypatch):
    repo = make_repo({"app.py": APP})
    stopped = []

    async def endless_verify(**kw):
        try:
            await asyncio.Event().wait()  # never set: only the budget ends it
        except asyncio.CancelledError:
            stopped.append(True)
            raise

    monkeypatch.setattr(verify_step, "verify", endless_verify)
    session = QESession(QERequest(repo, roles=["toy_tester"], timeout=2), bus=EventBus())
    report = asyncio.run(session.run())
    assert stopped == [True]  # verification ran and was stopped at the budget
    assert not report.timed_out and not report.cancelled
    assert {r.role: r.status for r in report.roles} == {"toy_tester": "ok"}
    assert len(report.findings) == 2
    assert report.patches and all(p.verified_by is None for p in report.patches)


def test_a_role_out_of_time_still_times_the_session_out(make_repo):
    repo = make_repo({"app.py": APP})
    session = QESession(QERequest(repo, roles=["toy_tester", "toy_slow"], timeout=2),
                        bus=EventBus())
    report = asyncio.run(session.run())
    assert report.timed_out


class UntilDeadline(Role):
    """Works until the deadline it is given, then returns what it found, as
    the security role does when bandit runs short of time."""

    name = "toy_until_deadline"
    tool = "toy"
    description = "works until its deadline"

    async def run(self, ctx: RoleContext) -> RoleOutput:
        await asyncio.sleep(ctx.remaining() or 0.0)
        found = Finding(role=self.name, tool=self.tool, rule_id="TOY3", title="found in time",
                        message="found in time", severity=Severity.low, file="app.py",
                        range=Range(start_line=5)).with_stable_id()
        return RoleOutput(findings=[found], status="incomplete",
                          reason="ran out of time: 3 files not scanned")


def test_a_role_that_returns_at_its_deadline_is_recorded_before_the_session_ends(
        make_repo, monkeypatch):
    """A role that stops at the deadline it was given, on a machine where
    recording its findings takes a while: the session has not timed out
    (exit 0/1, not 3), the role is incomplete with what it found."""
    repo = make_repo({"app.py": APP})
    monkeypatch.setitem(REGISTRY, "toy_until_deadline", f"{__name__}:UntilDeadline")
    real = role_runs.poll_guard

    def loaded_finish(s):
        time.sleep(0.6)  # a loaded machine's pace for a large role's findings
        real(s)

    monkeypatch.setattr(role_runs, "poll_guard", loaded_finish)
    report = asyncio.run(QESession(QERequest(repo, roles=["toy_until_deadline"], timeout=10),
                                   bus=EventBus()).run())
    assert not report.timed_out and not report.cancelled
    run = {r.role: r for r in report.roles}["toy_until_deadline"]
    assert run.status == "incomplete" and "3 files not scanned" in (run.reason or "")
    assert [f.rule_id for f in report.findings] == ["TOY3"]


def test_the_budget_counts_from_the_command_and_leaves_the_last_steps_their_share(make_repo):
    """The roles' deadline is the command's start (``started``: its imports
    before the session) plus the budget, less what the filter, verification,
    the revert and the report are kept."""
    repo = make_repo({"app.py": APP})
    began = time.monotonic() - 0.5
    session = QESession(QERequest(repo, roles=["toy_tester", "toy_slow"], timeout=10, started=began),
                        bus=EventBus())
    report = asyncio.run(session.run())
    assert report.timed_out
    deadline = session.role_runs.contexts["toy_slow"].deadline
    # a role is told to be done a little before the roles' deadline
    # (role_time.finish_reserve: its findings are recorded in between)
    roles_end = began + 10 - pipeline.tail_reserve(10)
    assert role_time.FINISH_MIN_S - 0.01 <= roles_end - deadline \
        <= max(role_time.FINISH_MIN_S, role_time.FINISH_SHARE * 10) + 0.01
    # a share of what is left, within bounds (a deep run's 30 minutes lose 5 s)
    assert [role_time.finish_reserve(x) for x in (5, 50, 100, 1500)] == [1.0, 1.5, 3.0, 5.0]
    assert [pipeline.tail_reserve(b) for b in (2, 60, 1800)] == [1.0, 9.0, 120.0]
    assert [pipeline.end_reserve(b) for b in (2, 60, 1800)] == [3.0, 6.0, 30.0]


def test_the_steps_after_the_roles_stop_at_their_share_and_say_so(make_repo, monkeypatch):
    """Out of time after the roles (here: the steps' share is all of the
    budget), the noise filter and verification stop: the findings are all
    there, unchecked and tagged, the fixes not verified and labelled so, the
    session has not timed out and says what was cut."""
    repo = make_repo({"app.py": APP})
    monkeypatch.setattr(pipeline, "end_reserve", lambda budget: budget)
    bus = EventBus()
    said: list[str] = []
    bus.subscribe(lambda e: said.append(e.data.get("message", "")) if e.type == "progress" else None)
    report = asyncio.run(QESession(QERequest(repo, roles=["toy_tester"], timeout=30), bus=bus).run())
    assert not report.timed_out and not report.cancelled
    assert len(report.findings) == 2
    assert all(UNFILTERED in f.tags for f in report.findings)
    assert any("noise filter stopped at the session budget: 2 finding(s)" in m for m in said)
    assert report.patches and all(not p.verified for p in report.patches)
    assert all(p.verification == verify_step.NO_TIME for p in report.patches)


def test_with_time_left_nothing_is_tagged_unfiltered(make_repo):
    repo = make_repo({"app.py": APP})
    report = asyncio.run(QESession(QERequest(repo, roles=["toy_tester"], timeout=60),
                                   bus=EventBus()).run())
    assert len(report.findings) == 2
    assert not any(UNFILTERED in f.tags for f in report.findings)
    assert report.patches and all(p.verification != verify_step.NO_TIME
                                  for p in report.patches)


def test_a_run_that_saves_nothing_ends_whole(make_repo):
    """Two roles, one done first (its findings' context checked early), no
    artifacts written (as the language server's file runs): the report is
    whole and the early checks were taken."""
    repo = make_repo({"app.py": APP})
    session = QESession(QERequest(repo, roles=["toy_tester", "toy_badfix"], timeout=60,
                                  save_artifacts=False), bus=EventBus())
    report = asyncio.run(session.run())
    assert {r.role: r.status for r in report.roles} == {"toy_tester": "ok", "toy_badfix": "ok"}
    assert report.findings and not report.artifacts.get("json")
    assert session.role_runs.early is not None and session.role_runs.early.stop.is_set()


def test_a_stop_while_a_finished_role_is_recorded_keeps_what_it_found(make_repo, monkeypatch):
    """The session's stop (its budget, a cancel) landing just after a role
    ended, while its guard events are read: the role is recorded as it
    ended, with its findings, never as "not started"."""
    import threading

    from superqode_ls.qe import role_runs

    repo = make_repo({"app.py": APP})
    reading, release = threading.Event(), threading.Event()
    real = role_runs.poll_guard

    def slow_poll(s):
        reading.set()
        release.wait(30)
        real(s)

    monkeypatch.setattr(role_runs, "poll_guard", slow_poll)
    session = QESession(QERequest(repo, roles=["toy_tester"], timeout=60), bus=EventBus())

    def stop_then_release():
        reading.wait(30)
        session.cancel()
        release.set()

    threading.Thread(target=stop_then_release, daemon=True).start()
    report = asyncio.run(session.run())
    assert report.cancelled
    assert {r.role: (r.status, r.reason) for r in report.roles} == {"toy_tester": ("ok", None)}
    assert len(report.findings) == 2
