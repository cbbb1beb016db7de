"""The client side of the warm helper (``superqe warm start``): a command
line hands its work to a helper that has the engine imported already, so
the run pays no interpreter start-up and imports.

Imported before anything else of the CLI, so it uses the standard library
only (no pydantic, no config module). The hand-off is:

1. open ``$SUPERQODE_HOME/run/warm`` (must be ours and 0700, no link) and
   connect to the helper's socket through that open folder;
2. the helper must be our own uid (SO_PEERCRED): another user could
   otherwise pose as the helper and read our environment;
3. send argv, the environment, umask, nice and what the interpreter is,
   with stdin, stdout, stderr and the working folder as file descriptors
   (SCM_RIGHTS); the helper checks who we are (warm_peer) and forks a child
   that takes them over, or says no;
4. on "ok" send "go": from then on the run is the child's, and this process
   forwards SIGINT/SIGTERM/SIGHUP and exits with the child's status.

Anything that goes wrong before "go" (no helper, refused, another
interpreter, a broken helper) means the normal run in this process; it is
silent unless ``SUPERQODE_WARM=verbose``. ``SUPERQODE_WARM=off`` never hands
off. Nothing runs twice: the child starts only after "go", and the helper
kills a child whose client never sent it."""

from __future__ import annotations

import json
import os
import signal
import stat
import sys
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    import socket  # imported where used: a run without a helper does not pay for it

# The commands a helper runs (where start-up is a noticeable share).
WARM_COMMANDS = frozenset({"run", "exec", "roles", "status", "merge"})
SOCKET_NAME = "superqe.sock"
ENV = "SUPERQODE_WARM"  # off | verbose
MAX_MESSAGE = 1 << 20  # a request (the environment is most of it)
ACK_TIMEOUT_S = 30.0
PROTOCOL = 1
EXIT_FAILED = 3  # errors.EXIT_FAILED; not imported here (see the module's doc)
FORWARDED = (signal.SIGINT, signal.SIGTERM, signal.SIGHUP)

# True in the helper and its children: they never hand off again.
IN_HELPER = False


class WarmError(Exception):
    """The helper cannot be used; the reason, for --verbose and the log."""


def home() -> str:
    # config.superqode_home, without importing config (pydantic).
    env = os.environ.get("SUPERQODE_HOME")
    return os.path.expanduser(env) if env else os.path.join(os.path.expanduser("~"), ".superqode")


def folder() -> str:
    """The helper's folder. Under ``run``: the namespace sandbox masks
    ``$SUPERQODE_HOME/run`` (namespaces.hidden_paths), so no session sees it."""
    return os.path.join(home(), "run", "warm")


def open_folder(path: str | None = None) -> int:
    """An O_PATH descriptor of the helper's folder, checked: a directory
    (no link), owned by us, no access for anyone else. Paths are then
    resolved through it, so the folder cannot be swapped after the check."""
    path = path or folder()
    fd = os.open(path, os.O_PATH | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_CLOEXEC)
    try:
        st = os.fstat(fd)
        if st.st_uid != os.geteuid():
            raise WarmError(f"{path}: not owned by this user")
        if stat.S_IMODE(st.st_mode) & 0o077:
            raise WarmError(f"{path}: open to others (mode {stat.S_IMODE(st.st_mode):o})")
    except BaseException:
        os.close(fd)
        raise
    return fd


def through(fd: int, name: str = SOCKET_NAME) -> str:
    """``name`` in the folder ``fd`` as a socket address (short, whatever
    the length of $SUPERQODE_HOME: sun_path holds 108 bytes)."""
    return f"/proc/self/fd/{fd}/{name}"


def peer_uid(sock: socket.socket) -> tuple[int, int]:
    """(pid, uid) of the other end, from the kernel (SO_PEERCRED)."""
    import socket
    import struct

    pid, uid, _gid = struct.unpack("3i", sock.getsockopt(socket.SOL_SOCKET, socket.SO_PEERCRED,
                                                         struct.calcsize("3i")))
    return pid, uid


def connect(timeout: float | None = ACK_TIMEOUT_S) -> socket.socket:
    """A connection to this user's helper; WarmError when there is none."""
    import socket

    try:
        fd = open_folder()
    except FileNotFoundError:
        raise WarmError("no warm helper (superqe warm start)") from None
    except OSError as e:
        raise WarmError(f"{folder()}: {e.strerror}") from None
    sock = socket.socket(socket.AF_UNIX, socket.SOCK_SEQPACKET)
    try:
        sock.settimeout(timeout)
        sock.connect(through(fd))
        _pid, uid = peer_uid(sock)
        if uid != os.geteuid():
            raise WarmError(f"the helper's socket is held by uid {uid}")
    except OSError as e:
        sock.close()
        raise WarmError(f"no warm helper ({e.strerror or e})") from None
    except BaseException:
        sock.close()
        raise
    finally:
        os.close(fd)
    return sock


