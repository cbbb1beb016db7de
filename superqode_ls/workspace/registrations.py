"""SuperQode's worktree registrations in a user's repository
(``.git/worktrees/<id>``): finding ours, removing one session's, and pruning
those whose sandbox is gone. Registrations that are not ours are never
touched: ``git worktree prune`` runs only when every entry it would prune is
ours, because a blanket prune would also drop the user's own stale ones.
"""

from __future__ import annotations

import os
import re
import time
from pathlib import Path

from . import removal
from .coordinator import Coordinator
from .git import GitError, git, git_out, registration_dirs
from .paths import working_root

# Without a record we cannot tell whether a live process is still creating a
# session: its leftovers (and a younger half-made registration) stay this long.
INCOMPLETE_GRACE_S = 600.0


def _rmtree(path: Path, root: Path) -> None:
    removal.remove_tree(path, root, link_ok=True)


def _common_dir(repo: Path) -> Path | None:
    try:
        out = git_out(["rev-parse", "--git-common-dir"], repo)
    except (GitError, OSError):
        return None
    p = Path(out)
    return p if p.is_absolute() else (repo / p).resolve()


def our_registrations(repo: Path, root: Path | None = None) -> list[Path]:
    """``.git/worktrees/<id>`` entries of ``repo`` that point into our
    working directory."""
    cd = _common_dir(repo)
    if cd is None:
        return []
    ours = os.path.realpath(root or working_root())
    found = []
    for entry in registration_dirs(cd):
        try:
            target = (entry / "gitdir").read_text(encoding="utf-8").strip()
        except OSError:
            continue
        real = os.path.realpath(os.path.dirname(target))
        if real == ours or real.startswith(ours + os.sep):
            found.append(entry)
    return found


def _prunable(repo: Path) -> list[Path]:
    out = git(["worktree", "list", "--porcelain"], repo, check=False)
    paths, current = [], None
    for line in out.stdout.decode("utf-8", "surrogateescape").splitlines():
        if line.startswith("worktree "):
            current = line[len("worktree ") :]
        elif line.startswith("prunable") and current:
            paths.append(Path(current))
    return paths


_REG_NAME = re.compile(r"^(qe-\d{8}-\d{6}-[0-9a-f]{6})\d*$")


def _half_made_registrations(
    repo: Path, *, session_id: str | None = None, grace_s: float = 0.0
) -> list[Path]:
    """Entries git was killed while writing (``git worktree add`` interrupted:
    the folder and git's ``initializing`` lock exist, ``gitdir`` not yet),
    named like a session: of ``session_id``, or older than ``grace_s`` (a
    younger one may belong to a session being created right now)."""
    cd = _common_dir(repo)
    if cd is None:
        return []
    found = []
    now = time.time()
    for entry in registration_dirs(cd):
        m = _REG_NAME.match(entry.name)
        if not m or (entry / "gitdir").exists() or not entry.is_dir():
            continue
        if session_id is not None:
            if m.group(1) == session_id:
                found.append(entry)
            continue
        try:
            age = now - entry.stat().st_mtime
        except OSError:
            continue
        if age > grace_s:
            found.append(entry)
    return found


def remove_registration(repo: Path, session_id: str, sandbox: Path) -> list[str]:
    """Remove the registration of one discarded session, whole or half-made."""
    if not repo.is_dir():
        return []
    cd = _common_dir(repo)
    if cd is None:
        return []
    want = os.path.realpath(sandbox)
    gone = []
    for entry in registration_dirs(cd):
        m = _REG_NAME.match(entry.name)
        if not m or m.group(1) != session_id:
            continue
        try:
            target = (entry / "gitdir").read_text(encoding="utf-8").strip()
        except FileNotFoundError:
            target = None  # half-made: git died before writing it
        except OSError:
            continue
        if target is not None and os.path.realpath(os.path.dirname(target)) != want:
            continue
        _rmtree(entry, entry.parent)
        gone.append(entry.name)
    try:
        (cd / "worktrees").rmdir()
    except OSError:
        pass
    return gone


def prune_worktrees(repo: Path) -> list[str]:
    """Remove registrations of ours whose sandbox is gone (unlocking them
    first); returns their names. Safe to call any time: registrations of live
    sandboxes are kept."""
    if not repo.exists():
        return []
    with Coordinator(repo).worktree_mutex():
        return _prune_worktrees(repo)


def _prune_worktrees(repo: Path) -> list[str]:
    root = os.path.realpath(working_root())
    stale = []
    for entry in our_registrations(repo):
        gitdir = (entry / "gitdir").read_text(encoding="utf-8").strip()
        if Path(gitdir).parent.exists():
            continue
        (entry / "locked").unlink(missing_ok=True)  # our own --lock
        stale.append(entry)
    stale += _half_made_registrations(repo, grace_s=INCOMPLETE_GRACE_S)
    if not stale:
        return []
    foreign = [p for p in _prunable(repo) if not os.path.realpath(p).startswith(root + os.sep)]
    if not foreign:
        git(["worktree", "prune"], repo, check=False)
    for entry in stale:
        if entry.exists():
            _rmtree(entry, entry.parent)
    wt = stale[0].parent
    try:
        wt.rmdir()  # only when empty: the folder exists only while worktrees do
    except OSError:
        pass
    return [e.name for e in stale]
