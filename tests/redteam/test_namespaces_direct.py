"""Red team, issue 26: the namespace sandbox without bubblewrap.

SuperQode's own launcher (workspace/unshare.py) must give what bwrap gives.
Two parts:

- every attack of test_namespace_sandbox.py again, from a real
  ``superqe exec``, with bwrap hidden (``SUPERQODE_BWRAP=off``): metadata
  writes fail, ~/.ssh is unreadable, keys are not in the environment, a
  loopback server outside is unreachable, no desktop socket, root's /dev
  unchanged. (Where bwrap is missing, that file already runs on the direct
  launcher and these reruns are skipped.)
- attacks on the launcher itself: a nested user namespace that tries to
  unmount a mask or make the view writable, capabilities and
  no_new_privs, the launcher killed (nothing of the namespace survives),
  bad arguments, and the same run as a regular user (``setpriv``) when
  the tests run as root.
"""

from __future__ import annotations

import contextlib
import inspect
import json
import os
import shlex
import shutil
import signal
import subprocess
import sys
import tempfile
from pathlib import Path

import pytest

from superqode_ls.workspace import landlock, namespaces
from tests.safety_helpers import WAIT_FOR_GROUP_NICE

from . import test_namespace_sandbox as base
from .test_namespace_sandbox import user_repo  # noqa: F401 (the reruns' fixture)

_WHY_NOT = ("not Linux" if sys.platform != "linux"
            else "no Landlock" if landlock.abi() is None
            else f"{namespaces.OFF_ENV}=off" if os.environ.get(namespaces.OFF_ENV) == "off"
            else namespaces._probe(namespaces._direct([])))
needs_direct = pytest.mark.skipif(_WHY_NOT is not None,
                                  reason=f"the direct namespace launcher cannot run here: {_WHY_NOT}")


@pytest.fixture
def direct(monkeypatch):
    """This process and every ``superqe`` it starts on the direct launcher."""
    monkeypatch.setenv(namespaces.BWRAP_ENV, "off")
    monkeypatch.setattr(namespaces, "_detected", (namespaces.DIRECT, None))


_RERUN = pytest.mark.skipif(namespaces.backend() == namespaces.DIRECT,
                            reason="the direct launcher is this machine's backend: "
                                   "test_namespace_sandbox.py runs on it already")


def _rerun(test):
    """``test`` from test_namespace_sandbox.py, on the direct launcher."""
    def run(direct, *args, **kwargs):
        test(*args, **kwargs)
    # pytest reads the fixtures a test wants from its signature.
    params = list(inspect.signature(test).parameters.values())
    run.__signature__ = inspect.Signature(
        [inspect.Parameter("direct", inspect.Parameter.POSITIONAL_OR_KEYWORD), *params])
    run.__doc__ = test.__doc__
    return needs_direct(_RERUN(run))


test_direct_metadata_changes_fail = _rerun(
    base.test_metadata_changes_fail_on_user_files_git_and_home)
test_direct_planted_secrets_cannot_be_read = _rerun(base.test_planted_secrets_cannot_be_read)
test_direct_provider_keys_never_reach_the_command = _rerun(
    base.test_provider_keys_and_desktop_never_reach_the_command)
test_direct_loopback_server_outside_is_unreachable = _rerun(
    base.test_loopback_server_outside_is_unreachable_unless_network_host)
test_direct_no_desktop_and_no_view_of_outside_processes = _rerun(
    base.test_no_desktop_and_no_view_of_outside_processes)
test_direct_git_and_the_sandbox_still_work_inside = _rerun(
    base.test_git_and_the_sandbox_still_work_inside)
test_direct_protection_level = _rerun(base.test_protection_level_at_each_level)
test_direct_tcp_token_cannot_be_read = _rerun(
    base.test_the_language_servers_tcp_token_cannot_be_read)
test_direct_root_cannot_change_the_hosts_device_nodes = pytest.mark.skipif(
    os.geteuid() != 0, reason="as a regular user /dev's nodes are root's")(
    _rerun(base.test_root_inside_cannot_change_the_hosts_device_nodes))


# -- the launcher itself --------------------------------------------------------
def _launch(args: list[str], code: str, *, python: str = sys.executable,
            launcher: str = namespaces._UNSHARE, user: list[str] = (),
            timeout: int = 60) -> subprocess.CompletedProcess:
    """Run Python ``code`` (without site: it may not see this virtualenv) in
    the launcher's sandbox."""
    return subprocess.run([*user, python, "-I", "-S", launcher, *args, "--", python, "-I", "-S",
                           "-c", code], capture_output=True, text=True, timeout=timeout,
                          check=False, stdin=subprocess.DEVNULL)