def send(sock: socket.socket, msg: dict, fds: list[int] | None = None) -> None:
    import socket

    data = json.dumps(msg).encode()
    if fds:
        socket.send_fds(sock, [data], fds)
    else:
        sock.send(data)


def receive(sock: socket.socket) -> dict | None:
    """The next message, or None when the other end closed."""
    data = sock.recv(MAX_MESSAGE)
    return json.loads(data) if data else None


def interpreter() -> dict:
    """What must be equal for the helper's child to behave as this process
    would: the same interpreter, package, import path, encodings and
    PYTHON* settings (fixed when an interpreter starts)."""
    import superqode_ls

    try:
        import locale

        preferred = locale.getpreferredencoding(False)
    except Exception:  # noqa: BLE001 - compared only; a difference means no hand-off
        preferred = None
    return {
        "executable": os.path.realpath(sys.executable),
        "prefix": sys.prefix,
        "package": os.path.realpath(superqode_ls.__file__),
        "path": sys.path[1:],
        "flags": list(sys.flags),
        "fs": sys.getfilesystemencoding(),
        "locale": preferred,
        "python_env": sorted((k, v) for k, v in os.environ.items() if k.startswith("PYTHON")),
    }


def _stream(s) -> list | None:
    try:
        return [s.encoding, s.errors]
    except AttributeError:
        return None


def request(argv: list[str]) -> dict:
    mask = os.umask(0)
    os.umask(mask)
    return {
        "v": PROTOCOL,
        "argv": argv,
        "argv0": sys.argv[0] if sys.argv else "superqe",
        "path0": sys.path[0] if sys.path else "",
        "env": dict(os.environ),
        "umask": mask,
        "nice": os.getpriority(os.PRIO_PROCESS, 0),
        "interpreter": interpreter(),
        "streams": [_stream(sys.stdin), _stream(sys.stdout), _stream(sys.stderr)],
    }


def _say(text: str) -> None:
    if os.environ.get(ENV) == "verbose":
        print(f"superqe: warm helper not used: {text}", file=sys.stderr)


def handoff(argv: list[str]) -> int | None:
    """The exit code of ``argv`` run by the helper, or None: run it here."""
    if IN_HELPER or not argv or argv[0] not in WARM_COMMANDS or os.environ.get(ENV) == "off":
        return None
    try:
        sock = connect()
    except WarmError as e:
        _say(str(e))
        return None
    with sock:
        try:
            if not _offer(sock, argv):
                return None
        except (OSError, ValueError, WarmError) as e:  # ValueError: a reply that is not JSON
            _say(str(e) or type(e).__name__)
            return None
        # Forwarding starts before "go": a signal from then on is the run's.
        old = {s: signal.signal(s, _forwarder(sock)) for s in FORWARDED}
        try:
            send(sock, {"go": True})
        except OSError as e:  # no "go" arrived: the helper runs nothing
            _restore(old)
            _say(f"the helper went away ({e.strerror})")
            return None
        try:
            return _follow(sock)
        finally:
            _restore(old)


def _offer(sock: socket.socket, argv: list[str]) -> bool:
    """Send the request; True when the helper has a child ready for it."""
    cwd = os.open(".", os.O_PATH | os.O_DIRECTORY | os.O_CLOEXEC)
    try:
        for fd in (0, 1, 2):
            os.fstat(fd)  # a closed standard stream: run here, as before
        try:
            send(sock, request(argv), [0, 1, 2, cwd])
        except (BrokenPipeError, ConnectionResetError):
            pass  # refused at connect: the helper closed, its reason is waiting below
    finally:
        os.close(cwd)
    reply = receive(sock)
    if reply is None or not reply.get("ok"):
        _say((reply or {}).get("why", "the helper closed the connection"))
        return False
    return True


def _forwarder(sock: socket.socket):
    def forward(signum, _frame) -> None:
        try:
            send(sock, {"signal": signum})
        except OSError:
            pass  # the helper is gone; the end of the wait says so

    return forward


def _restore(old: dict) -> None:
    for s, h in old.items():
        signal.signal(s, h)


def _follow(sock: socket.socket) -> int:
    """Committed: the child runs. Its exit code (signals are forwarded)."""
    sock.settimeout(None)
    while True:
        try:
            msg = receive(sock)
        except (OSError, ValueError):
            msg = None
        if msg is None:
            print("superqe: the warm helper went away during the run; its outcome is unknown",
                  file=sys.stderr)
            return EXIT_FAILED
        if "exit" in msg:
            return int(msg["exit"])
        if "killed" in msg:
            return _die_like(int(msg["killed"]))


def _die_like(signum: int) -> int:
    """The child was killed by ``signum``: end the same way, so the shell
    sees what it would have seen (128 + signum where that does not end us)."""
    try:
        signal.signal(signum, signal.SIG_DFL)
        sys.stdout.flush()
    except (OSError, ValueError):
        pass  # SIGKILL has no handler to reset; a closed stdout has nothing to flush
    os.kill(os.getpid(), signum)
    return 128 + signum
