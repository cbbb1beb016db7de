"""Finding every session after a crash, and cleaning up after it.

A scan of ``$SUPERQODE_HOME/working/*/qe/*`` lists every session from the
directory names alone: the sandbox ``qe/<id>/``, its record ``qe/<id>.json``,
its heartbeat and its private scratch ``qe/.<id>.d/`` each name the session,
so a session killed half-way through creation (scratch made, no sandbox yet;
or sandbox made, record not yet written) is still found. The record, when
there is one, adds the repository, the mode and the owning process; a session
whose owner is gone while it was creating, running or reverting is
*interrupted*.

Removing a session goes through ``teardown.discard_sandbox`` (sandbox, git's
worktree registration — unlocked first —, scratch, record); the record goes
last, so a discard that is itself interrupted is found and finished next time.
Worktree registrations SuperQode left in a user's ``.git/worktrees`` are
removed one by one (``registrations``).
"""

from __future__ import annotations

import logging
import time
from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path

from . import removal
from .coordinator import Coordinator
from .errors import WorkspaceError
from .fingerprint import Fingerprint
from .git import GitError
from .paths import working_root
from .records import SessionRecord
from .recovery_scan import (
    ACTIVE_STATES,
    SessionInfo,
    count_changes,
    find_session,
    interrupted_sessions,
    marker_repo,
    read_repo_marker,
    repo_bases,
    sandbox_gitdir,
    scan,
)
from .registrations import (
    INCOMPLETE_GRACE_S,
    prune_worktrees,
    remove_registration,
)
from .session import extract_patch
from .teardown import discard_sandbox
from .verification import verify_state
from .worktree import remove_worktree

log = logging.getLogger(__name__)

# The finding half (recovery_scan) is importable from here as it always was.
__all__ = ["ACTIONS", "ACTIVE_STATES", "PATCH_NAME", "CleanReport", "RecoverResult", "SessionInfo",
           "clean_sessions", "count_changes", "discard", "find_session", "interrupted_sessions",
           "mark_kept", "prune_worktrees", "read_repo_marker", "recover", "removable", "repo_bases", "save_changes",
           "saved_fingerprint", "scan", "tidy_repo", "utc_age", "verify"]

# -- removing ------------------------------------------------------------

def _rmtree(path: Path, root: Path | None = None) -> None:
    """Remove ``path`` below ``root`` (default ``$SUPERQODE_HOME/working``)
    without following links; a symlink there is unlinked as a link."""
    removal.remove_tree(path, root or working_root(), link_ok=True)


def _remove_leftovers(info: SessionInfo) -> None:
    """Finish a discard by hand (also for a session without a record). A
    sandbox that is a symlink now, or not the folder recorded at creation, is
    left alone (UnsafeRemoval, raised last); what cannot be removed is
    reported the same way once the rest is done."""
    made = info.record.sandbox_identity if info.record else None
    problem: Exception | None = None
    if info.repo is not None and info.repo.exists():
        try:
            remove_worktree(info.repo, info.sandbox, made)
        except removal.UnsafeRemoval as e:
            problem = e
        except (GitError, OSError):
            log.debug("remove_worktree failed for %s", info.id, exc_info=True)
    try:
        removal.remove_tree(info.sandbox, working_root(), expect=made)
    except (removal.UnsafeRemoval, OSError) as e:
        problem = e
    if info.repo is not None:
        try:
            remove_registration(info.repo, info.id, info.sandbox)
        except (GitError, OSError):
            log.debug("cannot remove registration of %s", info.id, exc_info=True)
    for extra in [info.private, *info.owned_paths()]:
        if extra in (info.record_path, info.sandbox):
            continue
        try:
            _rmtree(extra)  # the private folder; a sandbox renamed away by its command
        except (removal.UnsafeRemoval, OSError) as e:
            problem = problem or e
    info.heartbeat.unlink(missing_ok=True)
    info.record_path.unlink(missing_ok=True)
    if problem is not None:
        raise problem


def discard(info: SessionInfo) -> None:
    """Remove everything of one session; idempotent, tolerant of half-made
    sessions and of repositories that no longer exist."""
    if info.fingerprint_text is None:
        info.fingerprint_text = saved_fingerprint(info)
    problem: Exception | None = None
    with Coordinator.at(info.base, info.repo).worktree_mutex():
        if info.record is not None:
            try:
                discard_sandbox(info.record)
            except Exception:  # finish by hand whatever the engine could not
                log.debug("discard_sandbox failed for %s; removing by hand", info.id,
                          exc_info=True)
        try:
            _remove_leftovers(info)
        except (removal.UnsafeRemoval, OSError) as e:  # the rest is gone; report it after
            problem = e
    try:
        Coordinator.at(info.base, info.repo).release_session(info.id)
    except OSError:
        log.debug("cannot release lock of %s", info.id, exc_info=True)
    if problem is not None:
        raise problem


