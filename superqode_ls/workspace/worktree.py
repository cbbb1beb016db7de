"""Git worktree sandboxes, sealed.

``git worktree add --detach --no-checkout`` registers the sandbox with the
user's repository (the one trace allowed in their ``.git``). The sandbox's
``.git`` file is then pointed at a session-private git dir whose common dir
has its own config, refs, hooks and object store (with the user's objects as
alternates). Whatever runs in the sandbox — even a ``git commit`` that
bypasses the guard — writes only there. The registration is used again only
to remove the worktree.

Content: the user's index becomes the sandbox's index (staged state), the
working tree is checked out from it, then unstaged and untracked files are
laid over it from a snapshot of the user's tree. Nothing is read through
``git stash`` and nothing of the user's is written.
"""

from __future__ import annotations

import os
import shutil
import stat
import subprocess
from dataclasses import dataclass, field
from pathlib import Path

from . import carry, holes, owngit, removal
from .changes import iter_raw
from .errors import WorkspaceError
from .git import (
    ConfigEntry,
    GitError,
    alternates_line,
    config_listing,
    copy_index,
    git,
    git_env,
    git_out,
    registration_dirs,
    tree_listing,
)
from .gitsnapshot import SnapshotStore
from .holes import copy_with_mode
from .paths import working_root


@dataclass
class UserState:
    staged_tree: str
    full_tree: str
    bits: carry.IndexBits = field(default_factory=carry.IndexBits)
    nested: list[str] = field(default_factory=list)  # repositories inside, carried as folders


@dataclass
class SealedGit:
    root: Path  # <private>/git

    @property
    def common(self) -> Path:
        return self.root / "common"

    @property
    def wt(self) -> Path:
        return self.root / "wt"

    @property
    def index(self) -> Path:
        return self.wt / "index"

    @property
    def hooks(self) -> Path:
        return self.common / "hooks"

    @property
    def own(self) -> Path:
        """SuperQode's own git dir for the sandbox (:mod:`owngit`), beside the
        session's, outside what the session may write."""
        return self.root.parent / owngit.OWN_GIT

    def env(self, sandbox: Path, index: Path, store: SnapshotStore) -> dict[str, str]:
        """For SuperQode's git on the sandbox: nothing the session wrote is read."""
        return owngit.env(self.own, sandbox, index, store.objects)


_GIT_DIRS: dict[tuple[str, int, int], tuple[Path, Path]] = {}


def user_git_dirs(repo: Path) -> tuple[Path, Path]:
    """(git dir, common dir) of ``repo``; remembered per repository and its
    ``.git`` entry (a session asks several times; a re-made repository has a
    new ``.git``)."""
    try:
        st = os.lstat(os.path.join(repo, ".git"))
        key: tuple[str, int, int] | None = (os.path.abspath(repo), st.st_dev, st.st_ino)
    except OSError:
        key = None
    if key is not None and key in _GIT_DIRS:
        return _GIT_DIRS[key]
    # Both in one git call; a path may hold a newline, so when the output is
    # not exactly two lines, one path per call (that output is not split).
    both = git(["rev-parse", "--absolute-git-dir", "--git-common-dir"], repo).stdout
    lines = both.decode("utf-8", "surrogateescape").split("\n")
    if len(lines) == 3 and lines[2] == "":
        gd, common = Path(lines[0]), Path(lines[1])
    else:
        gd = Path(_path_out(["rev-parse", "--absolute-git-dir"], repo))
        common = Path(_path_out(["rev-parse", "--git-common-dir"], repo))
    found = gd, common if common.is_absolute() else (repo / common).resolve()
    if key is not None:
        if len(_GIT_DIRS) > 256:
            _GIT_DIRS.clear()
        _GIT_DIRS[key] = found
    return found


def _path_out(args: list[str], cwd: Path) -> str:
    out = git(args, cwd).stdout.decode("utf-8", "surrogateescape")
    return out[:-1] if out.endswith("\n") else out


def capture_user_state(repo: Path, store: SnapshotStore, scratch: Path, carry_dirty: bool) -> UserState:
    """Trees of the user's staged state and of their whole working state,
    written to the private store; the user's index is only read (copied)."""
    gd, _ = user_git_dirs(repo)
    scratch.mkdir(parents=True, exist_ok=True)
    idx = scratch / "user-index"
    src = gd / "index"
    if src.exists():
        copy_index(src, idx)
    else:
        idx.unlink(missing_ok=True)
    try:
        staged = store.tree_of_index(idx, repo, gd)
    except GitError:
        staged = None  # unmerged entries: the staged state has no tree of its own
    if not carry_dirty:
        return UserState(staged_tree=staged or "", full_tree=staged or "")
    env = {"GIT_INDEX_FILE": str(idx), "GIT_DIR": str(gd), "GIT_WORK_TREE": str(repo)}
    bits, nested = carry.bits_and_nested(repo, env)
    full = store.hash_tree(repo, idx, git_dir=gd, exclude=nested, users=True,
                           bits=bits if idx.exists() else None)
    return UserState(staged_tree=staged or full, full_tree=full, bits=bits, nested=nested)


