"""Copies of files written for one re-run of a tool, the files themselves
set aside meanwhile (verifier).

The copies used to be written over the files and the files' bytes written
back after the re-run: truncating a file and writing it again makes ext4 start
its write-back at the close (``auto_da_alloc``), and 40 files written twice
took 35-330 ms on a loaded machine, on the session's critical path, where
renaming them aside and back takes 7-16 ms. Each regular file (one link) is
renamed into a folder of the session's own that its processes cannot write
(its private folder, on the same file system), its copy is created new in its
place with the file's mode, and after the re-run the copy is removed and the
file renamed back: the very file, its bytes, mode and times untouched. A
symlink, a file with other links or one that cannot be renamed is written
over and back as before (``TreeBackup``); a name that did not exist is
removed after. A file reached through a link out of the tree (a folder
linking to the user's files) is not written at all: SuperQode's own writes
are not behind the barrier. Putting back
goes through the folders' descriptors, taken before the re-run: a folder the
re-run swapped for a link to elsewhere is not followed.
"""

from __future__ import annotations

import os
import stat
import tempfile
from pathlib import Path

from .patching import FileBackup, write_copies


def _inside(top: str, path: str) -> bool:
    return (path + os.sep).startswith(top + os.sep)


def leads_out(root: Path, rel: str) -> bool:
    """Whether ``rel`` (its folders or the file itself) now leads out of the
    tree at ``root``: a write there by path would land outside it."""
    return not _inside(os.path.realpath(root), os.path.realpath(root / rel))


class TreeBackup(FileBackup):
    """``FileBackup`` whose putting back never goes out of the tree: the
    project's tests run between the saving and the putting back, free to
    write the sandbox, and may swap a folder (or the file) for a link to the
    user's files; SuperQode's own process is not behind the barrier, so a
    write by path would land there. Nothing of the session runs while this
    puts back (each command's tree ends with it), so a look at where a path
    leads, just before, holds. A file whose place now leads out of the tree
    is left as the session made it (the sandbox is the session's own)."""

    def restore(self) -> None:
        top = os.path.realpath(self.root)
        for rel, data in self.saved.items():
            p = self.root / rel
            if not _inside(top, os.path.realpath(p.parent)):
                continue
            if data is None:
                if p.is_file() or p.is_symlink():
                    p.unlink()  # the entry itself, never what a link names
                continue
            if p.is_symlink() and not _inside(top, os.path.realpath(p)):
                p.unlink()  # a link planted in place of the file: the file comes back
            p.parent.mkdir(parents=True, exist_ok=True)
            p.write_bytes(data)


class CopiesAside:
    def __init__(self, root: Path, private: Path | None):
        self.root = root
        self.private = private
        self._dir: Path | None = None
        self._dir_fd: int | None = None  # the aside folder, opened
        self._folders: dict[str, int] = {}  # the tree's folders, opened once each
        self._held: list[tuple[int, str, str]] = []  # (folder, name, name aside)
        self._made: list[tuple[int, str]] = []  # (folder, name) created here
        self._over: TreeBackup | None = None  # files written over, the old way

    def write(self, texts: dict[str, str]) -> None:
        """Put ``texts`` (rel -> the copy's text) in place; ``restore`` undoes
        whatever of it was done, also after an error here. Every step after
        the first look goes through the folders' descriptors: a folder the
        re-run swapped for a link is never followed when putting back."""
        over: dict[str, str] = {}
        for rel, text in texts.items():
            path = self.root / rel
            if leads_out(self.root, rel):
                continue  # through a link out of the tree (a folder or the file): never written (its fix keeps its finding)
            folder = None if self.private is None else self._folder(path.parent)
            if folder is None:
                over[rel] = text
                continue
            try:
                st = os.lstat(path.name, dir_fd=folder)
            except FileNotFoundError:
                st = None
            except OSError:
                over[rel] = text
                continue
            if st is not None and (not stat.S_ISREG(st.st_mode) or st.st_nlink != 1):
                over[rel] = text
                continue
            if st is not None:
                held = str(len(self._held))
                try:
                    os.rename(path.name, held, src_dir_fd=folder, dst_dir_fd=self._aside())
                except OSError:
                    over[rel] = text
                    continue
                self._held.append((folder, path.name, held))
            fd = os.open(path.name, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | os.O_CLOEXEC,
                         0o666, dir_fd=folder)  # as open() makes a file: the umask applies
            self._made.append((folder, path.name))  # (only what was made here is removed)
            with open(fd, "wb") as fh:
                if st is not None:
                    os.fchmod(fd, stat.S_IMODE(st.st_mode))  # a rule may read the mode (EXE001)
                fh.write(text.encode("utf-8"))
        if over:
            self._over = TreeBackup(self.root, sorted(over))
            write_copies(self.root, over)

    def _folder(self, where: Path) -> int | None:
        """``where`` opened, when it is in the tree itself, not reached
        through a link out of it: a file held aside is in the session's
        private folder, which goes with the session, so only the tree's own
        files are moved there (the rest is written over and back, as before)."""
        key = str(where)
        if key not in self._folders:
            top = os.path.realpath(self.root)
            if not _inside(top, os.path.realpath(where)):
                return None
            try:
                fd = os.open(where, os.O_RDONLY | os.O_DIRECTORY | os.O_CLOEXEC)
            except OSError:
                return None
            if not _inside(top, os.path.realpath(f"/proc/self/fd/{fd}")):
                os.close(fd)  # swapped between the look and the open
                return None
            self._folders[key] = fd
        return self._folders[key]

    def _aside(self) -> int:
        if self._dir_fd is None:
            assert self.private is not None
            self.private.mkdir(parents=True, exist_ok=True)
            self._dir = Path(tempfile.mkdtemp(prefix="verify-aside-", dir=self.private))
            self._dir_fd = os.open(self._dir, os.O_RDONLY | os.O_DIRECTORY | os.O_CLOEXEC)
        return self._dir_fd

    def restore(self) -> None:
        try:
            for folder, name in self._made:
                try:
                    os.unlink(name, dir_fd=folder)
                except FileNotFoundError:
                    pass
            for folder, name, held in self._held:
                os.rename(held, name, src_dir_fd=self._dir_fd, dst_dir_fd=folder)
            self._made, self._held = [], []
            if self._over is not None:
                self._over.restore()
                self._over = None
            if self._dir is not None:
                os.rmdir(self._dir)
                self._dir = None
        finally:
            for fd in [*self._folders.values(), *([self._dir_fd] if self._dir_fd is not None else [])]:
                os.close(fd)
            self._folders, self._dir_fd = {}, None
