"""Saving work as patches before a worktree goes: uncommitted changes,
commits on no other ref, and every file of an orphan."""

from __future__ import annotations

import tempfile
from pathlib import Path

from ..errors import WorkspaceError
from ..git import copy_index, git, git_out
from .gitquery import _common_dir, _gitdir, _not_elsewhere

EMPTY_TREE_INPUT = b""
# A patch is the bytes, never what a driver makes of them: a worktree's
# ``.gitattributes`` (what a session promoted into it, or a repository's own)
# would otherwise select any ``diff.<x>.textconv``/``command`` or
# ``diff.external`` the configuration defines, and git would run it here,
# outside every barrier (and a textconv'd patch does not apply).
NO_DRIVERS = ("--no-ext-diff", "--no-textconv")


def uncommitted_patch(worktree: Path) -> str:
    """Staged, unstaged and untracked (not ignored) changes against HEAD, as a
    binary-safe patch. Uses a temporary index and object directory, so the
    worktree's index and the repository's object store are left as they are."""
    gd = _gitdir(worktree)
    if gd is None:
        raise WorkspaceError(f"{worktree} is not a git worktree")
    objects = _common_dir(gd) / "objects"
    with tempfile.TemporaryDirectory(prefix="superqode-save-") as tmp:
        index = Path(tmp) / "index"
        if (gd / "index").exists():
            copy_index(gd / "index", index)
        (Path(tmp) / "objects").mkdir()
        env = {
            "GIT_INDEX_FILE": str(index),
            "GIT_OBJECT_DIRECTORY": str(Path(tmp) / "objects"),
            "GIT_ALTERNATE_OBJECT_DIRECTORIES": str(objects),
        }
        git(["add", "-A", "--", "."], worktree, env=env)
        return git(["diff", *NO_DRIVERS, "--cached", "--binary", "HEAD"], worktree, env=env).stdout.decode(
            "utf-8", "surrogateescape"
        )


def commits_patch(repo: Path, commit: str, own_branch: str | None) -> str:
    return git(
        ["format-patch", *NO_DRIVERS, "--stdout", "--binary", commit, *_not_elsewhere(own_branch)], repo
    ).stdout.decode("utf-8", "surrogateescape")


def snapshot_patch(folder: Path) -> str:
    """Every file of ``folder`` (not ignored) as a creation patch, without any
    repository: what an orphaned worktree holds when its repository is gone."""
    with tempfile.TemporaryDirectory(prefix="superqode-orphan-") as tmp:
        gd = Path(tmp) / "g"
        git(["init", "-q", "--bare", str(gd)], tmp)
        base = ["--git-dir", str(gd), "--work-tree", str(folder)]
        git([*base, "add", "-A", "--", "."], folder)
        empty = git_out(
            [*base, "hash-object", "-t", "tree", "--stdin"], folder, input=EMPTY_TREE_INPUT
        )
        return git([*base, "diff", *NO_DRIVERS, "--cached", "--binary", empty], folder).stdout.decode(
            "utf-8", "surrogateescape"
        )
