"""The namespace sandbox around every process a session starts.

Landlock (landlock.py) keeps a session's processes from *writing* outside its
folders; it does not cover chmod/chown, timestamps, xattrs and inode flags,
reads, the network, or the desktop. This layer wraps the supervised command in
a namespace sandbox so that, inside:

- the whole file system is a read-only bind: metadata calls on the user's
  tree, its ``.git`` and HOME fail with EROFS; only the session's
  ``writable()`` folders are bound read-write;
- secrets (config.DEFAULT_HIDDEN plus ``sandbox.hide``) are masked by an
  empty tmpfs (folders) or ``/dev/null`` (files), as are the desktop's
  sockets (``$XDG_RUNTIME_DIR``, ``/tmp/.X11-unix``);
- there is no network but a loopback of its own (``sandbox.network: host``
  opts in), no view of other processes (pid namespace), no IPC with them,
  a new session (no TIOCSTI on the caller's terminal), no capabilities,
  and it dies with the process that started it.

Two backends make it, chosen once per process by running each on ``true``:
bubblewrap (``bwrap``) where it is installed and works, else SuperQode's own
launcher (unshare.py: user + mount + pid + ipc + uts + net namespaces made
directly; ``SUPERQODE_BWRAP=off`` picks it even where bwrap works). Both are
built from one plan (``_plan``), so they bind, mask and isolate the same.

Landlock stays inside as the second layer: the sandbox runs the supervisor,
which applies the write barrier and execs the command (a Landlock domain may
not mount, so the order cannot be the other way round).

The environment is scrubbed where a session's environment is made
(``scrub_env``, called by ``IsolatedSession.env``): provider keys, tokens and
the desktop's addresses never reach the project's code, at any level.
"""

from __future__ import annotations

import contextlib
import json
import os
import pwd
import re
import shutil
import stat
import subprocess
import sys
import threading
from collections.abc import Mapping

from ..config import DEFAULT_HIDDEN, Config, defaults, superqode_home
from . import landlock

# Set by a session's env(): {"network": "none"|"host", "hide": [absolute paths]}.
SPEC_ENV = landlock.SPEC_ENV
OFF_ENV = "SUPERQODE_NAMESPACES"  # "off": this layer is not used
BWRAP_ENV = "SUPERQODE_BWRAP"  # "off": SuperQode's own launcher, even where bwrap works
DIRECT = "direct"  # backend(): the namespaces are made by unshare.py, not bwrap
_UNSHARE = os.path.join(os.path.dirname(os.path.abspath(__file__)), "unshare.py")

LEVEL_FULL = "namespaces + Landlock"
LEVEL_LANDLOCK = "Landlock only (metadata, network and secrets open)"
LEVEL_GUARD = "guard only"
LEVEL_DIRECT = f"{LEVEL_FULL} (direct)"

# What a scrubbed environment never carries (fnmatch-like, upper-cased names).
_SECRET_NAMES = re.compile(
    r"""^(?:.*_API_KEY|.*_APIKEY|.*API_TOKEN|.*_TOKEN|.*_SECRET.*|SECRET_.*|.*_PASSWORD
        |.*_PASSWD|.*_CREDENTIALS?|.*_ACCESS_KEY.*|.*_PRIVATE_KEY|AWS_.*|AZURE_.*|ARM_CLIENT_.*
        |GOOGLE_APPLICATION_CREDENTIALS|GOOGLE_API_KEY|GCLOUD_.*|CLOUDSDK_.*|GH_.*|GITHUB_TOKEN
        |GITLAB_TOKEN|OPENAI_.*|ANTHROPIC_.*|HF_TOKEN|HUGGING_FACE_HUB_TOKEN|MISTRAL_.*
        |GROQ_.*|GEMINI_.*|COHERE_.*|DEEPSEEK_.*|OPENROUTER_.*|TOGETHER_.*|REPLICATE_.*
        |NPM_TOKEN|NODE_AUTH_TOKEN|PYPI_.*|TWINE_.*|DOCKER_AUTH_CONFIG|VAULT_.*|KUBECONFIG
        |SSH_AUTH_SOCK|SSH_AGENT_PID|GPG_AGENT_INFO|GNUPGHOME|.*_AUTH_SOCK
        |DISPLAY|WAYLAND_DISPLAY|WAYLAND_SOCKET|DBUS_SESSION_BUS_ADDRESS|XAUTHORITY
        |DESKTOP_STARTUP_ID|XDG_SESSION_COOKIE|SESSION_MANAGER|BROWSER)$""",
    re.VERBOSE,
)

