"""The namespace sandbox without bubblewrap: SuperQode's own launcher.

namespaces.py uses it where ``bwrap`` is not installed or cannot start. Run
as ``python -I -S unshare.py OP... -- CMD ARG...`` (it reads nothing of the
session's: no site, no environment options, no current folder on the path),
it gives CMD — the Landlock supervisor — what the bwrap arguments give:

- its own user (when not root), mount, pid, ipc, uts, cgroup and, unless
  ``--share-net``, network namespaces, the loopback up in the latter;
- a read-only view of ``/``: a recursive bind whose every submount is made
  read-only, nosuid and nodev by one ``mount_setattr(AT_RECURSIVE)``; only
  the ``--bind`` folders are bound again, writable;
- the ``--tmp`` folder bound writable over ``/tmp`` (the session's own: the
  real one's files and sockets are not seen);
- an empty tmpfs (read-only) over each ``--hide-dir``, ``/dev/null`` on a
  read-only ``nodev`` bind (opening it is refused) over each ``--hide-file``;
  the ops run in the order given, so a bind after a mask is laid on top;
- its own /proc (``sys``, ``sysrq-trigger``, ``irq``, ``bus`` read-only), a
  minimal /dev: the six usual nodes (from ``--devices DIR`` or the host's) on
  read-only binds, so even root inside cannot chmod them; a devpts instance
  of its own (no way to the caller's terminals), a tmpfs ``shm``;
- no capabilities (bounding set, ambient, permitted, effective, inheritable;
  as root also the secure bits that stop exec from granting them back),
  ``no_new_privs``, a new session, and SIGKILL when the launcher dies.

Processes: the launcher unshares and forks the first process of the new pid
namespace, which builds the tree, drops everything and execs CMD: the
supervisor is then pid 1, and when it ends the kernel ends everything left
in the namespace. The launcher waits, passes SIGTERM/SIGINT/SIGHUP on (so the
supervisor stops the command gracefully), and exits as that process did.

Any step that fails fails closed: one line on stderr, exit 126, CMD never
runs. Stdlib only (ctypes for the calls Python's ``os`` lacks); the numbers
below are Linux's for x86_64 and aarch64.
"""

from __future__ import annotations

import _signal as signal  # the C module: `signal` pulls in enum
import ctypes
import os
import sys

if __package__:
    from . import landlock
else:  # run as a script with -I: its sibling, by path (stdlib only as well)
    sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
    import landlock

EXIT_FAILED = 126

_CLONE_NEWNS = 0x00020000
_CLONE_NEWCGROUP = 0x02000000
_CLONE_NEWUTS = 0x04000000
_CLONE_NEWIPC = 0x08000000
_CLONE_NEWUSER = 0x10000000
_CLONE_NEWPID = 0x20000000
_CLONE_NEWNET = 0x40000000

_MS_NOSUID = 0x2
_MS_NODEV = 0x4
_MS_NOEXEC = 0x8
_MS_BIND = 0x1000
_MS_REC = 0x4000
_MS_PRIVATE = 0x40000
_MNT_DETACH = 0x2

_ATTR_RDONLY = 0x1
_ATTR_NOSUID = 0x2
_ATTR_NODEV = 0x4
_AT_FDCWD = -100
_AT_RECURSIVE = 0x8000

_PR_SET_PDEATHSIG = 1
_PR_CAPBSET_DROP = 24
_PR_SET_SECUREBITS = 28
_PR_SET_NO_NEW_PRIVS = 38
_PR_CAP_AMBIENT = 47
_PR_CAP_AMBIENT_CLEAR_ALL = 4
# NOROOT, NO_SETUID_FIXUP and KEEP_CAPS off, each locked: uid 0 gains no
# capability by exec.
_SECUREBITS = 0x2F
_CAP_VERSION_3 = 0x20080522

_SIOCGIFFLAGS = 0x8913
_SIOCSIFFLAGS = 0x8914
_IFF_UP = 0x1

