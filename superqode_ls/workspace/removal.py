"""Removing sandboxes without ever following a symlink.

A process running in a sandbox owns that folder: it can rename it away and put
a symlink to the user's repository in its place, or plant symlinks anywhere
inside it. Every removal therefore walks from a trusted root with directory
file descriptors (``openat`` with ``O_NOFOLLOW``, ``unlinkat``), so no path is
resolved twice and no symlink is ever entered: a symlink met inside is
unlinked as a link, one met on the way down to the target stops the removal.

The target itself is checked before anything goes: it must lie below the root
(``$SUPERQODE_HOME/working`` for sandboxes), must not be a symlink, and when
its device and inode were recorded at creation they must still match — a
folder swapped in later is not the one SuperQode made. Such a target is left
alone and reported (:class:`UnsafeRemoval`, one line naming the path).
Removal does not cross into another file system (a mount inside the tree).

A process running as root can also mark what it made immutable or
append-only (``chattr +i``/``+a``: an ioctl on a file opened for reading,
which the Landlock barrier does not govern); nothing could then remove the
sandbox. When an unlink or rmdir is refused, the flags of the entry and of the
folder it is in are cleared through their own descriptors (never by path)
and the removal retried; where that is not allowed either, the first reason
is reported and the rest still removed.
"""

from __future__ import annotations

import errno
import fcntl
import os
import stat
import struct
from collections.abc import Callable
from pathlib import Path

from .errors import WorkspaceError

_DIR_FLAGS = os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_CLOEXEC
_O_PATH = getattr(os, "O_PATH", 0)  # Linux: lets us fix permissions of an unreadable dir

Identity = tuple[int, int]  # (st_dev, st_ino)

# linux/fs.h: FS_IOC_GETFLAGS/SETFLAGS (_IOR/_IOW('f', 1/2, long)), the
# immutable and append-only flags. The kernel reads and writes an int.
_FS_IOC_GETFLAGS = 0x80086601 if struct.calcsize("l") == 8 else 0x80046601
_FS_IOC_SETFLAGS = 0x40086602 if struct.calcsize("l") == 8 else 0x40046602
_STUCK_FLAGS = 0x00000010 | 0x00000020


class UnsafeRemoval(WorkspaceError):
    """A path that removal refused to touch; the message is one line naming it."""

    def __init__(self, path: Path | str, why: str):
        self.path = str(path)
        self.why = why
        super().__init__(f"left alone: {path} {why}")


def identity(path: Path | str) -> Identity | None:
    """(device, inode) of ``path`` itself (never of a symlink's target)."""
    try:
        st = os.lstat(path)
    except OSError:
        return None
    return st.st_dev, st.st_ino


def check(path: Path | str, root: Path | str, expect: Identity | None = None) -> None:
    """Raise UnsafeRemoval unless ``path`` is a real folder (not reached
    through any symlink below ``root``) that is still the one recorded."""
    fd, name = _open_parent(path, root)
    if fd is None:
        raise UnsafeRemoval(path, "is missing")
    try:
        st = os.stat(name, dir_fd=fd, follow_symlinks=False)
    except FileNotFoundError:
        raise UnsafeRemoval(path, "is missing") from None
    finally:
        os.close(fd)
    _check_stat(path, st, expect)
    if not stat.S_ISDIR(st.st_mode):
        raise UnsafeRemoval(path, "is not a folder any more (the sandbox was swapped)")


def remove_tree(path: Path | str, root: Path | str, *, expect: Identity | None = None,
                link_ok: bool = False) -> bool:
    """Remove ``path`` (a folder tree or a file) below ``root`` without following
    symlinks. False when there was nothing to remove. ``link_ok``: a symlink at
    ``path`` itself is unlinked (as a link) rather than refused."""
    fd, name = _open_parent(path, root)
    if fd is None:
        return False
    try:
        try:
            st = os.stat(name, dir_fd=fd, follow_symlinks=False)
        except FileNotFoundError:
            return False
        # The parent's permissions are not ours to change (it may be the
        # user's .git/worktrees): no chmod-and-retry at the top.
        if link_ok and stat.S_ISLNK(st.st_mode) and expect is None:
            os.unlink(name, dir_fd=fd)
            return True
        _check_stat(path, st, expect)
        if not stat.S_ISDIR(st.st_mode):
            _remove_top(os.unlink, name, fd)
            return True
        sub = _open_dir(name, fd)
        if sub is None:  # replaced by a non-folder between the two calls
            raise UnsafeRemoval(path, "changed while being removed")
        try:
            fst = os.fstat(sub)
            if (fst.st_dev, fst.st_ino) != (st.st_dev, st.st_ino):
                raise UnsafeRemoval(path, "changed while being removed")
            failed = _clear(sub, fst.st_dev, Path(path))
        finally:
            os.close(sub)
        if failed is not None:
            raise failed
        _remove_top(os.rmdir, name, fd)
        return True
    finally:
        os.close(fd)


