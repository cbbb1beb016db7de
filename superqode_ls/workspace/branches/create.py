"""Creating a branch worktree: the branch (new, existing, tracking or
detached), its folder and record; undone completely on failure."""

from __future__ import annotations

import shutil
import uuid
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from datetime import UTC, datetime
from pathlib import Path

from ..errors import WorkspaceError
from ..git import GitError, git, head_commit, repo_root, resolve_commit
from ..paths import is_within, repo_key
from ..slug import folder_name, task_slug
from .gitquery import (
    _branch_exists,
    _checked_out_at,
    _remote_branch,
    check_branch_name,
    main_repo,
)
from .locks import _flock, _tidy
from .records import (
    ENV_ROOT,
    BranchRecord,
    Origin,
    _record_path,
    _register_root,
    branches_dir,
    iter_records,
    read_branch_record,
    worktree_root,
    write_branch_record,
)

Namer = Callable[[str], "str | None"]


@contextmanager
def _repo_lock(repo: Path) -> Iterator[Path]:
    d = branches_dir(repo)
    d.mkdir(parents=True, exist_ok=True)
    with _flock(d / ".lock"):
        yield d


def _new_id() -> str:
    now = datetime.now(UTC)
    return f"wt-{now:%Y%m%d}-{now:%H%M%S}-{uuid.uuid4().hex[:6]}"


def _unique_slug(repo: Path, slug: str) -> str:
    """``slug``, or ``slug-2``... when a branch of that name exists already."""
    candidate, n = slug, 1
    while _branch_exists(repo, candidate) or _remote_branch(repo, candidate):
        n += 1
        candidate = f"{slug}-{n}"
    return candidate


def _free_folder(rec_dir: Path, name: str, branch: str | None) -> str:
    """``name`` unless another branch already owns that folder (``a/b`` and ``a-b``)."""
    candidate = name
    n = 1
    while (rec_dir / candidate).exists() or _record_path(rec_dir, candidate).exists():
        other = read_branch_record(_record_path(rec_dir, candidate))
        if other is not None and branch is not None and other.branch == branch:
            raise WorkspaceError(
                f"branch {branch!r} already has a worktree at {other.sandbox}; "
                f"open it: superqe worktree open {other.name}"
            )
        n += 1
        candidate = f"{name}-{n}"
    return candidate


