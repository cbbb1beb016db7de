"""Red team: the warm helper runs commands outside every sandbox, so a
session's process that got a command line into it would be out. From
inside real sessions (``superqe exec``) a test connects to the helper's
socket and asks, with the real client's request (the standard streams and a
working folder attached), for ``status`` and for ``suggestions apply``:

- namespaces + Landlock: the socket's folder is masked (the connect fails);
- Landlock only: the socket is reachable, the helper refuses the peer (it
  runs with no_new_privs, which Landlock set and nothing unsets);
- guard only: no kernel barrier tells a session's process from the user's;
  such a session can run anything outside without the helper (the level's
  own limit, docs/safety.md), and the test shows that the helper cannot
  tell either.

Outside sessions each kernel check is tried alone: a process with
no_new_privs, one in its own user and mount namespaces; and a helper
started with no_new_privs refuses to start. Nothing is ever run for them."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from superqode_ls.cli import warm_client
from superqode_ls.workspace import landlock, namespaces

from ..warm_helpers import cold_env, running, state, superqe


@pytest.fixture
def warm():
    yield from running()

ATTACK = r"""
import json, os, socket, sys
sock_path, home = sys.argv[1], sys.argv[2]
os.environ["SUPERQODE_HOME"] = home
os.environ["SUPERQODE_WARM"] = "verbose"
from superqode_ls.cli import warm_client as wc
out = {"nnp": [l.split()[1] for l in open("/proc/self/status") if l.startswith("NoNewPrivs")][0]}
for argv in (["status"], ["suggestions", "apply", "--all"]):
    s = socket.socket(socket.AF_UNIX, socket.SOCK_SEQPACKET)
    try:
        s.connect(sock_path)
    except OSError as e:
        out[argv[0]] = {"connect": type(e).__name__}
        continue
    cwd = os.open(".", os.O_PATH)
    try:
        wc.send(s, wc.request(argv), [0, 1, 2, cwd])
    except OSError as e:
        out.setdefault("send_errors", []).append(type(e).__name__)  # refused at connect
    reply = wc.receive(s)
    out[argv[0]] = {"connect": "ok", "reply": reply}
    s.close()  # never "go": a child the helper forked for us ends unrun
out["handoff"] = wc.handoff(["status"])
print(json.dumps(out))
"""


def _attack(repo, env: dict[str, str]) -> dict:
    sock = os.path.join(warm_client.folder(), warm_client.SOCKET_NAME)
    proc = superqe("exec", str(repo), "--", sys.executable, "-c", ATTACK, sock,
                   warm_client.home(), env=env)
    lines = [ln for ln in proc.stdout.splitlines() if ln.startswith("{")]
    assert lines, proc.stdout + proc.stderr
    return json.loads(lines[-1])


@pytest.fixture
def repo(make_repo):
    return make_repo({"app.py": "x = 1\n"}, name="user repo")


@pytest.mark.skipif(not namespaces.active(), reason="no namespace sandbox here")
def test_inside_the_namespace_sandbox_the_socket_is_not_there(repo, warm):
    out = _attack(repo, cold_env())
    assert out["nnp"] == "1"
    assert out["status"] == {"connect": "FileNotFoundError"}
    assert out["suggestions"] == {"connect": "FileNotFoundError"}
    assert out["handoff"] is None
    assert state()["runs"] == 0


@pytest.mark.skipif(landlock.abi() is None, reason="no Landlock here")
def test_with_landlock_only_the_helper_refuses_the_peer(repo, warm):
    out = _attack(repo, cold_env(SUPERQODE_NAMESPACES="off"))
    assert out["nnp"] == "1"
    for command in ("status", "suggestions"):
        assert out[command]["connect"] == "ok"
        assert out[command]["reply"]["ok"] is False
        assert "no_new_privs" in out[command]["reply"]["why"]
    assert out["handoff"] is None
    assert state()["runs"] == 0
    log = Path(warm_client.home(), "logs", "warm.log").read_text()
    assert log.count("no_new_privs (a session's process)") >= 3


def test_at_guard_only_the_helper_cannot_tell_a_session_apart(repo, warm):
    """The level's limit, shown: the peer checks pass (no kernel barrier).
    The command filter still refuses what the client never hands off."""
    out = _attack(repo, cold_env(SUPERQODE_LANDLOCK="off"))
    assert out["nnp"] == "0"
    assert out["suggestions"]["reply"] == {"ok": False, "why": "not a command the helper runs"}
    # Past the peer checks: only what any client must match stands between.
    status = out["status"]["reply"]
    assert status["ok"] is True or not status["why"].startswith("refused:")


NNP_CLIENT = r"""
import ctypes, os, sys
assert ctypes.CDLL(None, use_errno=True).prctl(38, 1, 0, 0, 0) == 0  # PR_SET_NO_NEW_PRIVS
os.environ["SUPERQODE_WARM"] = "verbose"
from superqode_ls.cli import warm_client as wc
print(wc.handoff(["status"]))
"""


def test_a_process_with_no_new_privs_is_refused(warm):
    res = subprocess.run([sys.executable, "-c", NNP_CLIENT], capture_output=True, text=True,
                         timeout=120, check=False)
    assert res.stdout.strip() == "None", res.stderr
    assert "runs with no_new_privs" in res.stderr
    assert state()["runs"] == 0


def _unshare() -> str | None:
    tool = shutil.which("unshare")
    if tool is None:
        return None
    probe = subprocess.run([tool, "--user", "--map-current-user", "--mount", "true"],
                           capture_output=True, check=False)
    return tool if probe.returncode == 0 else None


@pytest.mark.skipif(_unshare() is None, reason="no unprivileged user namespaces here")
def test_a_process_in_other_namespaces_is_refused(warm):
    code = ("import os; os.environ['SUPERQODE_WARM'] = 'verbose';"
            "from superqode_ls.cli import warm_client as wc; print(wc.handoff(['status']))")
    res = subprocess.run([_unshare(), "--user", "--map-current-user", "--mount", sys.executable,
                          "-c", code], capture_output=True, text=True, timeout=120, check=False)
    assert res.stdout.strip() == "None", res.stderr
    assert "is in another mnt namespace" in res.stderr or "is in another user namespace" in \
        res.stderr, res.stderr
    assert state()["runs"] == 0


def test_a_helper_with_no_new_privs_does_not_start():
    code = ("import ctypes, sys; ctypes.CDLL(None).prctl(38, 1, 0, 0, 0);"
            "from superqode_ls.cli import warm_server; sys.exit(warm_server.main(['--idle', '60']))")
    res = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         timeout=120, check=False)
    assert res.returncode == 2
    assert not os.path.exists(os.path.join(warm_client.folder(), warm_client.SOCKET_NAME))
