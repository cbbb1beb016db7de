"""The warm helper starts a bandit server ahead of each run (qe/roles/_bandit_spare.py):
the run handed to it next takes that server as its own warm bandit, and
only that run uses it."""

from __future__ import annotations

import json
import os
import selectors
import time

import pytest

from superqode_ls.qe.roles import _bandit_spare, _bandit_warm
from superqode_ls.qe.roles._bandit_spare import Spare
from superqode_ls.runtime import Runtime
from superqode_ls.workspace import landlock, namespaces

from .warm_helpers import Warm, cold_env, running, state, superqe, wait_exit

pytestmark = pytest.mark.skipif(_bandit_warm.starting(Runtime.foreground()) is None,
                                reason="no bandit beside this interpreter, or no Landlock")

FILES = {"app.py": "import subprocess\n\n\ndef f(x):\n"
                   "    return subprocess.call(x, shell=True)\n",
         # bandit's finding decides the exit: the whole view, where the
         # default one makes a shell call no input reaches an advisory
         "superqode.yaml": "qe:\n  default_view: all\n"}
ARGS = ("--mode", "quick", "-r", "security_tester", "--jsonl")


@pytest.fixture
def warm():
    yield from running()


def spare_pid(other_than: int | None = None) -> int:
    """The helper's ready spare (waited for: bandit's imports take their time)."""
    deadline = time.monotonic() + 120
    while time.monotonic() < deadline:
        pid = (state() or {}).get("spare")
        if pid and pid != other_than:
            return pid
        time.sleep(0.1)
    raise AssertionError(f"no spare bandit server came up (state: {state()})")


def bandit_calls(stdout: str) -> list[dict]:
    events = [json.loads(line) for line in stdout.splitlines() if line.startswith("{")]
    return [e["data"] for e in events if e["type"] == "tool_call" and e["data"]["tool"] == "bandit"]


def findings(stdout: str) -> list[tuple]:
    events = [json.loads(line) for line in stdout.splitlines() if line.startswith("{")]
    return sorted((f["rule_id"], f["file"], f["range"]["start_line"])
                  for f in (e["data"]["finding"] for e in events if e["type"] == "finding"))


def test_the_next_run_takes_the_spare_and_it_serves_that_run_only(make_repo, warm):
    repo = make_repo(FILES)
    first = spare_pid()
    hot = superqe("run", str(repo), *ARGS)
    assert hot.returncode == 1, hot.stderr  # the finding below
    assert [c.get("warm") for c in bandit_calls(hot.stdout)] == [True]
    # The run ended its server with it; the helper reaped it and started the next.
    assert wait_exit(first, 30)
    second = spare_pid(other_than=first)
    assert second != first
    cold = superqe("run", str(repo), *ARGS, env=cold_env())
    assert findings(hot.stdout) and findings(hot.stdout) == findings(cold.stdout)


def test_a_run_that_runs_bandit_as_a_command_stops_the_spare(make_repo, warm):
    repo = make_repo(FILES)
    first = spare_pid()
    env = {**os.environ, "SUPERQODE_RUN_BANDIT": "command"}
    res = superqe("run", str(repo), *ARGS, env=env)
    assert res.returncode == 1, res.stderr
    assert [c.get("warm") for c in bandit_calls(res.stdout)] == [None]
    assert wait_exit(first, 30)
    assert spare_pid(other_than=first) != first


def test_a_command_that_runs_no_bandit_leaves_the_spare_to_the_next_run(make_repo, warm):
    repo = make_repo(FILES)
    first = spare_pid()
    res = superqe("exec", str(repo), "--", "true")
    assert res.returncode == 0, res.stderr
    assert state()["runs"] == 1
    assert state()["spare"] == first


@pytest.mark.skipif(not namespaces.active(), reason="no namespace sandbox to compare")
def test_a_spare_less_sandboxed_than_the_runs_own_is_not_taken(monkeypatch):
    """A helper started with SUPERQODE_NAMESPACES=off starts its spare with
    no namespace sandbox; a run whose client has the sandbox stops it and
    starts its own."""
    sel = selectors.DefaultSelector()
    spare = Spare(sel)
    monkeypatch.setenv(namespaces.OFF_ENV, "off")
    try:
        spare.launch()
        while spare.fd is not None:
            for key, _ in sel.select(timeout=120):
                key.data(key.fileobj)
        pid = spare.ready_pid()
        assert pid is not None
        monkeypatch.delenv(namespaces.OFF_ENV)
        spare.in_child()  # as the run's child takes it
        assert _bandit_spare.adopt(Runtime.foreground()) is None
        assert wait_exit(pid, 30)  # stopped, not left running
    finally:
        spare.stop()
        sel.close()
        namespaces.forget()
        landlock.forget()


def test_a_helper_whose_spare_cannot_start_still_serves_runs(make_repo):
    """SUPERQODE_NICE that is not a number in the helper's environment: no
    spare (the run starts its own bandit), and the helper stays up."""
    env = {**os.environ, "SUPERQODE_NICE": "high"}
    started = superqe("warm", "start", "--idle", "10", env=env)
    assert started.returncode == 0, started.stderr
    helper = Warm()
    helper.pid = int(started.stdout.split("(pid ", 1)[1].split(",", 1)[0])
    try:
        repo = make_repo(FILES)
        res = superqe("run", str(repo), *ARGS)
        assert res.returncode == 1, res.stderr
        assert state()["runs"] == 1 and state()["spare"] is None
        assert [c.get("warm") for c in bandit_calls(res.stdout)] == [True]  # its own server
    finally:
        helper.stop()
