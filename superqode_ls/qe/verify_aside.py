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
symlink, a file with other links, one reached through a link out of the tree
or one that cannot be renamed is written over and back as before
(``FileBackup``); a name that did not exist is removed after.
"""

from __future__ import annotations

import os
import stat
import tempfile
from pathlib import Path

from .patching import FileBackup, write_copies


class CopiesAside:
    def __init__(self, root: Path, private: Path | None):
        self.root = root
        self.private = private
        self._dir: Path | None = None
        self._held: dict[str, Path] = {}  # rel -> where the file waits
        self._made: list[str] = []  # names created here (a copy, or a new name)
        self._over: FileBackup | None = None  # files written over, the old way

    def write(self, texts: dict[str, str]) -> None:
        """Put ``texts`` (rel -> the copy's text) in place; ``restore`` undoes
        whatever of it was done, also after an error here."""
        over: dict[str, str] = {}
        for rel, text in texts.items():
            path = self.root / rel
            try:
                st = os.lstat(path)
            except FileNotFoundError:
                st = None
            except OSError:
                over[rel] = text
                continue
            if st is not None and (self.private is None or not stat.S_ISREG(st.st_mode)
                                   or st.st_nlink != 1 or not self._inside(path)):
                over[rel] = text
                continue
            if st is not None:
                held = self._aside() / str(len(self._held))
                try:
                    os.rename(path, held)
                except OSError:
                    over[rel] = text
                    continue
                self._held[rel] = held
            fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | os.O_CLOEXEC,
                         0o666)  # as open() makes a file: the umask applies
            self._made.append(rel)  # (only what was made here is removed)
            with open(fd, "wb") as fh:
                if st is not None:
                    os.fchmod(fd, stat.S_IMODE(st.st_mode))  # a rule may read the mode (EXE001)
                fh.write(text.encode("utf-8"))
        if over:
            self._over = FileBackup(self.root, sorted(over))
            write_copies(self.root, over)

    def _inside(self, path: Path) -> bool:
        """Whether ``path``'s folder is in the tree itself, not reached through
        a link out of it: a file held aside is in the session's private
        folder, which goes with the session, so only the tree's own files are
        moved there (the rest is written over and back, as before)."""
        top = os.path.realpath(self.root)
        return (os.path.realpath(path.parent) + os.sep).startswith(top + os.sep)

    def _aside(self) -> Path:
        if self._dir is None:
            assert self.private is not None
            self.private.mkdir(parents=True, exist_ok=True)
            self._dir = Path(tempfile.mkdtemp(prefix="verify-aside-", dir=self.private))
        return self._dir

    def restore(self) -> None:
        for rel in self._made:
            try:
                os.unlink(self.root / rel)
            except FileNotFoundError:
                pass
        for rel, held in self._held.items():
            os.rename(held, self.root / rel)
        self._made, self._held = [], {}
        if self._over is not None:
            self._over.restore()
            self._over = None
        if self._dir is not None:
            os.rmdir(self._dir)
            self._dir = None
