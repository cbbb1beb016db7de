"""IsolatedSession: fingerprint -> sandbox -> (work) -> changes -> revert -> verify.

The fingerprint taken before anything else is stored with the session, so a
revert after a crash (``superqe revert``/``clean``) can still verify.
"""

from __future__ import annotations

import asyncio
import contextlib
import fnmatch
import json
import logging
import os
import sys
import threading
import time
from pathlib import Path
from typing import Any

from ..config import Config
from ..events import EventBus
from ..models import ChangeSet, Verification
from . import carry, landlock, namespaces, owngit, pool, removal, sparse
from . import worktree as wt
from .artifacts import atomic_write
from .changes import changes_between
from .errors import CreationAborted, WorkspaceError
from .fingerprint import OWN, Fingerprint, files_part, git_part
from .git import GitError, copy_index, head_commit, repo_root, resolve_commit
from .gitsnapshot import SnapshotStore
from .guard_env import GuardInstall, install_guard
from .paths import (
    PRIVATE_WRITABLE,
    SessionPaths,
    check_home,
    ensure_dir,
    new_session_id,
    repo_dir,
    repo_key,
    store_dir,
    tool_cache,
    working_root,
)
from .proc import BARRIER_ENV, end_session_processes
from .records import SessionRecord, read_record, write_record
from .snapshot import copy_tree, list_files
from .teardown import drop_snapshots
from .teardown import git_registrations as _git_registrations
from .teardown import remove_quietly as _remove_quietly
from .verification import verify_state

HEARTBEAT_S = 30.0
log = logging.getLogger(__name__)


def _write_repo_marker(project: Path) -> None:
    marker = repo_dir(project) / "repo.json"
    if not marker.exists():
        atomic_write(marker, json.dumps({"owner": "superqode-ls", "repo": str(project)}))


def resolve_project(path: Path | str) -> tuple[Path, bool]:
    """(project root, is git): a path inside a git repo means the whole repo."""
    p = Path(path).expanduser()
    if not p.exists():
        raise WorkspaceError(f"{p}: no such directory")
    if not p.is_dir():
        raise WorkspaceError(f"{p}: not a directory")
    p = p.resolve()
    root = repo_root(p)
    if root is not None:
        return root.resolve(), True
    return p, False


def own_folders(root: Path, requested: Path) -> list[str]:
    """SuperQode's artifact folders in ``root``: its top-level ``.superqode``,
    and that of the folder the session was asked for when it is a folder
    inside the repository (a project's artifacts land there)."""
    own = [OWN]
    try:
        rel = requested.expanduser().resolve().relative_to(root)
    except (ValueError, OSError):
        return own
    if rel.parts:
        own.append((rel / OWN).as_posix())
    return own


