"""A first quick run on a fresh clone whose environment takes longer to
build than a share of the budget: the unit role is skipped with one setup
line, the session ends in time (not timed out, no `fail`), the build goes on
in a detached builder, and the next run uses what it built. The slow build
is real: the project's own build backend takes its time, offline."""

from __future__ import annotations

import asyncio
import fcntl
import os
from pathlib import Path

import pytest

from superqode_ls.qe.pipeline import QERequest, QESession
from superqode_ls.qe.role_time import ENV_DEFERRED
from superqode_ls.workspace import envcache
from tests.pyenv_helpers import BACKEND, STUB, project_files, wheelhouse
from tests.waiting import wait_for

SLOW_S = 12  # the build backend's own time; the first run waits 3 s of its 9


@pytest.fixture(scope="module")
def wheels(tmp_path_factory) -> Path:
    return wheelhouse(tmp_path_factory.mktemp("wheels"))


def slow_project(make_repo, slow_s: float = SLOW_S, once: bool = False) -> Path:
    """``once``: only the first wheel build sleeps (uv builds one for the
    metadata and one to install), so the build takes ``slow_s`` and its
    overhead."""
    files = project_files("slowpkg", deps=[STUB])
    head = "def build_wheel(wheel_directory, config_settings=None, metadata_directory=None):\n"
    assert head in BACKEND
    sleep = f"    time.sleep({slow_s})\n"
    if once:
        sleep = ("    import pathlib\n    mark = pathlib.Path(__file__).with_name('.slept')\n"
                 f"    if not mark.exists():\n        mark.touch()\n    {sleep}")
    files["testbackend.py"] = "import time\n" + BACKEND.replace(head, head + sleep)
    files["tests/test_a.py"] = "import slowpkg\n\n\ndef test_a():\n    assert slowpkg.WHERE\n"
    return make_repo(files)


def builder_holds_the_lock() -> bool:
    for lock in envcache.envs_dir().glob("*.lock"):
        fd = os.open(lock, os.O_RDWR)
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            return True
        finally:
            os.close(fd)  # (releases it when it was ours)
    return False


def test_a_slow_first_build_is_left_to_the_background_and_the_next_run_uses_it(
        make_repo, wheels, monkeypatch):
    monkeypatch.setenv("UV_NO_INDEX", "1")
    monkeypatch.setenv("UV_FIND_LINKS", str(wheels))
    repo = slow_project(make_repo)
    roles = ["lint_tester", "unit_tester"]
    first = QESession(QERequest(repo, roles=roles, timeout=9))
    progress: list[str] = []
    first.bus.subscribe(lambda e: progress.append(str(e.data.get("message")))
                        if e.type == "progress" else None)
    try:
        report = asyncio.run(first.run())
        unit = next(r for r in report.roles if r.role == "unit_tester")
        assert unit.status == "skipped" and unit.reason.startswith(ENV_DEFERRED), unit.reason
        # One line: what is built, when a run can use it, where to look.
        assert "still being built from pyproject.toml" in unit.reason, unit.reason
        assert "env-build.log" in unit.reason and "at most 10 min" in unit.reason, unit.reason
        # The tests did not run: never a pass, never a fail.
        assert not report.timed_out and report.verdict == "conditional", report.verdict
        assert report.duration_s < 9
        assert any("the build goes on in the background" in m for m in progress), progress
        builder = first.role_runs.background_build
        assert builder is not None
        # A run while the builder still builds waits the same share for it
        # (on its lock), then skips the same way: never the budget's end.
        wait_for(builder_holds_the_lock, 120, "the detached builder's lock")
        again = QESession(QERequest(repo, roles=roles, timeout=9))
        report = asyncio.run(again.run())
        unit = next(r for r in report.roles if r.role == "unit_tester")
        assert unit.status == "skipped" and unit.reason.startswith(ENV_DEFERRED), unit.reason
        assert not report.timed_out and report.verdict == "conditional", report.verdict
    finally:
        for s in (first, again) if "again" in locals() else (first,):
            b = s.role_runs.background_build
            if b is not None:
                assert b.wait(timeout=300) == 0  # the detached build finished, and well
    third = asyncio.run(QESession(QERequest(repo, roles=roles, timeout=120)).run())
    unit = next(r for r in third.roles if r.role == "unit_tester")
    assert unit.status == "ok", (unit.status, unit.reason)
    assert third.interpreter is not None and third.interpreter.source == "built"


def test_a_build_that_ends_while_the_tests_still_have_time_runs_them_on_the_first_run(
        make_repo, wheels, monkeypatch):
    """The wait goes past its first third of the budget for as long as the
    tests still have their share after it: a build of 81 s and more in a
    240 s budget (once given up at 80 s, now at about 179 s: room for a
    loaded machine's overhead) ends in time and the first run runs the tests."""
    monkeypatch.setenv("UV_NO_INDEX", "1")
    monkeypatch.setenv("UV_FIND_LINKS", str(wheels))
    repo = slow_project(make_repo, 81, once=True)
    session = QESession(QERequest(repo, roles=["lint_tester", "unit_tester"], timeout=240))
    try:
        report = asyncio.run(session.run())
    finally:
        if session.role_runs.background_build is not None:  # (the old wait's hand-over)
            session.role_runs.background_build.wait(timeout=300)
    unit = next(r for r in report.roles if r.role == "unit_tester")
    assert unit.status == "ok" and "1 passed" in (unit.reason or ""), (unit.status, unit.reason)
    assert session.role_runs.background_build is None
    assert report.interpreter is not None and report.interpreter.source == "built"
