"""Removing a branch worktree, saving what would be lost first."""

from __future__ import annotations

import shutil
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ..artifacts import Artifacts, atomic_write
from ..errors import WorkspaceError
from ..git import git, git_out
from ..paths import home
from .gitquery import (
    _branch_exists,
    _checked_out_at,
    _live_branch,
    dirty_paths,
    is_orphan,
    unique_commits,
)
from .listing import find_worktree
from .locks import _tidy
from .patches import commits_patch, snapshot_patch, uncommitted_patch
from .records import BranchRecord, _record_path


@dataclass
class Disposal:
    """What removing a worktree did (or, dry, would do)."""

    name: str
    path: Path
    repo: str
    branch: str | None
    removed: bool = False
    patches: list[Path] = field(default_factory=list)
    branch_deleted: bool = False
    branch_kept_reason: str | None = None
    message: str = ""


def _save(
    arts: Artifacts | None,
    orphan_dir: Path | None,
    rec: BranchRecord,
    label: str,
    text: str,
    **extra: object,
) -> Path:
    # Bytes, not str: a file in another encoding must reach the patch byte for byte.
    raw: Any = text.encode("utf-8", "surrogateescape")
    if arts is not None:
        return arts.prepare().write_patch(
            f"{rec.name}-{label}", raw, worktree=rec.sandbox, branch=rec.branch, **extra
        )
    assert orphan_dir is not None
    path = orphan_dir / f"{rec.id}-{rec.name}-{label}.patch"
    atomic_write(path, raw)
    return path


def dispose(
    rec: BranchRecord,
    *,
    reason: str,
    force: bool = False,
    delete_branch: bool = False,
    dry_run: bool = False,
    save_unpushed: bool = False,
) -> Disposal:
    """Remove one worktree, saving what would be lost first.

    ``force=False`` (a user's plain ``remove``) refuses when there are
    uncommitted changes or commits on no branch; ``force=True`` (``--force``
    and the reaper) saves them as patches and goes on. A branch SuperQode
    created is deleted when every commit on it is also elsewhere; with
    commits of its own it is kept unless ``delete_branch`` (then saved first).
    ``save_unpushed`` (the reaper) also saves the commits of the checked-out
    branch that no remote or other branch has, although the branch keeps them.
    """
    res = Disposal(rec.name, rec.path, rec.repo, rec.branch)
    rec_file = _record_path(rec.path.parent, rec.name)
    if is_orphan(rec):
        return _dispose_orphan(rec, rec_file, res, reason=reason, dry_run=dry_run)
    repo = Path(rec.repo)
    exists = rec.path.is_dir()
    dirty: list[str] = []
    head = None
    live_branch = rec.branch
    if exists:
        dirty = dirty_paths(rec.path)
        head = git_out(["rev-parse", "HEAD"], rec.path)
        live_branch = _live_branch(rec.path)
    own_branch = rec.branch if rec.created_branch else None
    # Commits only this worktree's HEAD reaches (a detached HEAD, or a branch we may delete).
    at_risk: list[str] = []
    if head and live_branch is None:
        at_risk = unique_commits(repo, head, None)
    unpushed: list[str] = []
    if save_unpushed and head and live_branch is not None:
        unpushed = unique_commits(repo, head, live_branch)
    branch_unique: list[str] = []
    if own_branch and _branch_exists(repo, own_branch):
        branch_unique = unique_commits(repo, f"refs/heads/{own_branch}", own_branch)
    if not force:
        if dirty:
            raise WorkspaceError(
                f"worktree {rec.name!r} has {len(dirty)} uncommitted change(s); commit them, or "
                f"remove with --force (they are saved as a patch first)"
            )
        if at_risk:
            raise WorkspaceError(
                f"worktree {rec.name!r} has {len(at_risk)} commit(s) on no branch; keep them with "
                f"`git branch NAME` inside it, or remove with --force (saved as a patch first)"
            )
    if dry_run:
        res.message = f"would remove ({reason})"
        return res
    arts = Artifacts(repo, rec.id)
    if dirty:
        res.patches.append(
            _save(arts, None, rec, "uncommitted", uncommitted_patch(rec.path), reason=reason)
        )
    if at_risk and head:
        res.patches.append(
            _save(arts, None, rec, "commits", commits_patch(repo, head, None), reason=reason)
        )
    if unpushed and head:
        res.patches.append(
            _save(
                arts, None, rec, "unpushed", commits_patch(repo, head, live_branch), reason=reason
            )
        )
    if exists:
        proc = git(["worktree", "remove", "--force", "--force", str(rec.path)], repo, check=False)
        if rec.path.exists():
            shutil.rmtree(rec.path, ignore_errors=proc.returncode == 0)
    git(["worktree", "prune"], repo, check=False)
    res.removed = True
    if own_branch and _branch_exists(repo, own_branch):
        elsewhere = _checked_out_at(repo, own_branch)
        if elsewhere is not None:
            res.branch_kept_reason = f"checked out at {elsewhere}"
        elif branch_unique and not delete_branch:
            res.branch_kept_reason = (
                f"{len(branch_unique)} commit(s) on no other branch; "
                f"delete it with: git branch -D {own_branch}"
            )
        else:
            if branch_unique and not (unpushed and live_branch == own_branch):
                res.patches.append(
                    _save(
                        arts,
                        None,
                        rec,
                        "branch",
                        commits_patch(repo, f"refs/heads/{own_branch}", own_branch),
                        reason=reason,
                    )
                )
            git(["branch", "-D", "--", own_branch], repo)
            res.branch_deleted = True
    rec_file.unlink(missing_ok=True)
    _tidy(rec.path.parent)
    res.message = f"removed ({reason})"
    return res


def _dispose_orphan(
    rec: BranchRecord, rec_file: Path, res: Disposal, *, reason: str, dry_run: bool
) -> Disposal:
    reason = f"orphan: repository {rec.repo} is gone; {reason}"
    if dry_run:
        res.message = f"would remove ({reason})"
        return res
    if rec.path.is_dir():
        # Either the repository is gone or the worktree lost its link to it;
        # git cannot tell committed from new here, so every file is kept.
        text = snapshot_patch(rec.path)
        if text.strip():
            out_dir = home() / "orphans" / rec.repo_key
            patch = _save(None, out_dir, rec, "worktree", text)
            # The record tells later what the patch was: repository, branch, base commit.
            atomic_write(patch.with_suffix(".json"), rec.model_dump_json(indent=2) + "\n")
            res.patches.append(patch)
        shutil.rmtree(rec.path)
    if Path(rec.repo).is_dir():
        git(["worktree", "prune"], Path(rec.repo), check=False)
    rec_file.unlink(missing_ok=True)
    _tidy(rec.path.parent)
    res.removed = True
    res.message = f"removed ({reason})"
    return res


def remove_worktree(
    repo: Path, name: str, *, force: bool = False, delete_branch: bool = False
) -> Disposal:
    """``superqe worktree remove``: the worktree, its record, and the branch
    when SuperQode created it and nothing would be lost."""
    _, rec = find_worktree(repo, name)
    return dispose(rec, reason="removed by the user", force=force, delete_branch=delete_branch)
