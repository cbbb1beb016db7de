"""Long-lived branch worktrees: real git worktrees for the user's own work.

Unlike QE sandboxes these are meant to be kept and edited, so creating the
branch (``git worktree add -b``) in the user's repository is the point; the
only other traces in the repository are git's own worktree registration and,
when work would otherwise be lost, a patch under ``.superqode/qe-artifacts``.

Layout (``<root>`` is ``$SUPERQODE_WORKTREE_ROOT`` or ``$SUPERQODE_HOME/working``)::

    <root>/<repo>-<hash8>/branches/<name>/       the worktree
    <root>/<repo>-<hash8>/branches/<name>.json   its record (owner marker, repo, branch, last use)
    <root>/<repo>-<hash8>/branches/.lock         serialises creation per repository

The record lets the reaper find every worktree and recognise an orphan (the
repository was moved or deleted) without asking git, which cannot answer then.
"""

from .create import Namer, new_worktree
from .dispose import Disposal, dispose, remove_worktree
from .gitquery import (
    GitWorktree,
    _gitdir,
    check_branch_name,
    dirty_paths,
    git_worktrees,
    is_orphan,
    last_activity,
    main_repo,
    unique_commits,
)
from .listing import WorktreeInfo, describe, find_worktree, list_worktrees, open_worktree
from .patches import commits_patch, snapshot_patch, uncommitted_patch
from .promote import find_session_record, promote_session, session_artifact_patch
from .reap import ReapResult, reap_branch_worktrees
from .records import (
    ENV_ROOT,
    NOT_A_REPO,
    BranchRecord,
    NotARepository,
    Origin,
    branches_dir,
    iter_records,
    read_branch_record,
    touch,
    worktree_root,
    write_branch_record,
)

__all__ = [
    "ENV_ROOT",
    "NOT_A_REPO",
    "BranchRecord",
    "Disposal",
    "GitWorktree",
    "Namer",
    "NotARepository",
    "Origin",
    "ReapResult",
    "WorktreeInfo",
    "_gitdir",
    "branches_dir",
    "check_branch_name",
    "commits_patch",
    "describe",
    "dirty_paths",
    "dispose",
    "find_session_record",
    "find_worktree",
    "git_worktrees",
    "is_orphan",
    "iter_records",
    "last_activity",
    "list_worktrees",
    "main_repo",
    "new_worktree",
    "open_worktree",
    "promote_session",
    "read_branch_record",
    "reap_branch_worktrees",
    "remove_worktree",
    "session_artifact_patch",
    "snapshot_patch",
    "touch",
    "uncommitted_patch",
    "unique_commits",
    "worktree_root",
    "write_branch_record",
]
