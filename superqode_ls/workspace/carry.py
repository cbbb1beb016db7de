"""What git's index alone does not carry into a sandbox.

A worktree checkout is git's *repository* form of each file, from the index.
What the user has can differ from it in ways the index does not record:

- files marked ``--skip-worktree`` or ``--assume-unchanged``: git stops looking
  at them, so their edits are invisible to ``git add``; a sparse checkout's
  skip-worktree files are not on disk at all;
- files under clean/smudge filters: a checkout would run the user's smudge
  command (git-lfs, ...), which may be missing or fail, and the user's bytes
  are whatever it produced when they checked out;
- initialised submodules: a checkout leaves an empty folder;
- nested repositories (a clone or ``git init`` inside the project): git would
  record a commit id, or refuse one without a commit.

The helpers here find these and carry the user's own bytes.
"""

from __future__ import annotations

import os
import re
import shutil
import stat
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path

from .git import ConfigEntry, GitError, alternates_line, git, tree_listing
from .holes import copy_file

Env = Mapping[str, str]


@dataclass
class IndexBits:
    skip_worktree: list[str] = field(default_factory=list)
    assume_unchanged: list[str] = field(default_factory=list)

    def __bool__(self) -> bool:
        return bool(self.skip_worktree or self.assume_unchanged)


def index_bits(cwd: Path, env: Env | None = None) -> IndexBits:
    """The paths of the index (``GIT_INDEX_FILE`` in ``env``) git does not
    compare with the working tree. ``ls-files -v`` tags them ``S`` (skip-
    worktree) and lower case (assume-unchanged)."""
    return _bits_of(git(["ls-files", "-v", "-z"], cwd, env=env).stdout)


def _bits_of(out: bytes) -> IndexBits:
    bits = IndexBits()
    # Only flagged records are looked at: most of an index is "H", and
    # splitting 20,000 records in Python cost a session 30 ms each time.
    for m in _FLAGGED.finditer(b"\0" + out):
        tag, rel = m.group(1), m.group(2).decode("utf-8", "surrogateescape")
        if tag == b"S" or tag == b"s":
            bits.skip_worktree.append(rel)
        if tag.islower():
            bits.assume_unchanged.append(rel)
    return bits


# A record of ``ls-files -v -z``: its tag, a space, the path, NUL; searched
# with a NUL put before the listing, so that the pattern starts with a literal
# and the engine jumps from record to record (8 ms -> 0.3 ms on 20,000).
_FLAGGED = re.compile(rb"\0([a-zS]) ([^\0]+)")


def set_bits(cwd: Path, paths: list[str], flag: str, env: Env | None = None) -> None:
    """``flag``: one of update-index's marks (``--skip-worktree``,
    ``--no-assume-unchanged``...). One mark per call: git keeps only the last
    one given."""
    if paths:
        data = b"".join(os.fsencode(p) + b"\0" for p in paths)
        git(["update-index", flag, "-z", "--stdin"], cwd, env=env, input=data)


def present(root: Path, rel: str) -> bool:
    return os.path.lexists(root / rel)


def unflag_present(work_tree: Path, cwd: Path, env: Env | None = None,
                   bits: IndexBits | None = None) -> None:
    """Make ``git add`` read the flagged files that are on disk: their edits
    are part of what the user has. Absent skip-worktree files (a sparse
    checkout) keep their bit, so they are not taken for deletions.
    ``bits``: the index's flagged entries, when the caller has them."""
    bits = index_bits(cwd, env) if bits is None else bits
    if not bits:
        return
    wanted = {p for p in (*bits.skip_worktree, *bits.assume_unchanged) if present(work_tree, p)}
    if not wanted:
        return
    # Clearing a bit is not enough: git never compared a flagged entry with
    # the disk, so its stat data may still match an edit (the same size, in
    # the second the entry was recorded, or with ctime not trusted: git
    # compares whole seconds) once the index has been written in a later
    # second. Each entry goes back without its bits and without stat data
    # (``--index-info``), so ``git add`` reads the file.
    listing = git(["ls-files", "-s", "-z"], cwd, env=env).stdout
    info = []
    for rec in listing.split(b"\0"):
        head, sep, raw = rec.partition(b"\t")
        if sep and head.endswith(b" 0") and raw.decode("utf-8", "surrogateescape") in wanted:
            mode, sha, _ = head.split(b" ")
            info.append(mode + b" " + sha + b"\t" + raw + b"\0")
    if info:
        git(["update-index", "-z", "--index-info"], cwd, env=env, input=b"".join(info))


