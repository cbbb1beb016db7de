"""Taking a session down: what removal needs besides the sandbox itself.

The sandbox goes through ``removal`` (link-proof, see docs/safety.md); around
it, the worktree registration, the private folder, the record and the
session's snapshot refs go, for a live session (``IsolatedSession.close``)
and for one whose process is gone (``discard_sandbox``, used by recovery).
"""

from __future__ import annotations

import os
import re
import stat
from pathlib import Path

from . import removal
from . import worktree as wt
from .errors import WorkspaceError
from .git import GitError
from .gitsnapshot import SnapshotStore
from .paths import SessionPaths, store_dir, working_root
from .records import SessionRecord

SESSION_ID = re.compile(r"qe-\d{8}-\d{6}-[0-9a-f]{6}")


def git_registrations(project: Path):
    """Hold git's worktree registrations still: concurrent ``worktree add``
    calls read each other's half-written entries and fail."""
    from .coordinator import Coordinator

    return Coordinator(project).worktree_mutex()


def discard_sandbox(record: SessionRecord) -> None:
    """Remove what a (possibly half-made) session left: sandbox, worktree
    registration, private dir, record. Safe to call twice. A sandbox that was
    swapped is left alone and UnsafeRemoval raised once the rest is gone."""
    project = Path(record.repo)
    paths = SessionPaths(project, record.id)
    sandbox = Path(record.sandbox)
    problem: removal.UnsafeRemoval | None = None
    try:
        if record.isolation != "worktree":
            removal.remove_tree(sandbox, working_root(), expect=record.sandbox_identity)
        elif project.is_dir():
            with git_registrations(project):
                wt.remove_worktree(project, sandbox, record.sandbox_identity)
        else:
            wt.remove_worktree(project, sandbox, record.sandbox_identity)
    except removal.UnsafeRemoval as e:
        problem = e
    remove_quietly(paths.private)
    drop_snapshots(project, record.id)
    paths.record.unlink(missing_ok=True)
    paths.heartbeat.unlink(missing_ok=True)
    if problem is not None:
        raise problem


def drop_snapshots(project: Path, session_id: str) -> None:
    """The session's snapshot refs go with it; the store is pruned now and
    then. Housekeeping: a failure here never fails the revert."""
    path = store_dir(project)
    if not (path / "HEAD").is_file():
        return
    try:
        store = SnapshotStore(path)
        store.drop_session(session_id)
        store.prune(live=sessions_on_disk(path.parent / "qe") - {session_id})
    except (GitError, OSError):
        pass


def sessions_on_disk(qe: Path) -> set[str]:
    """Ids named by anything in ``qe/`` (sandbox, record, private dir): a
    session being created has its record before its first snapshot."""
    try:
        names = os.listdir(qe)
    except OSError:
        return set()
    return {m.group(0) for n in names if (m := SESSION_ID.search(n))}


def is_real_dir(p: Path) -> bool:
    """A folder, not a symlink to one."""
    try:
        return stat.S_ISDIR(os.lstat(p).st_mode)
    except OSError:
        return False


def parked_identity(slot: Path) -> tuple[int, int] | None:
    try:
        dev, ino = (slot / "identity").read_text().split()
        return int(dev), int(ino)
    except (OSError, ValueError):
        return None


def remove_quietly(path: Path) -> None:
    """Scratch of ours (private dir, parking leftovers): removed without
    following links; a failure leaves it for the reaper."""
    try:
        removal.remove_tree(path, working_root(), link_ok=True)
    except (OSError, WorkspaceError):
        pass