def sealed_alternates(store: SnapshotStore, repo: Path) -> str:
    """The private git dir's ``objects/info/alternates``, as :func:`seal` writes it."""
    _, cd = user_git_dirs(repo)
    return f"{alternates_line(store.objects)}\n{alternates_line(cd / 'objects')}\n"


def seal(sandbox: Path, sealed: SealedGit, repo: Path, store: SnapshotStore,
         base: str, listing: list[ConfigEntry] | None = None,
         refs: str | None = None) -> list[tuple[str, str | None]]:
    """Point ``sandbox/.git`` at a private git dir made afresh (see module
    doc), and write SuperQode's own git dir beside it (:mod:`owngit`). A
    reused sandbox gets new ones too: nothing a session wrote in its git dir
    reaches the next session, or SuperQode's git. Returns the user's
    configuration it carried (:func:`write_session_config` writes it again).
    ``refs``: the user's refs (``for-each-ref --format='%(objectname)
    %(refname)'``) when the caller has just listed them."""
    _, cd = user_git_dirs(repo)
    common = sealed.common
    for d in ("objects/info", "refs/heads", "refs/tags", "info", "hooks"):
        (common / d).mkdir(parents=True, exist_ok=True)
    (common / "objects" / "info" / "alternates").write_text(sealed_alternates(store, repo))
    listing = config_listing(repo) if listing is None else listing  # one read for both
    entries = owngit.user_config(repo, listing)
    write_session_config(sealed, entries, [])
    for name in ("exclude", "attributes"):
        src = cd / "info" / name
        if src.is_file():
            shutil.copyfile(src, common / "info" / name)
    if refs is None:
        refs = git_out(["for-each-ref", "--format=%(objectname) %(refname)"], repo)
    (common / "packed-refs").write_text(refs + ("\n" if refs else ""))
    head = cd / "HEAD"
    (common / "HEAD").write_text(head.read_text() if head.exists() else "ref: refs/heads/main\n")
    owngit.make(sealed.own, repo, cd, base, listing)
    sealed.wt.mkdir(parents=True, exist_ok=True)
    (sealed.wt / "commondir").write_text("../common\n")
    (sealed.wt / "gitdir").write_text(str(sandbox / ".git") + "\n")
    (sealed.wt / "HEAD").write_text(base + "\n")
    (sandbox / ".git").write_text(f"gitdir: {sealed.wt}\n")
    return entries


def write_session_config(sealed: SealedGit, entries: list[tuple[str, str | None]],
                         forced: list[tuple[str, str]]) -> None:
    """The session's git config: the user's ``entries`` and, last, SuperQode's
    settings and ``forced`` (the guard's); a user entry of a key set here is
    left out, so each forced key has its one value (as ``git config
    --replace-all`` would leave it), written in one file write, no git call."""
    extra = {"core.bare": "false", "core.hooksPath": str(sealed.hooks), **dict(forced)}
    low = {k.lower() for k in extra}
    kept = [(k, v) for k, v in entries if k.lower() not in low]
    (sealed.common / "config").write_text(owngit.config_text(kept, extra))


def _safe_rel(rel: str) -> str:
    parts = Path(rel).parts
    if Path(rel).is_absolute() or ".." in parts or not parts:
        raise WorkspaceError(f"refusing path outside the project: {rel}")
    return rel


def lay_over(sandbox: Path, store: SnapshotStore, from_tree: str, to_tree: str,
             source: Path | None = None) -> bool:
    """Make ``sandbox`` go from ``from_tree`` to ``to_tree`` without touching
    its index: the unstaged and untracked part of the user's state. With
    ``source`` (the user's tree) each file is the user's bytes rather than
    the blob's repository form (eol conversion, clean filters); True when
    any of them differ from the blob, so the sandbox's own hash is the baseline."""
    if from_tree == to_tree:
        return False
    raw = store.run(["diff-tree", "-r", "-z", "--no-renames", from_tree, to_tree]).stdout
    writes: list[tuple[str, str, str]] = []
    deletes: list[str] = []
    for e in iter_raw(raw):
        rel = _safe_rel(e.path_a)
        if e.letter == "D":
            deletes.append(rel)
        elif e.new_mode != "160000":  # submodules are not carried
            writes.append((rel, e.new_mode, e.new_sha))
    for rel in deletes:
        p = sandbox / rel
        if p.is_symlink() or p.is_file():
            p.unlink()
    return _write_blobs(sandbox, store, writes, source) if writes else False