def saved_fingerprint(info: SessionInfo) -> str | None:
    """The fingerprint taken at session start; read it before discarding,
    since it lives in the session's private folder."""
    if info.record is None or not info.record.fingerprint_file:
        return None
    try:
        return Path(info.record.fingerprint_file).read_text(encoding="utf-8")
    except OSError:
        return None


def verify(info: SessionInfo, fingerprint: str | None = None) -> tuple[bool | None, str]:
    """Compare the user's tree with the fingerprint taken at session start:
    (True/False, the verification line), or (None, why it cannot be done)."""
    text = fingerprint or info.fingerprint_text or saved_fingerprint(info)
    if text is None:
        return None, "not verified: no fingerprint was stored for this session"
    if info.repo is None or not info.repo.is_dir():
        return None, "not verified: the project is gone"
    try:
        before = Fingerprint.from_json(text)
        rec = info.record
        v = verify_state(before, info.repo, rec.barrier_abi if rec else None,
                         rec.protection if rec else None)
    except (OSError, ValueError, KeyError, GitError) as e:
        return None, f"not verified: {e}"
    return v.verified, v.line


# -- clean / revert ------------------------------------------------------

@dataclass
class CleanReport:
    removed: list[SessionInfo] = field(default_factory=list)
    skipped: list[tuple[SessionInfo, str]] = field(default_factory=list)
    errors: list[tuple[str, str]] = field(default_factory=list)
    pruned: list[str] = field(default_factory=list)
    locks_cleared: int = 0
    verifications: list[tuple[str, bool | None, str]] = field(default_factory=list)


def removable(info: SessionInfo, *, force: bool, now: float | None = None,
              keep_kept: bool = False) -> str | None:
    """Why ``info`` must be kept (None: it may go)."""
    if info.kind == "branch":
        return "branch worktree (see superqe worktree)"
    if force:
        return None
    if keep_kept and info.state == "kept":
        return "kept on purpose (exec --keep, recover --resume); --force removes it"
    if info.alive:
        return f"owner pid {info.record.pid if info.record else '?'} is still running"
    if info.record is None and info.age_s(now) < INCOMPLETE_GRACE_S:
        return "may still be starting (no record yet)"
    return None


def clean_sessions(
    sessions: Iterable[SessionInfo],
    *,
    force: bool = False,
    older_than_s: float | None = None,
    verify_after: bool = False,
    keep_kept: bool = False,
    now: float | None = None,
) -> CleanReport:
    """Discard each session that may go; then prune our worktree
    registrations and dead locks of every repository touched."""
    now = now or time.time()
    report = CleanReport()
    repos: dict[Path, Path | None] = {}
    for info in sessions:
        repos.setdefault(info.base, info.repo)
        if older_than_s is not None and now - info.last_activity() < older_than_s:
            report.skipped.append((info, "newer than --older-than"))
            continue
        why = removable(info, force=force, now=now, keep_kept=keep_kept)
        if why:
            report.skipped.append((info, why))
            continue
        fingerprint = saved_fingerprint(info) if verify_after else None
        try:
            discard(info)
            report.removed.append(info)
        except Exception as e:  # one broken session must not stop the rest
            report.errors.append((info.id, str(e).splitlines()[0] if str(e) else type(e).__name__))
            continue
        if verify_after and fingerprint is not None:
            ok, line = verify(info, fingerprint)
            report.verifications.append((info.id, ok, line))
    for base, repo in repos.items():
        report.pruned += tidy_repo(base, repo, report)
    return report


def tidy_repo(base: Path, repo: Path | None, report: CleanReport | None = None) -> list[str]:
    """Prune our stale registrations and dead locks for one repository."""
    pruned: list[str] = []
    if repo is None:
        repo = marker_repo(read_repo_marker(base))
    if repo is not None and repo.exists():
        try:
            pruned = prune_worktrees(repo)
        except (GitError, OSError) as e:
            if report is not None:
                report.errors.append((str(repo), str(e)))
    try:
        cleared = Coordinator.at(base, repo).clear_dead()
        if report is not None:
            report.locks_cleared += len(cleared)
    except OSError:
        pass
    return pruned


