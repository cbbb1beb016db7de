"""Red team, issue 26: what Landlock alone leaves open, tried from inside a
real session (`superqe exec`) — metadata changes (chmod, chown, utimes,
xattrs, inode flags) on the user's files, their .git and HOME; reading
planted secrets; provider keys in the environment; a loopback server outside;
the desktop. Each attack must fail and leave everything as it was; the
network opt-in must open exactly the network. Skipped, with the reason, where
the namespace sandbox is unavailable; the protection level is asserted at
every level."""

from __future__ import annotations

import hashlib
import json
import os
import shutil
import socket
import subprocess
import sys
import threading
from pathlib import Path

import pytest

from superqode_ls.workspace import landlock, namespaces

from ..conftest import run_git
from ..safety_helpers import content_fingerprint, leftovers

SUPERQE = [sys.executable, "-m", "superqode_ls"]

needs_ns = pytest.mark.skipif(
    not namespaces.active(),
    reason=("no namespace sandbox here: "
            + ("no Landlock" if landlock.abi() is None else str(namespaces.unavailable_reason()))),
)


def superqe(*args: str, env: dict[str, str] | None = None) -> subprocess.CompletedProcess:
    return subprocess.run([*SUPERQE, *args], capture_output=True, text=True, timeout=120,
                          check=False, env=env)


def run_inside(repo: Path, code: str, env: dict[str, str] | None = None
               ) -> tuple[subprocess.CompletedProcess, dict]:
    """Run Python ``code`` in a session of ``repo``; it prints one JSON line last."""
    proc = superqe("exec", str(repo), "--", sys.executable, "-c", code, env=env)
    lines = [ln for ln in proc.stdout.splitlines() if ln.startswith("{")]
    assert lines, proc.stdout + proc.stderr
    return proc, json.loads(lines[-1])


@pytest.fixture
def user_repo(make_repo):
    repo = make_repo({"tracked.txt": "one\n", "src/app.py": "x = 1\n"}, name="user repo")
    (repo / "tracked.txt").write_text("unstaged\n")
    return repo


def _xattrs(p: Path) -> dict[str, bytes]:
    try:
        return {n: os.getxattr(p, n) for n in os.listxattr(p)}
    except OSError:
        return {}


def _lsattr(p: Path) -> str | None:
    if shutil.which("lsattr") is None:
        return None
    res = subprocess.run(["lsattr", "-d", str(p)], capture_output=True, text=True, check=False)
    return res.stdout.split()[0] if res.returncode == 0 and res.stdout else None


def _meta(p: Path) -> tuple:
    st = os.lstat(p)
    # Not atime: reading a file (the session copies it) moves that.
    return (st.st_mode, st.st_uid, st.st_gid, st.st_mtime_ns,
            hashlib.sha256(p.read_bytes()).hexdigest(), _xattrs(p), _lsattr(p))


_METADATA = r"""
import errno, json, os, shutil, subprocess, sys
out = {}
for t in sys.argv[1:]:
    codes = {}
    for name, f in (("chmod", lambda: os.chmod(t, 0o777)),
                    ("chown", lambda: os.chown(t, 4242, 4242)),
                    ("utime", lambda: os.utime(t, (1, 1))),
                    ("touch -d", lambda: subprocess.run(["touch", "-d", "2001-01-01", t],
                                                        check=True, capture_output=True)),
                    ("setxattr", lambda: os.setxattr(t, "user.evil", b"1")),
                    ("chattr +i", lambda: subprocess.run(["chattr", "+i", t], check=True,
                                                         capture_output=True))):
        if name == "chattr +i" and shutil.which("chattr") is None:
            continue
        try:
            f()
            codes[name] = "ok"
        except OSError as e:
            codes[name] = errno.errorcode.get(e.errno, str(e.errno))
        except subprocess.CalledProcessError as e:
            codes[name] = "failed: " + e.stderr.decode(errors="replace").strip()[-80:]
    out[t] = codes
print(json.dumps(out))
"""


