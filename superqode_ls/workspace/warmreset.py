"""A parked sandbox brought to a new session's state with two scans of it.

The parked tree comes with SuperQode's tracking index of it (pool.py): the
tree ``T`` it held when SuperQode's git last looked, with stat data. The new
state is ``F`` (the user's whole working state) over ``S`` (their staged
state). The reset:

1. lists the tracking index and clears the bits the old state left on it
   (:func:`unflag`); ``diff-index --cached`` names the entries where it
   and ``F`` differ;
2. ``git clean -ffdxq``: every untracked and ignored entry of the old session
   goes (git removes without following links, empty folders included);
3. one ``git status --porcelain=v2``: the tracked files that differ from
   ``T`` on disk, and the proof that clean left no untracked or ignored
   entry. Stat data is trusted only as far as a session cannot forge it
   (ctime compared, the untracked cache off);
4. writes only the files where ``T`` and ``F`` differ or the disk differs
   from ``T`` (one ``cat-file --batch``), never through a link;
5. re-hashes just those paths into the tracking index
   (``update-index --stdin``) and proves the whole with ``write-tree == F``:
   the untouched entries were proved by step 3.

Where the state needs what only the full path does (filter drivers,
skip-worktree or assume-unchanged bits of the new state, nested
repositories, submodules), :func:`reset` answers None and the caller takes
that path.
"""

from __future__ import annotations

import os
import re
import stat
from pathlib import Path

from . import carry, removal
from . import worktree as wt
from .changes import iter_raw
from .errors import WorkspaceError
from .git import copy_index, git, git_out, tree_listing
from .gitsnapshot import SnapshotStore

# Stat data a session can forge is not trusted: a file rewritten with its
# size kept and its mtime set back still moves its ctime, which the user's
# ``core.trustctime=false`` or ``core.checkStat=minimal`` would ignore. The
# untracked cache trusts folder mtimes, which ``utime`` sets back.
# ``core.fileMode=false`` would let an exec bit the session set stand.
_PROOF_CONFIG = ("-c", "core.trustctime=true", "-c", "core.checkStat=default",
                 "-c", "core.fileMode=true",
                 "-c", "core.untrackedCache=false", "-c", "core.ignoreStat=false",
                 "-c", "core.autocrlf=false")


# A record of ``ls-files -s -v -z`` with a skip-worktree (S, s) or
# assume-unchanged (lower case) tag, found from NUL to NUL (see _ODD_INDEX).
_FLAGGED_RECORD = re.compile(rb"\0([a-zS])([^\0]*)")


def unflag(sandbox: Path, env: dict[str, str]) -> bytes:
    """List the parked tracking index (``ls-files -s -v -z``) and clear the
    skip-worktree and assume-unchanged bits the old state left on it: git
    would neither compare nor rewrite those files (a sparse file of the old
    state would stay missing in the new one). Returns the listing."""
    listing = git(["ls-files", "-s", "-v", "-z"], sandbox, env=env).stdout
    skip, assume = flagged(listing)
    carry.set_bits(sandbox, skip, "--no-skip-worktree", env)
    carry.set_bits(sandbox, assume, "--no-assume-unchanged", env)
    return listing


def flagged(listing: bytes) -> tuple[list[str], list[str]]:
    """The skip-worktree and the assume-unchanged paths of an ``ls-files -s
    -v -z`` listing. Only the flagged records are looked at: a record by
    record loop over 20,000 was 37 ms of a next session under the profiler."""
    skip: list[str] = []
    assume: list[str] = []
    for m in _FLAGGED_RECORD.finditer(b"\0" + listing):
        tag = m.group(1)
        path = m.group(2).partition(b"\t")[2].decode("utf-8", "surrogateescape")
        if tag in (b"S", b"s"):
            skip.append(path)
        if tag.islower():
            assume.append(path)
    return skip, assume


# A record of ``ls-files -s -v -z`` (after :func:`unflag`) or of ``ls-tree -r -z``
# that this path cannot take: unmerged, a gitlink, a sparse index's folder.
# Searched in the listing with a NUL put before it (:func:`_odd`): a pattern
# that starts with a literal lets the regex engine jump from NUL to NUL, where
# ``(?:^|\0)`` was tried at every byte (38 ms a 20,000-file index, now 9 ms).
_ODD_INDEX = re.compile(rb"\0(?=[^\0])(?![HSsh] (?:100644|100755|120000) [0-9a-f]+ 0\t)")
_ODD_TREE = re.compile(rb"\0(?=[^\0])(?!(?:100644|100755|120000) blob )")


def _odd(pattern: re.Pattern[bytes], listing: bytes) -> bool:
    return pattern.search(b"\0" + listing) is not None


def _dirty(status: bytes) -> dict[bytes, bytes] | None:
    """Tracked paths whose file differs from the index, with the index's
    ``mode sha``; None when anything untracked or ignored is left (clean did
    not remove it) or a record is one a plain tracking index cannot give."""
    out: dict[bytes, bytes] = {}
    for rec in status.split(b"\0"):
        if not rec:
            continue
        if rec[:2] != b"1 ":
            return None  # "? ", "! ", renames, unmerged: not a proven state
        fields = rec.split(b" ", 8)
        if len(fields) != 9:
            return None
        xy, m_index, h_index, path = fields[1], fields[4], fields[7], fields[8]
        if xy[1:2] != b".":
            out[path] = m_index + b" " + h_index
    return out


