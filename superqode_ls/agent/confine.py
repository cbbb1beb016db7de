"""Keeping the agent inside the sandbox root.

The file tools run in SuperQode's own process, outside the barrier, on a
tree the session's processes write while they run. So a path is never
resolved and then opened (a link swapped in between would be followed):
it is walked from a descriptor of the root, one component at a time, each
opened with ``O_NOFOLLOW`` relative to its folder's descriptor. A link met
on the way is read (``readlinkat``) and its target walked again from the
root the same way, so a link that stays inside works and one that leaves
(``ln -s ~/.ssh keys``, ``../x``) is refused, whenever it was made. A write
goes to a new file in the reached folder, renamed over the name (a hard
link is replaced, not written through); reads take regular files only.
Shell commands are pre-checked: git through the workspace guard, and any
argument that names a place outside the sandbox (``/``, ``~``, ``$HOME``,
``../..``) is refused. The shell check is a tripwire, not a jail; the sandbox
and the git shim are the isolation.
"""

from __future__ import annotations

import errno
import os
import re
import secrets
import shlex
import stat
import sys
from collections.abc import Callable, Iterator
from pathlib import Path, PurePosixPath

_DIR = os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_CLOEXEC
_READ = os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC
_NEW = os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | os.O_CLOEXEC
MAX_LINKS = 40  # as the kernel's own bound on links in one lookup


class Refused(Exception):
    """A tool call refused for safety; the message goes back to the model."""


def resolve_inside(root: Path, rel: str, *, for_write: bool = False) -> Path:
    """Where ``rel`` leads under ``root`` (links inside followed, by the same
    walk as every access); Refused when it leaves ``root``. A check for the
    model's sake only: each access walks again (:func:`read_inside`...)."""
    root = root.resolve()
    fd, parts = _walk(root, rel, for_write=for_write, missing_ok=True)
    if fd is not None:
        os.close(fd)
    return root.joinpath(*parts)


def _lexical(root: Path, rel: str) -> list[str]:
    """``rel``'s components under ``root``, ``..`` collapsed without touching
    the disk; Refused when they leave ``root``."""
    if not isinstance(rel, str) or not rel.strip():
        raise Refused("path is empty")
    if "\x00" in rel:
        raise Refused("path contains a NUL byte")
    if rel.startswith("~") or "$" in rel:
        raise Refused(f"{rel}: outside the sandbox (home and variables are not expanded)")
    candidate = PurePosixPath(rel)
    if candidate.is_absolute():
        if not candidate.is_relative_to(root.as_posix()):
            raise Refused(f"{rel}: outside the sandbox")
        candidate = candidate.relative_to(root.as_posix())
    return _collapse(candidate.parts, f"{rel}: outside the sandbox")


def _collapse(parts: tuple[str, ...] | list[str], why: str) -> list[str]:
    out: list[str] = []
    for part in parts:
        if part in ("", "."):
            continue
        if part == "..":
            if not out:
                raise Refused(why)
            out.pop()
        else:
            out.append(part)
    return out


def _walk(root: Path, rel: str, *, for_write: bool = False, missing_ok: bool = False,
          create: bool = False, want_dir: bool = False) -> tuple[int | None, list[str]]:
    """(a descriptor of the folder holding the last component, or of the
    target itself with ``want_dir``; the components reached). Every component
    is opened with ``O_NOFOLLOW`` from its folder's descriptor; a link is
    read and its target walked again from ``root``. ``create``: missing
    folders are made. ``missing_ok``: a missing folder ends the walk with
    None (the rest of the path taken as written)."""
    parts = _lexical(root, rel)
    for _ in range(MAX_LINKS + 1):
        if for_write and parts and parts[0] == ".git":
            raise Refused(f"{rel}: the sandbox's .git is not writable by the agent")
        fd = os.open(root, os.O_RDONLY | os.O_DIRECTORY | os.O_CLOEXEC)
        try:
            link = _descend(fd, parts, create=create, want_dir=want_dir)  # consumes fd
        except FileNotFoundError:
            if missing_ok:
                return None, parts
            raise
        if isinstance(link, int):
            return link, parts
        i, target = link
        base = [] if target.startswith("/") else parts[:i]
        if target.startswith("/"):
            target_path = PurePosixPath(target)
            if not target_path.is_relative_to(root.as_posix()):
                raise Refused(f"{rel}: outside the sandbox (a link)")
            target = target_path.relative_to(root.as_posix()).as_posix()
        parts = _collapse([*base, *PurePosixPath(target).parts, *parts[i + 1:]],
                          f"{rel}: outside the sandbox (a link)")
    raise Refused(f"{rel}: too many links")


