"""Filling a new sandbox with the user's current state: a sealed git worktree
(made cold, or a parked one reset to the new state and proved), a directory
copy, or the few files of a sparse sandbox; then the git guard inside it.

The builder works on a ``SandboxTree`` (session_tree.py): it sets the tree's
store and baseline; the session owns what comes out (``reused``, the guard).
"""

from __future__ import annotations

import fnmatch
import threading
from collections.abc import Callable
from pathlib import Path

from ..config import Config
from ..events import EventBus
from . import carry, excludes, pool, sparse, treewalk, warmreset
from . import worktree as wt
from .errors import WorkspaceError
from .git import (
    ConfigEntry,
    GitError,
    config_listing,
    copy_index,
    head_commit,
    resolve_commit,
    tree_listing,
)
from .gitsnapshot import SnapshotStore
from .gitstate import refs_listing
from .guard_env import GuardInstall, install_guard
from .paths import store_dir
from .session_tree import OnTree, SandboxTree
from .snapshot import copy_tree, list_files
from .teardown import git_registrations, remove_quietly


def _into(box: list, fn: Callable, *args) -> None:
    """``fn(*args)``'s result, or what it raised, into ``box`` (a thread's)."""
    try:
        box.append(fn(*args))
    except BaseException as e:  # noqa: BLE001 - raised again by the waiting thread
        box.append(e)


# The user's state read in a thread beside the sandbox's claim and scan
# (SandboxBuilder.worktree), where there is more than one CPU.
BESIDE = treewalk.cpus() > 1


def _capture(project: Path, store: SnapshotStore, scratch: Path) -> wt.UserState:
    state = wt.capture_user_state(project, store, scratch, True)
    # The listing of F that the reset's check and the links' retargeting read
    # (git.tree_listing keeps it by id), while the sandbox is still scanned.
    tree_listing(state.full_tree, store.path, env=store.env(GIT_DIR=str(store.path)))
    return state


_ASK = object()  # choose_isolation's HEAD not read yet


def choose_isolation(root: Path, is_git: bool, config: Config, isolation: str | None,
                     base_ref: str | None, files: list[str] | None, *,
                     head: str | None | object = _ASK) -> tuple[str, str | None]:
    """(the isolation, the base commit) of a new session, or a one-line
    ``WorkspaceError`` for a request that cannot be served, nothing made.
    ``head``: HEAD's commit of ``root`` as the caller read it (None: unborn);
    read here when not given."""
    choice = isolation or config.workspace.isolation
    if not is_git:
        base_commit = None
    elif head is _ASK:
        base_commit = head_commit(root)
    else:
        base_commit = head if isinstance(head, str) else None
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
    return choice, base_commit