def _write_blobs(sandbox: Path, store: SnapshotStore, writes: list[tuple[str, str, str]],
                 source: Path | None) -> bool:
    differ = False
    proc = subprocess.Popen(
        ["git", "--git-dir", str(store.path), "cat-file", "--batch"],
        stdin=subprocess.PIPE, stdout=subprocess.PIPE, cwd=store.path,
        env=git_env(store.env()),
    )
    assert proc.stdin and proc.stdout
    try:
        for rel, mode, sha in writes:
            proc.stdin.write(sha.encode() + b"\n")
            proc.stdin.flush()
            header = proc.stdout.readline().split()
            size = int(header[2])
            data = proc.stdout.read(size)
            proc.stdout.read(1)
            if (source is not None and mode != "120000" and _user_bytes(source / rel) != data
                    and carry.copy_entry(source, sandbox, rel)):
                differ = True
                continue
            dest = sandbox / rel
            dest.parent.mkdir(parents=True, exist_ok=True)
            if dest.is_symlink() or dest.exists():
                if dest.is_dir() and not dest.is_symlink():
                    shutil.rmtree(dest)
                else:
                    dest.unlink()
            if mode == "120000":
                os.symlink(os.fsdecode(data), dest)
            else:
                holes.write_bytes(dest, data)  # zeros stay holes (a sparse untracked file)
                os.chmod(dest, 0o755 if mode == "100755" else 0o644)
    finally:
        proc.stdin.close()
        proc.wait()
    return differ


def _user_bytes(path: Path) -> bytes | None:
    try:
        if path.is_symlink():
            return None
        return path.read_bytes()
    except OSError:
        return None


def write_overlays(sandbox: Path, overlays: dict[str, bytes]) -> None:
    for rel, content in overlays.items():
        dest = sandbox / _safe_rel(rel)
        dest.parent.mkdir(parents=True, exist_ok=True)
        mode = None
        if dest.exists() and not dest.is_symlink():
            mode = stat.S_IMODE(dest.stat().st_mode)
        elif dest.is_symlink():
            dest.unlink()
        dest.write_bytes(content)
        if mode is not None:
            os.chmod(dest, mode)


def carry_ignored(repo: Path, sandbox: Path, names: list[str], mode: str) -> list[str]:
    """Bring listed ignored caches (``.venv``, ``node_modules``...) along."""
    carried = []
    for name in names:
        for src in sorted(repo.glob(name)):
            rel = src.relative_to(repo)
            if rel.parts and rel.parts[0] in (".git", ".superqode"):
                continue
            dest = sandbox / rel
            if dest.exists() or dest.is_symlink():
                continue
            dest.parent.mkdir(parents=True, exist_ok=True)
            if mode == "symlink":
                os.symlink(src, dest)
            elif src.is_dir():
                shutil.copytree(src, dest, symlinks=True)
            elif src.is_symlink():
                os.symlink(os.readlink(src), dest)
            else:
                copy_with_mode(src, dest)
            carried.append(str(rel))
    return carried


def add_worktree(repo: Path, sandbox: Path, base: str, reason: str) -> None:
    sandbox.parent.mkdir(parents=True, exist_ok=True)
    git(["worktree", "add", "--detach", "--no-checkout", "--lock", "--reason", reason,
         str(sandbox), base], repo)


def checkout_staged(sandbox: Path, staged_tree: str, env: dict[str, str],
                    no_smudge: list[str] | None = None) -> None:
    """``env``: :meth:`SealedGit.env` naming the sealed index. ``no_smudge``:
    filter drivers not to run (their files are carried from the user's tree
    by :func:`carry_extras`)."""
    git([*carry.no_smudge_config(no_smudge or []), "read-tree", "--reset", "-u", staged_tree],
        sandbox, env=env)


def carry_extras(repo: Path, sandbox: Path, store: SnapshotStore, state: UserState,
                 sealed: SealedGit, filters: list[str]) -> bool:
    """After the checkout and the lay-over: what the index does not carry
    (see :mod:`carry`). True when something was carried, so the sandbox's
    own hash is the baseline."""
    done = False
    if filters:
        for rel in carry.filtered_paths(repo, state.full_tree, store.env(users=True)):
            if carry.present(repo, rel):
                done |= carry.copy_entry(repo, sandbox, rel)
    if state.bits:
        carry.mirror_bits(sandbox, repo, state.bits, sealed.env(sandbox, sealed.index, store))
        done = True
    if state.nested:
        lines = "".join(f"/{_glob_escape(rel)}/\n" for rel in state.nested)
        with open(sealed.common / "info" / "exclude", "a", encoding="utf-8",
                  errors="surrogateescape") as f:
            f.write(lines)
        owngit.add_excludes(sealed.own, lines)
        for rel in state.nested:
            carry.carry_folder(repo, sandbox, rel)
        done = True
    for rel in carry.submodules(repo, state.full_tree, store.env()):
        # In a reused sandbox the folder is the old session's (git neither
        # resets nor cleans inside a gitlink): made anew, so nothing is written
        # through a link it planted there (the folder, its ``.git``). A link
        # above it raises UnsafeRemoval: the reuse is refused.
        removal.remove_tree(sandbox / rel, sandbox, link_ok=True)
        carry.carry_submodule(repo, sandbox, rel, sealed.root / "modules")
        done = True
    return done


