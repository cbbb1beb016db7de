"""Sessions on disk, of this process or of one that died: list, find,
revert, clean, reap. What to do with an interrupted one is ``recovery``.

Every function here is synchronous (file system and git): the server calls
them off its event loop (``asyncio.to_thread``)."""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    # The API's types; loaded on first use (the recovery module loads the
    # sandbox code, which a server that never lists sessions does without).
    from ..config import Config
    from ..workspace.reaper import ReapReport
    from ..workspace.recovery import CleanReport, SessionInfo

__all__ = [
    "CleanReport", "CleanResult", "SessionInfo", "age_text", "changes_of", "clean",
    "find", "interrupted", "list_sessions", "reap_if_due", "removable", "revert",
    "unstick_state", "verify",
]


def __getattr__(name: str) -> Any:
    if name in ("SessionInfo", "CleanReport"):
        from ..workspace import recovery

        return getattr(recovery, name)
    raise AttributeError(name)


def list_sessions(project: Path | None = None) -> list[SessionInfo]:
    """Every session on disk (of ``project`` only, when given), oldest first."""
    from ..workspace import recovery

    return recovery.scan(project)


def find(session_id: str) -> SessionInfo:
    """The session ``session_id``; WorkspaceError (one line) when it is not
    a session id or there is no such session."""
    from ..workspace import recovery

    return recovery.find_session(session_id)


def interrupted(project: Path | None = None) -> list[SessionInfo]:
    """Sessions whose owner died while creating, running or reverting."""
    from ..workspace import recovery

    return recovery.interrupted_sessions(project)


def changes_of(info: SessionInfo) -> int | None:
    """Files the session changed (None: unknown, or its owner is alive)."""
    from ..workspace import recovery

    return recovery.count_changes(info)


def verify(info: SessionInfo) -> tuple[bool | None, str]:
    """The user's tree against the session's start: (verified, the line)."""
    from ..workspace import recovery

    return recovery.verify(info)


def age_text(seconds: float) -> str:
    """``42s``, ``5m``, ``3h``, ``2d``."""
    from ..workspace.recovery import utc_age

    return utc_age(seconds)


def removable(info: SessionInfo, *, force: bool = False) -> str | None:
    """Why ``info`` must stay (None: it may go)."""
    from ..workspace import recovery

    return recovery.removable(info, force=force)


def revert(sessions: Iterable[SessionInfo], *, force: bool = False) -> CleanReport:
    """Remove each session's sandbox (one whose owner still runs only with
    ``force``) and verify the project after each: the ``superqe revert`` of
    the CLI and the "Revert and discard" of the editor."""
    from ..workspace import recovery

    return recovery.clean_sessions(sessions, force=force, verify_after=True)


@dataclass
class CleanResult:
    sessions: CleanReport  # sessions removed, skipped, failed; registrations; locks
    repo_dirs: list[str] = field(default_factory=list)  # folders of deleted projects removed
    warm: int = 0  # parked (warm) sandboxes removed
    unstuck: int = 0  # SuperQode's own files whose immutable flag was cleared


def clean(*, force: bool = False, older_than_s: float | None = None) -> CleanResult:
    """``superqe clean``: sessions of every project whose owner is gone (all
    with ``force``; sessions kept on purpose only with ``force`` or
    ``older_than_s``), the folders of deleted projects, warm sandboxes,
    SuperQode's stale worktree registrations and locks."""
    from ..workspace import pool, reaper, recovery

    unstuck = unstick_state() if force else 0
    report = recovery.clean_sessions(recovery.scan(), force=force, older_than_s=older_than_s,
                                     keep_kept=older_than_s is None)
    gone = reaper.ReapReport()
    warm = 0
    for base in recovery.repo_bases():
        marker = recovery.read_repo_marker(base)
        repo = Path(marker["repo"]) if marker and marker.get("repo") else None
        if marker is not None and reaper.repo_gone(repo):
            reaper.remove_repo_dir(base, gone)
        else:
            if repo is not None and repo.is_dir():
                warm += pool.discard_all(repo)  # parked sandboxes are nobody's session
            report.pruned += recovery.tidy_repo(base, repo, report)
    return CleanResult(report, gone.repo_dirs, warm, unstuck)


def unstick_state() -> int:
    """A root session can ``chattr +i`` SuperQode's own state (lock files,
    the store, the folders sessions go in) and wedge every later session of
    the repository: clear those flags (sandboxes' content is left to the
    removal, which clears what refuses to go). How many were cleared."""
    from ..workspace import recovery, removal
    from ..workspace.paths import working_root

    def descend(rel: str) -> bool:
        parts = rel.split("/")
        return not (len(parts) == 2 and parts[0] == "qe" and not parts[1].startswith(".")
                    or len(parts) == 3 and parts[0] == "parked" and parts[2] == "tree")

    n = removal.unstick_tree(working_root(), lambda rel: False)
    return n + sum(removal.unstick_tree(base, descend) for base in recovery.repo_bases())


def reap_if_due(config: Config | None = None) -> ReapReport | None:
    """Remove idle sandboxes and orphans, at most hourly across processes
    (cheap to call at every start); the ReapReport, or None when skipped."""
    import time

    from ..workspace.reap_stamp import if_due

    def run(now: float) -> ReapReport:
        # Only when due: the reaper brings the recovery scan and the teardown.
        from ..workspace.reaper import reap

        return reap(config, now=now)

    return if_due(run, now=time.time())
