"""Red team: the warm helper holds a bandit server started ahead of the next
run (qe/roles/_bandit_spare.py). Its stdin is a channel that asks for bandit children
with whatever Landlock rules a request names, so a session's process that
could write to it could have a process started under rules of its choosing.
From inside a real session handed to the helper (``superqe exec``), a
process tries every way to that channel it has:

- a descriptor inherited from the helper or from the run's own process
  (the run took that very server at its fork, so the pipe's write end is
  open in the process that started the session's command);
- opening the server's stdin, or the run's process's descriptors, by
  /proc paths (with namespaces the server's pid is not in the session's pid
  namespace; with Landlock only, Landlock forbids reaching into a process
  outside the session's domain).

None may reach it, and the server still serves no request but the run's."""

from __future__ import annotations

import json
import os
import sys

import pytest

from superqode_ls.qe.roles import _bandit_warm
from superqode_ls.runtime import Runtime
from superqode_ls.workspace import landlock, namespaces

from ..test_warm_spare import spare_pid
from ..warm_helpers import SUPERQE, Warm, running, state, superqe

pytestmark = pytest.mark.skipif(
    landlock.abi() is None or _bandit_warm.starting(Runtime.foreground()) is None,
    reason="no Landlock (guard only: no kernel barrier to hold), or no bandit")


@pytest.fixture
def warm():
    yield from running()


ATTACK = r"""
import json, os, sys
server, target = int(sys.argv[1]), sys.argv[2]
mine = {}
for fd in os.listdir("/proc/self/fd"):
    try:
        mine[fd] = os.readlink(f"/proc/self/fd/{fd}")
    except OSError:
        pass
reached = [fd for fd, t in mine.items() if t == target]
request = json.dumps({"argv": ["--version"], "cwd": "/", "env": {}, "allow": ["/"], "abi": 1,
                      "timeout": 5}) + "\n"
opened = []
paths = [f"/proc/{server}/fd/0"]
try:
    paths += [f"/proc/{os.getppid()}/fd/{n}" for n in os.listdir(f"/proc/{os.getppid()}/fd")]
except OSError:
    pass
for path in paths:
    try:
        if os.readlink(path) != target:
            continue
    except OSError:
        pass  # not even its name: try to open it all the same
    try:
        with open(path, "w") as fh:
            fh.write(request)
        opened.append(path)
    except OSError:
        pass
print(json.dumps({"inherited": reached, "opened": opened, "fds": sorted(mine)}))
"""


def channel_of(spare: int) -> tuple[int, str]:
    """The process of the spare's tree that reads the requests, and its stdin
    (the request pipe): the spare itself under bubblewrap; below SuperQode's
    own namespace launcher and the Landlock supervisor without it (their
    stdin is /dev/null; the pipe is handed on to the server)."""
    import psutil

    top = psutil.Process(spare)
    for proc in [top, *top.children(recursive=True)]:
        try:
            link = os.readlink(f"/proc/{proc.pid}/fd/0")
        except OSError:
            continue
        if link.startswith("pipe:"):
            return proc.pid, link
    raise AssertionError(f"no process of the spare {spare} reads a pipe")


def test_a_sessions_process_cannot_reach_the_spare_servers_channel(make_repo, warm):
    repo = make_repo({"app.py": "x = 1\n"})
    server, channel = channel_of(spare_pid())
    res = superqe("exec", str(repo), "--", sys.executable, "-c", ATTACK, str(server), channel)
    assert state()["runs"] == 1, res.stderr  # handed to the helper, whose run took the server
    assert res.returncode == 0, res.stderr
    seen = json.loads(res.stdout.strip().splitlines()[-1])
    assert seen["inherited"] == [], seen
    assert seen["opened"] == [], seen


@pytest.mark.skipif(not namespaces.active(), reason="no namespace sandbox to lose")
def test_a_helper_started_without_namespaces_does_not_lend_that_to_a_run(make_repo):
    """The helper detects the sandbox's layers to start its spare, with its
    own environment: a run it forks must detect them again with its
    client's, not inherit "SUPERQODE_NAMESPACES=off" from whoever started
    the helper (a spare less sandboxed than the run's own is not taken:
    test_warm_spare)."""
    repo = make_repo({"app.py": "x = 1\n"})
    env = {**os.environ, namespaces.OFF_ENV: "off"}
    started = superqe("warm", "start", "--idle", "10", env=env)
    assert started.returncode == 0, started.stderr
    helper = Warm()
    helper.pid = int(started.stdout.split("(pid ", 1)[1].split(",", 1)[0])
    try:
        spare_pid()  # its spare (no namespace sandbox) is up: the detection happened
        mine = os.readlink("/proc/self/ns/pid")
        env = {k: v for k, v in os.environ.items() if k != namespaces.OFF_ENV}
        res = superqe("exec", str(repo), "--", "readlink", "/proc/self/ns/pid", env=env)
        assert state()["runs"] == 1, res.stderr
        assert res.returncode == 0, res.stderr
        assert res.stdout.strip() != mine, "the run's command was not in its own namespaces"
    finally:
        helper.stop()


def test_a_run_killed_mid_bandit_takes_its_server_with_it(make_repo, warm):
    """The run's own server died with it (bwrap --die-with-parent); the
    spare's parent is the helper, so the helper ends it when the run ends,
    before the client hears of the end: no analysis of that session's files
    goes on after the session's process is gone."""
    import subprocess

    import psutil

    body = "import subprocess\n\n\n" + "".join(
        f"def f{i}(x):\n    return subprocess.call(x, shell=True)\n\n\n" for i in range(150))
    repo = make_repo({f"pkg/m{n}.py": body for n in range(120)})
    server = spare_pid()
    proc = subprocess.Popen([*SUPERQE, "run", str(repo), "--mode", "quick", "-r", "security_tester",
                             "--jsonl"], stdout=subprocess.PIPE, stderr=subprocess.DEVNULL,
                            text=True)
    try:
        for line in proc.stdout:
            if '"tool_call"' in line and '"warm":true' in line:
                break  # bandit is being served by the spare
        else:
            raise AssertionError("the run's bandit was not served warm")
        helper = psutil.Process(warm.pid)
        (run,) = [c for c in helper.children() if c.cmdline() == helper.cmdline()]
        run.kill()
        proc.stdout.read()
        assert proc.wait(timeout=60) != 0
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
    assert not psutil.pid_exists(server), "the spare server outlived the run it served"
