"""Who may use the warm helper: a process of the same user that is not
inside a session. The helper runs commands outside every sandbox, so a
session's process that reached it would be out (``superqe suggestions
apply``, or any run on the user's files). Each check is the kernel's word,
read for the peer of the connection, and any doubt refuses (fail closed):

- **same uid** (SO_PEERCRED);
- **no_new_privs is 0**: Landlock and both namespace backends set it on every
  process of a session, and nothing can unset it;
- **the helper's own mount, pid and user namespaces**: a process in the
  namespace sandbox lives in its own;
- all read for the process itself, not a pid that could be reused: the
  kernel hands the peer's pidfd (SO_PEERPIDFD, Linux 6.5+; else pidfd_open
  at once), and the pidfd must still be alive after /proc was read, so what
  was read was the peer's.

At the "guard only" level a session's process is an ordinary process of the
user and passes; it can equally run anything outside without the helper
there (docs/safety.md)."""

from __future__ import annotations

import os
import signal
import socket

from .warm_client import peer_uid

SO_PEERPIDFD = getattr(socket, "SO_PEERPIDFD", 77)
NAMESPACES = ("mnt", "pid", "user")


class Refused(Exception):
    """The peer may not use the helper; the message says why."""


def own_state() -> dict[str, str]:
    """The helper's own namespaces, read once at start; a helper that itself
    runs with no_new_privs (started inside a session) refuses to start."""
    if _no_new_privs("self") != 0:
        raise Refused("the helper would run with no_new_privs (inside a session?)")
    return {ns: os.readlink(f"/proc/self/ns/{ns}") for ns in NAMESPACES}


def check(conn: socket.socket, own: dict[str, str]) -> int:
    """The peer's pid when it may use the helper; Refused otherwise."""
    pid, uid = peer_uid(conn)
    if uid != os.geteuid():
        raise Refused(f"uid {uid} is not this helper's user")
    if pid <= 0:
        raise Refused("the peer's process is not visible here")
    pidfd = _pidfd(conn, pid)
    try:
        if _no_new_privs(str(pid)) != 0:
            raise Refused(f"pid {pid} runs with no_new_privs (a session's process)")
        for ns, mine in own.items():
            try:
                theirs = os.readlink(f"/proc/{pid}/ns/{ns}")
            except OSError as e:
                raise Refused(f"pid {pid}: cannot read its {ns} namespace ({e.strerror})") from None
            if theirs != mine:
                raise Refused(f"pid {pid} is in another {ns} namespace (a session's sandbox)")
        try:
            signal.pidfd_send_signal(pidfd, 0)
        except OSError:
            raise Refused(f"pid {pid} ended while it was checked") from None
    finally:
        os.close(pidfd)
    return pid


def _pidfd(conn: socket.socket, pid: int) -> int:
    try:
        fd = conn.getsockopt(socket.SOL_SOCKET, SO_PEERPIDFD)
        if fd >= 0:
            return fd
    except OSError:
        pass  # older kernel: pidfd_open below (the pid could be reused in between)
    try:
        return os.pidfd_open(pid)
    except (OSError, AttributeError) as e:
        raise Refused(f"pid {pid}: no pidfd ({e})") from None


def _no_new_privs(pid: str) -> int:
    try:
        with open(f"/proc/{pid}/status", encoding="ascii", errors="replace") as fh:
            for line in fh:
                if line.startswith("NoNewPrivs:"):
                    return int(line.split()[1])
    except (OSError, ValueError, IndexError) as e:
        raise Refused(f"pid {pid}: cannot read its status ({e})") from None
    raise Refused(f"pid {pid}: the kernel does not report no_new_privs")