_detected: tuple[str | None, str | None] | None = None  # (backend, why not)
_detecting = threading.Lock()  # one probe per process, whichever thread asks first


def scrub_env(env: Mapping[str, str], extra: set[str] | frozenset[str] = frozenset()
              ) -> dict[str, str]:
    """``env`` without secrets and desktop addresses (and the names in
    ``extra``, e.g. the configured providers' key variables)."""
    return {k: v for k, v in env.items()
            if k not in extra and not _SECRET_NAMES.match(k.upper())}


def _probe_args() -> list[str]:
    return ["--ro-bind", "/", "/", "--dev", "/dev", "--proc", "/proc", *_isolation("none")]


def _probe(argv: list[str]) -> str | None:
    """Why ``argv`` (a sandbox around ``true``, with the flags a session
    uses) does not work here; None when it does. A kernel or AppArmor profile
    that forbids unprivileged user namespaces fails here, once, not per run."""
    try:
        res = subprocess.run([*argv, shutil.which("true") or "/bin/true"], capture_output=True,
                             check=False, timeout=20, stdin=subprocess.DEVNULL)
    except (OSError, subprocess.TimeoutExpired) as e:
        return f"does not start: {e}"
    if res.returncode == 0:
        return None
    why = res.stderr.decode("utf-8", "replace").strip().splitlines()
    return why[-1] if why else f"exit {res.returncode}"


def _bwrap() -> tuple[str | None, str]:
    if os.environ.get(BWRAP_ENV) == "off":
        return None, f"{BWRAP_ENV}=off"
    bwrap = shutil.which("bwrap")
    if bwrap is None:
        return None, "bubblewrap (bwrap) is not installed"
    why = _probe([bwrap, *_probe_args(), "--"])
    return (bwrap, "") if why is None else (None, f"bwrap cannot make namespaces here: {why}")


def _direct(cmd: list[str], network: str = "none", devices: str | None = None,
            ops: list[tuple[str, str]] = ()) -> list[str]:
    argv = [sys.executable, "-I", "-S", _UNSHARE]
    if devices:
        argv += ["--devices", devices]
    for op, path in ops:
        argv += [f"--{op}", path]
    if network == "host":
        argv.append("--share-net")
    return [*argv, "--", *cmd]


def _detect() -> tuple[str | None, str | None]:
    if sys.platform != "linux":
        return None, "not Linux"
    if os.environ.get(OFF_ENV) == "off":
        return None, f"{OFF_ENV}=off"
    bwrap, why_not = _bwrap()
    if bwrap is not None:
        return bwrap, None
    # bwrap is preferred (docs/safety.md says why); without it, the same
    # sandbox made directly.
    why = _probe(_direct([]))
    if why is None:
        return DIRECT, None
    return None, f"{why_not}; direct namespaces: {why}"


def _state() -> tuple[str | None, str | None]:
    global _detected
    with _detecting:
        if _detected is None:
            _detected = _detect()
        return _detected


def forget() -> None:
    """Detect again at the next question: the warm helper, which started a
    process before its forks, leaves each forked run to detect with its own
    client's environment (``SUPERQODE_NAMESPACES``, PATH), as a new process."""
    global _detected
    with _detecting:
        _detected = None