def _descend(fd: int, parts: list[str], *, create: bool, want_dir: bool) -> int | tuple[int, str]:
    """Walk ``parts`` down from ``fd`` (consumed). The folder reached (or
    the target, ``want_dir``) as a descriptor, or (index, target) of the
    first link met."""
    last = len(parts) - (0 if want_dir else 1)
    try:
        for i, part in enumerate(parts):
            if i < last:
                try:
                    nxt = os.open(part, _DIR, dir_fd=fd)
                except FileNotFoundError:
                    if not create:
                        raise
                    try:
                        os.mkdir(part, 0o777, dir_fd=fd)
                    except FileExistsError:  # made meanwhile: the open decides
                        pass
                    nxt = os.open(part, _DIR, dir_fd=fd)
                except OSError as e:
                    if e.errno not in (errno.ELOOP, errno.ENOTDIR):
                        raise
                    try:
                        target = os.readlink(part, dir_fd=fd)
                    except OSError:  # not a link: a file where a folder should be
                        raise NotADirectoryError(errno.ENOTDIR, "not a directory", part) from None
                    os.close(fd)
                    return i, target
                os.close(fd)
                fd = nxt
            else:  # the last component: a link there is followed (inside) too
                try:
                    target = os.readlink(part, dir_fd=fd)
                except OSError:
                    pass
                else:
                    os.close(fd)
                    return i, target
        return fd
    except BaseException:
        os.close(fd)
        raise


def _fd_or_raise(fd: int | None, rel: str) -> int:
    if fd is None:
        raise FileNotFoundError(errno.ENOENT, "no such file", rel)
    return fd


def read_inside(root: Path, rel: str, limit: int | None = None) -> bytes:
    """The bytes of the regular file ``rel`` under ``root`` (the walk of
    :func:`_walk`; never a FIFO, a device or anything outside). ``limit``:
    larger files raise ``ValueError``."""
    fd, parts = _walk(root, rel)
    dfd = _fd_or_raise(fd, rel)
    try:
        if not parts:
            raise IsADirectoryError(errno.EISDIR, "is a directory", rel)
        try:
            f = os.open(parts[-1], _READ, dir_fd=dfd)
        except OSError as e:
            if e.errno == errno.ELOOP:  # a link swapped in after the walk: refused
                raise Refused(f"{rel}: a link was swapped in while it was read") from None
            raise
    finally:
        os.close(dfd)
    with os.fdopen(f, "rb") as fh:
        st = os.fstat(fh.fileno())
        if stat.S_ISDIR(st.st_mode):
            raise IsADirectoryError(errno.EISDIR, "is a directory", rel)
        if not stat.S_ISREG(st.st_mode):
            raise Refused(f"{rel}: not a regular file")
        if limit is not None and st.st_size > limit:
            raise ValueError(f"{rel}: larger than {limit} bytes")
        return fh.read()


def kind_inside(root: Path, rel: str) -> str | None:
    """``"f"`` (regular file), ``"d"`` (folder), ``"?"`` (anything else) or
    None (missing) for where ``rel`` leads; Refused when that is outside."""
    fd, parts = _walk(root, rel, missing_ok=True)
    if fd is None:
        return None
    try:
        if not parts:
            return "d"
        try:
            st = os.stat(parts[-1], dir_fd=fd, follow_symlinks=False)
        except FileNotFoundError:
            return None
    finally:
        os.close(fd)
    return "f" if stat.S_ISREG(st.st_mode) else "d" if stat.S_ISDIR(st.st_mode) else "?"


def write_inside(root: Path, rel: str, data: bytes) -> tuple[bool, str]:
    """Write ``data`` to ``rel`` under ``root`` (folders made as needed):
    a new file in the reached folder renamed over the name, with the mode
    of the file it replaces. (whether it existed, the path written,
    relative to ``root``)."""
    fd, parts = _walk(root, rel, for_write=True, create=True)
    dfd = _fd_or_raise(fd, rel)
    try:
        if not parts:
            raise IsADirectoryError(errno.EISDIR, "is a directory", rel)
        name = parts[-1]
        try:
            st = os.stat(name, dir_fd=dfd, follow_symlinks=False)
        except FileNotFoundError:
            st = None
        if st is not None and stat.S_ISDIR(st.st_mode):
            raise IsADirectoryError(errno.EISDIR, "is a directory", rel)
        tmp = f".{name}.{secrets.token_hex(6)}.superqode"
        f = os.open(tmp, _NEW, 0o644, dir_fd=dfd)
        try:
            with os.fdopen(f, "wb") as fh:
                fh.write(data)
                if st is not None and stat.S_ISREG(st.st_mode):
                    os.fchmod(fh.fileno(), stat.S_IMODE(st.st_mode))
            os.replace(tmp, name, src_dir_fd=dfd, dst_dir_fd=dfd)
        except BaseException:
            try:
                os.unlink(tmp, dir_fd=dfd)
            except OSError:
                pass
            raise
    finally:
        os.close(dfd)
    return st is not None, "/".join(parts)