def mark_kept(info: SessionInfo) -> SessionRecord:
    """Adopt an interrupted session: keep its sandbox for the user."""
    from .records import write_record

    if info.record is None:
        raise WorkspaceError(f"session {info.id} has no record; it can only be cleaned")
    if not info.sandbox.is_dir():
        raise WorkspaceError(f"session {info.id} has no sandbox left to resume")
    # A swapped sandbox (a link to elsewhere) is not handed to the user as theirs.
    removal.check(info.sandbox, working_root(), info.record.sandbox_identity)
    rec = info.record.model_copy(update={"state": "kept"})
    write_record(info.record_path, rec)
    info.record, info.state = rec, "kept"
    return rec


def utc_age(seconds: float) -> str:
    seconds = max(0, int(seconds))
    for unit, size in (("d", 86400), ("h", 3600), ("m", 60)):
        if seconds >= size:
            return f"{seconds // size}{unit}"
    return f"{seconds}s"



@dataclass
class RecoverResult:
    id: str
    action: str  # save | extract | resume | discard
    patch: Path | None = None  # where the changes were saved
    files: int = 0  # files the patch touches
    kept: bool = False  # the sandbox is still there
    verified: bool | None = None
    line: str = ""  # the verification line, when the sandbox was removed


# One name for a recovered session's changes, whichever front end saves them:
# ``<session-id>-recovered.patch`` under the project's patches artifacts.
PATCH_NAME = "recovered"
ACTIONS = ("save", "extract", "resume", "discard")


def save_changes(info: SessionInfo, result: RecoverResult | None = None) -> RecoverResult:
    """Write what the session changed in its sandbox to
    ``<id>-recovered.patch`` (nothing when it changed nothing); the session
    itself is left as it is. A change that cannot be read raises
    WorkspaceError: it is never written into the patch."""
    result = result or RecoverResult(info.id, "save", kept=True)
    if info.record is None:
        raise WorkspaceError(f"{info.id} was interrupted before it was set up; "
                             f"superqe revert {info.id} removes what is left")
    if info.repo is None or not info.repo.is_dir():
        raise WorkspaceError(f"{info.id}: its project {info.repo} is gone; superqe clean removes it")
    try:
        diff = extract_patch(info.record)
    except (GitError, OSError, ValueError) as e:
        raise WorkspaceError(f"{info.id}: cannot extract its changes: {e}") from None
    if diff.strip():
        from .artifacts import Artifacts

        result.patch = Artifacts(info.repo, info.id).prepare().write_patch(PATCH_NAME, diff)
        result.files = sum(1 for ln in diff.splitlines() if ln.startswith("diff --git "))
    return result


def recover(info: SessionInfo, action: str = "extract", *, keep: bool = False) -> RecoverResult:
    """The one recovery of a session whose owner is gone, for ``superqe
    recover`` and the editor's ``superqode.recover`` alike:

    - ``save``: its changes to ``<id>-recovered.patch``; the session stays as it is;
    - ``extract``: the same, then the session is removed (unless ``keep``:
      then it is kept for the user, state ``kept``);
    - ``resume``: its changes saved the same way, and its sandbox adopted
      (state ``kept``) to go on working there;
    - ``discard``: removed, and the project verified.

    Raises WorkspaceError with a one-line reason."""
    if action not in ACTIONS:
        raise WorkspaceError(f"unknown recover action {action!r} ({', '.join(ACTIONS)})")
    if info.alive:
        pid = info.record.pid if info.record else "?"
        raise WorkspaceError(f"{info.id} is still running (pid {pid}); nothing to recover")
    result = RecoverResult(info.id, action)
    if action == "discard":
        report = clean_sessions([info], force=True, verify_after=True)
        _finish(result, report)
        return result
    if action == "resume" and info.record is not None and not info.sandbox.is_dir():
        raise WorkspaceError(f"session {info.id} has no sandbox left to resume")
    save_changes(info, result)
    if action == "save":
        result.kept = True
        return result
    if action == "resume":
        mark_kept(info)
        info.heartbeat.touch()  # resuming counts as activity for the reaper
        result.kept = True
        return result
    if keep:
        if info.state in ACTIVE_STATES or info.state == "interrupted":
            mark_kept(info)
        result.kept = True
        return result
    _finish(result, clean_sessions([info], force=True, verify_after=True))
    return result


def _finish(result: RecoverResult, report: CleanReport) -> None:
    if report.errors:
        raise WorkspaceError(f"{result.id}: {report.errors[0][1]}")
    for _sid, ok, line in report.verifications:
        result.verified, result.line = ok, line


_sandbox_gitdir = sandbox_gitdir  # (the name tests and older callers use)