class IsolatedSession:
    """A sandbox of ``project`` holding exactly the user's current state."""

    def __init__(self, project: Path, config: Config, *, session_id: str, mode: str,
                 isolation: str, base_commit: str | None, bus: EventBus, kind: str):
        self.project = project
        self.config = config
        self.id = session_id
        self.mode = mode
        self.isolation = isolation
        self.base_commit = base_commit
        self.bus = bus
        self.kind = kind
        self.paths = SessionPaths(project, session_id)
        self.sandbox = self.paths.sandbox
        self.private = self.paths.private
        self.store: SnapshotStore | None = None
        self.baseline: str | None = None  # snapshot id of the state carried in
        self.verification: Verification | None = None
        self.reused = False
        self.record: SessionRecord | None = None
        self._fp_before: Fingerprint | None = None
        self._abort: threading.Event | None = None
        self._guard: GuardInstall | None = None
        self._heartbeat: asyncio.Task | None = None
        self._closed = False
        self.lock: Any = None
        # The Landlock ABI every process of the session runs under; None: no
        # kernel barrier here, the guard is all there is (say so).
        # Verification attributes differences only with it.
        self.barrier_abi: int | None = landlock.abi()
        # The protection level in force (the barrier, and whether the project,
        # .git and HOME were read-only to the session, metadata included):
        # verification.kernel_seals_metadata reads it.
        self.protection: str | None = namespaces.protection_level(config)
        # SuperQode's own artifact folders inside the project (relative).
        self.own: list[str] = [OWN]
        self.removal_problem: str | None = None  # the sandbox had to be left alone
        # isolation "sparse" (sparse.py): the files it holds, relative.
        self.sparse_files: list[str] | None = None
        self._fp_thread: threading.Thread | None = None
        # The user's git configuration the session's git dir carries (wt.seal).
        self._user_config: list[tuple[str, str | None]] = []

    # -- creation ----------------------------------------------------------
    @classmethod
    async def create(cls, project: Path | str, *, config: Config | None = None, mode: str = "quick",
                     isolation: str | None = None, base_ref: str | None = None,
                     overlays: dict[str, bytes] | None = None, bus: EventBus | None = None,
                     session_id: str | None = None, kind: str = "qe",
                     lock_timeout: float = 0, abort: threading.Event | None = None,
                     files: list[str] | None = None) -> IsolatedSession:
        return await asyncio.to_thread(
            cls.create_sync, project, config=config, mode=mode, isolation=isolation,
            base_ref=base_ref, overlays=overlays, bus=bus, session_id=session_id, kind=kind,
            lock_timeout=lock_timeout, abort=abort, files=files)

    @classmethod
    def create_sync(cls, project: Path | str, *, config: Config | None = None, mode: str = "quick",
                    isolation: str | None = None, base_ref: str | None = None,
                    overlays: dict[str, bytes] | None = None, bus: EventBus | None = None,
                    session_id: str | None = None, kind: str = "qe",
                    lock_timeout: float = 0, abort: threading.Event | None = None,
                    files: list[str] | None = None) -> IsolatedSession:
        """``files``: with isolation ``sparse``, the project-relative files the
        sandbox holds (plus their analyzers' configuration, sparse.py).
        ``lock_timeout``: how long to wait for the repository lock (a deep
        session waits for running quick ones); 0 tries once. ``abort`` set
        (Ctrl-C) stops creation between steps with ``CreationAborted``, all
        of it taken down and ``verification`` of the project set."""
        from ..config import load_config

        root, is_git = resolve_project(Path(project))
        check_home(root)
        config = config or load_config(root)
        choice = isolation or config.workspace.isolation
        base_commit = head_commit(root) if is_git else None
        if choice in ("auto", None):
            choice = "worktree" if is_git and base_commit else "snapshot"
        if choice == "sparse" and not files:
            raise WorkspaceError("a sparse sandbox needs the files it is for")
        if choice == "worktree" and not is_git:
            raise WorkspaceError(f"{root}: not a git repository; use --snapshot")
        if choice == "worktree" and base_commit is None:
            raise WorkspaceError(f"{root}: the repository has no commit yet; use --snapshot")
        if base_ref:
            if not is_git:
                raise WorkspaceError("--base-ref needs a git repository")
            try:
                base_commit = resolve_commit(root, base_ref)
            except GitError:
                raise WorkspaceError(f"--base-ref: unknown revision {base_ref!r}") from None
            if choice != "worktree":
                raise WorkspaceError("--base-ref works with worktree isolation only")
        overlays = dict(overlays or {})
        for rel in overlays:
            wt._safe_rel(rel)
        refused = namespaces.refusal(config)
        if refused:
            raise WorkspaceError(refused)

        sid = session_id or new_session_id()
        bus = bus or EventBus(sid)
        self = cls(root, config, session_id=sid, mode=mode, isolation=choice,
                   base_commit=base_commit, bus=bus, kind=kind)
        if choice == "sparse":
            self.sparse_files = [wt._safe_rel(f) for f in files or []]
        self.own = own_folders(root, Path(project))
        self._abort = abort
        self._acquire_lock(lock_timeout)
        try:
            self._create(base_ref is not None, overlays)
        except CreationAborted as e:
            self._cleanup_failed()
            e.verification = self._verify()
            raise
        except BaseException:
            self._cleanup_failed()
            raise
        return self

    def _check_abort(self) -> None:
        if self._abort is not None and self._abort.is_set():
            raise CreationAborted("cancelled while the sandbox was being made")

    def _acquire_lock(self, timeout: float = 0) -> None:
        from .coordinator import Coordinator

        self.lock = Coordinator(self.project).acquire(self.id, self.mode, timeout=timeout)

    def _release_lock(self) -> None:
        if self.lock is None:
            return
        from .coordinator import Coordinator

        Coordinator(self.project).release(self.lock)
        self.lock = None

    def _create(self, pinned_base: bool, overlays: dict[str, bytes]) -> None:
        t0 = time.monotonic()
        ensure_dir(self.private)
        _write_repo_marker(self.project)
        self.record = SessionRecord(
            id=self.id, repo=str(self.project), repo_key=repo_key(self.project), kind=self.kind,  # type: ignore[arg-type]
            mode=self.mode, isolation=self.isolation, sandbox=str(self.sandbox),
            base_commit=self.base_commit, fingerprint_file=str(self.private / "fingerprint.json"),
            barrier_abi=self.barrier_abi, protection=self.protection,
        )
        write_record(self.paths.record, self.record)
        self.paths.heartbeat.touch()
        # Every process of the session runs behind the kernel barrier and a
        # sparse sandbox is made without writing the user's tree or .git: its
        # fingerprint may be taken beside the roles (started once the sandbox
        # is made, so the two do not share the CPU and the interpreter lock).
        # Without the barrier it comes first, strictly.
        beside = self.isolation == "sparse" and self.barrier_abi is not None
        if self.isolation == "worktree":
            # The git section first, before the registration is written; the
            # walk of the files (20,000 lstat calls on a large repository)
            # goes on beside the checkout, which writes only the sandbox and
            # SuperQode's store, and ends before anything of the project runs.
            self._start_fingerprint(git_part(self.project, self.own))
            self._check_abort()  # (an abort's verification joins the walk)
            self._create_worktree(pinned_base, overlays)
            self._fp_thread.join()
            if self._fp_before is None:
                raise WorkspaceError("the fingerprint of the project could not be taken")
        else:
            if not beside:
                self._take_fingerprint()
                self._check_abort()  # (a sparse sandbox takes milliseconds: stopped below)
            if self.isolation == "sparse":
                self._create_sparse(overlays)
            else:
                self._create_snapshot(overlays)
        if beside:
            self._start_fingerprint()
        self._check_abort()
        for d in (*self.writable(), tool_cache()):
            d.mkdir(parents=True, exist_ok=True)
        self._install_guard()
        # Before anything of the project's runs in it: what removal will check.
        made = removal.identity(self.sandbox)
        if made is not None:
            self.record.sandbox_dev, self.record.sandbox_ino = made
        self.record.state = "running"
        self.record.baseline_snapshot = self.baseline
        write_record(self.paths.record, self.record)
        self.bus.emit("workspace.snapshot", isolation=self.isolation, sandbox=str(self.sandbox),
                      base_commit=self.base_commit, reused=self.reused,
                      seconds=round(time.monotonic() - t0, 3))

    def _take_fingerprint(self, fp: Fingerprint | None = None) -> None:
        """``fp``: its git section, taken already; the files are walked here."""
        if fp is None:
            fp = git_part(self.project, self.own)
        files_part(fp)
        atomic_write(self.private / "fingerprint.json", fp.to_json())
        self._fp_before = fp

    def _start_fingerprint(self, fp: Fingerprint | None = None) -> None:
        """:meth:`_take_fingerprint` in a thread; joined by the verification
        (and by _create for a worktree)."""
        self._fp_thread = threading.Thread(target=self._fingerprint_beside, args=(fp,),
                                           daemon=True, name=f"fingerprint {self.id}")
        self._fp_thread.start()

    def _fingerprint_beside(self, fp: Fingerprint | None = None) -> None:
        try:
            self._take_fingerprint(fp)
        except Exception:  # noqa: BLE001 - no fingerprint: unverified, or creation stops (_create)
            log.exception("session %s: the fingerprint could not be taken", self.id)

    def _create_sparse(self, overlays: dict[str, bytes]) -> None:
        assert self.sparse_files is not None
        self.sparse_files = sparse.lay_out(self.project, self.sandbox, self.sparse_files,
                                           overlays, self.config.workspace.max_size_mb)
        self.store = SnapshotStore(store_dir(self.project), session=self.id)
        self.baseline = self.store.commit(self._hash_sandbox(), None, f"baseline {self.id}").id

    def _create_worktree(self, pinned_base: bool, overlays: dict[str, bytes]) -> None:
        _, cd = wt.user_git_dirs(self.project)
        self.store = SnapshotStore(store_dir(self.project), alternates=[cd / "objects"],
                                   session=self.id)
        (self.private / "git" / "common" / "objects").mkdir(parents=True, exist_ok=True)
        if self.config.workspace.copy_uncommitted and not pinned_base:
            state = wt.capture_user_state(self.project, self.store, self.private, True)
            self._check_abort()
        else:
            tree = wt.git_out(["rev-parse", f"{self.base_commit}^{{tree}}"], self.project)
            state = wt.UserState(staged_tree=tree, full_tree=tree)
        sealed = wt.SealedGit(self.private / "git")
        filters = carry.filter_names(self.project)
        differ = False
        if self.config.workspace.warm_sandboxes and pool.claim(
                self.project, self.id, self.sandbox, sealed, self.base_commit or "HEAD",
                f"superqode session {self.id}"):
            self.reused = True
            try:
                proved = self._reset_reused(sealed, state, filters)
            except (WorkspaceError, GitError, OSError) as e:
                # What the old session left makes the reset fail (a link where
                # a folder was): a cold sandbox, and the slot is gone.
                self.bus.emit("workspace.reuse_refused", error=str(e))
                proved = False
            if not proved:
                self.reused = False
                with _git_registrations(self.project):
                    wt.remove_worktree(self.project, self.sandbox)
                _remove_quietly(sealed.root)
        if not self.reused:
            with _git_registrations(self.project):
                wt.add_worktree(self.project, self.sandbox, self.base_commit or "HEAD",
                                f"superqode session {self.id}")
            self._user_config = wt.seal(self.sandbox, sealed, self.project, self.store,
                                        self.base_commit or "HEAD")
            self._check_abort()
            wt.checkout_staged(self.sandbox, state.staged_tree,
                               sealed.env(self.sandbox, sealed.index, self.store), filters)
            self._check_abort()
            differ = wt.lay_over(self.sandbox, self.store, state.staged_tree, state.full_tree,
                                 self.project)
        if not self.reused:  # a reset carried them already, before its proof
            differ |= wt.carry_extras(self.project, self.sandbox, self.store, state, sealed,
                                      filters)
        if self.config.workspace.keep_gitignored:
            wt.carry_ignored(self.project, self.sandbox, self.config.workspace.keep_gitignored,
                             self.config.workspace.keep_gitignored_mode)
        copy_index(sealed.index, self._track_index)
        moved = wt.retarget_links(self.sandbox, self.project,
                                  wt.tree_links(self.store, state.full_tree))
        if overlays:
            wt.write_overlays(self.sandbox, overlays)
        # The baseline is the sandbox as carried in: retargeted links are not
        # the session's change and stay out of its patch.
        tree = self._hash_sandbox() if overlays or moved or differ else state.full_tree
        self.baseline = self.store.commit(tree, None, f"baseline {self.id}").id

    def _create_snapshot(self, overlays: dict[str, bytes]) -> None:
        is_git = (self.project / ".git").exists()
        files = list_files(self.project, self.config.workspace.exclude_patterns, use_git=is_git)
        copy_tree(self.project, self.sandbox, files, self.config.workspace.max_size_mb)
        wt.retarget_links(self.sandbox, self.project,
                          [str(f) for f in files if (self.sandbox / f).is_symlink()])
        if overlays:
            wt.write_overlays(self.sandbox, overlays)
        self.store = SnapshotStore(store_dir(self.project), session=self.id)
        self.baseline = self.store.commit(self._hash_sandbox(), None, f"baseline {self.id}").id

    def _install_guard(self) -> None:
        # Scope the guard to the user's repository and the sandbox: a project's
        # own tests that git-init temporary repositories must keep working.
        protect: list[Path] = [self.project, self.sandbox, self.private]
        if self.isolation == "worktree":
            protect.append(wt.user_git_dirs(self.project)[1])
        self._guard = install_guard(self.private / "guard", self.config.qe.git_guard,
                                    protect=protect)
        if self.isolation == "worktree":
            # Nothing of the session has run yet: the config is written anew
            # with the guard's settings last (one write, not a git call each).
            wt.write_session_config(wt.SealedGit(self.private / "git"), self._user_config,
                                    self._guard.config_entries)

    # -- warm sandboxes ------------------------------------------------------
    def _reset_reused(self, sealed: wt.SealedGit, state: wt.UserState, filters: list[str]) -> bool:
        """Bring a parked sandbox to the new state, changed files only, and prove it."""
        assert self.store is not None
        keep = self.config.workspace.keep_gitignored
        # The parked tree comes with SuperQode's tracking index of it (pool.py),
        # never with the old session's git dir: both git dirs are made anew.
        self._user_config = wt.seal(self.sandbox, sealed, self.project, self.store,
                                        self.base_commit or "HEAD")
        env = sealed.env(self.sandbox, sealed.index, self.store)
        wt.checkout_staged(self.sandbox, state.staged_tree, env, filters)
        clean = ["clean", "-ffdxq"] + [a for k in keep for a in ("-e", k)]
        wt.git(clean, self.sandbox, env=env)
        wt.lay_over(self.sandbox, self.store, state.staged_tree, state.full_tree, self.project)
        wt.carry_extras(self.project, self.sandbox, self.store, state, sealed, filters)
        copy_index(sealed.index, self._track_index)
        if self._hash_sandbox() != state.full_tree:
            return False
        # Untracked strays would have changed the tree above; ignored ones do not,
        # so list those and allow only the caches config says to keep.
        out = wt.git(["clean", "-ndX"], self.sandbox, env=env).stdout.decode("utf-8", "surrogateescape")
        stray = [ln[len("Would remove "):].rstrip("/") for ln in out.splitlines() if ln]
        return all(any(fnmatch.fnmatch(p, k.rstrip("/")) or fnmatch.fnmatch(p.split("/")[0], k.rstrip("/"))
                       for k in keep) for p in stray)

    # -- working in it ------------------------------------------------------
    @property
    def _track_index(self) -> Path:
        return self.private / "track-index"

    def _sandbox_git_dir(self) -> Path | None:
        """SuperQode's own git dir of a worktree sandbox (owngit.py): its
        config and ignore rules, never the session's; None: the store's."""
        return wt.SealedGit(self.private / "git").own if self.isolation == "worktree" else None

    def _check_sandbox(self) -> None:
        """Raise UnsafeRemoval when the sandbox is not the folder we made any
        more: git run "in" a swapped sandbox would work on whatever it points to."""
        removal.check(self.sandbox, working_root(),
                      self.record.sandbox_identity if self.record else None)

    def _hash_sandbox(self) -> str:
        assert self.store is not None
        self._check_sandbox()
        return self.store.hash_tree(self.sandbox, self._track_index, git_dir=self._sandbox_git_dir())

    def env(self, base: dict[str, str] | None = None) -> dict[str, str]:
        # The one place a session's environment is made: provider keys,
        # tokens and the desktop's addresses stop here (namespaces.scrub_env).
        keys = {p.api_key_env for p in self.config.providers if p.api_key_env}
        env = namespaces.scrub_env(base if base is not None else os.environ, keys)
        for k in ("GIT_DIR", "GIT_WORK_TREE", "GIT_INDEX_FILE", "GIT_OBJECT_DIRECTORY",
                  "GIT_ALTERNATE_OBJECT_DIRECTORIES", "GIT_COMMON_DIR"):
            env.pop(k, None)
        env["PYTHONDONTWRITEBYTECODE"] = "1"
        env["SUPERQODE_SESSION_ID"] = self.id
        env["SUPERQODE_SANDBOX"] = str(self.sandbox)
        tmp = self.private / "tmp"
        for k in ("TMPDIR", "TMP", "TEMP"):
            env[k] = str(tmp)
        env["XDG_CACHE_HOME"] = str(tool_cache())
        if sys.platform == "linux":
            env[BARRIER_ENV] = json.dumps([str(p) for p in self.writable()])
            devices = namespaces.private_devices(str(self.private / "dev"))
            env[namespaces.SPEC_ENV] = namespaces.spec(self.config, env, devices)
        if self._guard is not None:
            env = self._guard.env(env)
        return env

    def writable(self) -> list[Path]:
        """Everything the session's processes may write; the rest of the
        file system (the user's tree and .git, HOME, other sandboxes) is
        read-only to them behind the kernel barrier."""
        return [self.sandbox, *(self.private / d for d in PRIVATE_WRITABLE), tool_cache().parent]

    def internal_env(self) -> dict[str, str]:
        """For SuperQode's own git writes in the sandbox (the guard lets them by)."""
        return self._guard.internal_env() if self._guard is not None else {}

    def checkpoint_sync(self) -> str:
        assert self.store is not None
        return self.store.commit(self._hash_sandbox(), self.baseline, f"checkpoint {self.id}").id

    def changes_sync(self, since: str | None = None) -> ChangeSet:
        assert self.store is not None and self.baseline is not None
        now = self.checkpoint_sync()
        return changes_between(self.store, since or self.baseline, now)

    def restore_sync(self, snapshot_id: str) -> None:
        assert self.store is not None
        self._hash_sandbox()
        tree = self.store.tree(snapshot_id)
        env = self.store.env(GIT_INDEX_FILE=str(self._track_index), GIT_NO_LAZY_FETCH="1",
                             GIT_DIR=str(self._sandbox_git_dir() or self.store.path),
                             GIT_WORK_TREE=str(self.sandbox))
        wt.git(["read-tree", "--reset", "-u", tree], self.sandbox, env=env)
        clean = ["clean", "-ffdq"]  # untracked, not ignored: caches survive a restore
        wt.git(clean, self.sandbox, env=env)

    async def changes(self, since: str | None = None) -> ChangeSet:
        return await asyncio.to_thread(self.changes_sync, since)

    async def checkpoint(self) -> str:
        return await asyncio.to_thread(self.checkpoint_sync)

    async def restore(self, snapshot_id: str) -> None:
        await asyncio.to_thread(self.restore_sync, snapshot_id)

    def guard_events(self) -> list[dict]:
        if self._guard is None:
            return []
        blocked = self._guard.events.poll()
        for rec in blocked:
            self.bus.emit("git.blocked", **rec)
        return blocked

    # -- ending -------------------------------------------------------------
    def close_sync(self, *, keep: bool = False) -> Verification:
        if self._closed:
            assert self.verification is not None
            return self.verification
        self._closed = True
        self.guard_events()
        if keep:
            self._note_state("kept")
            self._quietly(self._release_lock)
            self.verification = self._verify()
            return self.verification
        # A full disk or a read-only home must not stop the revert: what the
        # record would say is in memory, and recovery finds the rest.
        self._note_state("reverting")
        try:
            self._check_sandbox()
            where: Path | None = self.sandbox
        except WorkspaceError:
            # Swapped (a link to the user's repository, another folder):
            # matching processes by a folder there would kill the user's
            # own. Match by the session's environment only.
            where = None
        ended = end_session_processes(self.id, where)
        if ended:
            self.bus.emit("workspace.processes_ended", pids=ended)
        parked = False
        if (self.isolation == "worktree" and self.config.workspace.warm_sandboxes
                and self.sandbox.exists() and where is not None and self._git_untouched()):
            sealed = wt.SealedGit(self.private / "git")
            try:
                if not self.reused and self.store is not None:
                    # A fresh checkout's index is racily clean (its files are as
                    # new as it), so the next session's reset would re-read
                    # every file; refreshed now, seconds later, it compares
                    # stat data (bench/sandbox.py: 0.16-0.30 s -> 0.06-0.13 s).
                    # SuperQode's tracking index, in its own git dir: what the
                    # next session starts from (pool.py), nothing the session wrote.
                    wt.git(["update-index", "-q", "--refresh"], self.private,
                           env=sealed.env(self.sandbox, self._track_index, self.store),
                           check=False)
                parked = pool.park(self.project, self.id, self.sandbox,
                                   self.record.sandbox_identity if self.record else None,
                                   self.config.workspace.warm_pool, self._track_index)
            except OSError as e:  # a full or read-only home: no parking, removal goes on
                self.bus.emit("workspace.state_write_failed", step="park", error=str(e))
        if not parked:
            self._remove_sandbox()
        self.verification = self._verify()
        if self.removal_problem:
            self.verification = self.verification.model_copy(update={
                "verified": False,
                "differences": [self.removal_problem, *self.verification.differences]})
        self.bus.emit("workspace.reverted", verified=self.verification.verified,
                      differences=self.verification.differences[:50],
                      outside_changes=self.verification.outside_changes[:50], parked=parked)
        _remove_quietly(self.private)
        self._quietly(drop_snapshots, self.project, self.id)
        self._quietly(self.paths.record.unlink, missing_ok=True)
        self._quietly(self.paths.heartbeat.unlink, missing_ok=True)
        self._quietly(self._release_lock)
        return self.verification

    def _git_untouched(self) -> bool:
        """False, said once (``workspace.git_tampered``), when the session
        redirected its git (its ``.git`` file, ``commondir``, the object
        alternates): such a sandbox is removed, never parked for another
        session. SuperQode's own git never followed them (owngit.py)."""
        if self.store is None:
            return False
        sealed = wt.SealedGit(self.private / "git")
        try:
            alternates = wt.sealed_alternates(self.store, self.project)
        except GitError:
            return False
        problem = owngit.tampered(self.sandbox, sealed.wt, alternates)
        if problem is not None:
            self.bus.emit("workspace.git_tampered", detail=problem)
            return False
        return True

    def _note_state(self, state: str) -> None:
        if self.record is not None:
            self.record.state = state  # type: ignore[assignment]
            self._quietly(write_record, self.paths.record, self.record)

    def _quietly(self, fn, *args, **kw) -> None:
        """Ending steps that write SuperQode's own state: a failure is said
        (one event) and the revert goes on."""
        try:
            fn(*args, **kw)
        except (OSError, GitError) as e:
            self.bus.emit("workspace.state_write_failed", step=getattr(fn, "__name__", "?"),
                          error=str(e))

    async def close(self, *, keep: bool = False) -> Verification:
        self._stop_heartbeat()
        return await asyncio.shield(asyncio.to_thread(self.close_sync, keep=keep))

    def _remove_sandbox(self) -> None:
        """Remove the sandbox unless it was swapped; then it is left alone and
        ``removal_problem`` says so (the registration still goes)."""
        made = self.record.sandbox_identity if self.record else None
        try:
            if self.isolation == "worktree":
                with contextlib.ExitStack() as held:
                    try:
                        held.enter_context(_git_registrations(self.project))
                    except OSError:
                        pass  # a full or read-only home: the entry is still ours alone to remove
                    wt.remove_worktree(self.project, self.sandbox, made)
            else:
                removal.remove_tree(self.sandbox, working_root(), expect=made)
        except removal.UnsafeRemoval as e:
            self.removal_problem = str(e)
        except OSError as e:  # a leftover of ours, not a change to the project
            log.warning("sandbox %s not fully removed: %s (superqe clean retries)",
                        self.sandbox, e)

    def _verify(self) -> Verification:
        if self._fp_thread is not None:
            self._fp_thread.join()
        if self._fp_before is None:
            return Verification(verified=False, differences=["no fingerprint was taken"])
        return verify_state(self._fp_before, self.project, self.barrier_abi, self.protection)

    def _cleanup_failed(self) -> None:
        if self._fp_thread is not None:
            self._fp_thread.join()  # it writes into the private folder removed below
        try:
            self._remove_sandbox()
        finally:
            _remove_quietly(self.private)
            self._quietly(self.paths.record.unlink, missing_ok=True)
            self._quietly(self.paths.heartbeat.unlink, missing_ok=True)
            self._quietly(self._release_lock)

    # -- heartbeat and context manager ---------------------------------------
    def start_heartbeat(self) -> None:
        try:
            loop = asyncio.get_running_loop()
        except RuntimeError:
            return

        async def beat() -> None:
            while True:
                try:
                    os.utime(self.paths.heartbeat)
                except FileNotFoundError:
                    return
                await asyncio.sleep(HEARTBEAT_S)

        self._heartbeat = loop.create_task(beat())

    def _stop_heartbeat(self) -> None:
        if self._heartbeat is not None:
            self._heartbeat.cancel()
            self._heartbeat = None

    async def __aenter__(self) -> IsolatedSession:
        self.start_heartbeat()
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.close()

    def __enter__(self) -> IsolatedSession:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close_sync()


