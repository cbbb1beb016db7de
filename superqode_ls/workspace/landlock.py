"""The kernel write barrier around every process a session starts (Landlock).

Used two ways:

- as a module by the engine: ``abi()`` tells whether the kernel has Landlock,
  ``supervised(cmd, allow)`` builds the command line that runs ``cmd`` behind
  the barrier;
- as a script, ``python -I -S landlock.py --allow DIR ... -- CMD ARG...``: the
  *supervisor*. It stays outside the barrier, forks, and the child restricts
  itself (writes only beneath the allowed paths; reads and execution stay
  allowed) and execs ``CMD``. The supervisor is a child subreaper, so every
  process the command forks — a ``setsid`` daemon included — stays below it
  and is killed when the command ends, when the supervisor is told to stop,
  or when the process that started it dies.

The barrier is Landlock's, not ours: rules are bound to the allowed
directories' inodes when they are added, are inherited across fork and exec,
and can never be lifted by the restricted process. From ABI 6 the restricted
processes cannot signal processes outside their domain either, so they cannot
kill the supervisor that would end them.

Stdlib only, and quick to start: the supervisor runs once per tool process.
A small ctypes layer over the three syscalls is used rather than a PyPI
binding: the bindings there lag behind the kernel's ABI (IOCTL_DEV, scoped
signals) and this file must run with ``-I -S``, outside any virtualenv.
"""

from __future__ import annotations

import _signal as signal  # the C module: `signal` pulls in enum, 5 ms a start
import ctypes
import os
import sys
import time

# x86_64 and aarch64 share these numbers (the syscalls are recent, generic).
_SYS_CREATE_RULESET = 444
_SYS_ADD_RULE = 445
_SYS_RESTRICT_SELF = 446
_CREATE_RULESET_VERSION = 1
_RULE_PATH_BENEATH = 1
_PR_SET_NO_NEW_PRIVS = 38
_PR_SET_CHILD_SUBREAPER = 36

_WRITE_FILE = 1 << 1
_READ_FILE = 1 << 2
_READ_DIR = 1 << 3
_REMOVE_DIR = 1 << 4
_REMOVE_FILE = 1 << 5
_MAKE_CHAR = 1 << 6
_MAKE_DIR = 1 << 7
_MAKE_REG = 1 << 8
_MAKE_SOCK = 1 << 9
_MAKE_FIFO = 1 << 10
_MAKE_BLOCK = 1 << 11
_MAKE_SYM = 1 << 12
_REFER = 1 << 13  # ABI 2
_TRUNCATE = 1 << 14  # ABI 3
_IOCTL_DEV = 1 << 15  # ABI 5
_SCOPE_SIGNAL = 1 << 1  # ABI 6

# Rights that make sense on a file (not a directory) rule.
_FILE_RIGHTS = _WRITE_FILE | _TRUNCATE | _IOCTL_DEV

# Device files and folders tools write as a matter of course; none of them is
# a user's file. /dev/shm carries POSIX semaphores (multiprocessing, xdist).
DEVICE_PATHS = ("/dev/null", "/dev/zero", "/dev/full", "/dev/random", "/dev/urandom",
                "/dev/tty", "/dev/ptmx", "/dev/pts", "/dev/shm")

EXIT_BARRIER_FAILED = 126
# Set by a session's env(): the folders its processes may write (JSON list).
ALLOW_ENV = "SUPERQODE_BARRIER_ALLOW"
# The namespace layer's settings (namespaces.SPEC_ENV): not the command's business.
SPEC_ENV = "SUPERQODE_CONFINE"
_STOP_GRACE_S = 1.5
_PARENT_POLL_S = 0.25
_GROUP_RETRY_S = 0.05  # the kernel's autogroup rate limit is one write per 100 ms


class _RulesetAttr(ctypes.Structure):
    _fields_ = [("handled_access_fs", ctypes.c_uint64),
                ("handled_access_net", ctypes.c_uint64),
                ("scoped", ctypes.c_uint64)]


class _PathBeneathAttr(ctypes.Structure):
    _pack_ = 1
    _fields_ = [("allowed_access", ctypes.c_uint64), ("parent_fd", ctypes.c_int32)]


