"""The reaper: removes sandboxes nobody will come back for.

Two kinds go:

- *idle* sessions: owner process gone and no sign of activity for longer than
  ``workspace.cleanup_after_hours``. Activity is the heartbeat file, the
  sandbox's git index and reflog, and the record — not the sandbox's top
  directory, whose mtime only moves when an entry directly under it is added
  or removed.
- *orphans*: sessions whose repository was deleted or moved away. Their git
  registration went with the repository, so the sandbox is simply removed;
  once no session is left, ``working/<repo-key>/`` goes too.

The reaper only ever deletes what carries SuperQode's own ownership marker: a
session with a record (``qe/<id>.json``, ``owner: superqode-ls``) or a repository
folder with a ``repo.json`` marker. Anything else is reported and left alone.
No single failure stops it: each one is reported and the rest carries on.
"""

from __future__ import annotations

import logging
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING

from ..config import Config
from . import reap_stamp, removal
from .paths import working_root
from .recovery import (
    SessionInfo,
    discard,
    interrupted_sessions,
    read_repo_marker,
    repo_bases,
    scan,
    tidy_repo,
)

if TYPE_CHECKING:
    from . import branches

STAMP = reap_stamp.STAMP
DEFAULT_INTERVAL_S = reap_stamp.DEFAULT_INTERVAL_S

log = logging.getLogger(__name__)


@dataclass
class ReapReport:
    idle: list[str] = field(default_factory=list)
    orphans: list[str] = field(default_factory=list)
    repo_dirs: list[str] = field(default_factory=list)
    kept: list[tuple[str, str]] = field(default_factory=list)
    errors: list[tuple[str, str]] = field(default_factory=list)
    branches: list[branches.ReapResult] | None = None  # None: the branch reaper failed

    @property
    def removed(self) -> list[str]:
        return self.idle + self.orphans


def repo_gone(repo: Path | None) -> bool:
    """True when the repository a session was made from is no longer there
    (deleted, or moved so that its old path holds no project any more)."""
    if repo is None:
        return False  # unknown: cannot tell, so not an orphan
    return not repo.is_dir()


def _why_kept(info: SessionInfo, idle_s: float, now: float, orphan: bool) -> str | None:
    if info.record is None:
        return "no ownership marker (record)"
    if info.kind == "branch":
        return "branch worktree"
    if info.alive:
        return "owner still running"
    if orphan:
        return None
    if now - info.last_activity() <= idle_s:
        return "recently active"
    return None


def reap(config: Config | None = None, *, now: float | None = None,
         idle_hours: float | None = None) -> ReapReport:
    """One pass over every repository's sessions; never raises for a single
    session or repository."""
    now = now or time.time()
    if idle_hours is None:
        idle_hours = config.workspace.cleanup_after_hours if config else 24.0
    idle_s = idle_hours * 3600
    report = ReapReport()
    by_base: dict[Path, list[SessionInfo]] = {}
    try:
        sessions = scan()
    except OSError as e:
        report.errors.append(("scan", str(e)))
        sessions = []
    for info in sessions:
        by_base.setdefault(info.base, []).append(info)
    for base in repo_bases():
        by_base.setdefault(base, [])
    for base, infos in by_base.items():
        marker = read_repo_marker(base)
        marker_repo = Path(marker["repo"]) if marker and marker.get("repo") else None
        for info in infos:
            orphan = repo_gone(info.repo or marker_repo)
            why = _why_kept(info, idle_s, now, orphan)
            if why:
                report.kept.append((info.id, why))
                continue
            try:
                discard(info)
                (report.orphans if orphan else report.idle).append(info.id)
            except Exception as e:
                report.errors.append((info.id, _one_line(e)))
        try:
            if marker is not None and repo_gone(marker_repo):
                remove_repo_dir(base, report)
            else:
                tidy_repo(base, marker_repo)
        except Exception as e:
            report.errors.append((base.name, _one_line(e)))
    report.branches = _reap_branches(config, now, report)
    return report


def remove_repo_dir(base: Path, report: ReapReport) -> None:
    """The repository is gone; remove its folder once no session is left."""
    qe = base / "qe"
    leftovers = [p.name for p in qe.iterdir()] if qe.is_dir() else []
    if leftovers:
        report.kept.append((base.name, f"{len(leftovers)} unowned item(s) left in qe/"))
        return
    branch_dir = base / "branches"
    if branch_dir.is_dir() and any(branch_dir.iterdir()):
        report.kept.append((base.name, "branch worktrees left"))
        return
    try:
        removal.remove_tree(base, working_root())  # never through a link
    except removal.UnsafeRemoval as e:
        report.kept.append((base.name, str(e)))
        return
    except OSError as e:
        report.errors.append((base.name, _one_line(e)))
        return
    report.repo_dirs.append(base.name)


def _reap_branches(
    config: Config | None, now: float, report: ReapReport
) -> list[branches.ReapResult] | None:
    # Looked up on the package at call time, not bound at import: a failing
    # branch reaper is reported and the session reap above still stands.
    # Imported here: every CLI start imports this module, and reaps at most
    # hourly (the branch package costs a start ~40 ms of imports).
    from . import branches

    try:
        return branches.reap_branch_worktrees(config=config, now=now)
    except Exception as e:  # noqa: BLE001 - no single failure stops the reaper
        report.errors.append(("branches", _one_line(e)))
        return None


def _one_line(e: BaseException) -> str:
    text = str(e).strip()
    return text.splitlines()[0] if text else type(e).__name__


def maybe_reap(config: Config | None = None, *, interval_s: float = DEFAULT_INTERVAL_S,
               now: float | None = None) -> ReapReport | None:
    """Reap unless another process did within ``interval_s``; None when
    skipped. (A front end asks ``reap_stamp`` first, so that it imports this
    module only when a reap is due.)"""
    return reap_stamp.if_due(lambda t: reap(config, now=t), now=now or time.time(),
                             interval_s=interval_s)


def on_start(config: Config | None = None, repo: Path | None = None
             ) -> tuple[list[SessionInfo], ReapReport | None]:
    """What the server and the CLI do when they start: reap (at most hourly)
    and list the sessions of ``repo`` (all when None) that were interrupted,
    so the user can be offered ``superqe recover``."""
    try:
        report = maybe_reap(config)
    except OSError as e:  # a read-only home must not stop anything
        log.warning("reaper skipped: %s", e)
        report = None
    return interrupted_sessions(repo), report