_SYS_MOUNT_SETATTR = 442
_SYSCALLS = {"x86_64": {"pivot_root": 155, "capset": 126},
             "aarch64": {"pivot_root": 41, "capset": 91}}

_DEV_NODES = ("null", "zero", "full", "random", "urandom", "tty")
_PROC_READONLY = ("sys", "sysrq-trigger", "irq", "bus")
_NEW = "/newroot"  # the tree being built, beneath the scratch root
_OLD = "/oldroot"  # the host's tree, until it is detached


class _Failed(Exception):
    pass


class _MountAttr(ctypes.Structure):
    _fields_ = [("attr_set", ctypes.c_uint64), ("attr_clr", ctypes.c_uint64),
                ("propagation", ctypes.c_uint64), ("userns_fd", ctypes.c_uint64)]


class _CapHeader(ctypes.Structure):
    _fields_ = [("version", ctypes.c_uint32), ("pid", ctypes.c_int)]


class _CapData(ctypes.Structure):
    _fields_ = [("effective", ctypes.c_uint32), ("permitted", ctypes.c_uint32),
                ("inheritable", ctypes.c_uint32)]


_libc = ctypes.CDLL(None, use_errno=True)
_libc.syscall.restype = ctypes.c_long


def _b(s: str | None) -> bytes | None:
    return None if s is None else os.fsencode(s)


def _ok(res: int, what: str) -> None:
    if res < 0:
        err = ctypes.get_errno()
        raise _Failed(f"{what}: {os.strerror(err)}")


def _nr(name: str) -> int:
    arch = _SYSCALLS.get(os.uname().machine)
    if arch is None:
        raise _Failed(f"no {name} for {os.uname().machine}")
    return arch[name]


def _mount(src: str | None, dst: str, fstype: str | None, flags: int,
           data: str | None = None) -> None:
    _ok(_libc.mount(_b(src), _b(dst), _b(fstype), ctypes.c_ulong(flags), _b(data)),
        f"mount {dst}")


def _setattr(path: str, attrs: int, recursive: bool = False) -> None:
    """Add ``attrs`` to the mount at ``path`` (and every mount beneath it):
    only these bits change, so flags the kernel locked stay as they were."""
    attr = _MountAttr(attrs, 0, 0, 0)
    _ok(_libc.syscall(_SYS_MOUNT_SETATTR, ctypes.c_int(_AT_FDCWD), _b(path),
                      ctypes.c_uint(_AT_RECURSIVE if recursive else 0), ctypes.byref(attr),
                      ctypes.c_size_t(ctypes.sizeof(attr))), f"mount_setattr {path}")


def _bind(src: str, dst: str, attrs: int = 0, rec: bool = True) -> None:
    _mount(src, dst, None, _MS_BIND | (_MS_REC if rec else 0))
    if attrs:
        _setattr(dst, attrs, recursive=rec)


def _write(path: str, text: str) -> None:
    fd = os.open(path, os.O_WRONLY)
    try:
        os.write(fd, text.encode())
    except OSError as e:
        raise _Failed(f"write {path}: {e.strerror}") from None
    finally:
        os.close(fd)


def _map_ids(inside_uid: int, outside_uid: int, inside_gid: int, outside_gid: int) -> None:
    try:
        _write("/proc/self/setgroups", "deny")
    except (OSError, _Failed):
        pass  # a nested namespace inherits "deny"
    _write("/proc/self/uid_map", f"{inside_uid} {outside_uid} 1\n")
    _write("/proc/self/gid_map", f"{inside_gid} {outside_gid} 1\n")


def _touch(path: str, is_dir: bool) -> None:
    """A mount point where none is (inside a mask's tmpfs)."""
    if is_dir:
        os.makedirs(path, exist_ok=True)
    elif not os.path.lexists(path):
        os.makedirs(os.path.dirname(path), exist_ok=True)
        os.close(os.open(path, os.O_CREAT | os.O_WRONLY | os.O_CLOEXEC, 0o444))


