"""Ending a sandbox: its processes ended, then parked warm for the next
session (a worktree whose git the session did not redirect) or removed,
link-proof. A sandbox swapped for something else is left alone and said so.
"""

from __future__ import annotations

import contextlib
import logging
from pathlib import Path

from ..config import Config
from ..events import EventBus
from . import owngit, pool, removal
from . import worktree as wt
from .errors import WorkspaceError
from .git import GitError
from .paths import working_root
from .proc import end_session_processes
from .session_tree import OnTree, SandboxTree
from .teardown import git_registrations

log = logging.getLogger(__name__)


class SandboxDisposal(OnTree):
    """Takes one session's sandbox down. ``problem``: why the sandbox had to
    be left alone (it was swapped), for the session's verification."""

    def __init__(self, project: Path, config: Config, tree: SandboxTree, *, session_id: str,
                 isolation: str, bus: EventBus):
        self.project = project
        self.config = config
        self.tree = tree
        self.id = session_id
        self.isolation = isolation
        self.bus = bus
        self.problem: str | None = None

    def end_processes(self) -> bool:
        """End what the session left running; True when the sandbox is still
        the folder SuperQode made (else it must not be parked)."""
        try:
            self.tree.check()
            where: Path | None = self.sandbox
        except WorkspaceError:
            # Swapped (a link to the user's repository, another folder):
            # matching processes by a folder there would kill the user's
            # own. Match by the session's environment only.
            where = None
        ended = end_session_processes(self.id, where)
        if ended:
            self.bus.emit("workspace.processes_ended", pids=ended)
        return where is not None

    def park_or_remove(self, *, intact: bool, reused: bool) -> bool:
        """Park the sandbox warm when it may serve another session, else
        remove it; True when parked. ``intact``: ``end_processes``' answer."""
        parked = False
        if (self.isolation == "worktree" and self.config.workspace.warm_sandboxes
                and self.sandbox.exists() and intact and self._git_untouched()):
            parked = self._park(reused)
        if not parked:
            self.remove()
        return parked

    def _park(self, reused: bool) -> bool:
        sealed = wt.SealedGit(self.private / "git")
        try:
            if not reused and self.tree.store is not None:
                # A fresh checkout's index is racily clean (its files are as
                # new as it), so the next session's reset would re-read
                # every file; refreshed now, seconds later, it compares
                # stat data (bench/sandbox.py: 0.16-0.30 s -> 0.06-0.13 s).
                # SuperQode's tracking index, in its own git dir: what the
                # next session starts from (pool.py), nothing the session wrote.
                wt.git(["update-index", "-q", "--refresh"], self.private,
                       env=sealed.env(self.sandbox, self.tree.index, self.tree.store),
                       check=False)
            return pool.park(self.project, self.id, self.sandbox, self.tree.identity,
                             self.config.workspace.warm_pool, self.tree.index)
        except OSError as e:  # a full or read-only home: no parking, removal goes on
            self.bus.emit("workspace.state_write_failed", step="park", error=str(e))
            return False

    def _git_untouched(self) -> bool:
        """False, said once (``workspace.git_tampered``), when the session
        redirected its git (its ``.git`` file, ``commondir``, the object
        alternates): such a sandbox is removed, never parked for another
        session. SuperQode's own git never followed them (owngit.py)."""
        if self.tree.store is None:
            return False
        sealed = wt.SealedGit(self.private / "git")
        try:
            alternates = wt.sealed_alternates(self.tree.store, self.project)
        except GitError:
            return False
        problem = owngit.tampered(self.sandbox, sealed.wt, alternates)
        if problem is not None:
            self.bus.emit("workspace.git_tampered", detail=problem)
            return False
        return True

    def remove(self) -> None:
        """Remove the sandbox unless it was swapped; then it is left alone and
        ``problem`` says so (the registration still goes)."""
        made = self.tree.identity
        try:
            if self.isolation == "worktree":
                with contextlib.ExitStack() as held:
                    try:
                        held.enter_context(git_registrations(self.project))
                    except OSError:
                        pass  # a full or read-only home: the entry is still ours alone to remove
                    wt.remove_worktree(self.project, self.sandbox, made)
            else:
                removal.remove_tree(self.sandbox, working_root(), expect=made)
        except removal.UnsafeRemoval as e:
            self.problem = str(e)
        except OSError as e:  # a leftover of ours, not a change to the project
            log.warning("sandbox %s not fully removed: %s (superqe clean retries)",
                        self.sandbox, e)