def mirror_bits(sandbox: Path, repo: Path, bits: IndexBits, env: Env | None = None) -> None:
    """Give the sandbox's index the user's bits and its sparse shape: a
    skip-worktree file the user does not have on disk is not in the sandbox
    either, so ``git status`` inside says what it says outside."""
    for rel in bits.skip_worktree:
        if not present(repo, rel):
            p = sandbox / rel
            if p.is_symlink() or p.is_file():
                p.unlink()
    set_bits(sandbox, bits.skip_worktree, "--skip-worktree", env)
    set_bits(sandbox, bits.assume_unchanged, "--assume-unchanged", env)


# -- filters ---------------------------------------------------------------
_FILTER_KEY = re.compile(r"^filter\..*\.(clean|smudge|process)$")


def filter_names(repo: Path, listing: list[ConfigEntry] | None = None) -> list[str]:
    """Filter drivers the user's configuration defines (``listing``:
    ``git.config_listing(repo)``, read already)."""
    if listing is not None:
        keys = [key for _, key, _ in listing if _FILTER_KEY.match(key)]
    else:
        proc = git(["config", "--name-only", "--get-regexp", _FILTER_KEY.pattern], repo, check=False)
        keys = proc.stdout.decode("utf-8", "surrogateescape").splitlines()
    names = set()
    for line in keys:
        parts = line.split(".")
        if len(parts) >= 3:
            names.add(".".join(parts[1:-1]))
    return sorted(names)


def no_smudge_config(names: list[str]) -> list[str]:
    """``-c`` options that make a checkout write the repository form instead
    of running the user's smudge command: those files come from the user's
    tree instead (see :func:`filtered_paths`)."""
    opts: list[str] = []
    for n in names:
        opts += ["-c", f"filter.{n}.smudge=", "-c", f"filter.{n}.process=",
                 "-c", f"filter.{n}.required=false"]
    return opts


def filtered_paths(repo: Path, tree: str, env: Env | None = None) -> list[str]:
    """Paths of ``tree`` that have a ``filter`` attribute."""
    listing = git(["ls-tree", "-r", "-z", "--name-only", tree], repo, env=env).stdout
    if not listing:
        return []
    out = git(["check-attr", "-z", "--stdin", "filter"], repo, env=env, input=listing).stdout
    fields = out.split(b"\0")
    paths = []
    for i in range(0, len(fields) - 2, 3):
        value = fields[i + 2]
        if value not in (b"unspecified", b"unset", b""):
            paths.append(fields[i].decode("utf-8", "surrogateescape"))
    return paths


# -- copying the user's bytes ---------------------------------------------------
def copy_entry(src_root: Path, dst_root: Path, rel: str) -> bool:
    """Copy one file or symlink as it is on disk; False when it is not a
    regular file or link any more (deleted meanwhile, a pipe...)."""
    src, dst = src_root / rel, dst_root / rel
    try:
        st = src.lstat()
    except FileNotFoundError:
        return False
    if not (stat.S_ISREG(st.st_mode) or stat.S_ISLNK(st.st_mode)):
        return False
    dst.parent.mkdir(parents=True, exist_ok=True)
    if dst.is_symlink() or dst.is_file():
        dst.unlink()
    elif dst.is_dir():
        shutil.rmtree(dst)
    if stat.S_ISLNK(st.st_mode):
        os.symlink(os.readlink(src), dst)
    else:
        try:
            copy_file(src, dst)
        except FileNotFoundError:
            return False
        os.chmod(dst, stat.S_IMODE(st.st_mode) & 0o777)
    return True


def repo_files(repo: Path) -> list[str]:
    """Tracked and untracked, not ignored, files of a (nested) repository, by
    its own rules; one without a commit lists its untracked files."""
    out = git(["ls-files", "-z", "--cached", "--others", "--exclude-standard"], repo).stdout
    return sorted({r.decode("utf-8", "surrogateescape") for r in out.split(b"\0") if r})


# -- nested repositories and submodules ----------------------------------------
def nested_repos(repo: Path, env: Env | None = None) -> list[str]:
    """Untracked folders of ``repo`` that are repositories of their own (a
    clone, or a ``git init`` without a commit). Git would record them as a
    bare commit id, or refuse them; SuperQode carries them as folders and
    leaves them out of change tracking."""
    out = git(["ls-files", "-z", "--others", "--directory", "--exclude-standard"],
              repo, env=env).stdout
    return _nested_of(repo, out.split(b"\0"))