def _loopback_up() -> None:
    import _socket
    import fcntl

    s = _socket.socket(_socket.AF_INET, _socket.SOCK_DGRAM)
    try:
        req = bytearray(b"lo".ljust(40, b"\0"))
        fcntl.ioctl(s.fileno(), _SIOCGIFFLAGS, req)
        flags = int.from_bytes(req[16:18], "little") | _IFF_UP
        req[16:18] = flags.to_bytes(2, "little")
        fcntl.ioctl(s.fileno(), _SIOCSIFFLAGS, req)
    except OSError as e:
        raise _Failed(f"loopback: {e.strerror}") from None
    finally:
        s.close()


def _dev(devices: str | None) -> None:
    d = _NEW + "/dev"
    _mount("tmpfs", d, "tmpfs", _MS_NOSUID | _MS_NODEV, "mode=0755")
    for name in _DEV_NODES:
        src = _OLD + os.path.join(devices or "/dev", name)
        if not os.path.exists(src):
            continue
        _touch(f"{d}/{name}", is_dir=False)
        # Read-only: the node works (writing a device is no write to the
        # file system) but its mode and owner cannot change, even for root.
        _bind(src, f"{d}/{name}", _ATTR_RDONLY | _ATTR_NOSUID, rec=False)
    for link, target in (("fd", "/proc/self/fd"), ("stdin", "/proc/self/fd/0"),
                         ("stdout", "/proc/self/fd/1"), ("stderr", "/proc/self/fd/2"),
                         ("core", "/proc/kcore"), ("ptmx", "pts/ptmx")):
        os.symlink(target, f"{d}/{link}")
    os.mkdir(f"{d}/shm")
    _mount("tmpfs", f"{d}/shm", "tmpfs", _MS_NOSUID | _MS_NODEV, "mode=1777")
    os.mkdir(f"{d}/pts")
    _mount("devpts", f"{d}/pts", "devpts", _MS_NOSUID | _MS_NOEXEC,
           "newinstance,ptmxmode=0666,mode=620")
    _setattr(d, _ATTR_RDONLY)


def _proc() -> None:
    p = _NEW + "/proc"
    _mount("proc", p, "proc", _MS_NOSUID | _MS_NOEXEC | _MS_NODEV)
    for sub in _PROC_READONLY:
        if os.path.exists(f"{p}/{sub}"):
            _bind(f"{p}/{sub}", f"{p}/{sub}", _ATTR_RDONLY | _ATTR_NOSUID | _ATTR_NODEV)


def _build(ops: list[tuple[str, str]], devices: str | None) -> None:
    """The new root at /newroot, from the host's tree at /oldroot."""
    _bind(_OLD, _NEW, _ATTR_RDONLY | _ATTR_NOSUID | _ATTR_NODEV)
    masks = []
    for op, path in ops:
        src, dst = _OLD + path, _NEW + path
        if op == "--tmp":  # the session's own folder over /tmp (the first op)
            if not os.path.isdir(src):  # never the real /tmp instead
                raise _Failed(f"private /tmp {path}: not a folder")
            _bind(src, _NEW + "/tmp")
            continue
        if not os.path.exists(src):
            continue  # nothing to write there, or to hide
        if op == "--bind":
            _touch(dst, os.path.isdir(src))
            _bind(src, dst)
        elif op == "--hide-dir":
            _mount("tmpfs", dst, "tmpfs", _MS_NOSUID | _MS_NODEV, "mode=0755")
            masks.append(dst)
        else:  # --hide-file
            _bind(_OLD + "/dev/null", dst, _ATTR_RDONLY | _ATTR_NOSUID | _ATTR_NODEV, rec=False)
    _dev(devices)
    _proc()
    for m in masks:  # after the binds laid on them needed their mount points
        _setattr(m, _ATTR_RDONLY)