_PROBE = r"""
import ctypes, errno, json, os, subprocess
libc = ctypes.CDLL(None, use_errno=True)
def err(f):
    try:
        f(); return "ok"
    except OSError as e:
        return errno.errorcode.get(e.errno, str(e.errno))
def mount(src, dst, fstype, flags):
    if libc.mount(src, dst.encode(), fstype, ctypes.c_ulong(flags), None) != 0:
        e = ctypes.get_errno(); raise OSError(e, os.strerror(e))
status = dict(l.split(":\t", 1) for l in open("/proc/self/status").read().splitlines() if ":\t" in l)
out = {"uid": os.getuid(), "pid": os.getpid(),
       "caps": [status[k].strip() for k in ("CapPrm", "CapEff", "CapBnd", "CapAmb", "CapInh")],
       "nnp": status["NoNewPrivs"].strip(),
       "write_root": err(lambda: open("/ns26-planted", "w")),
       "write_bound": err(lambda: open(os.path.join(BOUND, "made"), "w").close()),
       "secret": err(lambda: open(os.path.join(SECRET, "id_rsa")).read()),
       "remount": err(lambda: mount(None, "/", None, 32 | 4096)),
       "devnull_chmod": err(lambda: os.chmod("/dev/null", 0o600)),
       "devnull_write": err(lambda: open("/dev/null", "w").write("x")),
       "sysctl": err(lambda: open("/proc/sys/vm/drop_caches", "w").close()),
       "pids": sorted(int(p) for p in os.listdir("/proc") if p.isdigit())}
# A nested user + mount namespace: root there, over mounts that are locked.
CLONE_NEWUSER, CLONE_NEWNS = 0x10000000, 0x00020000
pid = os.fork()
if pid == 0:
    r = {}
    if libc.unshare(CLONE_NEWUSER | CLONE_NEWNS) != 0:
        r["unshare"] = errno.errorcode[ctypes.get_errno()]
    else:
        r["unshare"] = "ok"
        r["umount_mask"] = err(lambda: (libc.umount2(SECRET.encode(), 2) == 0) or
                               (_ for _ in ()).throw(OSError(ctypes.get_errno(), "")))
        r["secret"] = err(lambda: open(os.path.join(SECRET, "id_rsa")).read())
        r["rw_again"] = err(lambda: mount(None, "/", None, 32 | 4096))
        r["write_root"] = err(lambda: open("/ns26-planted", "w"))
    print(json.dumps(r), flush=True)
    os._exit(0)
os.waitpid(pid, 0)
print(json.dumps(out), flush=True)
"""


def _world_readable_dir() -> Path:
    d = Path(tempfile.mkdtemp(prefix="sq-ns26-"))
    d.chmod(0o755)
    return d


@pytest.fixture
def layout():
    """A secret folder to hide and a folder to bind writable, both reachable
    by any user (for the setpriv run)."""
    d = _world_readable_dir()
    try:
        (d / "home" / ".ssh").mkdir(parents=True)
        (d / "home" / ".ssh" / "id_rsa").write_text("NS26-KEY\n")
        (d / "bound").mkdir()
        for p in (d / "home", d / "home" / ".ssh", d / "bound"):
            p.chmod(0o777)
        (d / "home" / ".ssh" / "id_rsa").chmod(0o644)
        shutil.copy(namespaces._UNSHARE, d / "unshare.py")
        # (it loads its sibling, as beside it in SuperQode's package)
        shutil.copy(Path(namespaces._UNSHARE).with_name("landlock.py"), d / "landlock.py")
        yield d
    finally:
        shutil.rmtree(d, ignore_errors=True)


def _check_launch(proc: subprocess.CompletedProcess, uid: int) -> None:
    lines = [json.loads(ln) for ln in proc.stdout.splitlines() if ln.startswith("{")]
    assert proc.returncode == 0 and len(lines) == 2, proc.stdout + proc.stderr
    nested, out = lines
    assert out["uid"] == uid
    assert out["caps"] == ["0000000000000000"] * 5 and out["nnp"] == "1"
    assert out["write_root"] == "EROFS" and out["write_bound"] == "ok"
    assert out["secret"] == "ENOENT"  # an empty folder over ~/.ssh
    assert out["remount"] == "EPERM"
    assert out["devnull_chmod"] in ("EROFS", "EPERM") and out["devnull_write"] == "ok"
    assert out["sysctl"] in ("EROFS", "EACCES")
    # The command is the namespace's first process, in a /proc of its own.
    assert out["pids"] == [out["pid"]] == [1]
    # The nested namespace may exist; nothing beneath it is unlocked.
    if nested["unshare"] == "ok":
        assert nested["umount_mask"] in ("EINVAL", "EPERM"), nested
        assert nested["secret"] == "ENOENT" and nested["write_root"] == "EROFS", nested
        assert nested["rw_again"] in ("EPERM", "EINVAL"), nested


@needs_direct
def test_launcher_masks_seals_and_drops_everything(layout):
    code = _PROBE.replace("BOUND", repr(str(layout / "bound"))).replace(
        "SECRET", repr(str(layout / "home" / ".ssh")))
    proc = _launch(["--bind", str(layout / "bound"), "--hide-dir", str(layout / "home" / ".ssh")],
                   code)
    _check_launch(proc, os.getuid())
    assert (layout / "bound" / "made").exists() and not Path("/ns26-planted").exists()
    assert (layout / "home" / ".ssh" / "id_rsa").read_text() == "NS26-KEY\n"


