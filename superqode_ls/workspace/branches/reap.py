"""The reaper's part for branch worktrees: idle, orphaned and half-created
ones are removed (their work saved first)."""

from __future__ import annotations

import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Literal

from ...config import Config, ConfigError, load_config
from ..errors import WorkspaceError
from ..git import GitError, git
from .dispose import dispose
from .gitquery import _gitdir, is_orphan, last_activity
from .records import DAY, iter_records


@dataclass
class ReapResult:
    """One worktree the reaper looked at and decided on."""

    path: Path
    repo: str
    name: str
    branch: str | None
    kind: Literal["detached", "branch", "orphan", "missing"]
    action: Literal["removed", "would-remove", "kept", "failed"]
    reason: str
    idle_days: float | None = None
    patches: list[Path] = field(default_factory=list)
    branch_deleted: bool = False
    message: str = ""


def _config_for(repo: Path, config: Config | None) -> Config:
    if config is not None:
        return config
    try:
        return load_config(repo if repo.is_dir() else None)
    except ConfigError:
        return Config()


def reap_branch_worktrees(
    *, now: float | None = None, config: Config | None = None, dry_run: bool = False
) -> list[ReapResult]:
    """Remove idle and orphaned branch worktrees of every repository.

    - detached (exploration) worktrees idle > ``workspace.detached_worktree_idle_days``;
    - branch worktrees idle > ``workspace.branch_worktree_idle_days``;
    - orphans: the repository was moved or deleted (saved under ``$SUPERQODE_HOME/orphans``);
    - records whose folder was deleted by hand (the registration is pruned).

    Dirty or unpushed work is saved as patches before anything is removed;
    locked worktrees (``git worktree lock``) and those still being created are
    left alone. ``git worktree prune`` runs in every repository touched.
    """
    now = time.time() if now is None else now
    results: list[ReapResult] = []
    touched: set[Path] = set()
    for rec_path, rec in list(iter_records()):
        repo = Path(rec.repo)
        kind: Literal["detached", "branch", "orphan", "missing"]
        idle_days = (now - last_activity(rec)) / DAY
        if rec.state == "creating" and idle_days < 1:
            continue  # maybe being created right now: its folder may not exist yet
        if is_orphan(rec):
            kind, reason = "orphan", "its repository is gone"
        elif not rec.path.is_dir():
            kind, reason = "missing", "its folder was deleted"
        else:
            kind = "detached" if rec.detached else "branch"
            cfg = _config_for(repo, config).workspace
            limit = (
                cfg.detached_worktree_idle_days if rec.detached else cfg.branch_worktree_idle_days
            )
            gd = _gitdir(rec.path)
            if gd is not None and (gd / "locked").exists():
                results.append(
                    ReapResult(
                        rec.path, rec.repo, rec.name, rec.branch, kind, "kept", "locked", idle_days
                    )
                )
                continue
            if rec.state == "creating":
                reason = "its creation never finished"
            elif idle_days <= limit:
                continue
            else:
                reason = f"idle {idle_days:.0f} days (limit {limit:g})"
        res = ReapResult(
            rec.path,
            rec.repo,
            rec.name,
            rec.branch,
            kind,
            "would-remove" if dry_run else "removed",
            reason,
            idle_days,
        )
        try:
            d = dispose(rec, reason=reason, force=True, dry_run=dry_run, save_unpushed=True)
            res.patches = d.patches
            res.branch_deleted = d.branch_deleted
            if d.branch_kept_reason:
                res.message = f"kept branch {rec.branch}: {d.branch_kept_reason}"
            if kind != "orphan":
                touched.add(repo)
        except (GitError, WorkspaceError, OSError) as e:
            res.action = "failed"
            res.message = str(e)
        results.append(res)
    if not dry_run:
        for repo in touched:
            git(["worktree", "prune"], repo, check=False)
    return results
