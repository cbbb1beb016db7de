"""Content snapshots in a private object store.

``store.git`` is a bare repository of SuperQode's own, per user repository,
whose ``objects/info/alternates`` points at the user's objects: blobs git
already has are never copied, and nothing is ever written into the user's
``.git`` (no objects, no refs, no index). A snapshot is a commit in the store;
its parent is the snapshot it was taken after.

Snapshots are kept alive by ``refs/snapshots/<session-id>/<commit>``: when a
session is removed its refs go (:meth:`SnapshotStore.drop_session`), and
objects nothing refers to any more are pruned at a bounded cadence
(:meth:`SnapshotStore.prune`), so a large untracked file carried into one
session does not stay in the store for ever.

Hashing uses a seed index (a copy of an index whose stat data matches the
tree) so only files that changed since are read: the user's own index for the
user's tree, the sandbox's index for the sandbox.
"""

from __future__ import annotations

import contextlib
import hashlib
import os
import re
import shutil
import tempfile
import threading
import time
import zlib
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from . import carry
from .errors import WorkspaceError
from .excludes import CACHE_PATTERNS, CACHE_TEXT  # noqa: F401 - CACHE_PATTERNS: bench/onewalk.py
from .git import UNTRUSTED_TREE_ENV, alternates_line, git, git_out

_init_lock = threading.Lock()
PRUNE_EVERY_S = 3600.0
# Loose objects younger than this are never pruned: another session may have
# just written them (``git add`` into the store) and not yet made its commit.
PRUNE_MIN_AGE_S = 3600.0
PRUNE_STAMP = "superqode-pruned"
# Who makes the store's commits, and when (every snapshot the same date, so
# the same tree and parent give the same commit).
_IDENT = "SuperQode <superqode@localhost> 946684800 +0000"
_OBJECT_ID = re.compile(r"[0-9a-f]{40}")


@dataclass
class Snapshot:
    id: str  # commit id in the store
    tree: str
    parent_id: str | None