_libc = None
_abi: int | None = None
_abi_known = False


def _c():
    global _libc
    if _libc is None:
        _libc = ctypes.CDLL(None, use_errno=True)
        _libc.syscall.restype = ctypes.c_long
    return _libc


def forget() -> None:
    """Ask the kernel again at the next ``abi()`` (namespaces.forget says why)."""
    global _abi, _abi_known
    _abi, _abi_known = None, False


def abi() -> int | None:
    """The kernel's Landlock ABI version, or None where there is none
    (older kernels, Landlock not in the LSM list, not Linux)."""
    global _abi, _abi_known
    if _abi_known:
        return _abi
    _abi_known = True
    if sys.platform != "linux" or os.environ.get("SUPERQODE_LANDLOCK") == "off":
        return None
    try:
        v = _c().syscall(_SYS_CREATE_RULESET, None, ctypes.c_size_t(0),
                         ctypes.c_uint32(_CREATE_RULESET_VERSION))
    except (OSError, AttributeError):
        return None
    _abi = int(v) if v > 0 else None
    return _abi


def handled_rights(version: int) -> int:
    rights = (_WRITE_FILE | _REMOVE_DIR | _REMOVE_FILE | _MAKE_CHAR | _MAKE_DIR | _MAKE_REG
              | _MAKE_SOCK | _MAKE_FIFO | _MAKE_BLOCK | _MAKE_SYM)
    if version >= 2:
        rights |= _REFER
    if version >= 3:
        rights |= _TRUNCATE
    if version >= 5:
        rights |= _IOCTL_DEV
    return rights


def restrict_self(allow: list[str], version: int, read: list[str] | None = None,
                  list_only: list[str] | None = None) -> None:
    """Allow writes only beneath ``allow`` (plus the device paths), for this
    process and everything it starts from now on. With ``read``, reads too
    are allowed only beneath ``allow``, ``read`` and the device paths (the
    warm bandit's children: a request reads its session's tree and the
    interpreter's files, nothing else), and folders beneath ``list_only``
    may be listed, their files not read. Raises OSError; a missing allowed
    path is skipped (nothing can be written there anyway)."""
    c = _c()
    reads = 0 if read is None else _READ_FILE | _READ_DIR
    handled = handled_rights(version) | reads
    attr = _RulesetAttr(handled, 0, _SCOPE_SIGNAL if version >= 6 else 0)
    fd = c.syscall(_SYS_CREATE_RULESET, ctypes.byref(attr), ctypes.c_size_t(ctypes.sizeof(attr)),
                   ctypes.c_uint32(0))
    if fd < 0:
        err = ctypes.get_errno()
        raise OSError(err, f"landlock_create_ruleset: {os.strerror(err)}")
    try:
        rules = [(p, handled) for p in [*allow, *DEVICE_PATHS]]
        rules += [(p, reads) for p in read or ()]
        rules += [(p, _READ_DIR) for p in list_only or () if read is not None]
        for path, granted in rules:
            try:
                pfd = os.open(path, os.O_PATH | os.O_CLOEXEC)
            except OSError:
                continue
            try:
                is_dir = (os.fstat(pfd).st_mode & 0o170000) == 0o040000
                rights = granted if is_dir else granted & (_FILE_RIGHTS | _READ_FILE)
                if not rights:
                    continue  # (a file named to be listed: nothing to grant)
                rule = _PathBeneathAttr(rights, pfd)
                if c.syscall(_SYS_ADD_RULE, ctypes.c_int(fd), ctypes.c_int(_RULE_PATH_BENEATH),
                             ctypes.byref(rule), ctypes.c_uint32(0)) < 0:
                    err = ctypes.get_errno()
                    raise OSError(err, f"landlock_add_rule {path}: {os.strerror(err)}")
            finally:
                os.close(pfd)
        if c.prctl(_PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) != 0:
            err = ctypes.get_errno()
            raise OSError(err, f"prctl(NO_NEW_PRIVS): {os.strerror(err)}")
        if c.syscall(_SYS_RESTRICT_SELF, ctypes.c_int(fd), ctypes.c_uint32(0)) < 0:
            err = ctypes.get_errno()
            raise OSError(err, f"landlock_restrict_self: {os.strerror(err)}")
    finally:
        os.close(fd)