@needs_ns
def test_metadata_changes_fail_on_user_files_git_and_home(user_repo, isolated_home):
    targets = [user_repo / "tracked.txt", user_repo / ".git" / "config",
               isolated_home / ".gitconfig"]
    before = {t: _meta(t) for t in targets}
    fp = content_fingerprint(user_repo)
    code = _METADATA.replace("sys.argv[1:]", repr([str(t) for t in targets]))
    proc, codes = run_inside(user_repo, code)
    assert "Verified" in proc.stderr, proc.stderr
    for t in targets:
        got = codes[str(t)]
        assert got and all(v != "ok" for v in got.values()), (t, got)
        # The read-only bind says so for the direct calls, whoever we are.
        for name in ("chmod", "utime", "setxattr"):
            assert got[name] == "EROFS", (t, name, got)
        assert before[t] == _meta(t), t
    assert content_fingerprint(user_repo) == fp
    assert leftovers() == []


@needs_ns
def test_planted_secrets_cannot_be_read(user_repo, isolated_home):
    (isolated_home / ".ssh").mkdir()
    (isolated_home / ".ssh" / "id_rsa").write_text("-----BEGIN FAKE KEY 51-----\n")
    (isolated_home / ".netrc").write_text("machine x login u password NETRC-SECRET-52\n")
    (isolated_home / ".aws").mkdir()
    (isolated_home / ".aws" / "credentials").write_text("aws_secret_access_key=AWS-SECRET-53\n")
    (isolated_home / "notes").mkdir()
    (isolated_home / "notes" / "plan.txt").write_text("EXTRA-SECRET-54\n")
    (user_repo / "superqode.yaml").write_text("sandbox:\n  hide: [~/notes]\n")
    code = (
        "import json, os\n"
        "h = os.environ['HOME']\n"
        "seen = {}\n"
        "for rel in ('.ssh/id_rsa', '.netrc', '.aws/credentials', 'notes/plan.txt'):\n"
        "    try:\n"
        "        seen[rel] = open(os.path.join(h, rel)).read()\n"
        "    except OSError as e:\n"
        "        seen[rel] = type(e).__name__\n"
        "seen['ls .ssh'] = os.listdir(os.path.join(h, '.ssh'))\n"
        "print(json.dumps(seen))\n"
    )
    proc, seen = run_inside(user_repo, code)
    assert seen["ls .ssh"] == []
    assert seen[".ssh/id_rsa"] == "FileNotFoundError"
    assert seen[".aws/credentials"] == "FileNotFoundError"
    assert seen["notes/plan.txt"] == "FileNotFoundError"
    # A file is masked by /dev/null on a nodev mount: opening it is refused.
    assert seen[".netrc"] == "PermissionError"
    for secret in ("FAKE KEY 51", "NETRC-SECRET-52", "AWS-SECRET-53", "EXTRA-SECRET-54"):
        assert secret not in proc.stdout + proc.stderr
    # Outside, nothing was touched.
    assert (isolated_home / ".ssh" / "id_rsa").read_text() == "-----BEGIN FAKE KEY 51-----\n"


def test_provider_keys_and_desktop_never_reach_the_command(user_repo):
    """At every level: the environment is scrubbed where the session makes it."""
    env = {**os.environ, "OPENAI_API_KEY": "sk-red-61", "ANTHROPIC_API_KEY": "sk-red-62",
           "GH_TOKEN": "gh-red-63", "AWS_SECRET_ACCESS_KEY": "aws-red-64",
           "MY_SERVICE_PASSWORD": "pw-red-65", "HF_TOKEN": "hf-red-66",
           "SSH_AUTH_SOCK": "/tmp/agent.sock", "DISPLAY": ":0", "WAYLAND_DISPLAY": "wayland-0",
           "DBUS_SESSION_BUS_ADDRESS": "unix:path=/run/user/0/bus", "KEEP_ME": "kept-67"}
    proc = superqe("exec", str(user_repo), "--", "env", env=env)
    assert proc.returncode == 0, proc.stderr
    names = {ln.split("=", 1)[0] for ln in proc.stdout.splitlines() if "=" in ln}
    for k in ("OPENAI_API_KEY", "ANTHROPIC_API_KEY", "GH_TOKEN", "AWS_SECRET_ACCESS_KEY",
              "MY_SERVICE_PASSWORD", "HF_TOKEN", "SSH_AUTH_SOCK", "DISPLAY", "WAYLAND_DISPLAY",
              "DBUS_SESSION_BUS_ADDRESS", "SUPERQODE_BARRIER_ALLOW", "SUPERQODE_CONFINE"):
        assert k not in names, k
    assert "red-6" not in proc.stdout
    assert "KEEP_ME=kept-67" in proc.stdout  # not an empty environment