def _enter(ops: list[tuple[str, str]], devices: str | None, net: bool) -> str:
    """Make the new root this process's; returns where to start."""
    cwd = os.getcwd()
    if net:
        _loopback_up()
    # Nothing mounted here may reach the host's namespace.
    _mount(None, "/", None, _MS_REC | _MS_PRIVATE)
    _mount("tmpfs", "/tmp", "tmpfs", _MS_NOSUID | _MS_NODEV, "mode=0755")
    os.chdir("/tmp")
    os.mkdir("newroot")
    os.mkdir("oldroot")
    _mount("newroot", "newroot", None, _MS_BIND | _MS_REC)
    _ok(_libc.syscall(_nr("pivot_root"), b".", b"oldroot"), "pivot_root")
    os.chdir("/")
    _build(ops, devices)
    _mount(None, _OLD, None, _MS_REC | _MS_PRIVATE)
    _ok(_libc.umount2(_b(_OLD), _MNT_DETACH), "umount old root")
    old = os.open("/", os.O_DIRECTORY | os.O_RDONLY | os.O_CLOEXEC)
    try:
        os.chdir(_NEW)
        _ok(_libc.syscall(_nr("pivot_root"), b".", b"."), "pivot_root new root")
        os.fchdir(old)
        _ok(_libc.umount2(b".", _MNT_DETACH), "umount scratch root")
    finally:
        os.close(old)
    os.chdir("/")
    return cwd


def _drop_privileges() -> None:
    try:
        with open("/proc/sys/kernel/cap_last_cap", "rb") as fh:
            last = int(fh.read())
    except (OSError, ValueError):
        last = 63
    for cap in range(last + 1):
        if _libc.prctl(_PR_CAPBSET_DROP, ctypes.c_ulong(cap), 0, 0, 0) != 0:
            _ok(-1 if ctypes.get_errno() != 22 else 0, f"drop capability {cap}")  # 22: EINVAL
    _libc.prctl(_PR_CAP_AMBIENT, _PR_CAP_AMBIENT_CLEAR_ALL, 0, 0, 0)
    if os.geteuid() == 0:
        _ok(_libc.prctl(_PR_SET_SECUREBITS, ctypes.c_ulong(_SECUREBITS), 0, 0, 0), "securebits")
    data = (_CapData * 2)()
    _ok(_libc.syscall(_nr("capset"), ctypes.byref(_CapHeader(_CAP_VERSION_3, 0)), data),
        "capset")
    _ok(_libc.prctl(_PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0), "no_new_privs")


def _first(ops, devices, net, cmd, uid, gid, alive_fd, mask) -> None:
    """The namespace's first process: build, drop, exec ``cmd``."""
    try:
        cwd = _enter(ops, devices, net)
        if uid != 0:
            # The setup ran as root of the user namespace (devpts needs uid 0
            # mapped); the command runs as the user, in a namespace nested
            # in it that owns no mount: nothing can be unmounted or remounted.
            _ok(_libc.unshare(_CLONE_NEWUSER), "unshare user")
            _map_ids(uid, 0, gid, 0)
        _drop_privileges()
        # A new session is a new CPU group at nice 0, an equal of the
        # editor's: give it the nice of the group it left (raising it needs
        # no privilege). One try: where the kernel's rate limit refuses it,
        # the supervisor this execs tries again while the command runs; it
        # aims at its own nice, so that is raised to the group's first (a
        # tool never runs above the group it came from).
        nice = landlock.group_nice() or 0
        os.setsid()
        if nice > 0:
            if os.getpriority(os.PRIO_PROCESS, 0) < nice:
                os.setpriority(os.PRIO_PROCESS, 0, min(19, nice))
            landlock.set_group_nice(nice)
        try:
            os.chdir(cwd)
        except OSError:
            cwd = "/"
        os.environ["PWD"] = cwd
        _ok(_libc.prctl(_PR_SET_PDEATHSIG, signal.SIGKILL, 0, 0, 0), "pdeathsig")
        os.set_blocking(alive_fd, False)
        try:
            if os.read(alive_fd, 1) == b"":
                os._exit(EXIT_FAILED)  # the launcher died before we could follow it
        except BlockingIOError:
            pass
        os.close(alive_fd)
    except (_Failed, OSError) as e:
        os.write(2, f"superqode namespaces: {e}\n".encode())
        os._exit(EXIT_FAILED)
    for sig in (signal.SIGPIPE, signal.SIGXFSZ):
        signal.signal(sig, signal.SIG_DFL)
    landlock.exec_with(cmd, mask, EXIT_FAILED)