def new_worktree(
    path: Path,
    branch: str | None = None,
    *,
    task: str | None = None,
    new_branch: bool = False,
    start: str | None = None,
    namer: Namer | None = None,
    origin: Origin | None = None,
    promoted_from: str | None = None,
) -> BranchRecord:
    """Create a worktree for ``path``'s repository and return its record.

    - ``branch`` exists locally: checked out as is (or refused if checked out elsewhere);
    - ``branch`` exists on exactly one remote: a local tracking branch is made;
    - otherwise (or ``new_branch``): a new branch at ``start`` (default: the current commit);
    - ``task``: the branch is named from the text (``namer``, falling back to the slug);
    - neither: a detached ``exploration-<uuid8>`` at the current commit.

    On any failure nothing is left: no folder, no record, no branch.
    """
    if branch is not None and task is not None:
        raise WorkspaceError("give either a branch name or --task, not both")
    repo = main_repo(Path(path))
    here = repo_root(Path(path)) or repo
    if is_within(worktree_root(), repo):
        raise WorkspaceError(
            f"the worktree root {worktree_root()} is inside the repository; "
            f"set {ENV_ROOT} to a folder outside it"
        )
    if start is not None:
        try:
            start_commit = resolve_commit(here, start)
        except GitError:
            raise WorkspaceError(f"unknown start commit {start!r}") from None
    else:
        start_commit = head_commit(here) or ""
        if not start_commit:
            raise WorkspaceError(
                "the repository has no commits yet; commit once, then create a worktree"
            )

    if task is not None:
        if not task.strip():
            raise WorkspaceError("--task needs a description of the work")
        name_ = None
        if namer is not None:
            try:
                name_ = namer(task)
            except Exception:  # noqa: BLE001 - an unavailable namer must never block the slug
                name_ = None
            if name_:
                try:
                    check_branch_name(repo, name_)
                except WorkspaceError:
                    name_ = None
        branch = name_ or task_slug(task)
        check_branch_name(repo, branch)

    if branch is not None:
        check_branch_name(repo, branch)

    with _repo_lock(repo) as rec_dir:
        mode: Origin
        track: str | None = None
        if branch is None:
            mode = "exploration"
            name = _free_folder(rec_dir, f"exploration-{uuid.uuid4().hex[:8]}", None)
        else:
            if task is not None:
                branch = _unique_slug(repo, branch)
            local = _branch_exists(repo, branch)
            if local and (new_branch or task is not None):
                raise WorkspaceError(
                    f"branch {branch!r} already exists; to check it out as is: "
                    f"superqe worktree new {branch}"
                )
            if local and start is not None and origin != "promote":
                raise WorkspaceError(
                    f"--from starts a new branch, and {branch!r} already exists; "
                    f"to check it out as is: superqe worktree new {branch}"
                )
            if local:
                mode = "existing"
                at = _checked_out_at(repo, branch)
                if at is not None:
                    raise _checked_out_error(repo, branch, at)
            else:
                track = None if new_branch else _remote_branch(repo, branch)
                mode = "remote" if track else "new"
            name = _free_folder(rec_dir, folder_name(branch), branch)
        wt = rec_dir / name
        rec = BranchRecord(
            id=_new_id(),
            name=name,
            repo=str(repo),
            repo_key=repo_key(repo),
            sandbox=str(wt),
            branch=branch,
            created_branch=mode in ("new", "remote"),
            base_commit=start_commit,
            origin=origin or ("task" if task is not None else mode),
            task=task,
            promoted_from=promoted_from,
        )
        if mode == "existing":
            rec.base_commit = resolve_commit(repo, f"refs/heads/{branch}")
        elif mode == "remote" and track:
            rec.base_commit = resolve_commit(repo, f"refs/remotes/{track}")
        # Record first: a crash mid-way leaves an owned, reapable folder, never an unknown one.
        write_branch_record(rec)
        _register_root(worktree_root())
        if mode == "exploration":
            args = ["worktree", "add", "--detach", str(wt), start_commit]
        elif mode == "existing":
            args = ["worktree", "add", str(wt), str(branch)]
        elif mode == "remote":
            args = ["worktree", "add", "--track", "-b", str(branch), str(wt), str(track)]
        else:
            args = ["worktree", "add", "--no-track", "-b", str(branch), str(wt), start_commit]
        try:
            git(args, repo)
        except GitError as e:
            if "already exists" in e.stderr:
                rec.created_branch = False  # made by someone else meanwhile: theirs
            _undo_create(repo, rec)
            raise WorkspaceError(
                f"cannot create the worktree: {e.stderr.splitlines()[-1] if e.stderr else e}"
            ) from None
        except BaseException:
            _undo_create(repo, rec)
            raise
        rec.state = "ready"
        write_branch_record(rec)
    return rec


def _checked_out_error(repo: Path, branch: str, at: Path) -> WorkspaceError:
    for _, rec in iter_records(repo):
        if rec.path == at:
            return WorkspaceError(
                f"branch {branch!r} already has a worktree at {at}; "
                f"open it: superqe worktree open {rec.name}"
            )
    return WorkspaceError(
        f"branch {branch!r} is already checked out at {at} (git allows a branch in one "
        f"worktree only); switch that checkout to another branch, or start a new branch "
        f"from the current commit: superqe worktree new {branch}-2"
    )


def _undo_create(repo: Path, rec: BranchRecord) -> None:
    if rec.path.exists():
        git(["worktree", "remove", "--force", "--force", str(rec.path)], repo, check=False)
        shutil.rmtree(rec.path, ignore_errors=True)
    git(["worktree", "prune"], repo, check=False)
    if rec.created_branch and rec.branch and _checked_out_at(repo, rec.branch) is None:
        proc = git(["rev-parse", "--verify", "-q", f"refs/heads/{rec.branch}"], repo, check=False)
        if proc.returncode == 0 and proc.stdout.decode().strip() == rec.base_commit:
            git(["branch", "-D", "--", rec.branch], repo, check=False)
    _record_path(rec.path.parent, rec.name).unlink(missing_ok=True)
    _tidy(rec.path.parent)