class _Server:
    """A loopback TCP server outside every sandbox."""

    def __init__(self):
        self.sock = socket.socket()
        self.sock.bind(("127.0.0.1", 0))
        self.sock.listen()
        self.port = self.sock.getsockname()[1]
        self.accepted = 0
        self.thread = threading.Thread(target=self._serve, daemon=True)
        self.thread.start()

    def _serve(self):
        while True:
            try:
                conn, _ = self.sock.accept()
            except OSError:
                return
            self.accepted += 1
            conn.sendall(b"hello")
            conn.close()

    def close(self):
        self.sock.close()
        self.thread.join(5)


_CONNECT = (
    "import json, socket\n"
    "try:\n"
    "    s = socket.create_connection(('127.0.0.1', {port}), timeout=5)\n"
    "    print(json.dumps({{'got': s.recv(5).decode()}}))\n"
    "except OSError as e:\n"
    "    print(json.dumps({{'got': type(e).__name__}}))\n"
)


@needs_ns
def test_loopback_server_outside_is_unreachable_unless_network_host(user_repo):
    server = _Server()
    try:
        _, res = run_inside(user_repo, _CONNECT.format(port=server.port))
        assert res["got"] == "ConnectionRefusedError" and server.accepted == 0
        (user_repo / "superqode.yaml").write_text("sandbox:\n  network: host\n")
        _, res = run_inside(user_repo, _CONNECT.format(port=server.port))
        assert res["got"] == "hello" and server.accepted == 1
        status = subprocess.run([*SUPERQE, "status"], capture_output=True, text=True,
                                cwd=user_repo, timeout=60, check=False)
        how = "direct, " if namespaces.backend() == namespaces.DIRECT else ""
        assert f"protection: namespaces + Landlock ({how}network: host)" in status.stdout
    finally:
        server.close()


@needs_ns
def test_no_desktop_and_no_view_of_outside_processes(user_repo, isolated_home, monkeypatch):
    run = isolated_home / "run"
    run.mkdir(mode=0o700)
    bus = socket.socket(socket.AF_UNIX)
    bus.bind(str(run / "bus"))
    bus.listen()
    monkeypatch.setenv("XDG_RUNTIME_DIR", str(run))
    code = (
        "import json, os, socket\n"
        "r = os.environ.get('XDG_RUNTIME_DIR', '')\n"
        "s = socket.socket(socket.AF_UNIX)\n"
        "try:\n"
        "    s.connect(os.path.join(r, 'bus')); bus = 'connected'\n"
        "except OSError as e:\n"
        "    bus = type(e).__name__\n"
        f"print(json.dumps({{'bus': bus, 'runtime': os.listdir(r), 'outside': {os.getpid()} in "
        "[int(p) for p in os.listdir('/proc') if p.isdigit()], 'display': "
        "os.environ.get('DISPLAY'), 'dbus': os.environ.get('DBUS_SESSION_BUS_ADDRESS')}))\n"
    )
    desktop = {"DISPLAY": ":0", "DBUS_SESSION_BUS_ADDRESS": f"unix:path={run}/bus"}
    try:
        _, res = run_inside(user_repo, code, env={**os.environ, **desktop})
    finally:
        bus.close()
    assert res == {"bus": "FileNotFoundError", "runtime": [], "outside": False,
                   "display": None, "dbus": None}


@needs_ns
def test_git_and_the_sandbox_still_work_inside(user_repo):
    code = (
        "import json, subprocess\n"
        "def git(*a):\n"
        "    r = subprocess.run(['git', *a], capture_output=True, text=True)\n"
        "    return r.returncode, r.stdout.strip()\n"
        "open('new.txt', 'w').write('made inside\\n')\n"
        "print(json.dumps({'status': git('status', '--porcelain'), 'log': git('log', '--oneline'),"
        " 'cat': git('cat-file', '-t', 'HEAD'), 'diff': git('diff', '--stat')}))\n"
    )
    proc, res = run_inside(user_repo, code)
    assert res["status"][0] == 0 and "?? new.txt" in res["status"][1], res
    assert "M tracked.txt" in res["status"][1]
    assert res["log"][0] == 0 and res["log"][1]
    assert res["cat"] == [0, "commit"]
    assert "1 file(s) changed" in proc.stderr and "Verified" in proc.stderr


def _level(env: dict[str, str]) -> str:
    out = superqe("status", env=env).stdout
    return next(ln for ln in out.splitlines() if ln.startswith("protection: "))[12:]