# What detection reads besides the interpreter and the kernel.
_READS = (OFF_ENV, BWRAP_ENV, "PATH")
# The warm helper's detection of a working sandbox, with the variables it was
# made under (``keep``): a forked run whose client's are the same takes it
# (``reuse_kept``) instead of probing again (a sandboxed ``true``, 20-350 ms
# on a run's critical path).
_kept: tuple[tuple[str | None, ...], tuple[str | None, str | None]] | None = None


def keep() -> None:
    """Remember what was detected in this process, with the variables it
    read; only a sandbox that worked (a layer found missing is probed again
    by each run, so a fixed system is not left at a lower level)."""
    global _kept
    with _detecting:
        if _detected is not None and _detected[0] is not None:
            _kept = (tuple(os.environ.get(k) for k in _READS), _detected)


def reuse_kept() -> bool:
    """In a warm helper's forked run, its client's environment in place: the
    helper's detection where it read the same variables (True), else left to
    be made anew (False)."""
    global _detected
    with _detecting:
        if _kept is None or _kept[0] != tuple(os.environ.get(k) for k in _READS):
            return False
        _detected = _kept[1]
        return True


def backend() -> str | None:
    """The bwrap executable used, ``DIRECT`` (SuperQode's own launcher), or
    None where this layer is unavailable (detected once per process)."""
    return _state()[0]


def unavailable_reason() -> str | None:
    return _state()[1]


def active() -> bool:
    """Whether sessions of this process run in the namespace sandbox: only on
    top of Landlock (the levels are a ladder: see protection_level)."""
    return landlock.abi() is not None and backend() is not None


def protection_level(config: Config | None = None) -> str:
    """One line for status, reports and the editor."""
    if landlock.abi() is None:
        return LEVEL_GUARD
    which = backend()
    if which is None:
        return LEVEL_LANDLOCK
    tags = ["direct"] if which == DIRECT else []
    if config is not None and config.sandbox.network == "host":
        tags.append("network: host")
    return f"{LEVEL_FULL} ({', '.join(tags)})" if tags else LEVEL_FULL


def refusal(config: Config) -> str | None:
    """The one line a session that ``workspace.require_barrier`` forbids
    starts with; None when the protection here is enough."""
    want = config.workspace.require_barrier
    if not want:
        return None
    level = protection_level(config)
    if landlock.abi() is None:
        return (f"workspace.require_barrier: this system has no Landlock write barrier "
                f"(protection: {level}); refusing to start a session")
    if want is True and not active():
        return (f"workspace.require_barrier: no namespace sandbox here "
                f"({unavailable_reason()}; protection: {level}); refusing to start a session")
    return None


def _homes(env: Mapping[str, str]) -> list[str]:
    out = []
    for h in (env.get("HOME"), _passwd_home()):
        if h and os.path.isabs(h) and h not in out:
            out.append(h)
    return out


def _passwd_home() -> str | None:
    try:
        return pwd.getpwuid(os.getuid()).pw_dir
    except KeyError:
        return None


def hidden_paths(config: Config, env: Mapping[str, str]) -> list[str]:
    """Absolute paths to mask, for both the session's HOME and the account's."""
    out: list[str] = []
    for p in [*DEFAULT_HIDDEN, *config.sandbox.hide]:
        targets = ([os.path.join(h, p[2:]) for h in _homes(env)] if p.startswith("~/") else [p])
        out += [t for t in targets if t not in out]
    # SuperQode's own secrets: the language server's TCP tokens (a session
    # that read one could connect to the editor's server).
    own = str(superqode_home() / "run")
    # Made when missing: only what exists is masked, and the warm helper's
    # socket (cli/warm_server.py) may appear there after this session began.
    with contextlib.suppress(OSError):
        os.makedirs(own, mode=0o700, exist_ok=True)
    if own not in out:
        out.append(own)
    run = env.get("XDG_RUNTIME_DIR")
    for desktop in ([run] if run and os.path.isabs(run) else []) + ["/tmp/.X11-unix",
                                                                    "/tmp/.ICE-unix"]:
        if desktop not in out:
            out.append(desktop)
    return out


