"""IsolatedSession: fingerprint -> sandbox -> (work) -> changes -> revert -> verify.

The session holds its collaborators, each with one job and its own state:
``SessionFingerprint`` (the user's tree before, and the verification against
it), ``SandboxTree`` (the sandbox's snapshots: baseline, checkpoints,
changes, restore), ``SandboxBuilder`` (filling the sandbox, the guard),
``SandboxDisposal`` (parking or removing it); :mod:`session_project` says
which project a path means. What stays here is the order of the steps, the
session's record and lock, and its environment.
"""

from __future__ import annotations

import asyncio
import json
import os
import sys
import threading
import time
from pathlib import Path
from typing import Any

from ..config import Config, load_config
from ..events import EventBus
from ..models import ChangeSet, Verification
from . import landlock, namespaces, removal
from . import worktree as wt
from .coordinator import Coordinator
from .errors import CreationAborted, WorkspaceError
from .fingerprint import OWN
from .git import GitError
from .gitsnapshot import SnapshotStore
from .guard_env import GuardInstall
from .paths import (
    PRIVATE_WRITABLE,
    SessionPaths,
    check_home,
    ensure_dir,
    new_session_id,
    repo_key,
)
from .proc import BARRIER_ENV
from .records import SessionRecord, read_record, write_record
from .session_build import SandboxBuilder, choose_isolation
from .session_end import SandboxDisposal
from .session_fingerprint import SessionFingerprint, verify_record
from .session_project import own_folders, resolve_project, resolve_with_head, write_repo_marker
from .session_tree import SandboxTree, extract_patch
from .teardown import drop_snapshots
from .teardown import remove_quietly as _remove_quietly

__all__ = ["IsolatedSession", "extract_patch", "load_record", "own_folders", "resolve_project",
           "verify_record"]

HEARTBEAT_S = 30.0


