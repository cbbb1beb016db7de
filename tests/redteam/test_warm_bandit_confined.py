"""The warm bandit serves a session's run and nothing else, and a run reads
and writes only its session's tree.

Its long-lived namespace sandbox had `$SUPERQODE_HOME/working` and `cache/`
writable, a request with no session behind it (no "allow") ran with only
that, and a run could read anything the user can (the user's project, other
sessions' sandboxes). Now the server's sandbox is read-only throughout (a
run writes nothing: bandit's report comes back on the pipe), a request that
names no session is refused by the server (fail closed) and not sent by the
language server's side, and each child's Landlock rules allow reads only
beneath its session's folders and the interpreter's.
"""

from __future__ import annotations

import asyncio
import json
import os

import pytest

from superqode_ls.qe.roles import _bandit_server
from superqode_ls.runtime import Runtime
from superqode_ls.workspace import landlock, namespaces
from superqode_ls.workspace.session import IsolatedSession

FINDING = "import subprocess\nsubprocess.call('x', shell=True)\n"  # bandit's B602
needs_landlock = pytest.mark.skipif(
    landlock.abi() is None,
    reason="no Landlock (this kernel, or SUPERQODE_LANDLOCK=off): the warm bandit serves "
    "no run (the command runs it), and nothing confines a child's reads")


@pytest.fixture
def warm():
    from superqode_ls.qe.roles import _bandit_warm

    server = _bandit_warm.start(Runtime.background())
    assert server is not None, "bandit is in SuperQode's environment"
    yield server
    server.stop()


def test_a_request_with_no_session_is_refused(warm, tmp_path):
    """At every level: nothing to confine it to, so nothing runs."""
    (tmp_path / "app.py").write_text(FINDING)
    report = tmp_path / "report.json"
    argv = ["-f", "json", "-o", str(report), "app.py"]
    bare = {k: v for k, v in os.environ.items() if k != landlock.ALLOW_ENV}
    # The language server's side does not send it (the command runs it instead)...
    assert asyncio.run(warm.run(argv, tmp_path, bare, 30)) is None
    # ...and the server refuses one sent anyway, with no session or an empty one.
    for allow in (None, []):
        req = {"argv": argv, "cwd": str(tmp_path), "env": bare, "allow": allow,
               "abi": landlock.abi() or 7, "timeout": 30}
        reply = asyncio.run(asyncio.to_thread(warm._exchange, req, 30))
        assert reply is not None and reply["rc"] == _bandit_server.BARRIER_FAILED, reply
        assert "refused" in reply["err"]
        assert not report.exists(), "a request with no session ran bandit unconfined"


@needs_landlock
def test_a_run_cannot_read_outside_its_session(warm, make_repo, tmp_path):
    repo = make_repo({"app.py": "x = 1\n"})
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    (elsewhere / "leak.py").write_text(FINDING)
    (repo / "mine.py").write_text(FINDING)  # the user's own file, after the session began
    other = make_repo({"theirs.py": FINDING}, name="other")
    with IsolatedSession.create_sync(repo) as s, IsolatedSession.create_sync(other) as o:
        # Its own tree it reads (the result is bandit's).
        (s.sandbox / "own.py").write_text(FINDING)
        res = asyncio.run(warm.run(["-f", "json", "-q", "own.py"], s.sandbox, s.env(), 60))
        assert res is not None and "B602" in res.stdout, res
        for target in (elsewhere / "leak.py", repo / "mine.py", o.sandbox / "theirs.py"):
            res = asyncio.run(warm.run(["-f", "json", "-q", str(target)], s.sandbox, s.env(),
                                       60))
            assert res is not None, "not served"
            found = json.loads(res.stdout)["results"] if res.stdout.strip() else []
            assert not found, f"a run read {target}, outside its session"


@needs_landlock
def test_a_run_cannot_write_outside_its_session(warm, make_repo):
    repo = make_repo({"app.py": "x = 1\n"})
    other = make_repo({"b.py": "y = 2\n"}, name="other")
    with IsolatedSession.create_sync(repo) as s, IsolatedSession.create_sync(other) as o:
        targets = [repo / "report.json", o.sandbox / "report.json"]
        if namespaces.active():
            # The server's sandbox is read-only throughout: not even its
            # session's tree is written by a run (nothing needs it).
            targets.append(s.sandbox / "report.json")
        for target in targets:
            res = asyncio.run(warm.run(["-f", "json", "-o", str(target), "app.py"],
                                       s.sandbox, s.env(), 60))
            assert res is not None and res.returncode != 0, (target, res)
            assert not target.exists(), f"a run wrote {target}"