def supervised(cmd: list[str], allow: list[str], *, python: str | None = None) -> list[str]:
    """The command line that runs ``cmd`` under the supervisor and barrier."""
    argv = [python or sys.executable, "-I", "-S", os.path.abspath(__file__)]
    for p in allow:
        argv += ["--allow", p]
    return [*argv, "--", *cmd]


# -- the supervisor (script mode) ---------------------------------------------
def _children_map() -> dict[int, list[int]]:
    kids: dict[int, list[int]] = {}
    for name in os.listdir("/proc"):
        if not name.isdigit():
            continue
        try:
            with open(f"/proc/{name}/stat", "rb") as fh:
                stat = fh.read()
        except OSError:
            continue
        ppid = int(stat[stat.rindex(b")") + 2:].split()[1])
        kids.setdefault(ppid, []).append(int(name))
    return kids


def _descendants(root: int) -> list[int]:
    kids = _children_map()
    out, todo = [], [root]
    while todo:
        for k in kids.get(todo.pop(), ()):
            out.append(k)
            todo.append(k)
    return out


def _reap() -> dict[int, int]:
    done = {}
    while True:
        try:
            pid, status = os.waitpid(-1, os.WNOHANG)
        except ChildProcessError:
            return done
        if pid == 0:
            return done
        done[pid] = status


def _childless() -> bool:
    """No child left: then no descendant either (as a subreaper we adopt every
    orphan below us), and /proc need not be scanned."""
    try:
        os.waitpid(-1, os.WNOHANG)
    except ChildProcessError:
        return True
    return False


def _end_tree(sig: int, grace: float) -> None:
    """Signal every descendant; after ``grace`` seconds, SIGKILL what is left
    and reap until none is left (processes forking meanwhile included)."""
    if _childless():
        return
    me = os.getpid()
    for pid in _descendants(me):
        try:
            os.kill(pid, sig)
        except OSError:
            pass
    deadline = time.monotonic() + grace
    while time.monotonic() < deadline:
        _reap()
        if not _descendants(me):
            return
        time.sleep(0.02)
    for _ in range(50):
        rest = _descendants(me)
        if not rest:
            break
        for pid in rest:
            try:
                os.kill(pid, signal.SIGKILL)
            except OSError:
                pass
        time.sleep(0.01)
        _reap()
    _reap()


def die_by(sig: int) -> None:
    """End the way the command did, so our parent reads the same status
    (also unshare.py's)."""
    signal.signal(sig, signal.SIG_DFL)
    signal.pthread_sigmask(signal.SIG_UNBLOCK, [sig])
    os.kill(os.getpid(), sig)
    os._exit(128 + sig)


def _exit_like(status: int) -> None:
    if os.WIFSIGNALED(status):
        die_by(os.WTERMSIG(status))
    os._exit(os.waitstatus_to_exitcode(status) if os.WIFEXITED(status) else 1)


def _child(cmd: list[str], allow: list[str], version: int | None, mask: set) -> None:
    try:
        if version:
            restrict_self(allow, version)
    except OSError as e:
        os.write(2, f"superqode barrier: cannot apply Landlock: {e}\n".encode())
        os._exit(EXIT_BARRIER_FAILED)
    for sig in (signal.SIGPIPE, signal.SIGXFSZ, signal.SIGINT, signal.SIGTERM, signal.SIGHUP):
        signal.signal(sig, signal.SIG_DFL)
    exec_with(cmd, mask, 126)


def exec_with(cmd: list[str], mask: set, failed: int) -> None:
    """Exec ``cmd`` with the signal mask ``mask``; one line and exit 127 (not
    found) or ``failed`` where it cannot run. Also unshare.py's."""
    signal.pthread_sigmask(signal.SIG_SETMASK, mask)
    try:
        os.execvp(cmd[0], cmd)
    except OSError as e:
        os.write(2, f"superqe: cannot run {cmd[0]}: {e.strerror}\n".encode())
        os._exit(127 if isinstance(e, FileNotFoundError) else failed)


