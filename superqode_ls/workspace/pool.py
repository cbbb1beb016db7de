"""Warm sandboxes: a small pool of finished sandboxes per repository, parked
for the next session so it pays for the files that changed, not a checkout.

A parked slot is ``parked/<old-session-id>/{tree,index,identity}`` in
SuperQode's home and nothing in the user's repository: its worktree
registration is removed when it is parked, and a new one is made when a
session claims it. ``index`` is SuperQode's own tracking index of the tree
(written by SuperQode's git alone, so its stat data is what SuperQode read);
the old session's git dir is not kept: config, hooks, ``info/``, ``commondir``,
alternates and objects a session wrote never reach the next one, which gets
a private git dir made afresh (``worktree.seal``). A session that redirected
its git is not parked at all (``session_end.SandboxDisposal._git_untouched``). Reuse is
refused — and a cold sandbox made — unless all of these hold:

- the tree is still the folder the old session made (device and inode);
- nothing of the old session still runs: processes carrying its id, or
  working in the tree, are ended, and if there were any the slot is dropped;
- the new sandbox is a *new folder* (the one ``git worktree add`` makes) and
  the old entries are moved into it: the kernel barrier grants a process write
  access beneath the folders it was given, by inode, so a straggler of the old
  session that the scan missed cannot write into the new session's files;
- after the reset, the tree hashes to exactly the new session's state
  (the caller proves that, see ``session_build.SandboxBuilder._reset_reused``
  and ``warmreset``).
"""

from __future__ import annotations

import os
import stat
from pathlib import Path

from . import removal
from . import worktree as wt
from .errors import WorkspaceError
from .git import GitError, copy_index
from .paths import parked_dir, working_root
from .proc import end_session_processes
from .teardown import git_registrations, is_real_dir, parked_identity, remove_quietly

POOL_SIZE = 2  # default slots per repository: a quick and a deep session side by side


def slots(project: Path) -> list[Path]:
    root = parked_dir(project)
    try:
        return sorted(p for p in root.iterdir() if is_real_dir(p) and not p.name.startswith("."))
    except OSError:
        return []


def claim(project: Path, session_id: str, sandbox: Path, sealed: wt.SealedGit,
          base: str, reason: str) -> bool:
    """Register ``sandbox`` and move a parked tree into it for ``session_id``;
    False: nothing was claimed (make a cold one)."""
    with git_registrations(project):
        return _claim(project, session_id, sandbox, sealed, base, reason)


def _claim(project: Path, session_id: str, sandbox: Path, sealed: wt.SealedGit,
           base: str, reason: str) -> bool:
    root = parked_dir(project)
    for slot in slots(project):
        claimed = root / f".claim-{session_id}"
        try:
            os.rename(slot, claimed)  # atomic: one session wins a slot
        except OSError:
            continue
        try:
            # The parked tree must still be the folder a session made
            # (a process of that session may have swapped it for a link).
            removal.check(claimed / "tree", working_root(), parked_identity(claimed))
            if not _plain_file(claimed / "index"):
                raise OSError(f"{slot.name}: no tracking index of SuperQode's (an older slot)")
            if end_session_processes(slot.name, claimed / "tree"):
                raise OSError(f"{slot.name}: processes of the parked session were still running")
            wt.add_worktree(project, sandbox, base, reason)
            _move_into(claimed / "tree", sandbox)
            if sealed.root.exists() or sealed.root.is_symlink():
                removal.remove_tree(sealed.root, working_root(), link_ok=True)
            sealed.wt.mkdir(parents=True)
            os.rename(claimed / "index", sealed.index)  # the caller seals around it
            remove_quietly(claimed)
            return True
        except (OSError, WorkspaceError, GitError):
            _drop(project, claimed, sandbox)
            continue
    return False


def _plain_file(p: Path) -> bool:
    try:
        return stat.S_ISREG(os.lstat(p).st_mode)
    except OSError:
        return False


def _move_into(src: Path, dest: Path) -> None:
    """``src``'s entries into the new folder ``dest`` (git's ``.git`` file there
    is replaced by the caller). An entry at a time, never the tree's own
    folder: a straggler's Landlock rule names that folder, and would reach
    the next session's files through it."""
    s, d = os.fspath(src), os.fspath(dest)
    has_git = os.path.exists(os.path.join(d, ".git"))
    for name in os.listdir(s):  # plain strings: a Path per entry was a third of the time
        if name == ".git" and has_git:
            continue
        os.rename(os.path.join(s, name), os.path.join(d, name))


def _drop(project: Path, claimed: Path, sandbox: Path | None) -> None:
    remove_quietly(claimed)
    if sandbox is not None and is_real_dir(sandbox):
        try:
            wt.remove_worktree(project, sandbox)
        except removal.UnsafeRemoval:
            pass  # reached only through a link: not ours to delete


def park(project: Path, session_id: str, sandbox: Path,
         made: tuple[int, int] | None, limit: int, index: Path) -> bool:
    """Keep a finished session's sandbox for the next one, with ``index``
    (SuperQode's tracking index of it); False when the pool is full or the
    sandbox is not one to reuse (the caller removes it)."""
    with git_registrations(project):
        return _park(project, session_id, sandbox, made, limit, index)


def _park(project: Path, session_id: str, sandbox: Path,
          made: tuple[int, int] | None, limit: int, index: Path) -> bool:
    if limit <= 0 or len(slots(project)) >= limit:
        return False
    root = parked_dir(project)
    root.mkdir(parents=True, exist_ok=True)
    try:
        removal.check(sandbox, working_root(), made)
    except removal.UnsafeRemoval:
        return False  # swapped: never reuse it; removal reports it
    reg = wt.registration_for(project, sandbox)
    if reg is None:
        return False
    tmp = root / f".park-{session_id}"
    tmp.mkdir()
    try:
        dev, ino = removal.identity(sandbox) or (0, 0)
        (tmp / "identity").write_text(f"{dev} {ino}\n")
        copy_index(index, tmp / "index")
        os.rename(sandbox, tmp / "tree")
        os.rename(tmp, root / session_id)
    except OSError:
        remove_quietly(tmp)
        return False
    # Parked, the sandbox leaves no trace in the user's repository.
    wt.remove_registration_entry(reg)
    return True


def discard_all(project: Path) -> int:
    """Remove every parked sandbox of ``project`` and its registration
    (``superqe clean``; a repository's sandboxes all go)."""
    n = 0
    with git_registrations(project):
        for slot in slots(project):
            claimed = slot.parent / f".discard-{slot.name}"
            try:
                os.rename(slot, claimed)
            except OSError:
                continue
            _drop(project, claimed, None)
            n += 1
        # Half-done parks and claims of sessions killed in the middle; a
        # session claiming right now finds its slot gone and goes cold.
        try:
            half = [p for p in parked_dir(project).iterdir() if p.name.startswith(".")]
        except OSError:
            half = []
        for p in half:
            _drop(project, p, None)
    return n
