"""A fingerprint of everything the user has: every file under the project
(tracked, untracked, ignored: type, mode, size, mtime, ctime, inode, symlink
target) and the git state (index, HEAD, refs, stash, config, hooks, logs).

It is stat-based on purpose: re-hashing 20k files would take seconds, while a
change to a file's bytes always moves its ctime, which no user-space call can
set back. Two fingerprints are equal only if nothing was written.

Excluded: ``.superqode/`` (SuperQode's own folder), git's object store (new
objects change nothing the user sees) and SuperQode's own worktree
registrations under ``.git/worktrees/qe-*`` while a session lives.
"""

from __future__ import annotations

import hashlib
import json
import os
import stat
from dataclasses import dataclass, field
from pathlib import Path

from .git import git, registration_dirs

# A record: (kind, mode, size, mtime_ns, ctime_ns, ino, extra)
Entry = tuple

SKIP_TOP = {".superqode"}
# A project inside a larger repository keeps its artifacts in its own
# .superqode/, wherever it sits.
SKIP_ANY = {".superqode"}
_GIT_SKIP = {"objects"}
_HASHED_GIT_FILES = {"HEAD", "index", "packed-refs", "config", "ORIG_HEAD", "FETCH_HEAD"}
SESSION_WORKTREE_PREFIXES = ("qe-", "sq-")


@dataclass
class Fingerprint:
    root: str
    files: dict[str, Entry] = field(default_factory=dict)
    git: dict[str, Entry] = field(default_factory=dict)

    @property
    def digest(self) -> str:
        h = hashlib.sha256()
        for section in (self.files, self.git):
            for k in sorted(section):
                h.update(k.encode("utf-8", "surrogateescape"))
                h.update(repr(section[k]).encode())
        return h.hexdigest()

    def to_json(self) -> str:
        return json.dumps({"root": self.root, "files": self.files, "git": self.git})

    @classmethod
    def from_json(cls, text: str) -> Fingerprint:
        data = json.loads(text)
        return cls(
            root=data["root"],
            files={k: tuple(v) for k, v in data["files"].items()},
            git={k: tuple(v) for k, v in data["git"].items()},
        )


def _entry(path: str, st: os.stat_result, hash_content: bool = False) -> Entry:
    mode = st.st_mode
    if stat.S_ISLNK(mode):
        try:
            extra = os.readlink(path)
        except OSError:  # gone since it was listed
            extra = "?"
        kind = "l"
    elif stat.S_ISDIR(mode):
        kind, extra = "d", ""
    else:
        kind, extra = "f", ""
        if hash_content:
            try:
                with open(path, "rb") as fh:
                    extra = hashlib.sha256(fh.read()).hexdigest()
            except OSError:
                extra = "?"
    if kind == "d":
        # A directory's own times move when an entry is added or removed; the
        # entries themselves are recorded, so only its mode matters.
        return (kind, stat.S_IMODE(mode))
    return (kind, stat.S_IMODE(mode), st.st_size, st.st_mtime_ns, st.st_ctime_ns, st.st_ino, extra)


def _walk(root: str, out: dict[str, Entry], skip_top: set[str], prefix: str = "",
          hashed: set[str] | None = None, skip_dir=None) -> None:
    stack = [(root, prefix)]
    while stack:
        d, rel = stack.pop()
        try:
            it = os.scandir(d)
        except (FileNotFoundError, NotADirectoryError, PermissionError):
            continue
        with it:
            for e in it:
                name = e.name
                if (not rel and name in skip_top) or (skip_top and name in SKIP_ANY):
                    continue
                r = f"{rel}{name}"
                try:
                    st = e.stat(follow_symlinks=False)
                except FileNotFoundError:
                    continue
                if skip_dir is not None and stat.S_ISDIR(st.st_mode) and skip_dir(r):
                    continue
                out[r] = _entry(e.path, st, hashed is not None and r in hashed)
                if stat.S_ISDIR(st.st_mode):
                    stack.append((e.path, r + "/"))


def _git_dirs(root: Path) -> tuple[Path, Path] | None:
    dot = root / ".git"
    if not dot.exists() and not dot.is_symlink():
        return None
    proc = git(["rev-parse", "--absolute-git-dir", "--git-common-dir"], root, check=False)
    if proc.returncode != 0:
        return None
    lines = proc.stdout.decode("utf-8", "surrogateescape").splitlines()
    gd = Path(lines[0])
    cd = Path(lines[1])
    if not cd.is_absolute():
        cd = (root / cd).resolve()
    return gd, cd


def take_fingerprint(root: Path) -> Fingerprint:
    root = Path(root).resolve()
    fp = Fingerprint(root=str(root))
    _walk(str(root), fp.files, SKIP_TOP | {".git"})
    dot = root / ".git"
    if dot.is_file() or dot.is_symlink():
        fp.files[".git"] = _entry(str(dot), dot.lstat(), hash_content=True)
    dirs = _git_dirs(root)
    if dirs is None:
        return fp
    gd, cd = dirs

    def skip_git(rel: str) -> bool:
        if rel in _GIT_SKIP or rel.startswith("modules/") and rel.endswith("/objects"):
            return True
        if rel.startswith("worktrees/"):
            name = rel.split("/", 2)[1]
            return name.startswith(SESSION_WORKTREE_PREFIXES)
        return False

    _walk(str(cd), fp.git, set(), "", _HASHED_GIT_FILES, skip_git)
    # The folder exists only while some worktree is registered: ours may be
    # the only one, so its presence is not the user's state. (Another
    # session's removal may take the folder away meanwhile.)
    if "worktrees" in fp.git and not any(
        not p.name.startswith(SESSION_WORKTREE_PREFIXES) for p in registration_dirs(cd) if p.exists()
    ):
        del fp.git["worktrees"]
    if gd != cd:  # the user works in a linked worktree: its own HEAD/index too
        _walk(str(gd), fp.git, set(), "@worktree/", _HASHED_GIT_FILES)
    return fp


_FIELDS = ("kind", "mode", "size", "mtime", "ctime", "inode", "content")


def _describe(name: str, a: Entry, b: Entry) -> str:
    if a[0] != b[0]:
        return f"type changed: {name} ({a[0]} -> {b[0]})"
    if a[1] != b[1]:
        return f"mode changed: {name} ({oct(a[1])} -> {oct(b[1])})"
    if a[0] == "l" and a[-1] != b[-1]:
        return f"symlink changed: {name} ({a[-1]} -> {b[-1]})"
    diffs = [f for f, x, y in zip(_FIELDS, a, b) if x != y]
    if "size" in diffs or "content" in diffs:
        return f"modified: {name}"
    return f"touched: {name} ({', '.join(diffs)})"


def compare(before: Fingerprint, after: Fingerprint) -> list[str]:
    """Human-readable differences; empty means identical."""
    out: list[str] = []
    for label, a, b in (("", before.files, after.files), (".git/", before.git, after.git)):
        for k in sorted(a.keys() - b.keys()):
            out.append(f"deleted: {label}{k}")
        for k in sorted(b.keys() - a.keys()):
            out.append(f"created: {label}{k}")
        for k in sorted(a.keys() & b.keys()):
            if a[k] != b[k]:
                out.append(_describe(label + k, a[k], b[k]))
    return out