class SnapshotStore:
    def __init__(self, path: Path, alternates: list[Path] | None = None,
                 session: str | None = None):
        self.path = Path(path)
        self.session = session  # names the refs of the snapshots taken here
        self.objects = self.path / "objects"
        # Only the user's object dirs: a session's own object dir (and its
        # alternates file) is the session's to write, and is never read here.
        self._alternates = [Path(a) for a in (alternates or [])]
        # The ignore rules every hash of this store names (excludes.py): the
        # session's combined file once set, else the store's cache patterns.
        self._excludes: Path | Callable[[], Path] | None = None
        self._excludes_lock = threading.Lock()
        self._sha1_store: bool | None = None
        self._ensure()

    def _ensure(self) -> None:
        with _init_lock:
            if not (self.path / "HEAD").exists():
                self.path.parent.mkdir(parents=True, exist_ok=True)
                tmp = Path(tempfile.mkdtemp(prefix=".store-", dir=self.path.parent))
                git(["init", "-q", "--bare", str(tmp)], tmp.parent)
                try:
                    os.rename(tmp, self.path)
                except OSError:  # another process won the race
                    shutil.rmtree(tmp, ignore_errors=True)
            alt = self.objects / "info" / "alternates"
            wanted = [alternates_line(a) for a in self._alternates]
            have = alt.read_text().splitlines() if alt.exists() else []
            if any(w not in have for w in wanted):
                alt.parent.mkdir(parents=True, exist_ok=True)
                alt.write_text("\n".join(dict.fromkeys(have + wanted)) + "\n")
            excludes = self.path / "info" / "superqode-excludes"
            if not excludes.exists():
                excludes.parent.mkdir(parents=True, exist_ok=True)
                excludes.write_bytes(CACHE_TEXT)

    def use_excludes(self, source: Path | Callable[[], Path]) -> None:
        """The excludes file of every later hash (``excludes.build``'s): a
        path, or a function giving it, called at the first hash (so the
        user's configuration is read beside the first steps)."""
        self._excludes = source

    @property
    def excludes_file(self) -> Path:
        with self._excludes_lock:  # the user's state and a sandbox's scan ask from two threads
            if callable(self._excludes):
                self._excludes = self._excludes()
        if self._excludes is not None:
            return self._excludes
        return self.path / "info" / "superqode-excludes"

    def excludes_arg(self) -> list[str]:
        """``-c core.excludesFile=...`` for git, failing closed: git reads a
        missing excludes file as no rules at all, and would carry more."""
        path = self.excludes_file
        if not os.path.isfile(path):
            raise WorkspaceError(f"SuperQode's ignore rules are missing ({path})")
        return ["-c", f"core.excludesFile={path}"]

    def env(self, *, users: bool = False, **extra: str) -> dict[str, str]:
        """For git on the store, or on a work tree with the store's objects:
        without the user's global and system configuration (their drivers;
        git.UNTRUSTED_TREE_ENV) unless ``users``: the user's own tree, which
        no session can write."""
        env = {"GIT_OBJECT_DIRECTORY": str(self.objects)}
        if not users:
            env.update(UNTRUSTED_TREE_ENV)
        env.update(extra)
        return env

    def run(self, args: list[str], **kw):
        env = self.env(**kw.pop("env", {}))
        return git(["--git-dir", str(self.path), *args], self.path, env=env, **kw)

    def _store_git(self, args: list[str], **kw) -> str:
        return self.run(args, **kw).stdout.decode("utf-8", "surrogateescape").strip()

    # -- taking snapshots -------------------------------------------------
    def hash_tree(
        self,
        work_tree: Path,
        index_file: Path,
        *,
        git_dir: Path | None = None,
        exclude: list[str] | None = None,
        users: bool = False,
        bits: carry.IndexBits | None = None,
    ) -> str:
        """Tree id of ``work_tree`` (tracked + untracked, not ignored), updating
        ``index_file`` in place. ``git_dir`` decides config and ignore rules:
        the user's for the user's tree, SuperQode's own for a sandbox (never
        one a session can write: :mod:`owngit`); by default the store's own
        (for folders that are not git repos).
        Files the index marks skip-worktree or assume-unchanged are read like
        any other (their edits are the user's state); ``exclude``: folders
        left out (nested repositories); ``users``: ``work_tree`` is the user's,
        hashed with all of their configuration (:meth:`env`); ``bits``: the
        flagged entries of ``index_file`` when the caller has just read them
        (``carry.index_bits``), so they are not listed a second time."""
        env = self.env(users=users, GIT_INDEX_FILE=str(index_file), GIT_NO_LAZY_FETCH="1",
                       GIT_DIR=str(git_dir or self.path), GIT_WORK_TREE=str(work_tree))
        cfg = [*self.excludes_arg(), "-c", "core.autocrlf=false"]
        if index_file.exists():
            carry.unflag_present(work_tree, work_tree, env, bits)
        spec = ["."] + [f":(top,exclude,literal){p}" for p in exclude or []]
        git([*cfg, "add", "-A", "--ignore-errors", "--", *spec], work_tree, env=env)
        return git_out(["write-tree"], work_tree, env=env)

    def tree_of_index(self, index_file: Path, cwd: Path, git_dir: Path) -> str:
        env = self.env(GIT_INDEX_FILE=str(index_file), GIT_DIR=str(git_dir))
        return git_out(["write-tree"], cwd, env=env)

    def commit(self, tree: str, parent: str | None = None, message: str = "snapshot") -> Snapshot:
        cid = self._write_commit(tree, parent, message)
        if cid is None:
            args = ["commit-tree", tree, "-m", message]
            if parent:
                args += ["-p", parent]
            env = {"GIT_AUTHOR_DATE": "2000-01-01T00:00:00Z",
                   "GIT_COMMITTER_DATE": "2000-01-01T00:00:00Z"}
            cid = self._store_git(args, env=env)
        ref = f"refs/snapshots/{self.session}/{cid}" if self.session else f"refs/snapshots/{cid}"
        self._set_ref(ref, cid)
        return Snapshot(id=cid, tree=tree, parent_id=parent)

    def _sha1(self) -> bool:
        """The store's objects are named by SHA-1 (``git init``'s default; a
        store made under ``init.defaultObjectFormat=sha256`` is left to git)."""
        if self._sha1_store is None:
            try:
                text = (self.path / "config").read_text("utf-8", "surrogateescape").lower()
            except OSError:
                text = "objectformat"
            self._sha1_store = "objectformat" not in text
        return self._sha1_store

    def _write_commit(self, tree: str, parent: str | None, message: str) -> str | None:
        """The commit ``commit-tree`` makes here (SuperQode's identity and the
        fixed date git.SAFE_CONFIG and :meth:`commit` give it), written as a
        loose object without a git process: one less for every baseline and
        checkpoint. None: left to git."""
        if not self._sha1() or not _OBJECT_ID.fullmatch(tree) or (
                parent is not None and not _OBJECT_ID.fullmatch(parent)):
            return None
        body = (f"tree {tree}\n" + (f"parent {parent}\n" if parent else "")
                + f"author {_IDENT}\ncommitter {_IDENT}\n\n{message}\n").encode(
                    "utf-8", "surrogateescape")
        raw = b"commit %d\0" % len(body) + body
        oid = hashlib.sha1(raw).hexdigest()
        path = self.objects / oid[:2] / oid[2:]
        if not path.exists():
            path.parent.mkdir(parents=True, exist_ok=True)
            # A new file renamed into place, as git writes one (the same
            # bytes whichever writer wins).
            tmp = path.parent / f"tmp_obj_{os.getpid()}_{threading.get_ident()}"
            fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC | os.O_NOFOLLOW, 0o444)
            try:
                with os.fdopen(fd, "wb") as f:
                    f.write(zlib.compress(raw))
            except BaseException:
                tmp.unlink(missing_ok=True)
                raise
            os.replace(tmp, path)
        return oid

    def _loose_refs(self) -> bool:
        """True when the store keeps its refs as files (``git init``'s files
        backend); a store made under ``init.defaultRefFormat=reftable`` is
        left to git."""
        return not (self.path / "reftable").exists()

    def _set_ref(self, ref: str, cid: str) -> None:
        """One snapshot ref. The store is SuperQode's alone and each ref name
        is new (it carries the commit id), so the loose ref file is written
        the way ``update-ref`` would (new file, then rename), without a git
        process per snapshot."""
        if not self._loose_refs():
            self._store_git(["update-ref", ref, cid])
            return
        path = self.path / ref
        path.parent.mkdir(parents=True, exist_ok=True)
        tmp = path.parent / f".{path.name}.{os.getpid()}.{threading.get_ident()}.tmp"
        tmp.write_text(cid + "\n")
        os.replace(tmp, path)

    # -- letting them go ------------------------------------------------
    def drop_session(self, session: str) -> int:
        """Delete the refs of ``session``'s snapshots; returns how many. Read
        and removed as the loose ref files (no git call at a session's end): the
        store's refs are never packed by SuperQode, and any packed by hand go
        with the hourly prune (:meth:`prune`, ``live``)."""
        folder = self.path / "refs" / "snapshots" / session
        try:
            names = sorted(n for n in os.listdir(folder) if not n.startswith("."))
        except (FileNotFoundError, NotADirectoryError):
            names = []
        refs = [f"refs/snapshots/{session}/{n}" for n in names]
        if refs and not self._loose_refs():
            self.run(["update-ref", "--stdin"],
                     input="".join(f"delete {r}\n" for r in refs).encode())
        elif refs:
            # The loose files themselves (what update-ref's delete removes;
            # none of them is packed, see above): no git process.
            for n in names:
                with contextlib.suppress(FileNotFoundError):
                    os.unlink(folder / n)
            with contextlib.suppress(OSError):
                os.rmdir(folder)
        return len(refs)

    def prune(self, *, every_s: float = PRUNE_EVERY_S, min_age_s: float = PRUNE_MIN_AGE_S,
              now: float | None = None, live: set[str] | None = None) -> bool:
        """Remove unreachable loose objects older than ``min_age_s``, at most
        once per ``every_s``; True when a prune ran. ``live``: ids of the
        sessions still on disk; snapshot refs of any other session (one
        removed by hand, or refs of the older unnamed form) are dropped first."""
        now = time.time() if now is None else now
        stamp = self.path / PRUNE_STAMP
        try:
            if 0 <= now - stamp.stat().st_mtime < every_s:
                return False
        except FileNotFoundError:
            pass
        stamp.touch()
        os.utime(stamp, (now, now))
        if live is not None:
            self._drop_all_but(live)
        self.run(["prune", f"--expire={int(min_age_s)}.seconds.ago"])
        return True

    def _drop_all_but(self, live: set[str]) -> None:
        out = self._store_git(["for-each-ref", "--format=%(refname) %(contents:subject)",
                               "refs/snapshots/"])
        gone = []
        for line in out.splitlines():
            ref, _, subject = line.partition(" ")
            parts = ref.split("/")
            # refs/snapshots/<session>/<commit>, or refs/snapshots/<commit>
            # whose message ("baseline <session>", ...) names the session.
            owner = parts[2] if len(parts) == 4 else (subject.split() or [""])[-1]
            if owner not in live:
                gone.append(ref)
        if gone:
            self.run(["update-ref", "--stdin"],
                     input="".join(f"delete {r}\n" for r in gone).encode())

    # -- reading them ----------------------------------------------------
    def tree(self, snapshot_id: str) -> str:
        return self._store_git(["rev-parse", f"{snapshot_id}^{{tree}}"])

    def restore(self, snapshot_id: str, work_tree: Path, index_file: Path,
                *, git_dir: Path | None = None) -> None:
        """Make ``work_tree`` hold exactly the snapshot: changed files are
        rewritten, untracked ones removed; ignored ones (caches) survive."""
        tree = self.tree(snapshot_id)
        env = self.env(GIT_INDEX_FILE=str(index_file), GIT_NO_LAZY_FETCH="1",
                       GIT_DIR=str(git_dir or self.path), GIT_WORK_TREE=str(work_tree))
        self.hash_tree(work_tree, index_file, git_dir=git_dir)  # index = what is there now
        git(["read-tree", "--reset", "-u", tree], work_tree, env=env)
        git([*self.excludes_arg(), "clean", "-ffdq"], work_tree, env=env)  # ignored: as hashed