def _lower_group_once() -> bool:
    """bwrap's ``--new-session`` puts us in a new CPU group (autogroup) at
    nice 0, which competes with the editor as an equal whatever the nice our
    process started with: give the group that nice (raising needs no
    privilege; never lowered). Whether it is still to be done (the kernel's
    rate limit, see set_group_nice): the caller tries again while the
    command runs rather than holding its start. Waiting here cost every
    sandboxed process ~0.1 s whenever tools started faster than ten a second
    (a quiet 16-core machine: 125 ms per process)."""
    nice = os.getpriority(os.PRIO_PROCESS, 0)
    group = group_nice()
    if group is None:
        return False  # no autogroup in this kernel: the processes' own nice still holds
    if nice <= group:
        return False  # already as low as we are (the launcher's or proc.py's write landed)
    return set_group_nice(nice)


def group_nice() -> int | None:
    """The nice of this process's CPU group (autogroup); None where the
    kernel has none. Also unshare.py's (the direct namespace launcher)."""
    try:
        with open("/proc/self/autogroup", encoding="ascii") as fh:
            return int(fh.read().split()[-1])
    except (OSError, ValueError, IndexError):
        return None


def set_group_nice(nice: int) -> bool:
    """One try to give this process's CPU group ``nice`` (at most 19);
    whether to try again later. Without CAP_SYS_ADMIN the kernel takes one
    such write per 100 ms machine-wide (EAGAIN)."""
    try:
        fd = os.open("/proc/self/autogroup", os.O_WRONLY)
    except OSError:
        return False  # no autogroup in this kernel: the processes' own nice still holds
    try:
        os.write(fd, str(min(19, nice)).encode())
        return False
    except BlockingIOError:
        return True
    except OSError:
        return False
    finally:
        os.close(fd)


def main(argv: list[str]) -> None:
    allow: list[str] = []
    i = 0
    while i < len(argv) and argv[i] != "--":
        if argv[i] == "--allow" and i + 1 < len(argv):
            allow.append(argv[i + 1])
            i += 2
        else:
            os.write(2, f"superqode barrier: bad argument {argv[i]!r}\n".encode())
            os._exit(2)
    cmd = argv[i + 1:]
    if not cmd:
        os.write(2, b"superqode barrier: no command\n")
        os._exit(2)
    group_pending = _lower_group_once()
    version = abi()
    if version is None and os.environ.get("SUPERQODE_BARRIER_REQUIRED") == "1":
        os.write(2, b"superqode barrier: this kernel has no Landlock\n")
        os._exit(EXIT_BARRIER_FAILED)
    os.environ.pop(ALLOW_ENV, None)
    os.environ.pop(SPEC_ENV, None)
    parent = os.getppid()
    try:
        _c().prctl(_PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0)
    except (OSError, AttributeError):
        pass
    watched = {signal.SIGCHLD, signal.SIGTERM, signal.SIGINT, signal.SIGHUP}
    mask = signal.pthread_sigmask(signal.SIG_BLOCK, watched)
    child = os.fork()
    if child == 0:
        _child(cmd, allow, version, mask)
    # The supervisor holds none of the command's pipes: a reader of the
    # command's stdout sees EOF when the command closes it, not when we exit.
    null = os.open(os.devnull, os.O_RDWR)
    for fd in (0, 1, 2):
        os.dup2(null, fd)
    status = None
    while status is None:
        got = signal.sigtimedwait(watched, _GROUP_RETRY_S if group_pending else _PARENT_POLL_S)
        if group_pending:  # the command shares our group: lowering it now lowers it too
            group_pending = _lower_group_once()
        if got is not None and got.si_signo != signal.SIGCHLD:
            _end_tree(signal.SIGTERM, _STOP_GRACE_S)
            die_by(got.si_signo)
        if os.getppid() != parent:  # whoever started us is gone: so is the session
            _end_tree(signal.SIGKILL, 0)
            os._exit(128 + signal.SIGKILL)
        status = _reap().get(child)
    # The command is done; whatever it left running (daemons) ends with it.
    _end_tree(signal.SIGTERM, 0.3)
    _exit_like(status)


if __name__ == "__main__":
    main(sys.argv[1:])