def _dec(path: bytes) -> str:
    return wt._safe_rel(path.decode("utf-8", "surrogateescape"))


def _real_parents(sandbox: Path, rel: str, known: set[str]) -> None:
    """Raise unless every folder above ``rel`` is a real folder or missing (then
    made by mkdir): a write must never go through a link the old session left."""
    cur = ""
    for part in rel.split("/")[:-1]:
        cur = f"{cur}/{part}" if cur else part
        if cur in known:
            continue
        try:
            st = os.lstat(sandbox / cur)
        except FileNotFoundError:
            return
        if not stat.S_ISDIR(st.st_mode):
            raise WorkspaceError(f"the reused sandbox has a non-folder at {cur}")
        known.add(cur)


def _prune_empty(sandbox: Path, rel: str) -> None:
    """The folders above a removed file that it leaves empty (as git does)."""
    parent = os.path.dirname(rel)
    while parent:
        try:
            os.rmdir(sandbox / parent)
        except OSError:
            return
        parent = os.path.dirname(parent)


def odd_index(listing: bytes) -> bool:
    """The parked tracking index (:func:`unflag`'s ``listing``) holds an entry
    only the full path carries (a submodule's gitlink, a flagged or unmerged
    entry): :func:`scan` must not run on that tree (git would read the
    submodule's ``.git``, which the old session may have made a link), and
    :func:`reset` leaves it to the full path."""
    return _odd(_ODD_INDEX, listing)


def scan(sandbox: Path, store: SnapshotStore, env: dict[str, str]) -> bytes:
    """Steps 2 and 3 of the module doc: ``clean``, then the ``status`` that
    proves it, of the parked tree against the tracking index (``env``, after
    :func:`unflag`). Neither reads the new state, so a session runs them
    while the user's state is still being read; nothing of the old session
    runs any more by then (``pool.claim`` ended its processes)."""
    git(["clean", "-ffdxq"], sandbox, env=env, check=False)  # the status below proves it
    return git([*store.excludes_arg(), *_PROOF_CONFIG, "status", "--porcelain=v2", "-z",
                "--untracked-files=all", "--ignored=matching", "--no-renames"],
               sandbox, env=env).stdout


def reset(sandbox: Path, store: SnapshotStore, sealed: wt.SealedGit, env: dict[str, str],
          state: wt.UserState, project: Path, tracking: Path, listing: bytes,
          scanned: bytes | None = None) -> bool | None:
    """Bring ``sandbox`` to ``state`` (module doc). ``env``: SuperQode's own git
    on the sandbox naming ``sealed.index``, which holds the parked tracking
    index, unflagged (``listing``: :func:`unflag`'s); afterwards it holds
    ``S`` and ``tracking`` holds ``F``, both with stat data. ``scanned``:
    :func:`scan`'s output, taken since ``listing`` with nothing written in
    the sandbox or its index between (None: scanned here). True: reset and
    proved; False: the proof failed (a cold sandbox is made); None: not a
    state for this path (nothing was changed but what :func:`scan` did,
    which the full path does again)."""
    if odd_index(listing) or _odd(_ODD_TREE, tree_listing(
            state.full_tree, store.path, env=store.env(GIT_DIR=str(store.path)))):
        return None
    # T against F: what differs between the parked index and the new state
    # (the listing above only decided the path; git compares, not Python).
    diff = git(["diff-index", "--cached", "-R", "-z", "--no-renames", state.full_tree],
               sandbox, env=env).stdout
    cfg = [*store.excludes_arg(), *_PROOF_CONFIG]
    dirty = _dirty(scanned if scanned is not None else scan(sandbox, store, env))
    if dirty is None:
        return False
    deletes: list[str] = []
    writes: list[tuple[str, str, str]] = []
    for e in iter_raw(diff):
        if e.letter == "D":
            deletes.append(wt._safe_rel(e.path_a))
        else:
            writes.append((wt._safe_rel(e.path_a), e.new_mode, e.new_sha))
        dirty.pop(e.path_a.encode("utf-8", "surrogateescape"), None)
    for path, entry in dirty.items():  # the same in T and F, not on disk as in T
        mode, sha = entry.decode().split(" ")
        writes.append((_dec(path), mode, sha))
    for rel in deletes:
        removal.remove_tree(sandbox / rel, sandbox, link_ok=True)
        _prune_empty(sandbox, rel)
    known: set[str] = set()
    for rel, _, _ in writes:
        _real_parents(sandbox, rel, known)
    if writes:
        # A file whose bytes the user has in another form than the blob
        # (eol attributes) is carried as theirs; the proof below hashes it
        # as git would add it.
        wt._write_blobs(sandbox, store, writes, project)
    touched = deletes + [rel for rel, _, _ in writes]
    if touched:
        data = b"".join(os.fsencode(p) + b"\0" for p in touched)
        git([*cfg, "update-index", "--add", "--remove", "--replace", "-z", "--stdin"],
            sandbox, env=env, input=data)
    if git_out([*cfg, "write-tree"], sandbox, env=env) != state.full_tree:
        return False
    copy_index(sealed.index, tracking)
    if state.staged_tree != state.full_tree:
        # The session's index is the user's staged state; entries F shares
        # with S keep the stat data just proved.
        git(["read-tree", "--reset", state.staged_tree], sandbox, env=env)
    return True