def spec(config: Config, env: Mapping[str, str], devices: str | None = None,
         tmp: str | None = None) -> str:
    """The value of SPEC_ENV for a session's environment; ``devices``: the
    session's own device nodes (``private_devices``); ``tmp``: the folder
    seen as ``/tmp`` inside (``private_tmp``)."""
    return json.dumps({"network": config.sandbox.network,
                       "hide": hidden_paths(config, env), "devices": devices, "tmp": tmp})


def _beneath_tmp(path: str) -> bool:
    real, tmp = os.path.realpath(path), os.path.realpath("/tmp")
    return real == tmp or real.startswith(tmp.rstrip("/") + "/")


def private_tmp(tmp: str, env: Mapping[str, str], needed: list[str]) -> str | None:
    """``tmp`` (the session's own temp folder) where the namespace sandbox can
    show it as ``/tmp``, else None (the real ``/tmp`` stays, read-only).

    Tests write fixed paths under ``/tmp`` (``/tmp/foo``); behind the
    read-only root they fail where the developer's pass. The session's own
    folder over ``/tmp`` is writable, empty at the start, removed with the
    session, and shows nothing of the real one (no desktop or agent sockets,
    no other program's files). Only where nothing the session reads lies
    beneath the real ``/tmp`` (the project, SuperQode's home and the
    interpreter elsewhere, as on a developer's machine): those would be
    hidden by it."""
    if not active() or not os.path.isabs(tmp) or os.path.islink(tmp) or not os.path.isdir(tmp):
        return None
    reads = [tmp, *needed, str(superqode_home()), sys.prefix, sys.base_prefix,
             sys.executable, os.path.dirname(os.path.abspath(__file__))]
    reads += _homes(env)
    reads += [p for p in env.get("PATH", "").split(os.pathsep) if os.path.isabs(p)]
    if any(_beneath_tmp(p) for p in reads if p):
        return None
    return tmp


# The nodes bwrap's --dev binds in from the host, as (name, major, minor).
_DEVICES = (("null", 1, 3), ("zero", 1, 5), ("full", 1, 7), ("random", 1, 8),
            ("urandom", 1, 9), ("tty", 5, 0))


def private_devices(folder: str) -> str | None:
    """For a session run as root: its own copies of /dev's device nodes in
    ``folder`` (made once), or None where they are not needed or cannot work.

    bwrap's ``--dev`` binds the host's /dev/null (zero, random...) in, and
    root inside the sandbox still owns those inodes: ``chmod 000 /dev/null``
    there would change the host's (a read-only bind would make them
    unusable: bwrap binds read-only with ``nodev``). Root may ``mknod``; a
    session's processes then own only its copies. ``folder`` must not be
    writable by them (the session's private dir, not one of its writable
    folders), and must allow device files (no ``nodev`` mount)."""
    if os.geteuid() != 0 or not active() or backend() == DIRECT:
        return None  # the direct launcher binds the host's nodes read-only
    try:
        os.makedirs(folder, mode=0o755, exist_ok=True)
        if os.statvfs(folder).f_flag & os.ST_NODEV:
            return None
        for name, major, minor in _DEVICES:
            path = os.path.join(folder, name)
            if not os.path.exists(path):
                os.mknod(path, 0o666 | stat.S_IFCHR, os.makedev(major, minor))
                os.chmod(path, 0o666)  # past the umask
    except OSError:
        return None  # no CAP_MKNOD (some containers): the host's nodes, as bwrap binds them
    return folder


def _isolation(network: str) -> list[str]:
    args = ["--unshare-user-try", "--unshare-ipc", "--unshare-pid", "--unshare-uts",
            "--unshare-cgroup-try", "--new-session", "--die-with-parent", "--cap-drop", "ALL"]
    if network != "host":
        args.append("--unshare-net")
    return args


def _masks(paths: list[str]) -> list[str]:
    """The real paths to mask."""
    seen: list[str] = []
    for p in paths:
        # A link is masked where it leads (bwrap would follow it anyway), and
        # only what exists: nothing can be created under the read-only root.
        real = os.path.realpath(p)
        if real in seen or real == "/":
            continue
        if os.path.lexists(real):
            seen.append(real)
    return seen