def _remove_top(fn, name: str, dfd: int) -> None:
    """Remove the target itself; its own immutable flag is cleared when that
    is what refuses (the parent's are not ours: it may be the user's
    ``.git/worktrees``)."""
    try:
        fn(name, dir_fd=dfd)
    except PermissionError:
        _unstick_entry(name, dfd)
        fn(name, dir_fd=dfd)


def _check_stat(path: Path | str, st: os.stat_result, expect: Identity | None) -> None:
    if stat.S_ISLNK(st.st_mode):
        raise UnsafeRemoval(path, "is a symlink now (the sandbox was swapped)")
    if expect is not None and (not stat.S_ISDIR(st.st_mode)
                               or (st.st_dev, st.st_ino) != tuple(expect)):
        raise UnsafeRemoval(path, "is no longer the folder SuperQode created (device/inode differ)")


def _open_parent(path: Path | str, root: Path | str) -> tuple[int | None, str]:
    """A descriptor of ``path``'s parent, reached from ``root`` one component at
    a time with O_NOFOLLOW; (None, name) when a folder on the way is missing."""
    p = os.path.abspath(path)
    rel = None
    real_root = os.path.realpath(root)
    for base in (os.path.abspath(root), real_root):
        if p.startswith(base.rstrip(os.sep) + os.sep):
            rel = p[len(base.rstrip(os.sep)) + 1:]
            break
    if rel is None:
        raise UnsafeRemoval(path, f"is outside {root}")
    parts = [x for x in rel.split(os.sep) if x]
    if not parts or any(x in (".", "..") for x in parts):
        raise UnsafeRemoval(path, f"is outside {root}")
    try:
        fd = os.open(real_root, os.O_RDONLY | os.O_DIRECTORY | os.O_CLOEXEC)
    except FileNotFoundError:
        return None, parts[-1]
    for part in parts[:-1]:
        try:
            nxt = os.open(part, _DIR_FLAGS, dir_fd=fd)
        except FileNotFoundError:
            os.close(fd)
            return None, parts[-1]
        except OSError as e:
            os.close(fd)
            if e.errno in (errno.ELOOP, errno.ENOTDIR):
                raise UnsafeRemoval(path, f"is reached through a symlink ({part})") from None
            raise
        os.close(fd)
        fd = nxt
    return fd, parts[-1]


def _open_dir(name: str, dfd: int) -> int | None:
    """Open a child folder without following it; None when it is not a folder
    (any more). An unreadable folder is made readable first."""
    try:
        return os.open(name, _DIR_FLAGS, dir_fd=dfd)
    except OSError as e:
        if e.errno in (errno.ELOOP, errno.ENOTDIR):
            return None
        if e.errno != errno.EACCES or not _O_PATH:
            raise
    # A tool left a folder without read/search permission. Take it by an
    # O_PATH handle (no permission needed, still no-follow) and chmod that
    # very inode through /proc: a path-based chmod could follow a swapped link.
    pfd = os.open(name, _O_PATH | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_CLOEXEC, dir_fd=dfd)
    try:
        os.chmod(f"/proc/self/fd/{pfd}", 0o700)
        return os.open(".", os.O_RDONLY | os.O_DIRECTORY | os.O_CLOEXEC, dir_fd=pfd)
    finally:
        os.close(pfd)


def _retry(fn, name: str, dfd: int) -> None:
    try:
        fn(name, dir_fd=dfd)
    except FileNotFoundError:
        return
    except PermissionError:
        try:
            os.fchmod(dfd, 0o700)  # read-only folders left by tools
            fn(name, dir_fd=dfd)
            return
        except PermissionError:
            pass
        # chattr +i/+a on the entry or its folder: clear, then the last try.
        unstick(dfd)
        _unstick_entry(name, dfd)
        fn(name, dir_fd=dfd)


