"""Promoting a QE session's changes into a new branch worktree."""

from __future__ import annotations

import os
from pathlib import Path

from ..artifacts import read_artifact, read_manifest
from ..errors import WorkspaceError
from ..git import GitError, git, repo_root
from ..paths import artifacts_root, working_root
from ..records import read_record
from ..session import extract_patch
from .create import _undo_create, new_worktree
from .gitquery import _branch_exists, check_branch_name, main_repo
from .records import BranchRecord, NotARepository, touch, worktree_root


def find_session_record(session_id: str) -> Path | None:
    for root in {working_root(), worktree_root()}:
        for path in root.glob(f"*/qe/{session_id}.json"):
            return path
    return None


def _user_identity(repo: Path) -> dict[str, str]:
    """The user's own name/email for the promote commit (git.py pins a neutral one)."""
    env: dict[str, str] = {}
    for key, var in (("user.name", "NAME"), ("user.email", "EMAIL")):
        for scope in ("--local", "--global", "--system"):
            proc = git(["config", scope, "--get", key], repo, check=False)
            value = proc.stdout.decode("utf-8", "surrogateescape").strip()
            if proc.returncode == 0 and value:
                env[f"GIT_AUTHOR_{var}"] = env[f"GIT_COMMITTER_{var}"] = value
                break
    return env


# Whole-session diffs, as ``exec``/recovery save them; QE runs save one patch per fix.
_WHOLE_SESSION_PATCHES = ("exec", "recovered", "interrupted")


def session_artifact_patch(project: Path, session_id: str) -> str:
    """A finished session's changes from its saved patch artifacts in ``project``."""
    root = artifacts_root(project)
    entries = [
        e
        for e in read_manifest(root)["artifacts"]
        if e.get("session_id") == session_id and e.get("kind") == "patch"
    ]
    whole = [
        e
        for e in entries
        if any(e.get("path", "").endswith(f"-{n}.patch") for n in _WHOLE_SESSION_PATCHES)
    ]
    chosen = whole[-1:] or entries
    texts = []
    for e in chosen:
        raw = read_artifact(root, e["path"])  # never through a link the project planted
        if raw is not None:
            texts.append(raw.decode("utf-8", "surrogateescape"))
    return "".join(t if t.endswith("\n") else t + "\n" for t in texts if t.strip())


def promote_session(
    session_id: str, branch: str, *, patch: str | None = None, project: Path | None = None
) -> BranchRecord:
    """Turn a QE session's changes into ``branch``: a new worktree at the
    session's base commit with the changes applied and committed.

    A session that is still on disk (kept, or interrupted) gives its sandbox's
    changes; a finished one gives the patches it saved in ``project``'s
    artifacts (then the branch starts at ``project``'s current commit).
    Nothing is left when the changes do not apply (no folder, no branch).
    """
    rec_path = find_session_record(session_id)
    srec = read_record(rec_path) if rec_path else None
    base: str | None = None
    if srec is not None:
        project = Path(srec.repo)
        if not project.is_dir():
            raise WorkspaceError(f"the repository of session {session_id} is gone: {srec.repo}")
        base = srec.base_commit or None
        if patch is None:
            patch = extract_patch(srec)
    if project is None:
        raise WorkspaceError(f"no QE session {session_id!r} (see: superqe status --all)")
    if repo_root(project) is None:
        raise NotARepository()
    if not (patch or "").strip():
        project = repo_root(project) or project
        patch = session_artifact_patch(project, session_id)
        if not patch.strip() and srec is None:
            raise WorkspaceError(
                f"no QE session {session_id!r} and no saved patches of it in {project} "
                f"(see: superqe status --all)"
            )
    if not (patch or "").strip():
        raise WorkspaceError(f"session {session_id} has no changes to promote")
    assert patch is not None
    repo = main_repo(project)
    check_branch_name(repo, branch)
    if _branch_exists(repo, branch):
        raise WorkspaceError(f"branch {branch!r} already exists; choose a new name to promote into")
    rec = new_worktree(
        project,
        branch,
        new_branch=True,
        start=base,
        origin="promote",
        promoted_from=session_id,
    )
    sub = os.path.relpath(project.resolve(), repo.resolve())
    args = ["apply", "--index", "--binary", "--whitespace=nowarn"]
    if sub != ".":
        args.append(f"--directory={Path(sub).as_posix()}")
    try:
        git(args, rec.path, input=patch.encode("utf-8", "surrogateescape"))
        message = (
            f"Apply changes from SuperQode QE session {session_id}\n\n"
            f"Promoted with `superqe worktree promote {session_id} {branch}`.\n"
        )
        git(["commit", "-q", "--no-verify", "-m", message], rec.path, env=_user_identity(repo))
    except GitError as e:
        _undo_create(repo, rec)
        raise WorkspaceError(
            f"the changes of session {session_id} do not apply to {rec.base_commit[:12]}: "
            f"{e.stderr.splitlines()[-1] if e.stderr else e}"
        ) from None
    touch(rec)
    return rec
