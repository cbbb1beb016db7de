"""The ignore rules of SuperQode's snapshots: the user's global excludes and
SuperQode's cache patterns, in one file of SuperQode's.

git reads one ``core.excludesFile``. SuperQode's hashes of a tree (the
user's, a sandbox's, a warm reset's proof) name their own with ``-c
core.excludesFile=``, so that caches tools write are never part of a change;
that *replaces* the user's global excludes file, and a file the user told git
to ignore everywhere (``secret.env``, ``.envrc``, an editor's scratch) would be
carried into the sandbox, where every role of a session can read it. So the
file SuperQode names holds both: the user's patterns first, SuperQode's cache
patterns last (in one file the last match wins: a cache stays out even where
the user's file un-ignores it). Project ``.gitignore`` files and
``info/exclude`` are read by git as always.

The user's file is found the way git finds it: the last
``core.excludesFile`` of their configuration (``~`` and ``~user`` expanded, a
relative path taken from the top of the work tree, where git runs), else
``$XDG_CONFIG_HOME/git/ignore``, else ``~/.config/git/ignore``. It is the
user's, never a session's: it is read once, when the session starts, before
any process of the session exists, and copied into the session's private
folder (SuperQode's part of it, which no process of the session may write),
written without following a link. Every hash of that session, and of its
sandbox when it is read again after a crash, names that copy, so the user's
tree and the sandbox are hashed under the same rules.

Failing closed: a user's file that exists but cannot be read (a fifo or a
device is refused, not waited on), a ``core.excludesFile`` without a value,
or a copy that cannot be written stop the session's making with one line; a
copy gone when a hash runs stops that hash (git would read a missing
excludes file as no rules and carry more).
"""

from __future__ import annotations

import contextlib
import errno
import os
import pwd
import stat
from pathlib import Path

from .errors import WorkspaceError
from .git import ConfigEntry

# Caches that tools create while they run; never part of a change.
CACHE_PATTERNS = (
    "__pycache__/", "*.pyc", ".pytest_cache/", ".mypy_cache/", ".ruff_cache/",
    ".hypothesis/", ".coverage", ".coverage.*", "*.egg-info/", ".tox/", ".nox/",
    ".superqode/",
)
CACHE_TEXT = ("\n".join(CACHE_PATTERNS) + "\n").encode()
# The copy in a session's private folder (SuperQode's part of it).
NAME = "superqode-excludes"
_MISSING = (errno.ENOENT, errno.ENOTDIR)


def _expand(value: str, top: Path) -> Path | None:
    """git's ``interpolate_path`` for the value, relative paths from ``top``."""
    if value.startswith("~"):
        head, sep, rest = value[1:].partition("/")
        if head:
            try:
                base = pwd.getpwnam(head).pw_dir
            except KeyError:
                return None  # git: the path cannot be expanded, no file
        else:
            base = os.environ.get("HOME") or ""
            if not base:
                return None
        return Path(base) / rest if sep else Path(base)
    return Path(value) if os.path.isabs(value) else top / value


def user_file(listing: list[ConfigEntry], top: Path) -> Path | None:
    """The user's global excludes file as git would read it in ``top`` (None:
    git reads none). ``listing``: ``git.config_listing(top)``."""
    found: tuple[str, str | None] | None = None
    for scope, key, value in listing:
        if key.lower() == "core.excludesfile":
            found = (scope, value)
    if found is not None:
        if found[1] is None:
            raise WorkspaceError("your git configuration sets core.excludesFile without a value")
        return _expand(found[1], top) if found[1] else None
    xdg = os.environ.get("XDG_CONFIG_HOME")
    if xdg:
        return Path(xdg) / "git" / "ignore"
    home = os.environ.get("HOME")
    return Path(home) / ".config" / "git" / "ignore" if home else None


def combined(listing: list[ConfigEntry], top: Path) -> bytes:
    """The user's patterns, then SuperQode's cache patterns."""
    path = user_file(listing, top)
    users = b""
    if path is not None:
        try:
            users = _read_regular(path)
        except OSError as e:
            if e.errno not in _MISSING:
                raise WorkspaceError(f"cannot read your git excludes file {path}: "
                                     f"{e.strerror or e}") from None
    if users and not users.endswith(b"\n"):
        users += b"\n"
    return users + CACHE_TEXT


def _read_regular(path: Path) -> bytes:
    """The bytes of a regular file (links followed, as git does); a fifo or
    a device is refused rather than waited on."""
    fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK)
    try:
        if not stat.S_ISREG(os.fstat(fd).st_mode):
            raise OSError(errno.EINVAL, "not a regular file")
        chunks = []
        while chunk := os.read(fd, 1 << 16):
            chunks.append(chunk)
        return b"".join(chunks)
    finally:
        os.close(fd)


def write(folder: Path, data: bytes) -> Path:
    """``folder/NAME`` holding ``data``: a new file renamed over whatever is
    there, the folder opened without following a link."""
    flags = os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW
    try:
        dfd = os.open(folder, flags)
    except OSError as e:
        raise WorkspaceError(f"cannot write SuperQode's ignore rules in {folder}: "
                             f"{e.strerror or e}") from None
    tmp = f".{NAME}.{os.getpid()}.tmp"
    try:
        with contextlib.suppress(FileNotFoundError):
            os.unlink(tmp, dir_fd=dfd)
        fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW, 0o600,
                     dir_fd=dfd)
        try:
            view = memoryview(data)
            while view:
                view = view[os.write(fd, view):]
        finally:
            os.close(fd)
        os.replace(tmp, NAME, src_dir_fd=dfd, dst_dir_fd=dfd)
    except OSError as e:
        raise WorkspaceError(f"cannot write SuperQode's ignore rules in {folder}: "
                             f"{e.strerror or e}") from None
    finally:
        os.close(dfd)
    return folder / NAME


def build(folder: Path, listing: list[ConfigEntry], top: Path) -> Path:
    """The session's combined file in ``folder`` (its private folder)."""
    folder.mkdir(parents=True, exist_ok=True)
    return write(folder, combined(listing, top))


def session_copy(private: Path) -> Path | None:
    """The copy a session made (:func:`build`), when it is a plain file; None
    for a session made before SuperQode wrote one."""
    path = private / NAME
    try:
        st = os.lstat(path)
    except OSError:
        return None
    return path if stat.S_ISREG(st.st_mode) else None

