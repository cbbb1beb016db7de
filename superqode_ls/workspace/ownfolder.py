"""``<project>/.superqode``: SuperQode's folder inside a tree it does not own.

The project is untrusted input: a repository can ship ``.superqode`` itself,
``qe-artifacts`` or ``patches`` as a symlink into ``~/.local/bin``, a
``manifest.json`` that is a FIFO, a hard link to ``~/.bashrc``. So nothing
here resolves a path. A folder is reached from a descriptor of the project,
one component at a time, with ``O_DIRECTORY|O_NOFOLLOW``; a file is opened
relative to its folder's descriptor with ``O_NOFOLLOW|O_NONBLOCK`` and must be
a regular file; a write makes a new file and renames it over the name (a
rename replaces a link or a hard link itself, never what it points to);
removal is ``unlinkat`` or ``shutil.rmtree(dir_fd=)``, which never follows a
link where the platform supports it (refused where it does not).

A symlink where one of SuperQode's folders should be is refused with one line
(:class:`UnsafeOwnPath`), not replaced: SuperQode removes nothing the
repository ships, and the user sees what to remove. Each access walks down
again from the project, so a link swapped in during a session is met (and
refused) by the next write.
"""

from __future__ import annotations

import errno
import os
import secrets
import shutil
import stat
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path

from .errors import WorkspaceError

_DIR = os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_CLOEXEC
_READ = os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC
_NEW = os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | os.O_CLOEXEC


class SuperqodeDirError(WorkspaceError, OSError):
    """``<project>/.superqode`` cannot be made or written (both kinds of
    handler catch it: engine callers expect WorkspaceError, writers OSError)."""


class UnsafeOwnPath(SuperqodeDirError):
    """A link (or a non-folder) where SuperQode's own folder should be."""

    def __init__(self, message: str, *, link: bool = False, path: Path | None = None):
        super().__init__(message)
        self.link = link
        self.path = path


def _why(where: Path, e: OSError, dfd: int | None = None) -> SuperqodeDirError:
    if e.errno in (errno.ELOOP, errno.ENOTDIR):
        link = e.errno == errno.ELOOP
        if dfd is not None and not link:
            try:
                link = stat.S_ISLNK(os.stat(where.name, dir_fd=dfd, follow_symlinks=False).st_mode)
            except OSError:
                pass
        if link:
            return UnsafeOwnPath(f"{where}: a symlink; SuperQode does not follow links in the "
                                 "project's .superqode (remove the link)", link=True, path=where)
        return UnsafeOwnPath(f"{where}: exists but is not a folder; SuperQode keeps its "
                             "artifacts there", path=where)
    return SuperqodeDirError(f"{where}: cannot open ({e.strerror or e})")


def open_dir(project: Path, parts: Sequence[str], create: bool = False) -> int | None:
    """A descriptor of ``project/<parts...>``, reached without following any
    link below ``project``; None when a folder is missing and not ``create``.
    The caller closes it. Raises UnsafeOwnPath on a link."""
    fd = os.open(project, os.O_RDONLY | os.O_DIRECTORY | os.O_CLOEXEC)
    return _descend(fd, parts, create, Path(project))


def open_dir_at(dfd: int, parts: Sequence[str], create: bool = False) -> int | None:
    """:func:`open_dir` from an open folder (``dfd`` stays open)."""
    return _descend(os.dup(dfd), parts, create, Path("."))


def _descend(fd: int, parts: Sequence[str], create: bool, where: Path) -> int | None:
    """Walk down from ``fd`` (consumed) one component at a time."""
    try:
        for part in parts:
            if part in ("", ".", "..") or "/" in part or "\0" in part:
                raise UnsafeOwnPath(f"{where / part}: not a plain name")
            where = where / part
            try:
                nxt = os.open(part, _DIR, dir_fd=fd)
            except FileNotFoundError:
                if not create:
                    os.close(fd)
                    return None
                try:
                    os.mkdir(part, 0o777, dir_fd=fd)
                except FileExistsError:  # made meanwhile (or a link planted): open decides
                    pass
                except OSError as e:
                    raise _why(where, e, fd) from None
                try:
                    nxt = os.open(part, _DIR, dir_fd=fd)
                except OSError as e:
                    raise _why(where, e, fd) from None
            except OSError as e:
                raise _why(where, e, fd) from None
            os.close(fd)
            fd = nxt
    except BaseException:
        os.close(fd)
        raise
    return fd