def _glob_escape(rel: str) -> str:
    return "".join("\\" + c if c in "*?[]\\!#" else c for c in rel)


def registration_for(repo: Path, sandbox: Path) -> Path | None:
    """The ``.git/worktrees/<id>`` entry whose gitdir is ``sandbox/.git``.

    Compared as text (git records the real path of the folder it made): the
    sandbox itself is never resolved, so a sandbox swapped for a symlink to
    another repository cannot make that repository's entries look like ours."""
    try:
        _, cd = user_git_dirs(repo)
    except (GitError, IndexError):
        return None
    sandbox = Path(os.path.abspath(sandbox))
    wants = {str(sandbox / ".git"),
             os.path.join(os.path.realpath(sandbox.parent), sandbox.name, ".git")}
    for entry in registration_dirs(cd):
        try:
            target = (entry / "gitdir").read_text().strip()
        except OSError:
            continue
        if target in wants:
            return entry
    return None


def remove_worktree(repo: Path, sandbox: Path, expect: removal.Identity | None = None) -> None:
    """Remove the sandbox and its registration in the user's ``.git``; tolerant
    of half-made ones. git is not asked to do it: ``git worktree remove`` on a
    folder that was swapped would follow whatever ``.git`` is there now. The
    sandbox goes only if it is still the folder we made (``expect``: device and
    inode recorded at creation) and is reached through no symlink; otherwise
    the registration is still removed and UnsafeRemoval (one line) is raised
    (OSError for what could not be removed)."""
    problem: Exception | None = None
    try:
        removal.remove_tree(sandbox, working_root(), expect=expect)
    except (removal.UnsafeRemoval, OSError) as e:  # the registration goes all the same
        problem = e
    reg = registration_for(repo, sandbox) if repo.is_dir() else None
    if reg is not None:
        remove_registration_entry(reg)
    if problem is not None:
        raise problem


def remove_registration_entry(reg: Path) -> bool:
    """Remove one ``<common>/worktrees/<id>`` entry, only when it is SuperQode's
    (its gitdir points into ``$SUPERQODE_HOME/working``), never through a link."""
    try:
        target = (reg / "gitdir").read_text().strip()
    except OSError:
        return False
    ours = os.path.realpath(working_root())
    parent = os.path.realpath(os.path.dirname(os.path.dirname(target)))
    if not (parent == ours or parent.startswith(ours + os.sep)):
        return False
    removal.remove_tree(reg, reg.parent, link_ok=True)
    try:
        reg.parent.rmdir()  # git's worktrees/ exists only while worktrees do
    except OSError:
        pass
    return True


def _rmtree(path: Path) -> None:
    """A folder of ours below ``$SUPERQODE_HOME/working``, without following links."""
    removal.remove_tree(path, working_root(), link_ok=True)


def retarget_links(sandbox: Path, project: Path, rels: list[str]) -> list[str]:
    """Absolute symlinks among ``rels`` that point into the project now point
    at the same place inside the sandbox: a project's own tests writing
    through one must change the sandbox's file, not the user's (the kernel
    barrier would refuse the write). Returns the links changed."""
    roots = {str(project), os.path.realpath(project)}
    changed = []
    for rel in rels:
        p = sandbox / rel
        try:
            target = os.readlink(p)
        except OSError:
            continue
        if not os.path.isabs(target):
            continue
        target = os.path.normpath(target)
        for root in roots:
            if target == root or target.startswith(root + os.sep):
                os.unlink(p)
                os.symlink(os.path.join(sandbox, os.path.relpath(target, root)), p)
                changed.append(rel)
                break
    return changed


def tree_links(store: SnapshotStore, tree: str) -> list[str]:
    """Paths of the symlinks in ``tree``."""
    out = tree_listing(tree, store.path, env=store.env(GIT_DIR=str(store.path)))
    links: list[str] = []
    if b"120000 blob " not in out:  # no link (20,000 records not split for nothing)
        return links
    for entry in out.split(b"\0"):
        if entry.startswith(b"120000 "):
            links.append(entry.split(b"\t", 1)[1].decode("utf-8", "surrogateescape"))
    return links