class SandboxBuilder(OnTree):
    """Makes one session's sandbox. ``check_abort`` raises between steps when
    the session is cancelled while it is being made."""

    def __init__(self, project: Path, config: Config, tree: SandboxTree, *, session_id: str,
                 base_commit: str | None, bus: EventBus, check_abort: Callable[[], None]):
        self.project = project
        self.config = config
        self.tree = tree
        self.id = session_id
        self.base_commit = base_commit
        self.bus = bus
        self.check_abort = check_abort
        self.reused = False  # a parked sandbox was reset for this session (pool.py)
        # The user's git configuration the session's git dir carries (wt.seal).
        self._user_config: list[tuple[str, str | None]] = []
        self._config: list[ConfigEntry] | None = None  # git.config_listing, read once
        self._refs: str | None = None  # the user's refs, as the fingerprint listed them
        self._tracked = False  # the reset wrote the tracking index itself (warmreset.py)

    # -- the three kinds ------------------------------------------------------

    def sparse(self, files: list[str], overlays: dict[str, bytes]) -> list[str]:
        """The files the sparse sandbox holds (with their analyzers' configuration)."""
        laid = sparse.lay_out(self.project, self.sandbox, files, overlays,
                              self.config.workspace.max_size_mb)
        self.tree.store = SnapshotStore(store_dir(self.project), session=self.id)
        self.tree.set_baseline()
        return laid

    def snapshot(self, overlays: dict[str, bytes]) -> None:
        is_git = (self.project / ".git").exists()
        files = list_files(self.project, self.config.workspace.exclude_patterns, use_git=is_git)
        copy_tree(self.project, self.sandbox, files, self.config.workspace.max_size_mb)
        wt.retarget_links(self.sandbox, self.project,
                          [str(f) for f in files if (self.sandbox / f).is_symlink()])
        if overlays:
            wt.write_overlays(self.sandbox, overlays)
        self.tree.store = SnapshotStore(store_dir(self.project), session=self.id)
        self.tree.set_baseline()

    def worktree(self, pinned_base: bool, overlays: dict[str, bytes],
                 before_register: Callable[[], str | None] = lambda: None) -> None:
        """``before_register``: waited for before the sandbox's worktree is
        registered in the user's git (the fingerprint's git section); it may
        return the user's refs as that section listed them (for the seal)."""
        # The user's configuration, read once (the filters and the seal use
        # it): one git process, beside the reading of the user's state.
        listing_box: list = []
        reader = threading.Thread(target=_into, args=(listing_box, config_listing, self.project),
                                  daemon=True, name=f"git config {self.id}")
        reader.start()
        _, cd = wt.user_git_dirs(self.project)
        store = self.tree.store = SnapshotStore(store_dir(self.project), alternates=[cd / "objects"],
                                                session=self.id)
        (self.private / "git" / "common" / "objects").mkdir(parents=True, exist_ok=True)

        def user_excludes() -> Path:
            # The user's global excludes with SuperQode's cache patterns
            # (excludes.py), from the configuration read beside.
            reader.join()
            if isinstance(listing_box[0], BaseException):
                raise listing_box[0]
            return excludes.build(self.private, listing_box[0], self.project)

        store.use_excludes(user_excludes)
        capture: threading.Thread | None = None
        state_box: list = []
        if self.config.workspace.copy_uncommitted and not pinned_base:
            # The user's state (their tree and index read, the trees written
            # to SuperQode's store) is read beside the claim of a parked
            # sandbox and its scan (warmreset.scan): the two touch nothing of
            # each other's, and each is a chain of git processes. Not on one
            # CPU, where the chains would only take turns.
            if BESIDE:
                capture = threading.Thread(
                    target=_into, args=(state_box, _capture, self.project, store, self.private),
                    daemon=True, name=f"user state {self.id}")
                capture.start()
            else:
                _into(state_box, _capture, self.project, store, self.private)
        else:
            tree = wt.git_out(["rev-parse", f"{self.base_commit}^{{tree}}"], self.project)
            state_box.append(wt.UserState(staged_tree=tree, full_tree=tree))

        def user_state() -> wt.UserState:
            if capture is not None:
                capture.join()
            if isinstance(state_box[0], BaseException):
                raise state_box[0]
            self.check_abort()
            return state_box[0]

        try:
            self._worktree(pinned_base, overlays, before_register, reader, listing_box, user_state)
        finally:
            if capture is not None:
                capture.join()  # it writes in the private folder: never left running

    def _worktree(self, pinned_base: bool, overlays: dict[str, bytes],
                  before_register: Callable[[], str | None], reader: threading.Thread,
                  listing_box: list, user_state: Callable[[], wt.UserState]) -> None:
        store = self.tree.store
        assert store is not None
        sealed = wt.SealedGit(self.private / "git")
        reader.join()
        if isinstance(listing_box[0], BaseException):
            raise listing_box[0]
        listing = self._config = listing_box[0]
        filters = carry.filter_names(self.project, listing)
        differ = False
        refs = before_register()
        self._refs = refs_listing(refs) if refs is not None else None
        if self.config.workspace.warm_sandboxes and pool.claim(
                self.project, self.id, self.sandbox, sealed, self.base_commit or "HEAD",
                f"superqode session {self.id}"):
            self.reused = True
            proved = False
            try:
                scanned = self._scan_reused(sealed, filters)
            except (WorkspaceError, GitError, OSError) as e:
                # What the old session left makes the reset fail (a link where
                # a folder was): a cold sandbox, and the slot is gone.
                self.bus.emit("workspace.reuse_refused", error=str(e))
                scanned = None
            state = user_state()  # its failure is the session's, not the slot's
            if scanned is not None:
                try:
                    proved = self._reset_reused(sealed, state, filters, *scanned)
                except (WorkspaceError, GitError, OSError) as e:
                    self.bus.emit("workspace.reuse_refused", error=str(e))
            if not proved:
                self.reused = False
                with git_registrations(self.project):
                    wt.remove_worktree(self.project, self.sandbox)
                remove_quietly(sealed.root)
        state = user_state()  # (waited for already where a slot was claimed)
        if not self.reused:
            with git_registrations(self.project):
                wt.add_worktree(self.project, self.sandbox, self.base_commit or "HEAD",
                                f"superqode session {self.id}")
            self._user_config = wt.seal(self.sandbox, sealed, self.project, store,
                                        self.base_commit or "HEAD", listing, self._refs)
            self.check_abort()
            wt.checkout_staged(self.sandbox, state.staged_tree,
                               sealed.env(self.sandbox, sealed.index, store), filters)
            self.check_abort()
            differ = wt.lay_over(self.sandbox, store, state.staged_tree, state.full_tree,
                                 self.project)
        if not self.reused:  # a reset carried them already, before its proof
            differ |= wt.carry_extras(self.project, self.sandbox, store, state, sealed, filters)
        if self.config.workspace.keep_gitignored:
            wt.carry_ignored(self.project, self.sandbox, self.config.workspace.keep_gitignored,
                             self.config.workspace.keep_gitignored_mode)
        if not self._tracked:
            copy_index(sealed.index, self.tree.index)
        moved = wt.retarget_links(self.sandbox, self.project,
                                  wt.tree_links(store, state.full_tree))
        if overlays:
            wt.write_overlays(self.sandbox, overlays)
        # The baseline is the sandbox as carried in: retargeted links are not
        # the session's change and stay out of its patch.
        self.tree.set_baseline(None if overlays or moved or differ else state.full_tree)

    # -- warm sandboxes -------------------------------------------------------
    def _scan_reused(self, sealed: wt.SealedGit,
                     filters: list[str]) -> tuple[dict[str, str], bytes, bytes | None]:
        """What a parked sandbox's reset needs before the new state is known
        (it is read meanwhile): its git dirs made anew, its tracking index
        listed and unflagged, and its two scans (warmreset.scan) where the
        filters leave the fast path open. Returns the git environment, the
        listing and the scan."""
        store = self.tree.store
        assert store is not None
        # The parked tree comes with SuperQode's tracking index of it (pool.py),
        # never with the old session's git dir: both git dirs are made anew.
        self._user_config = wt.seal(self.sandbox, sealed, self.project, store,
                                    self.base_commit or "HEAD", self._config, self._refs)
        env = sealed.env(self.sandbox, sealed.index, store)
        listing = warmreset.unflag(self.sandbox, env)
        early = not filters and not warmreset.odd_index(listing)
        return env, listing, warmreset.scan(self.sandbox, store, env) if early else None

    def _reset_reused(self, sealed: wt.SealedGit, state: wt.UserState, filters: list[str],
                      env: dict[str, str], listing: bytes, scanned: bytes | None) -> bool:
        """Bring a parked sandbox (:meth:`_scan_reused`'s) to the new state,
        changed files only, and prove it."""
        store = self.tree.store
        assert store is not None
        keep = self.config.workspace.keep_gitignored
        if not (filters or state.bits or state.nested):
            # The files that differ (warmreset.py); None: the index or the
            # state holds what only the path below carries.
            proved = warmreset.reset(self.sandbox, store, sealed, env, state, self.project,
                                     self.tree.index, listing, scanned)
            if proved is not None:
                self._tracked = proved
                return proved
        wt.checkout_staged(self.sandbox, state.staged_tree, env, filters)
        # Ignored caches kept by config (.venv...) go too: the old session
        # wrote them, and a planted .pth there would run in this one. They
        # are carried afresh from the user's tree (carry_ignored), as cold.
        wt.git(["clean", "-ffdxq"], self.sandbox, env=env)
        wt.lay_over(self.sandbox, store, state.staged_tree, state.full_tree, self.project)
        wt.carry_extras(self.project, self.sandbox, store, state, sealed, filters)
        copy_index(sealed.index, self.tree.index)
        if self.tree.hash() != state.full_tree:
            return False
        # Untracked strays would have changed the tree above; ignored ones do not,
        # so list those and allow only the caches config says to keep.
        out = wt.git([*store.excludes_arg(), "clean", "-ndX"], self.sandbox, env=env).stdout.decode("utf-8", "surrogateescape")
        stray = [ln[len("Would remove "):].rstrip("/") for ln in out.splitlines() if ln]
        return all(any(fnmatch.fnmatch(p, k.rstrip("/")) or fnmatch.fnmatch(p.split("/")[0], k.rstrip("/"))
                       for k in keep) for p in stray)

    # -- the guard --------------------------------------------------------------
    def install_guard(self, worktree: bool) -> GuardInstall:
        # Scope the guard to the user's repository and the sandbox: a project's
        # own tests that git-init temporary repositories must keep working.
        protect: list[Path] = [self.project, self.sandbox, self.private]
        if worktree:
            protect.append(wt.user_git_dirs(self.project)[1])
        guard = install_guard(self.private / "guard", self.config.qe.git_guard, protect=protect)
        if worktree:
            # Nothing of the session has run yet: the config is written anew
            # with the guard's settings last (one write, not a git call each).
            wt.write_session_config(wt.SealedGit(self.private / "git"), self._user_config,
                                    guard.config_entries)
        return guard