def masked(paths: list[str]) -> list[str]:
    """The real paths a spec's ``hide`` list masks now (for a long-lived
    sandbox comparing its masks with a session's)."""
    return _masks(list(paths))


def _plan(allow: list[str], env: Mapping[str, str]
          ) -> tuple[str, str | None, list[tuple[str, str]]]:
    """(network, devices, ops) for the session's ``env``: ops, in order, are
    ("tmp", folder) bound read-write over /tmp, ("bind", folder) read-write,
    ("hide-dir"|"hide-file", path)."""
    raw = env.get(SPEC_ENV)
    want = json.loads(raw) if raw else {}
    hide = want.get("hide")
    if hide is None:
        hide = hidden_paths(defaults(), env)
    # Bound where they lead: a writable folder reached through a link (a
    # cache linked elsewhere) cannot be a mount point, its target can; the
    # link itself resolves to it inside as outside.
    allow = list(dict.fromkeys(os.path.realpath(p) for p in allow))
    ops: list[tuple[str, str]] = []
    tmp = want.get("tmp")
    # The session's own /tmp (private_tmp) first, so nothing is laid on it;
    # only a folder the session may write anyway, and checked again here, as
    # a folder an agent adds to ``allow`` may lie beneath the real /tmp: then
    # the real one stays, read-only.
    if (isinstance(tmp, str) and os.path.isabs(tmp) and not os.path.islink(tmp)
            and os.path.isdir(tmp) and os.path.realpath(tmp) in allow
            and not any(_beneath_tmp(p) for p in [tmp, *allow])):
        ops.append(("tmp", tmp))
    ops += [("bind", p) for p in allow]
    # Masks after the binds: a secret is hidden even inside a writable folder;
    # a session folder that lies beneath a mask (a SUPERQODE_HOME under
    # $XDG_RUNTIME_DIR) is bound again on top, or the command could not run.
    masked = _masks(list(hide))
    if ops and ops[0][0] == "tmp":
        # Beneath the private /tmp they are not there to hide (and a mount
        # point made for a mask would be a folder in the session's own).
        masked = [m for m in masked if not _beneath_tmp(m)]
    # An empty folder over a folder, /dev/null over anything else.
    ops += [("hide-dir" if os.path.isdir(m) else "hide-file", m) for m in masked]
    ops += [("bind", p) for p in allow if any(p.startswith(m + "/") for m in masked)]
    return want.get("network", "none"), want.get("devices"), ops


def wrap(cmd: list[str], allow: list[str], env: Mapping[str, str]) -> list[str]:
    """``cmd`` (the supervisor's command line) inside the namespace sandbox
    the session's ``env`` asks for. Call only when ``active()``."""
    which = backend()
    assert which is not None
    network, devices, ops = _plan(allow, env)
    if which == DIRECT:
        return _direct(cmd, network, devices, ops)
    args = [which, "--ro-bind", "/", "/", "--dev", "/dev", "--proc", "/proc"]
    if devices:
        args += [a for name, _, _ in _DEVICES
                 for a in ("--dev-bind", os.path.join(devices, name), f"/dev/{name}")]
    for op, path in ops:
        # The private /tmp with --bind: where it cannot be made, nothing runs.
        args += {"tmp": ["--bind", path, "/tmp"],
                 "bind": ["--bind-try", path, path], "hide-dir": ["--tmpfs", path],
                 "hide-file": ["--ro-bind", "/dev/null", path]}[op]
    args += _isolation(network)
    return [*args, "--", *cmd]


def supervised(cmd: list[str], env: Mapping[str, str]) -> list[str]:
    """``cmd`` behind every layer this system has for a session's ``env``:
    namespaces (when available) around the Landlock supervisor."""
    allow = json.loads(env[landlock.ALLOW_ENV])
    inner = landlock.supervised(cmd, allow)
    return wrap(inner, allow, env) if active() else inner
