"""Long-lived branch worktrees for the user's own work (``superqe worktree``
and ``superqode.newWorktree``/``openWorktree``/``listWorktrees``).

Each function is synchronous (git checks files out): the server runs it in
a thread. The branches package is loaded on first use, so neither front end
pays for it at start."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any

from ..errors import UsageError

if TYPE_CHECKING:
    from ..config import Config
    from ..workspace.branches import BranchRecord, Disposal, ReapResult, WorktreeInfo

__all__ = [
    "WorktreeInfo", "list_worktrees", "llm_namer", "main_repo", "new_worktree", "open_worktree",
    "promote_session", "reap", "remove_worktree",
]

Namer = Callable[[str], "str | None"]  # a task's text -> a branch name (None: the slug wins)


def __getattr__(name: str) -> Any:
    if name == "WorktreeInfo":
        from ..workspace.branches import WorktreeInfo

        return WorktreeInfo
    raise AttributeError(name)


def main_repo(path: Path) -> Path:
    """The main repository of ``path`` (also from inside a worktree);
    NotARepository (one line) outside git."""
    from ..workspace import branches

    return branches.main_repo(Path(path))


def new_worktree(path: Path, branch: str | None = None, *, task: str | None = None,
                 new_branch: bool = False, start: str | None = None,
                 namer: Namer | None = None) -> BranchRecord:
    """Create a worktree for ``branch`` (an existing, remote or new one;
    named from ``task`` when no branch is given; detached without either)."""
    from ..workspace import branches

    return branches.new_worktree(Path(path), branch, task=task, new_branch=new_branch,
                                 start=start, namer=namer)


def list_worktrees(repo: Path | None = None) -> list[WorktreeInfo]:
    """The worktrees of ``repo`` (every repository's when None)."""
    from ..workspace import branches

    return branches.list_worktrees(repo)


def open_worktree(repo: Path, name: str) -> Path:
    """The folder of worktree ``name`` (its last use recorded)."""
    from ..workspace import branches

    return branches.open_worktree(repo, name)


def remove_worktree(repo: Path, name: str, *, force: bool = False,
                    delete_branch: bool = False) -> Disposal:
    """Remove worktree ``name``; work that would be lost is saved as a patch first."""
    from ..workspace import branches

    return branches.remove_worktree(repo, name, force=force, delete_branch=delete_branch)


def promote_session(session_id: str, branch: str, *, project: Path | None = None) -> BranchRecord:
    """A new branch worktree holding a QE session's changes, committed."""
    from ..workspace import branches

    return branches.promote_session(session_id, branch, project=project)


def reap(*, dry_run: bool = False) -> list[ReapResult]:
    """Remove idle and orphaned worktrees (``dry_run``: only say which)."""
    from ..workspace import branches

    return branches.reap_branch_worktrees(dry_run=dry_run)


NAMER_PROMPT = (
    "Name a git branch for this task. Answer with the branch name only: lowercase, "
    "words joined by '-', at most 5 words, optionally one prefix such as feat/ or fix/."
)


def llm_namer(config: Config) -> Namer | None:
    """A namer through the configured provider; any failure gives None (the slug wins)."""
    if not config.providers:
        return None
    import asyncio

    from ..workspace.extras import lacking

    why = lacking("httpx")  # the provider comes with the agents extra
    if why:
        raise UsageError(f"--llm-name {why}")
    from ..agent.provider import Provider
    from ..workspace.slug import clean_llm_name

    cfg = config.provider(config.agent.provider) or config.providers[0]
    cfg = cfg.model_copy(update={"max_retries": 0, "timeout": min(cfg.timeout, 10.0)})

    def namer(task: str) -> str | None:
        provider = Provider(cfg)
        if provider.missing_key():
            return None
        messages = [
            {"role": "system", "content": NAMER_PROMPT},
            {"role": "user", "content": task},
        ]
        reply = asyncio.run(provider.chat(messages))
        return clean_llm_name(reply.content or "")

    return namer