@contextmanager
def folder(project: Path, parts: Sequence[str], create: bool = False) -> Iterator[int | None]:
    fd = open_dir(project, parts, create)
    try:
        yield fd
    finally:
        if fd is not None:
            os.close(fd)


def kind_at(dfd: int, name: str) -> str | None:
    """``"d"``, ``"f"``, ``"l"`` or ``"?"`` for what ``name`` is (not followed); None: absent."""
    try:
        st = os.stat(name, dir_fd=dfd, follow_symlinks=False)
    except FileNotFoundError:
        return None
    if stat.S_ISDIR(st.st_mode):
        return "d"
    if stat.S_ISREG(st.st_mode):
        return "f"
    return "l" if stat.S_ISLNK(st.st_mode) else "?"


def write_at(dfd: int, name: str, data: bytes, *, exclusive: bool = False) -> None:
    """``name`` in the folder ``dfd`` holds ``data``. Written to a fresh file
    then renamed over the name, so a link or hard link there is replaced, not
    written through. ``exclusive``: the name is new (a session's own file):
    written in place, with O_EXCL, one file instead of two; an existing name
    falls back to the rename."""
    if exclusive:
        try:
            fd = os.open(name, _NEW, 0o644, dir_fd=dfd)
        except FileExistsError:
            pass
        else:
            _fill(fd, data, name, dfd)
            return
    tmp = f".{name}.{secrets.token_hex(6)}"
    fd = os.open(tmp, _NEW, 0o644, dir_fd=dfd)
    _fill(fd, data, tmp, dfd)
    try:
        os.replace(tmp, name, src_dir_fd=dfd, dst_dir_fd=dfd)
    except BaseException:
        _unlink_quiet(dfd, tmp)
        raise


def _fill(fd: int, data: bytes, name: str, dfd: int) -> None:
    try:
        with os.fdopen(fd, "wb") as fh:
            fh.write(data)
    except BaseException:
        _unlink_quiet(dfd, name)
        raise


def _unlink_quiet(dfd: int, name: str) -> None:
    try:
        os.unlink(name, dir_fd=dfd)
    except OSError:
        pass


def read_at(dfd: int, name: str) -> bytes | None:
    """The bytes of the regular file ``name``; None when absent, a link, a
    FIFO or anything but a regular file (never blocks, never follows)."""
    try:
        fd = os.open(name, _READ, dir_fd=dfd)
    except OSError:
        return None
    try:
        if not stat.S_ISREG(os.fstat(fd).st_mode):
            return None
        chunks = []
        while chunk := os.read(fd, 1 << 20):
            chunks.append(chunk)
        return b"".join(chunks)
    finally:
        os.close(fd)


def lock_at(dfd: int, name: str) -> int:
    """A descriptor of the lock file ``name`` (created; never through a link)."""
    try:
        return os.open(name, os.O_RDWR | os.O_CREAT | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC,
                       0o644, dir_fd=dfd)
    except OSError as e:
        raise _why(Path(name), e) from None


def remove_at(dfd: int, name: str) -> None:
    """Remove ``name`` from the folder ``dfd``: a file or link is unlinked
    (a link as itself); a folder goes with the descriptor-based rmtree, and
    is refused where rmtree could be tricked into following a link."""
    try:
        st = os.stat(name, dir_fd=dfd, follow_symlinks=False)
    except FileNotFoundError:
        return
    if not stat.S_ISDIR(st.st_mode):
        os.unlink(name, dir_fd=dfd)
        return
    if not shutil.rmtree.avoids_symlink_attacks:
        raise SuperqodeDirError(f"{name}: folders are not removed on this platform "
                                "(no link-safe removal)")
    shutil.rmtree(name, dir_fd=dfd)


def names_at(dfd: int) -> list[str]:
    with os.scandir(dfd) as it:
        return [e.name for e in it]
