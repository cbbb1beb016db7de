"""What "the sandbox holds exactly the user's state" means, as checks."""

from __future__ import annotations

import os
import stat
import subprocess
from pathlib import Path


def tree_state(root: Path) -> dict[str, tuple]:
    """Every non-ignored file git would see: path -> (kind, exec bit, content/target)."""
    out = subprocess.run(
        ["git", "ls-files", "-z", "--cached", "--others", "--exclude-standard"],
        cwd=root, capture_output=True, check=True,
    ).stdout
    state: dict[str, tuple] = {}
    for raw in out.split(b"\0"):
        if not raw:
            continue
        rel = raw.decode("utf-8", "surrogateescape")
        p = root / rel
        if p.is_symlink():
            state[rel] = ("link", os.readlink(p))
        elif p.is_file():
            state[rel] = ("file", bool(p.stat().st_mode & stat.S_IXUSR), p.read_bytes())
    return state


def porcelain(root: Path) -> str:
    return subprocess.run(
        ["git", "status", "--porcelain=v1", "-z", "--untracked-files=all"],
        cwd=root, capture_output=True, check=True,
        env={**os.environ, "GIT_OPTIONAL_LOCKS": "0"},
    ).stdout.decode("utf-8", "surrogateescape")


def worktree_paths(repo: Path) -> list[str]:
    out = subprocess.run(["git", "worktree", "list", "--porcelain"], cwd=repo,
                         capture_output=True, text=True, check=True).stdout
    return [line[len("worktree "):] for line in out.splitlines() if line.startswith("worktree ")]


def disk_state(root: Path, skip: tuple[str, ...] = (".git", ".superqode")) -> dict[str, tuple]:
    """Every file on disk below root (no git involved)."""
    state: dict[str, tuple] = {}
    for dirpath, dirnames, filenames in os.walk(root):
        rel_dir = os.path.relpath(dirpath, root)
        if rel_dir == ".":
            dirnames[:] = [d for d in dirnames if d not in skip]
            filenames = [f for f in filenames if f not in skip]
        for name in filenames + [d for d in dirnames if os.path.islink(os.path.join(dirpath, d))]:
            p = Path(dirpath) / name
            rel = os.path.normpath(os.path.join(rel_dir, name))
            if p.is_symlink():
                state[rel] = ("link", os.readlink(p))
            else:
                state[rel] = ("file", bool(p.stat().st_mode & stat.S_IXUSR), p.read_bytes())
    return state
