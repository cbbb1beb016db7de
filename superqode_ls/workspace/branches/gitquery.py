"""What git says about branch worktrees: the worktree list, branches, dirty
paths, commits no other ref has, and a worktree's admin directory."""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path

from ..errors import WorkspaceError
from ..git import GitError, git, git_out, repo_root
from .records import BranchRecord, NotARepository

# ---------------------------------------------------------------- git facts


@dataclass
class GitWorktree:
    path: Path
    head: str | None = None
    branch: str | None = None
    bare: bool = False
    locked: bool = False


def git_worktrees(repo: Path) -> list[GitWorktree]:
    out = git(["worktree", "list", "--porcelain", "-z"], repo).stdout.decode(
        "utf-8", "surrogateescape"
    )
    items: list[GitWorktree] = []
    cur: GitWorktree | None = None
    for field_ in out.split("\0"):
        if not field_:
            cur = None
            continue
        key, _, value = field_.partition(" ")
        if key == "worktree":
            cur = GitWorktree(Path(value))
            items.append(cur)
        elif cur is None:
            continue
        elif key == "HEAD":
            cur.head = value
        elif key == "branch":
            cur.branch = value.removeprefix("refs/heads/")
        elif key == "bare":
            cur.bare = True
        elif key == "locked":
            cur.locked = True
    return items


def main_repo(path: Path) -> Path:
    """The main work tree of the repository containing ``path`` (also when
    ``path`` is inside one of its linked worktrees)."""
    root = repo_root(Path(path))
    if root is None:
        raise NotARepository()
    try:
        trees = git_worktrees(root)
    except GitError:
        return root
    if trees and not trees[0].bare:
        return trees[0].path
    return root


def _branch_exists(repo: Path, branch: str) -> bool:
    return (
        git(["rev-parse", "--verify", "-q", f"refs/heads/{branch}"], repo, check=False).returncode
        == 0
    )


def _remote_branch(repo: Path, branch: str) -> str | None:
    """``<remote>/<branch>`` when exactly one remote has it (git's own DWIM rule)."""
    hits = []
    for remote in git_out(["remote"], repo).splitlines():
        ref = f"refs/remotes/{remote}/{branch}"
        if git(["rev-parse", "--verify", "-q", ref], repo, check=False).returncode == 0:
            hits.append(f"{remote}/{branch}")
    return hits[0] if len(hits) == 1 else None


def check_branch_name(repo: Path, branch: str) -> None:
    bad = branch.startswith("-") or branch in ("HEAD", "@")
    if not bad:
        bad = git(["check-ref-format", f"refs/heads/{branch}"], repo, check=False).returncode != 0
    if not bad:
        return
    hint = re.sub(r"[\s~^:?*\[\\]+", "-", branch).strip("-/.")
    hint = re.sub(r"-{2,}", "-", hint)
    ok_hint = (
        hint
        and not hint.startswith("-")
        and git(["check-ref-format", f"refs/heads/{hint}"], repo, check=False).returncode == 0
    )
    tail = f" (try {hint!r})" if ok_hint else ""
    raise WorkspaceError(f"{branch!r} is not a valid branch name{tail}")


def _gitdir(worktree: Path) -> Path | None:
    """The worktree's admin directory (``<repo>/.git/worktrees/<id>``) from its ``.git`` file."""
    try:
        text = (worktree / ".git").read_text(encoding="utf-8", errors="surrogateescape")
    except OSError:
        return None
    if not text.startswith("gitdir:"):
        return None
    p = Path(text[len("gitdir:") :].strip())
    return p if p.is_absolute() else (worktree / p).resolve()


def _common_dir(gitdir: Path) -> Path:
    try:
        rel = (gitdir / "commondir").read_text(encoding="utf-8").strip()
    except OSError:
        return gitdir.parent.parent
    p = Path(rel)
    return p if p.is_absolute() else (gitdir / p).resolve()


def is_orphan(rec: BranchRecord) -> bool:
    """The repository is gone (moved or deleted): the worktree's link into it is broken."""
    if not rec.path.exists():
        return not Path(rec.repo).is_dir()
    gd = _gitdir(rec.path)
    if gd is None or not gd.is_dir() or not (gd / "HEAD").exists():
        return True
    return not Path(rec.repo).is_dir()


def last_activity(rec: BranchRecord) -> float:
    """Newest of the recorded last use and git's own activity in the worktree
    (its index and HEAD log). The folder mtime says nothing: reading a file
    or running a tool inside changes it, and editors touch it when they open."""
    stamps = [rec.last_used.timestamp()]
    gd = _gitdir(rec.path)
    if gd is not None:
        for p in (gd / "index", gd / "logs" / "HEAD"):
            try:
                stamps.append(p.stat().st_mtime)
            except OSError:
                pass
    return max(stamps)


def dirty_paths(worktree: Path) -> list[str]:
    """Changed, staged and untracked (not ignored) paths; read-only (no index refresh)."""
    out = git(
        ["status", "--porcelain=v1", "-z", "--no-renames", "--untracked-files=all"], worktree
    ).stdout.decode("utf-8", "surrogateescape")
    return [e[3:] for e in out.split("\0") if len(e) > 3]


def _live_branch(worktree: Path) -> str | None:
    proc = git(["symbolic-ref", "-q", "--short", "HEAD"], worktree, check=False)
    return (
        proc.stdout.decode("utf-8", "surrogateescape").strip() or None
        if proc.returncode == 0
        else None
    )


def _not_elsewhere(exclude_branch: str | None) -> list[str]:
    excl = [f"--exclude={exclude_branch}"] if exclude_branch else []
    return ["--not", *excl, "--branches", "--remotes", "--tags"]


def unique_commits(repo: Path, commit: str, own_branch: str | None) -> list[str]:
    """Commits reachable from ``commit`` but from no other branch, remote branch or tag."""
    out = git_out(["rev-list", commit, *_not_elsewhere(own_branch)], repo)
    return out.split()


def _checked_out_at(repo: Path, branch: str) -> Path | None:
    for wt in git_worktrees(repo):
        if wt.branch == branch:
            return wt.path
    return None