def remove_inside(root: Path, rel: str) -> None:
    """Remove the file or empty folder ``rel`` itself (a link as a link),
    reached from its folder's descriptor by the walk; missing: nothing."""
    *parent, name = _lexical(root, rel) or [""]
    if not name:
        return
    fd, _ = _walk(root, "/".join(parent) or ".", want_dir=True, missing_ok=True)
    if fd is None:
        return
    try:
        st = os.stat(name, dir_fd=fd, follow_symlinks=False)
        if stat.S_ISDIR(st.st_mode):
            os.rmdir(name, dir_fd=fd)
        else:
            os.unlink(name, dir_fd=fd)
    except FileNotFoundError:
        pass
    finally:
        os.close(fd)


def files_inside(root: Path, rel: str = ".",
                 prune: Callable[[str], bool] = lambda rel: False) -> Iterator[str]:
    """The regular files under the folder ``rel``, as paths relative to
    ``root``: ``os.fwalk`` from a descriptor, links neither followed nor
    listed; folders for which ``prune(path)`` is true are not entered."""
    fd, parts = _walk(root, rel, want_dir=True, missing_ok=True)
    if fd is None:
        return
    prefix = "/".join(parts)
    try:
        for dirpath, dirs, names, dfd in os.fwalk(".", dir_fd=fd, follow_symlinks=False):
            here = PurePosixPath(prefix, dirpath).as_posix().removeprefix("./")
            dirs[:] = [d for d in dirs if not prune(f"{here}/{d}" if here != "." else d)]
            for name in names:
                try:
                    st = os.stat(name, dir_fd=dfd, follow_symlinks=False)
                except OSError:
                    continue
                if stat.S_ISREG(st.st_mode):
                    yield f"{here}/{name}" if here and here != "." else name
    finally:
        os.close(fd)


def relative(root: Path, path: Path) -> str:
    return path.resolve().relative_to(root.resolve()).as_posix() or "."


# Read-only system locations a test command legitimately names.
_SYSTEM_PREFIXES = (
    "/usr/",
    "/bin/",
    "/sbin/",
    "/lib",
    "/opt/",
    "/dev/null",
    "/dev/stdout",
    "/dev/stderr",
    "/proc/self/",
)
_HOME_RE = re.compile(r"(^|[^\w])(~|\$HOME\b|\$\{HOME\}|\$USER\b)")
_DANGEROUS_RE = re.compile(
    r"\b(sudo|su|mkfs\w*|dd|shutdown|reboot|chown|crontab|ssh|scp|curl|wget|nc)\b"
)


def _allowed_prefixes() -> tuple[str, ...]:
    extra = {os.path.realpath(sys.prefix) + "/", os.path.realpath(sys.base_prefix) + "/"}
    return _SYSTEM_PREFIXES + tuple(sorted(extra))


def shell_refusal(command: str, root: Path) -> str | None:
    """Why ``command`` may not run in the sandbox at ``root``, or None."""
    if _HOME_RE.search(command):
        return "refers to the home directory"
    try:
        tokens = shlex.split(command, comments=False, posix=True)
    except ValueError as e:
        return f"cannot parse the command ({e})"
    m = _DANGEROUS_RE.search(" ".join(tokens))
    if m:
        return f"{m.group(1)} is not available to the agent"
    root = root.resolve()
    prefixes = _allowed_prefixes()
    for tok in tokens:
        for part in _path_like_parts(tok):
            if part.startswith("/"):
                real = os.path.realpath(part)
                if real == str(root) or Path(real).is_relative_to(root):
                    continue
                if any(real.startswith(p) or real + "/" == p for p in prefixes):
                    continue
                return f"{part}: outside the sandbox"
            if ".." in Path(part).parts:
                resolved = Path(os.path.realpath(root / part))
                if resolved != root and not resolved.is_relative_to(root):
                    return f"{part}: outside the sandbox"
    return None


def _path_like_parts(token: str) -> list[str]:
    # "--out=/etc/x" and "a:/b" carry paths after a separator.
    parts = [token]
    for sep in ("=", ":"):
        if sep in token:
            parts.extend(p for p in token.split(sep)[1:] if p)
    return [p for p in parts if p.startswith("/") or ".." in p]