class IsolatedSession:
    """A sandbox of ``project`` holding exactly the user's current state."""

    def __init__(self, project: Path, config: Config, *, session_id: str, mode: str,
                 isolation: str, base_commit: str | None, bus: EventBus, kind: str,
                 own: list[str] | None = None):
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
        self.verification: Verification | None = None
        self.reused = False
        self.record: SessionRecord | None = None
        self._abort: threading.Event | None = None
        self.guard: GuardInstall | None = None
        self._heartbeat: asyncio.Task | None = None
        self._closed = False
        # True: close() returns once the user's tree is verified; SuperQode's own
        # leftovers go beside the caller's next steps, until wait_leftovers().
        self.defer_leftovers = False
        self._leftovers: threading.Thread | None = None
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
        self.own: list[str] = own or [OWN]
        # isolation "sparse" (sparse.py): the files it holds, relative.
        self.sparse_files: list[str] | None = None
        self.fingerprint = SessionFingerprint(
            project, self.own, self.private / "fingerprint.json", session_id=session_id)
        worktree = isolation == "worktree"
        self.tree = SandboxTree(self.sandbox, self.private, session_id,
                                git_dir=wt.SealedGit(self.private / "git").own if worktree else None)
        self.disposal = SandboxDisposal(project, config, self.tree, session_id=session_id,
                                        isolation=isolation, bus=bus)

    @property
    def store(self) -> SnapshotStore | None:
        return self.tree.store

    @property
    def baseline(self) -> str | None:
        """Snapshot id of the state carried in."""
        return self.tree.baseline

    @property
    def removal_problem(self) -> str | None:
        """Why the sandbox had to be left alone (it was swapped)."""
        return self.disposal.problem

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
        root, is_git, head = resolve_with_head(Path(project))
        check_home(root)
        config = config or load_config(root)
        choice, base_commit = choose_isolation(root, is_git, config, isolation, base_ref, files, head=head)
        overlays = dict(overlays or {})
        for rel in overlays:
            wt._safe_rel(rel)
        refused = namespaces.refusal(config)
        if refused:
            raise WorkspaceError(refused)

        sid = session_id or new_session_id()
        bus = bus or EventBus(sid)
        self = cls(root, config, session_id=sid, mode=mode, isolation=choice,
                   base_commit=base_commit, bus=bus, kind=kind, own=own_folders(root, Path(project)))
        if choice == "sparse":
            self.sparse_files = [wt._safe_rel(f) for f in files or []]
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
        self.lock = Coordinator(self.project).acquire(self.id, self.mode, timeout=timeout)

    def _release_lock(self) -> None:
        if self.lock is None:
            return
        Coordinator(self.project).release(self.lock)
        self.lock = None

    def _create(self, pinned_base: bool, overlays: dict[str, bytes]) -> None:
        t0 = time.monotonic()
        ensure_dir(self.private)
        write_repo_marker(self.project)
        self.record = SessionRecord(
            id=self.id, repo=str(self.project), repo_key=repo_key(self.project), kind=self.kind,  # type: ignore[arg-type]
            mode=self.mode, isolation=self.isolation, sandbox=str(self.sandbox),
            base_commit=self.base_commit, fingerprint_file=str(self.fingerprint.file),
            barrier_abi=self.barrier_abi, protection=self.protection,
        )
        write_record(self.paths.record, self.record)
        self.paths.heartbeat.touch()
        build = SandboxBuilder(self.project, self.config, self.tree, session_id=self.id,
                               base_commit=self.base_commit, bus=self.bus,
                               check_abort=self._check_abort)
        fp = self.fingerprint
        # Every process of the session runs behind the kernel barrier and a
        # sparse sandbox is made without writing the user's tree or .git: its
        # fingerprint may be taken beside the roles (started once the sandbox
        # is made, so the two do not share the CPU and the interpreter lock).
        # Without the barrier it comes first, strictly.
        beside = self.isolation == "sparse" and self.barrier_abi is not None
        if self.isolation == "worktree":
            # The git section first, before the registration is written (the
            # build waits for it there), then the walk of the files (20,000
            # lstat calls on a large repository): both in a thread beside
            # the reading of the user's state and the checkout, which write
            # only the sandbox and SuperQode's store; the walk ends before
            # anything of the project runs.
            fp.start()
            self._check_abort()  # (an abort's verification joins the walk)
            build.worktree(pinned_base, overlays, before_register=fp.wait_git)
            self.reused = build.reused
            fp.join()
            if fp.before is None:
                raise WorkspaceError("the fingerprint of the project could not be taken")
        else:
            if not beside:
                fp.take()
                self._check_abort()  # (a sparse sandbox takes milliseconds: stopped below)
            if self.isolation == "sparse":
                assert self.sparse_files is not None
                self.sparse_files = build.sparse(self.sparse_files, overlays)
            else:
                build.snapshot(overlays)
        if beside:
            fp.start()
        self._check_abort()
        for d in self.writable():
            d.mkdir(parents=True, exist_ok=True)
        self.guard = build.install_guard(self.isolation == "worktree")
        # Before anything of the project's runs in it: what removal will check.
        self.tree.identity = removal.identity(self.sandbox)
        if self.tree.identity is not None:
            self.record.sandbox_dev, self.record.sandbox_ino = self.tree.identity
        self.record.state = "running"
        self.record.baseline_snapshot = self.baseline
        write_record(self.paths.record, self.record)
        self.bus.emit("workspace.snapshot", isolation=self.isolation, sandbox=str(self.sandbox),
                      base_commit=self.base_commit, reused=self.reused,
                      seconds=round(time.monotonic() - t0, 3))

    # -- working in it ------------------------------------------------------
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
        env["XDG_CACHE_HOME"] = str(self.paths.xdg)
        if sys.platform == "linux":
            env[BARRIER_ENV] = json.dumps([str(p) for p in self.writable()])
            devices = namespaces.private_devices(str(self.private / "dev"))
            own_tmp = namespaces.private_tmp(
                str(tmp), env, [*(str(p) for p in self.writable()), str(self.project)])
            env[namespaces.SPEC_ENV] = namespaces.spec(self.config, env, devices, own_tmp)
        if self.guard is not None:
            env = self.guard.env(env)
        return env

    def writable(self) -> list[Path]:
        """Everything the session's processes may write; the rest of the
        file system (the user's tree and .git, HOME, other sandboxes) is
        read-only to them behind the kernel barrier."""
        # Nothing of the project's cache folder (the tools' XDG cache is the
        # session's own, in its private dir): mypy's cache is writable to the
        # mypy process alone (qe/roles/_mypy_cache.py).
        return [self.sandbox, *(self.private / d for d in PRIVATE_WRITABLE)]

    def internal_env(self) -> dict[str, str]:
        """For SuperQode's own git writes in the sandbox (the guard lets them by)."""
        return self.guard.internal_env() if self.guard is not None else {}

    def changes_sync(self, since: str | None = None) -> ChangeSet:
        return self.tree.changes(since)

    async def changes(self, since: str | None = None) -> ChangeSet:
        return await asyncio.to_thread(self.tree.changes, since)

    async def checkpoint(self) -> str:
        return await asyncio.to_thread(self.tree.checkpoint)

    async def restore(self, snapshot_id: str) -> None:
        await asyncio.to_thread(self.tree.restore, snapshot_id)

    def guard_events(self) -> list[dict]:
        if self.guard is None:
            return []
        blocked = self.guard.events.poll()
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
        intact = self.disposal.end_processes()
        parked = self.disposal.park_or_remove(intact=intact, reused=self.reused)
        # The sandbox is parked or gone: the verification's walk of the
        # user's tree runs while SuperQode's own leftovers of the session
        # (its private folder, its snapshot refs: nothing under the project)
        # are removed, which is mostly waiting on the disk.
        verdict: list = []

        def verify() -> None:
            try:
                verdict.append(self._verify())
            except BaseException as e:  # noqa: BLE001 - raised below, in the closing thread
                verdict.append(e)

        walk = threading.Thread(target=verify, daemon=True, name=f"verify {self.id}")
        walk.start()
        settled = threading.Event()  # the verdict is known (and said): the record may go
        forget: list[bool] = []
        try:
            try:
                # A fingerprint still being taken writes into the private folder;
                # removed under it, the folder would be left behind.
                self.fingerprint.join()
                if self.defer_leftovers:
                    # Not a daemon: a process ending meanwhile waits for it.
                    self._leftovers = threading.Thread(
                        target=self._remove_leftovers, args=(settled, forget),
                        name=f"leftovers {self.id}")
                    self._leftovers.start()
                else:
                    self._remove_leftovers()
            finally:
                walk.join()
            if isinstance(verdict[0], BaseException):
                raise verdict[0]  # the record stays: recovery verifies again
            self.verification = verdict[0]
            if self.removal_problem:
                self.verification = self.verification.model_copy(update={
                    "verified": False,
                    "differences": [self.removal_problem, *self.verification.differences]})
            self.bus.emit("workspace.reverted", verified=self.verification.verified,
                          differences=self.verification.differences[:50],
                          outside_changes=self.verification.outside_changes[:50], parked=parked)
            forget.append(True)
        finally:
            settled.set()
        if self._leftovers is None:
            self._forget()
        return self.verification

    def _remove_leftovers(self, settled: threading.Event | None = None,
                          forget: list[bool] | None = None) -> None:
        """SuperQode's own folder and snapshot refs of the session. Deferred
        (``settled`` given): then, once the verdict is said, the record,
        heartbeat and lock, as a plain close does (kept if it failed)."""
        try:
            _remove_quietly(self.private)
            self._quietly(drop_snapshots, self.project, self.id)
        finally:
            if settled is not None:
                settled.wait()
                if forget:
                    self._forget()

    def _forget(self) -> None:
        self._quietly(self.paths.record.unlink, missing_ok=True)
        self._quietly(self.paths.heartbeat.unlink, missing_ok=True)
        self._quietly(self._release_lock)

    def wait_leftovers(self) -> None:
        if self._leftovers is not None:  # (defer_leftovers)
            self._leftovers.join()

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

    def _verify(self) -> Verification:
        return self.fingerprint.verify(self.barrier_abi, self.protection)

    def _cleanup_failed(self) -> None:
        self.fingerprint.join()  # it writes into the private folder removed below
        try:
            self.disposal.remove()
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
# extract_patch (session_tree.py) and verify_record (session_fingerprint.py)
# are the session's API too: callers import them from here.
def load_record(project: Path, session_id: str) -> SessionRecord | None:
    return read_record(SessionPaths(project, session_id).record)