def unstick(fd: int) -> bool:
    """Clear the immutable and append-only flags of the file open at ``fd``;
    False when it had none or they could not be cleared (no CAP_LINUX_IMMUTABLE,
    a file system without flags)."""
    try:
        buf = fcntl.ioctl(fd, _FS_IOC_GETFLAGS, bytes(8))
        flags = struct.unpack("i", buf[:4])[0]
        if not flags & _STUCK_FLAGS:
            return False
        fcntl.ioctl(fd, _FS_IOC_SETFLAGS, struct.pack("i", flags & ~_STUCK_FLAGS) + bytes(4))
        return True
    except OSError:
        return False


def _unstick_entry(name: str, dfd: int) -> bool:
    """:func:`unstick` a regular file or folder ``name`` of ``dfd``, opened
    without following it (nothing else is opened: a FIFO or device would
    block or act)."""
    try:
        st = os.stat(name, dir_fd=dfd, follow_symlinks=False)
        if not (stat.S_ISREG(st.st_mode) or stat.S_ISDIR(st.st_mode)):
            return False
        fd = os.open(name, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC, dir_fd=dfd)
    except OSError:
        return False
    try:
        fst = os.fstat(fd)
        return (fst.st_dev, fst.st_ino) == (st.st_dev, st.st_ino) and unstick(fd)
    finally:
        os.close(fd)


def _clear(dfd: int, dev: int, where: Path) -> Exception | None:
    """Empty the folder open at ``dfd``; symlinks inside are unlinked, never
    followed. Best effort: what cannot go stays, the first reason is returned."""
    failed: Exception | None = None
    with os.scandir(dfd) as it:
        names = [e.name for e in it]
    for name in names:
        try:
            st = os.stat(name, dir_fd=dfd, follow_symlinks=False)
            if not stat.S_ISDIR(st.st_mode):
                _retry(os.unlink, name, dfd)
                continue
            if st.st_dev != dev:
                raise UnsafeRemoval(where / name, "is another file system (a mount point)")
            sub = _open_dir(name, dfd)
            if sub is None:  # swapped for a link or file meanwhile: remove that, as is
                _retry(os.unlink, name, dfd)
                continue
            try:
                fst = os.fstat(sub)
                if (fst.st_dev, fst.st_ino) != (st.st_dev, st.st_ino):
                    raise UnsafeRemoval(where / name, "changed while being removed")
                inner = _clear(sub, dev, where / name)
            finally:
                os.close(sub)
            if inner is not None:
                raise inner
            _retry(os.rmdir, name, dfd)
        except FileNotFoundError:
            continue
        except (OSError, UnsafeRemoval) as e:
            failed = failed or e
    return failed


def unstick_tree(root: Path | str, descend: Callable[[str], bool] = lambda rel: True) -> int:
    """Clear the immutable and append-only flags of ``root`` and every
    regular file and folder below it (walked by descriptors, no link
    followed, not into another file system); ``descend(rel)`` false: the
    folder's own flags are cleared, its content not walked. Returns how many
    entries had flags cleared. For SuperQode's own state, which a root
    session can ``chattr +i`` (lock files, records, the store) to wedge
    every later session of a repository."""
    try:
        fd = os.open(root, _DIR_FLAGS)
    except OSError:
        return 0
    try:
        return int(unstick(fd)) + _unstick_below(fd, os.fstat(fd).st_dev, "", descend)
    finally:
        os.close(fd)


def _unstick_below(dfd: int, dev: int, rel: str, descend: Callable[[str], bool]) -> int:
    n = 0
    try:
        with os.scandir(dfd) as it:
            names = [e.name for e in it]
    except OSError:
        return 0
    for name in names:
        try:
            st = os.stat(name, dir_fd=dfd, follow_symlinks=False)
        except OSError:
            continue
        if stat.S_ISREG(st.st_mode):
            n += _unstick_entry(name, dfd)
            continue
        if not stat.S_ISDIR(st.st_mode) or st.st_dev != dev:
            continue
        try:
            sub = os.open(name, _DIR_FLAGS, dir_fd=dfd)
        except OSError:
            continue
        try:
            n += unstick(sub)
            if descend(rel + name):
                n += _unstick_below(sub, dev, rel + name + "/", descend)
        finally:
            os.close(sub)
    return n
