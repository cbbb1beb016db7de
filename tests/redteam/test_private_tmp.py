"""Red team: the session's own /tmp. Tests write fixed paths under /tmp
(supervisor's ``/tmp/foo``); inside the namespace sandbox /tmp is the
session's private temp folder, bound writable over the real one. From inside
a real session (`superqe exec`), through both backends (bwrap and the direct
launcher): the real /tmp's files and sockets (an agent's, the desktop's) are
not seen, not reachable by path, /proc or a socket connect, and not
writable; what the session wrote is gone with it. Where the private /tmp
cannot be given (the project lies beneath the real /tmp), the real one stays
read-only, as strict as before. Skipped, with the reason, where the
namespace sandbox is unavailable or no folder outside /tmp can be made."""

from __future__ import annotations

import json
import os
import shutil
import socket
import subprocess
import sys
import tempfile
import uuid
from pathlib import Path

import pytest

from superqode_ls.workspace import landlock, namespaces

from ..conftest import run_git
from ..safety_helpers import content_fingerprint, leftovers

needs_ns = pytest.mark.skipif(
    not namespaces.active(),
    reason=("no namespace sandbox here: "
            + ("no Landlock" if landlock.abi() is None else str(namespaces.unavailable_reason()))),
)

# SuperQode's own interpreter under /tmp (a virtualenv made there): a private
# /tmp would hide it, so none is given (the fail-closed case, tested below).
own_python_outside_tmp = pytest.mark.skipif(
    any(os.path.realpath(p) == "/tmp" or os.path.realpath(p).startswith("/tmp/")
        for p in (sys.prefix, sys.base_prefix, sys.executable)),
    reason="SuperQode's interpreter lives under /tmp: no private /tmp is given there")

BACKENDS = [pytest.param({}, id="bwrap"), pytest.param({namespaces.BWRAP_ENV: "off"}, id="direct")]

_INSIDE = r"""
import errno, json, os, socket, tempfile
plant, sock, mine = PLANT, SOCK, MINE
out = {"listing": sorted(os.listdir("/tmp")), "tmpdir": tempfile.gettempdir()}
def code(f):
    try:
        f()
        return "ok"
    except OSError as e:
        return errno.errorcode.get(e.errno, str(e.errno))
out["read plant"] = code(lambda: open(plant).read())
out["read via /proc"] = code(lambda: open("/proc/1/root" + plant).read())
try:
    out["proc listing"] = sorted(os.listdir("/proc/1/root/tmp"))
except OSError:
    out["proc listing"] = []  # refused: nothing seen
s = socket.socket(socket.AF_UNIX)
out["connect"] = code(lambda: s.connect(sock))
def write():
    with open(mine, "w") as fh:
        fh.write("x")
out["write /tmp"] = code(write)
out["read back"] = open(mine).read() if out["write /tmp"] == "ok" else None
out["replace plant"] = code(lambda: os.replace(mine, plant) if os.path.exists(mine) else None)
print(json.dumps(out))
"""


@pytest.fixture
def outside_tmp(monkeypatch):
    """A project and SuperQode's home outside the real /tmp (as on a
    developer's machine: ~/code, ~/.superqode)."""
    base = None
    for parent in ("/var/tmp", os.path.expanduser("~")):
        try:
            base = Path(tempfile.mkdtemp(prefix="sq-private-tmp-", dir=parent))
        except OSError:
            continue
        if os.path.realpath(base).startswith(os.path.realpath("/tmp") + "/"):
            shutil.rmtree(base)
            base = None
            continue
        break
    if base is None:
        pytest.skip("no writable folder outside /tmp for the project")
    home = base / "home"
    for sub in (".config", ".local/share", ".local/state", ".cache"):
        (home / sub).mkdir(parents=True)
    gitconfig = home / ".gitconfig"
    gitconfig.write_text("[user]\n\tname = T\n\temail = t@example.com\n"
                         "[init]\n\tdefaultBranch = main\n")
    monkeypatch.setenv("HOME", str(home))
    monkeypatch.setenv("SUPERQODE_HOME", str(home / ".superqode"))
    monkeypatch.setenv("GIT_CONFIG_GLOBAL", str(gitconfig))
    for var, sub in (("XDG_CONFIG_HOME", ".config"), ("XDG_DATA_HOME", ".local/share"),
                     ("XDG_STATE_HOME", ".local/state"), ("XDG_CACHE_HOME", ".cache")):
        monkeypatch.setenv(var, str(home / sub))
    repo = base / "repo"
    repo.mkdir()
    run_git(repo, "init", "-q")
    (repo / "app.py").write_text("x = 1\n")
    run_git(repo, "add", "-A")
    run_git(repo, "commit", "-q", "-m", "initial")
    yield repo
    shutil.rmtree(base, ignore_errors=True)


@pytest.fixture
def planted():
    """A file and a listening socket of another program in the real /tmp."""
    tag = uuid.uuid4().hex[:12]
    plant = Path("/tmp") / f"sq-plant-{tag}"
    plant.write_text("the user's secret\n")
    sock_path = f"/tmp/sq-agent-{tag}.sock"
    server = socket.socket(socket.AF_UNIX)
    server.bind(sock_path)
    server.listen(1)
    mine = f"/tmp/sq-written-{tag}"
    yield plant, sock_path, mine, server
    server.close()
    for p in (str(plant), sock_path, mine):
        if os.path.lexists(p):
            os.unlink(p)


