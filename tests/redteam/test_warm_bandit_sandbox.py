"""The language server's warm bandit runs inside a namespace sandbox.

It forks a child per "Run QE on this file"; the child applied the session's
Landlock write rules and nothing else, so a crafted file that exploited
bandit's parser would have had the user's read access (``~/.ssh``) and the
network. The server now starts, once, inside a namespace sandbox of its own
(read-only root, secrets masked, no network, its own pid namespace), and
forks its children there: no process start per request. Its timeout is
enforced inside (a pid of its pid namespace means nothing outside).

Needs the namespace sandbox (below it the server keeps the sessions'
Landlock-only level).
"""

from __future__ import annotations

import asyncio
import os
from pathlib import Path

import psutil
import pytest

from superqode_ls.runtime import Runtime
from superqode_ls.workspace import namespaces
from superqode_ls.workspace.session import IsolatedSession

pytestmark = pytest.mark.skipif(
    not namespaces.active(),
    reason="no namespace sandbox (this system, SUPERQODE_NAMESPACES=off or "
    "SUPERQODE_LANDLOCK=off): the warm bandit keeps the level sessions have")


@pytest.fixture
def key(isolated_home) -> Path:
    ssh = isolated_home / ".ssh"
    ssh.mkdir()
    (ssh / "id_rsa").write_text("PRIVATE KEY\n")
    return ssh / "id_rsa"


@pytest.fixture
def warm(key):
    from superqode_ls.qe.roles import _bandit_warm

    server = _bandit_warm.start(Runtime.background())
    assert server is not None, "bandit is in SuperQode's environment"
    yield server
    server.stop()


def _server_process(warm) -> psutil.Process:
    top = psutil.Process(warm._proc.pid)
    (proc,) = [p for p in [top, *top.children(recursive=True)]
               if p.cmdline()[-1:] and p.cmdline()[-1].endswith("_bandit_server.py")
               and not any(a.endswith("landlock.py") for a in p.cmdline())  # (its supervisor)
               and p.name().startswith("python")]
    return proc


def test_the_warm_server_cannot_read_secrets_or_reach_the_network(warm, key):
    server = _server_process(warm)
    # Its view of the file system is its mount namespace's (/proc/PID/root).
    seen = f"/proc/{server.pid}/root{key}"
    try:
        with open(seen, encoding="utf-8") as fh:
            leaked = "PRIVATE KEY" in fh.read()
    except OSError:
        leaked = False
    assert not leaked, "the warm bandit could read ~/.ssh/id_rsa"
    for ns in ("net", "pid", "mnt"):
        assert os.readlink(f"/proc/{server.pid}/ns/{ns}") != os.readlink(f"/proc/self/ns/{ns}"), \
            f"the warm bandit shares the host's {ns} namespace"


def test_the_warm_server_still_serves_a_session_and_times_out_inside(warm, make_repo):
    repo = make_repo({"app.py": "import subprocess\nsubprocess.call('x', shell=True)\n"})
    with IsolatedSession.create_sync(repo) as s:
        res = asyncio.run(warm.run(["-f", "json", "-q", "app.py"], s.sandbox, s.env(), 60))
        assert res is not None and res.returncode == 1 and "B602" in res.stdout, res
        # Out of time: the child is killed inside the server's pid namespace,
        # and the server serves the next run.
        res = asyncio.run(warm.run(["-f", "json", "-q", "app.py"], s.sandbox, s.env(), 0))
        assert res is not None and res.timed_out
        res = asyncio.run(warm.run(["-f", "json", "-q", "app.py"], s.sandbox, s.env(), 60))
        assert res is not None and res.returncode == 1 and "B602" in res.stdout, res


def test_a_session_that_hides_more_is_not_served(warm, make_repo, isolated_home):
    """A session's own ``sandbox.hide`` the server's sandbox does not mask:
    the command runs instead, in the session's sandbox."""
    (isolated_home / "corp").mkdir()
    repo = make_repo({"app.py": "x = 1\n",
                      "superqode.yaml": "sandbox:\n  hide: ['~/corp']\n"})
    with IsolatedSession.create_sync(repo) as s:
        assert asyncio.run(warm.run(["-q", "app.py"], s.sandbox, s.env(), 60)) is None