@needs_direct
@pytest.mark.skipif(os.geteuid() != 0 or shutil.which("setpriv") is None
                    or not os.path.exists("/usr/bin/python3"),
                    reason="the regular-user run needs root, setpriv and /usr/bin/python3")
def test_launcher_as_a_regular_user(layout):
    """The user-namespace path (the one a desktop user gets), from a root
    test run: as nobody, with a system interpreter nobody can reach."""
    code = _PROBE.replace("BOUND", repr(str(layout / "bound"))).replace(
        "SECRET", repr(str(layout / "home" / ".ssh")))
    proc = _launch(["--bind", str(layout / "bound"), "--hide-dir", str(layout / "home" / ".ssh")],
                   code, python="/usr/bin/python3", launcher=str(layout / "unshare.py"),
                   user=["setpriv", "--reuid", "65534", "--regid", "65534", "--clear-groups"])
    if "user namespace" in proc.stderr or "unshare: " in proc.stderr:
        pytest.skip(f"unprivileged user namespaces are off here: {proc.stderr.strip()}")
    _check_launch(proc, 65534)
    assert os.stat(layout / "bound" / "made").st_uid == 65534


@needs_direct
def test_bad_arguments_fail_closed():
    for args in (["--bind", "relative"], ["--nope"], ["--hide-dir"]):
        proc = _launch(args, "open('/tmp/ns26-ran', 'w')")
        assert proc.returncode == 126 and proc.stderr.count("\n") == 1, (args, proc.stderr)
        assert "superqode namespaces: " in proc.stderr
    assert not os.path.exists("/tmp/ns26-ran")


def _outside(marker: str) -> list[int]:
    out = []
    for p in os.listdir("/proc"):
        try:
            with open(f"/proc/{p}/cmdline", "rb") as fh:
                if marker.encode() in fh.read():
                    out.append(int(p))
        except (OSError, ValueError):
            pass
    return out


@contextlib.contextmanager
def _started(argv: list[str]):
    """``argv`` in a session of its own, its output piped; killed at the end
    if still running."""
    proc = subprocess.Popen(argv, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, start_new_session=True, text=True)
    try:
        yield proc
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
        proc.stdout.close()
        proc.stderr.close()


@needs_direct
def test_killing_the_launcher_ends_the_whole_namespace():
    """kill -9 of whatever started the sandbox: nothing in it survives, a
    setsid daemon included (the first process dies with the launcher, and
    the pid namespace with its first process)."""
    marker = f"ns26-daemon-{os.getpid()}"
    sleeper = f"print('ready', flush=True); import time; time.sleep(300)  # {marker}"
    daemon = (f"import os, time\nif os.fork() == 0:\n    os.setsid()\n"
              f"    os.execvp({sys.executable!r}, [{sys.executable!r}, '-I', '-S', '-c', "
              f"{sleeper!r}])\ntime.sleep(300)  # {marker}\n")
    with _started(namespaces._direct([sys.executable, "-I", "-S", "-c", daemon])) as proc:
        assert proc.stdout.readline() == "ready\n", proc.stderr.read()
        assert len(_outside(marker)) == 3  # the launcher (its argv), the command, the daemon
        os.kill(proc.pid, signal.SIGKILL)
        proc.wait(30)
        # EOF once every process that held the pipe is gone.
        assert proc.stdout.read() == ""
        assert _outside(marker) == []


@needs_direct
def test_sigterm_reaches_the_supervisor_and_the_status_is_the_signal(tmp_path):
    """proc.py stops a tool with SIGTERM to its group (the launcher): the
    supervisor inside gets it, stops the command, and the caller reads the
    signal, as without the namespace layer."""
    allow = [str(tmp_path)]
    inner = landlock.supervised([sys.executable, "-I", "-S", "-c",
                                 "import time; print('ready', flush=True); time.sleep(300)"],
                                allow)
    with _started(namespaces._direct(inner, ops=[("bind", str(tmp_path))])) as proc:
        assert proc.stdout.readline() == "ready\n", proc.stderr.read()
        os.killpg(proc.pid, signal.SIGTERM)
        assert proc.wait(30) == -signal.SIGTERM
        assert proc.stdout.read() == ""


@needs_direct
@pytest.mark.skipif(not os.path.exists("/proc/self/autogroup"), reason="no autogroup scheduling")
def test_the_new_session_keeps_the_tools_cpu_group_nice():
    """The sandbox's new session is a new CPU group: it keeps the nice of the
    group proc.py lowered (else a tool competes with the editor as an
    equal)."""
    # As proc.py starts a tool: the launcher execs the supervisor, which
    # lowers the group while the command runs if the launcher's one try met
    # the kernel's rate limit (one write per 100 ms; the echo just made one).
    inner = landlock.supervised(["sh", "-c", WAIT_FOR_GROUP_NICE], [tempfile.gettempdir()])
    launch = shlex.join(namespaces._direct(inner))
    proc = subprocess.run(["setsid", "sh", "-c", f"echo 7 > /proc/self/autogroup && exec {launch}"],
                          capture_output=True, text=True, timeout=60, check=False,
                          stdin=subprocess.DEVNULL)
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.split()[-1] == "7"
