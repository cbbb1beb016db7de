"""Listing, finding and opening branch worktrees."""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path

from ..errors import WorkspaceError
from ..git import GitError
from ..slug import folder_name
from .gitquery import _gitdir, _live_branch, dirty_paths, is_orphan, last_activity, main_repo
from .records import BranchRecord, iter_records, touch


@dataclass
class WorktreeInfo:
    record: BranchRecord
    record_path: Path
    exists: bool
    orphan: bool
    branch: str | None  # what is checked out now (the user may have switched)
    dirty: int | None  # changed + untracked paths; None when git cannot tell
    locked: bool
    last_activity: float

    @property
    def name(self) -> str:
        return self.record.name

    @property
    def path(self) -> Path:
        return self.record.path


def describe(rec_path: Path, rec: BranchRecord) -> WorktreeInfo:
    exists = rec.path.is_dir()
    orphan = is_orphan(rec)
    branch, dirty, locked = rec.branch, None, False
    if exists and not orphan:
        try:
            dirty = len(dirty_paths(rec.path))
            branch = _live_branch(rec.path)
        except GitError:
            dirty = None
        gd = _gitdir(rec.path)
        locked = bool(gd and (gd / "locked").exists())
    return WorktreeInfo(rec, rec_path, exists, orphan, branch, dirty, locked, last_activity(rec))


def list_worktrees(repo: Path | None = None) -> list[WorktreeInfo]:
    """Worktrees of ``repo`` (any path inside it), or of every repository when None."""
    key_repo = main_repo(repo) if repo is not None else None
    return [describe(p, r) for p, r in iter_records(key_repo)]


def find_worktree(repo: Path, name: str) -> tuple[Path, BranchRecord]:
    """By folder name, branch, record id or path."""
    repo = main_repo(repo)
    candidates = list(iter_records(repo))
    for match in (
        lambda r: r.name == name or r.id == name,
        lambda r: r.branch == name,
        lambda r: r.name == folder_name(name),
        lambda r: os.path.abspath(name) == r.sandbox,
    ):
        for path, rec in candidates:
            if match(rec):
                return path, rec
    raise WorkspaceError(f"no worktree {name!r} for {repo} (see: superqe worktree list)")


def open_worktree(repo: Path, name: str) -> Path:
    """Path of worktree ``name`` of ``repo``, marked as used now.

    For ``superqode.openWorktree``: the server asks the editor to open the
    returned folder (``window/showDocument`` with ``external``/new window,
    or hands the path to the editor plugin that opens a window).
    """
    _, rec = find_worktree(repo, name)
    if not rec.path.is_dir():
        raise WorkspaceError(
            f"worktree {rec.name!r} is gone ({rec.sandbox}); clean up with: superqe worktree remove {rec.name}"
        )
    if is_orphan(rec):
        raise WorkspaceError(f"worktree {rec.name!r} lost its repository {rec.repo}")
    touch(rec)
    return rec.path