# -- for recovery of sessions whose process is gone ----------------------------
def extract_patch(record: SessionRecord) -> str:
    """The sandbox's changes against what was carried in, as a git diff."""
    project = Path(record.repo)
    paths = SessionPaths(project, record.id)
    if not record.baseline_snapshot or not Path(record.sandbox).is_dir():
        return ""
    removal.check(record.sandbox, working_root(), record.sandbox_identity)
    alternates = []
    if record.isolation == "worktree":
        try:
            _, cd = wt.user_git_dirs(project)
            alternates = [cd / "objects"]
        except (GitError, IndexError):
            pass
    store = SnapshotStore(store_dir(project), alternates=alternates, session=record.id)
    index = paths.private / "track-index"
    # SuperQode's own git dir of the sandbox (owngit.py); without one, the
    # store's: never the git dir the session could write.
    own = wt.SealedGit(paths.private / "git").own
    git_dir = own if record.isolation == "worktree" and (own / "HEAD").is_file() else None
    tree = store.hash_tree(Path(record.sandbox), index, git_dir=git_dir)
    now = store.commit(tree, record.baseline_snapshot, f"extract {record.id}").id
    return changes_between(store, record.baseline_snapshot, now).diff


def verify_record(record: SessionRecord) -> Verification:
    """Compare the user's tree with the fingerprint stored at session start."""
    try:
        before = Fingerprint.from_json(Path(record.fingerprint_file or "").read_text())
    except OSError:
        return Verification(verified=False, differences=["no fingerprint was stored for this session"])
    except (ValueError, KeyError) as e:
        return Verification(verified=False, differences=[f"the stored fingerprint is unreadable: {e}"])
    return verify_state(before, Path(record.repo), record.barrier_abi, record.protection)


def load_record(project: Path, session_id: str) -> SessionRecord | None:
    return read_record(SessionPaths(project, session_id).record)