def bits_and_nested(repo: Path, env: Env | None = None) -> tuple[IndexBits, list[str]]:
    """:func:`index_bits` and :func:`nested_repos` of the user's state from one
    ``ls-files`` where a session's start ran two: ``-v`` tags each untracked
    record ``?`` and each index entry as ``index_bits`` reads it (an index
    that does not exist lists no entry, and no bit)."""
    out = git(["ls-files", "-v", "-z", "--cached", "--others", "--directory", "--exclude-standard"],
              repo, env=env).stdout
    return _bits_of(out), _nested_of(repo, _UNTRACKED.findall(b"\0" + out))


# An untracked record of ``ls-files -v -z --others``, found as _FLAGGED is.
_UNTRACKED = re.compile(rb"\0\? ([^\0]*)")


def _nested_of(repo: Path, untracked: list[bytes]) -> list[str]:
    found = []
    for raw in untracked:
        if raw.endswith(b"/"):
            rel = raw[:-1].decode("utf-8", "surrogateescape")
            if os.path.lexists(repo / rel / ".git"):
                found.append(rel)
            else:
                found += _repos_below(repo, rel)
    return found


def _repos_below(repo: Path, rel: str) -> list[str]:
    """Repositories deeper inside an untracked folder (``git add`` of the
    folder would meet them too). Not below one found: that one is a folder."""
    found = []
    for dirpath, dirnames, _ in os.walk(repo / rel):
        if ".git" in dirnames or os.path.lexists(os.path.join(dirpath, ".git")):
            if os.path.samefile(dirpath, repo / rel):
                continue
            found.append(os.path.relpath(dirpath, repo).replace(os.sep, "/"))
            dirnames[:] = []
    return found


def submodules(repo: Path, tree: str, env: Env | None = None) -> list[str]:
    """Gitlinks of ``tree`` the user has initialised (a ``.git`` inside)."""
    out = tree_listing(tree, repo, env=env)
    subs: list[str] = []
    if b"160000 commit " not in out:  # no gitlink at all: nothing to split
        return subs
    for rec in out.split(b"\0"):
        if rec.startswith(b"160000 "):
            rel = rec.split(b"\t", 1)[1].decode("utf-8", "surrogateescape")
            if os.path.lexists(repo / rel / ".git"):
                subs.append(rel)
    return subs


def carry_folder(repo: Path, sandbox: Path, rel: str) -> int:
    """A nested repository's files (not its ``.git``) into the sandbox."""
    src = repo / rel
    try:
        files = repo_files(src)
    except GitError:
        files = []
    n = 0
    for f in files:
        n += copy_entry(src, sandbox / rel, f)
    (sandbox / rel).mkdir(parents=True, exist_ok=True)
    return n


def carry_submodule(repo: Path, sandbox: Path, rel: str, modules: Path) -> int:
    """An initialised submodule with its own dirty state. Its git dir in the
    sandbox is private (``modules``: in the session's private git folder),
    at the user's submodule commit, with the user's objects as alternates
    and a copy of its index: the superproject sees the same commit, and
    ``git status`` in the submodule shows the same edits."""
    src = repo / rel
    head = git(["rev-parse", "HEAD"], src).stdout.decode().strip()
    sub_gd = Path(git(["rev-parse", "--absolute-git-dir"], src).stdout.decode("utf-8", "surrogateescape")[:-1])
    common = git(["rev-parse", "--git-common-dir"], src).stdout.decode("utf-8", "surrogateescape")[:-1]
    common_dir = Path(common) if os.path.isabs(common) else (src / common).resolve()
    gd = modules / rel.replace("/", "%")
    for d in ("objects/info", "refs/heads", "refs/tags", "info"):
        (gd / d).mkdir(parents=True, exist_ok=True)
    (gd / "objects" / "info" / "alternates").write_text(
        alternates_line(common_dir / "objects") + "\n")
    (gd / "HEAD").write_text(head + "\n")
    (gd / "config").write_text("[core]\n\trepositoryformatversion = 0\n\tbare = false\n")
    if (sub_gd / "index").exists():
        shutil.copyfile(sub_gd / "index", gd / "index")
    dst = sandbox / rel
    dst.mkdir(parents=True, exist_ok=True)
    n = sum(copy_entry(src, dst, f) for f in repo_files(src))
    (dst / ".git").write_text(f"gitdir: {gd}\n")
    return n