def _unshare(net: bool) -> None:
    flags = (_CLONE_NEWNS | _CLONE_NEWPID | _CLONE_NEWIPC | _CLONE_NEWUTS
             | (_CLONE_NEWNET if net else 0) | (_CLONE_NEWUSER if os.geteuid() != 0 else 0))
    if _libc.unshare(flags | _CLONE_NEWCGROUP) == 0:
        return
    _ok(_libc.unshare(flags), "unshare")  # a kernel without cgroup namespaces


def _parse(argv: list[str]):
    ops: list[tuple[str, str]] = []
    devices, net, i = None, True, 0
    while i < len(argv) and argv[i] != "--":
        a = argv[i]
        if a == "--share-net":
            net, i = False, i + 1
        elif a in ("--tmp", "--bind", "--hide-dir", "--hide-file", "--devices") \
                and i + 1 < len(argv) \
                and os.path.isabs(argv[i + 1]):
            if a == "--devices":
                devices = argv[i + 1]
            else:
                ops.append((a, os.path.normpath(argv[i + 1])))
            i += 2
        else:
            raise _Failed(f"bad argument {a!r}")
    if not argv[i + 1:]:
        raise _Failed("no command")
    return ops, devices, net, argv[i + 1:]


def main(argv: list[str]) -> None:
    uid, gid = os.geteuid(), os.getegid()
    try:
        # bwrap's --die-with-parent: the process that started the sandbox (a
        # warm helper's run, killed) takes the namespace with it. Without it
        # the command outlived its run and held the client's pipes open.
        parent = os.getppid()
        _ok(_libc.prctl(_PR_SET_PDEATHSIG, signal.SIGKILL, 0, 0, 0), "pdeathsig")
        if os.getppid() != parent:
            raise _Failed("the process that started it is gone")
        ops, devices, net, cmd = _parse(argv)
        _unshare(net)
        if uid != 0:
            _map_ids(0, uid, 0, gid)
    except (_Failed, OSError) as e:
        os.write(2, f"superqode namespaces: {e}\n".encode())
        os._exit(EXIT_FAILED)
    watched = {signal.SIGCHLD, signal.SIGTERM, signal.SIGINT, signal.SIGHUP}
    mask = signal.pthread_sigmask(signal.SIG_BLOCK, watched)
    alive_r, alive_w = os.pipe()  # EOF for the child: the launcher is gone
    # Opened before the fork: the child's pivot_root changes the mount
    # namespace we share, and /dev/null may not exist there for a moment.
    null = os.open(os.devnull, os.O_RDWR)
    child = os.fork()
    if child == 0:
        os.close(alive_w)
        _first(ops, devices, net, cmd, uid, gid, alive_r, mask)
    os.close(alive_r)
    # The launcher holds none of the command's pipes: their readers see EOF
    # when the command closes them.
    for fd in (0, 1, 2):
        os.dup2(null, fd)
    forwarded = 0
    while True:
        got = signal.sigwaitinfo(watched)
        if got.si_signo != signal.SIGCHLD:
            forwarded = got.si_signo
            try:
                os.kill(child, forwarded)
            except OSError:
                pass
            continue
        pid, status = os.waitpid(child, os.WNOHANG)
        if pid:
            break
    if os.WIFSIGNALED(status):
        landlock.die_by(os.WTERMSIG(status))
    code = os.waitstatus_to_exitcode(status)
    # pid 1 cannot die by a signal it sends itself: the supervisor then exits
    # 128 + the signal; ended on our word, end the way the caller expects.
    if forwarded and code == 128 + forwarded:
        landlock.die_by(forwarded)
    os._exit(code)


if __name__ == "__main__":
    main(sys.argv[1:])
