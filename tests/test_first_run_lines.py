"""What a new user reads on a first run whose project environment is being
built: the build's own progress lines in plain words (another run's build
waited for, a build stopped before it finished), and, when the tests must
wait for the next run, one summary line saying so that keeps the verdict
from ``pass``."""

from __future__ import annotations

import fcntl
import os
import threading

from superqode_ls.models import QualityReport, RoleRun, utcnow
from superqode_ls.qe.display import summary_lines
from superqode_ls.qe.report.verdict import compute_verdict
from superqode_ls.qe.role_time import ENV_DEFERRED, env_deferred, env_wait_until
from superqode_ls.workspace import envcache
from tests.pyenv_helpers import STUB, project_files
from tests.test_project_env import write
from tests.test_project_env_build import offline, resolve, wheels  # noqa: F401


def test_a_stopped_build_and_another_runs_build_are_said_in_plain_words(tmp_path, offline):  # noqa: F811
    root = write(tmp_path / "p", {**project_files("mylib", deps=[STUB]),
                                  "tests/test_a.py": "def test_a():\n    pass\n"})
    built = resolve(root)
    assert built.source == "built", built
    target = next(p for p in envcache.envs_dir().iterdir() if p.is_dir())
    # A build cut short (a quick run's hand-over, Ctrl-C) leaves no manifest.
    envcache.manifest_path(target).unlink()
    progress: list[str] = []
    assert resolve(root, progress).source == "built"
    stopped = [m for m in progress if "stopped before it finished" in m]
    assert stopped == [("environment: the last build of it was stopped before it finished; "
                        "building it again (what it downloaded is reused)")], progress
    assert not any("unfinished build" in m for m in progress), progress
    # Another run's (a detached builder's) build holds the environment's lock.
    fd = os.open(envcache.envs_dir() / f"{target.name}.lock", os.O_RDWR)
    fcntl.flock(fd, fcntl.LOCK_EX)
    progress.clear()
    said = threading.Event()

    def emit_seen() -> None:
        said.wait(120)
        os.close(fd)  # its build ended: the lock is free

    releaser = threading.Thread(target=emit_seen)
    releaser.start()
    try:
        class Watch(list):
            def append(self, m):  # the line is said while the lock is still held
                super().append(m)
                if "still building it" in m:
                    said.set()

        progress = Watch()
        assert resolve(root, progress).source == "built"
    finally:
        said.set()
        releaser.join()
    waiting = [m for m in progress if "still building it" in m]
    assert waiting == [("environment: an earlier run is still building it (in the background, "
                        "from pyproject.toml); waiting for that build to finish")], progress
    assert not any(target.name in m for m in waiting)


def test_tests_left_for_the_next_run_are_one_plain_line_and_no_pass():
    line = env_deferred("poetry.lock; groups dev", None, 600)
    assert line.startswith(ENV_DEFERRED) and "from poetry.lock, groups dev;" in line, line
    report = QualityReport(project="/p", session_id="qe-20260101-000000-abcdef", mode="quick",
                           isolation="worktree", started_at=utcnow(), roles=[RoleRun(role="lint_tester", status="ok"),
                                  RoleRun(role="unit_tester", status="skipped", reason=line)])
    # No finding, but the tests did not run: never "pass".
    assert compute_verdict(report) == "conditional"
    report.verdict = compute_verdict(report)
    lines = summary_lines(report)
    assert line.removeprefix("setup: ") in lines, lines
    assert not any(x.startswith("role unit_tester") for x in lines), lines
    # A role the mode chose not to run keeps the pass.
    other = report.model_copy(update={"roles": [RoleRun(
        role="unit_tester", status="skipped", reason="no tests: no test files")]})
    assert compute_verdict(other) == "pass"


def test_the_wait_lasts_while_the_tests_keep_their_share():
    # A quick run's 60 s: the roles are told to end at ~49.5 s; the wait
    # ends when 10 s are left for the tests, no longer at 20 s.
    assert env_wait_until(0.0, 49.5, 60, 20) == 39.5
    # A short budget keeps the first third.
    assert env_wait_until(0.0, 6.0, 9, 20) == 4.5


def test_a_suite_that_could_not_run_here_is_never_a_pass_nor_a_fail():
    # A build that failed, or test modules that do not import: a setup line,
    # no finding. The tests said nothing, so the verdict cannot be "pass".
    for line in ("setup: the project's environment could not be built: "
                 "requirements.txt and requirements-dev.txt pin attrs differently",
                 "setup: 3 test module(s) cannot be imported here: No module named 'gdal'"):
        report = QualityReport(project="/p", session_id="qe-20260101-000000-abcdef", mode="quick",
                               isolation="worktree", started_at=utcnow(),
                               roles=[RoleRun(role="lint_tester", status="ok"),
                                      RoleRun(role="unit_tester", status="skipped",
                                              reason=line)])
        assert compute_verdict(report) == "conditional", line