@pytest.mark.skipif(landlock.abi() is None, reason="this kernel has no Landlock")
def test_protection_level_at_each_level(user_repo):
    base = {**os.environ}
    if namespaces.active():
        # Which backend made it is said: bwrap's is the plain level.
        assert _level(base) == ("namespaces + Landlock (direct)"
                                if namespaces.backend() == namespaces.DIRECT
                                else "namespaces + Landlock")
    assert _level({**base, "SUPERQODE_NAMESPACES": "off"}) == (
        "Landlock only (metadata, network and secrets open)")
    assert _level({**base, "SUPERQODE_NAMESPACES": "off", "SUPERQODE_LANDLOCK": "off"}) == (
        "guard only")
    assert _level({**base, "SUPERQODE_LANDLOCK": "off"}) == "guard only"


@pytest.mark.skipif(landlock.abi() is None, reason="this kernel has no Landlock")
def test_require_barrier_demands_namespaces(user_repo):
    (user_repo / "superqode.yaml").write_text("workspace:\n  require_barrier: true\n")
    run_git(user_repo, "add", "superqode.yaml")
    before = content_fingerprint(user_repo)
    off = {**os.environ, "SUPERQODE_NAMESPACES": "off"}
    proc = superqe("exec", str(user_repo), "--", "true", env=off)
    lines = proc.stderr.strip().splitlines()
    assert proc.returncode == 2 and len(lines) == 1, proc.stderr
    assert "require_barrier" in lines[0] and "namespace" in lines[0]
    assert content_fingerprint(user_repo) == before and leftovers() == []
    # "landlock" asks for the write barrier only.
    (user_repo / "superqode.yaml").write_text("workspace:\n  require_barrier: landlock\n")
    proc = superqe("exec", str(user_repo), "--", "true", env=off)
    assert proc.returncode == 0, proc.stderr
    if namespaces.active():
        (user_repo / "superqode.yaml").write_text("workspace:\n  require_barrier: true\n")
        assert superqe("exec", str(user_repo), "--", "true").returncode == 0


@needs_ns
@pytest.mark.skipif(os.geteuid() != 0, reason="as a regular user /dev's nodes are root's: "
                    "the kernel refuses chmod")
def test_root_inside_cannot_change_the_hosts_device_nodes(user_repo):
    nodes = ["/dev/null", "/dev/zero", "/dev/urandom", "/dev/tty"]
    before = {n: os.stat(n) for n in nodes}
    code = (
        "import json, os\n"
        f"nodes = {nodes!r}\n"
        "res = {}\n"
        "for n in nodes:\n"
        "    try:\n"
        "        os.chmod(n, 0o600); os.chown(n, 4242, 4242); res[n] = 'changed'\n"
        "    except OSError as e:\n"
        "        res[n] = e.strerror\n"
        "print(json.dumps(res))\n"
    )
    try:
        run_inside(user_repo, code)
        after = {n: os.stat(n) for n in nodes}
        for n in nodes:
            assert (after[n].st_mode, after[n].st_uid, after[n].st_gid) == (
                before[n].st_mode, before[n].st_uid, before[n].st_gid), n
    finally:  # should the attack ever work, give the machine its devices back
        for n, st in before.items():
            os.chown(n, st.st_uid, st.st_gid)
            os.chmod(n, st.st_mode & 0o7777)


@needs_ns
def test_the_language_servers_tcp_token_cannot_be_read(user_repo):
    # A session that read the token of a `superqode-ls --tcp` started before
    # it could connect to the editor's server in its place.
    run = Path(os.environ["SUPERQODE_HOME"]) / "run"
    run.mkdir(parents=True, exist_ok=True)
    (run / "ls-4567.token").write_text("TCP-TOKEN-61\n")
    code = (
        "import json, os\n"
        "p = os.path.join(os.environ['SUPERQODE_HOME'], 'run', 'ls-4567.token')\n"
        "try:\n"
        "    seen = open(p).read()\n"
        "except OSError as e:\n"
        "    seen = type(e).__name__\n"
        "print(json.dumps({'token': seen}))\n"
    )
    proc, seen = run_inside(user_repo, code)
    assert seen["token"] == "FileNotFoundError"
    assert "TCP-TOKEN-61" not in proc.stdout + proc.stderr
    assert (run / "ls-4567.token").read_text() == "TCP-TOKEN-61\n"