def _run(repo: Path, code: str, extra: dict[str, str]) -> tuple[subprocess.CompletedProcess,
                                                                  dict | None]:
    env = {**os.environ, **extra}
    proc = subprocess.run([sys.executable, "-m", "superqode_ls", "exec", str(repo), "--",
                           sys.executable, "-c", code], capture_output=True, text=True,
                          timeout=120, check=False, env=env)
    lines = [ln for ln in proc.stdout.splitlines() if ln.startswith("{")]
    return proc, (json.loads(lines[-1]) if lines else None)


@needs_ns
@own_python_outside_tmp
@pytest.mark.parametrize("backend", BACKENDS)
def test_session_tmp_is_private_writable_and_shows_nothing_of_the_real_one(
        outside_tmp, planted, backend):
    plant, sock_path, mine, server = planted
    before = os.listdir("/tmp")
    fp = content_fingerprint(outside_tmp)
    code = (_INSIDE.replace("PLANT", repr(str(plant))).replace("SOCK", repr(sock_path))
            .replace("MINE", repr(mine)))
    proc, got = _run(outside_tmp, code, backend)
    assert got is not None, proc.stdout + proc.stderr
    assert "Verified" in proc.stderr, proc.stderr
    # Written and read back inside: the tests' fixed /tmp paths work.
    assert got["write /tmp"] == "ok" and got["read back"] == "x", got
    # Nothing of the real /tmp: not listed, not by path, not through /proc.
    names = {plant.name, os.path.basename(sock_path), *before}
    assert not names & set(got["listing"]), got["listing"]
    assert not names & set(got["proc listing"]), got["proc listing"]
    assert got["read plant"] == "ENOENT", got
    assert got["read via /proc"] in ("ENOENT", "EACCES"), got
    # Another program's socket there cannot be reached.
    assert got["connect"] == "ENOENT", got
    server.settimeout(0.5)
    with pytest.raises(OSError):
        server.accept()
    # The session's TMPDIR is the same folder (seen at its own path too).
    assert got["tmpdir"] != "/tmp" and os.path.basename(got["tmpdir"]) == "tmp", got
    # The real /tmp: untouched; the session's own is gone with it.
    assert plant.read_text() == "the user's secret\n"
    assert not os.path.lexists(mine)
    assert not os.path.exists(got["tmpdir"]), got["tmpdir"]
    assert content_fingerprint(outside_tmp) == fp
    assert leftovers() == []


@needs_ns
def test_without_a_private_tmp_the_real_one_stays_read_only(make_repo, planted):
    """The project beneath the real /tmp (the private one would hide it): the
    real /tmp is seen as before, read-only; nothing is written there."""
    plant, sock_path, mine, _ = planted
    repo = make_repo({"app.py": "x = 1\n"})
    assert os.path.realpath(repo).startswith(os.path.realpath("/tmp") + "/")
    code = (_INSIDE.replace("PLANT", repr(str(plant))).replace("SOCK", repr(sock_path))
            .replace("MINE", repr(mine)))
    proc, got = _run(repo, code, {})
    assert got is not None, proc.stdout + proc.stderr
    assert got["write /tmp"] in ("EROFS", "EACCES"), got
    assert plant.name in got["listing"]  # the real one, as before
    assert not os.path.lexists(mine)
    assert plant.read_text() == "the user's secret\n"


@needs_ns
def test_the_plan_gives_the_private_tmp_only_where_nothing_lies_beneath_the_real_one(
        outside_tmp, tmp_path):
    """At wrap time: the private /tmp is bound first, and masks beneath the
    real /tmp are left out (a mount point for one would be made in the
    session's own folder); a writable folder beneath the real /tmp (an
    agent's own) would be hidden by it, so then none is given."""
    own = outside_tmp.parent / "own-tmp"
    own.mkdir()
    x11 = tmp_path / "x11"  # a desktop socket folder beneath the real /tmp
    x11.mkdir()
    spec = json.dumps({"network": "none", "hide": [str(x11)], "tmp": str(own)})
    _, _, ops = namespaces._plan([str(outside_tmp), str(own)], {landlock.SPEC_ENV: spec})
    assert ops[0] == ("tmp", str(own)), ops
    assert all(path != str(x11) for _, path in ops), ops
    # Only a folder the session may write anyway.
    _, _, ops = namespaces._plan([str(outside_tmp)], {landlock.SPEC_ENV: spec})
    assert all(op != "tmp" for op, _ in ops), ops
    _, _, ops = namespaces._plan([str(outside_tmp), str(own), str(tmp_path)],
                                 {landlock.SPEC_ENV: spec})
    assert all(op != "tmp" for op, _ in ops), ops
    assert ("hide-dir", str(x11)) in ops  # the real /tmp, with its masks, as before


@needs_ns
def test_the_direct_launcher_fails_closed_without_its_tmp_folder(tmp_path):
    """``--tmp`` naming no folder: nothing runs (never the real /tmp instead)."""
    marker = tmp_path / "ran"
    argv = namespaces._direct(["/bin/sh", "-c", f"touch {marker}"], ops=[
        ("tmp", str(tmp_path / "missing"))])
    res = subprocess.run(argv, capture_output=True, text=True, timeout=60, check=False)
    assert res.returncode == 126, res.stderr
    assert "private /tmp" in res.stderr
    assert not marker.exists()
