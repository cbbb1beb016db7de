"""A fingerprint of everything the user has: every file under the project
(tracked, untracked, ignored: type, mode, owner, size, mtime, ctime, inode,
symlink target; a folder's mode, owner and ``user.*`` xattrs), git's logical
state (HEAD, refs, stash, index entries, config, hooks...; see gitstate.py
for what is compared and what is housekeeping), and HOME's top-level dot
entries (``~/.bashrc``, ``~/.ssh``...: each entry's own metadata as above,
never what a dot folder holds, so ``~/.cache`` costs one stat).

The files are stat-based on purpose: re-hashing 20k files would take
seconds, while a change to a file's bytes, mode, owner, times, xattrs or
flags (``chattr``) always moves its ctime, which no user-space call can set
back. So a file's xattrs are not listed (one more syscall per file); its
ctime stands for them. A folder's ctime moves whenever an entry is added, so
folders carry their xattrs instead. Two fingerprints are equal only if
nothing was written.

Excluded: SuperQode's own artifact folder, the project's top-level
``.superqode/`` (and, for a session on a folder inside a repository, that
folder's ``.superqode/``; both recorded in the fingerprint as ``own``). A
user's other ``sub/.superqode/`` is theirs and compared.
"""

from __future__ import annotations

import hashlib
import json
import os
import stat
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path

from . import treewalk
from .git import git
from .gitstate import git_state, index_entries, missing_objects
from .paths import working_root

# A record: (kind, mode, size, mtime_ns, ctime_ns, ino, extra, uid, gid);
# a folder: ("d", mode, uid, gid, xattrs digest).
Entry = tuple

OWN = ".superqode"
# Bumped when an entry or the git section changes meaning: an older
# fingerprint cannot be compared with a newer one (it would differ everywhere).
VERSION = 3
HOME_PREFIX = "~/"


@dataclass
class Fingerprint:
    root: str
    files: dict[str, Entry] = field(default_factory=dict)
    git: dict[str, Entry] = field(default_factory=dict)
    own: list[str] = field(default_factory=lambda: [OWN])
    common_dir: str | None = None
    home: dict[str, Entry] = field(default_factory=dict)
    # git's listing of the refs as the git section read it; for the session's
    # seal (gitstate.refs_listing), not part of the fingerprint: not stored,
    # not compared.
    refs: str | None = field(default=None, compare=False, repr=False)

    @property
    def digest(self) -> str:
        h = hashlib.sha256()
        for section in (self.files, self.git, self.home):
            for k in sorted(section):
                h.update(k.encode("utf-8", "surrogateescape"))
                h.update(repr(section[k]).encode())
        return h.hexdigest()

    def to_json(self) -> str:
        return json.dumps({"version": VERSION, "root": self.root, "own": self.own,
                           "common_dir": self.common_dir, "files": self.files, "git": self.git,
                           "home": self.home})

    @classmethod
    def from_json(cls, text: str) -> Fingerprint:
        data = json.loads(text)
        if data.get("version") != VERSION:
            raise ValueError("the stored fingerprint is from another SuperQode version")
        return cls(
            root=data["root"],
            files={k: tuple(v) for k, v in data["files"].items()},
            git={k: tuple(v) for k, v in data["git"].items()},
            own=list(data.get("own") or [OWN]),
            common_dir=data.get("common_dir"),
            home={k: tuple(v) for k, v in (data.get("home") or {}).items()},
        )


def _entry(path: str, st: os.stat_result, hash_content: bool = False) -> Entry:
    mode = st.st_mode
    if stat.S_ISLNK(mode):
        try:
            extra = os.readlink(path)
        except OSError:  # gone since it was listed
            extra = "?"
        kind = "l"
    elif stat.S_ISDIR(mode):
        # A directory's own times move when an entry is added or removed; the
        # entries themselves are recorded, so its mode, owner and xattrs matter.
        return ("d", stat.S_IMODE(mode), st.st_uid, st.st_gid, user_xattrs(path))
    else:
        kind, extra = "f", ""
        if hash_content:
            try:
                with open(path, "rb") as fh:
                    extra = hashlib.sha256(fh.read()).hexdigest()
            except OSError:
                extra = "?"
    return (kind, stat.S_IMODE(mode), st.st_size, st.st_mtime_ns, st.st_ctime_ns, st.st_ino, extra,
            st.st_uid, st.st_gid)


def user_xattrs(path: str) -> str:
    """A digest of ``path``'s ``user.*`` extended attributes (not followed);
    "" when it has none or the file system keeps none."""
    try:
        names = sorted(n for n in os.listxattr(path, follow_symlinks=False)
                       if n.startswith("user."))
    except OSError:
        return ""
    if not names:
        return ""
    h = hashlib.sha256()
    for n in names:
        try:
            value = os.getxattr(path, n, follow_symlinks=False)
        except OSError:
            value = b"?"
        h.update(n.encode("utf-8", "surrogateescape") + b"\0" + value + b"\0")
    return h.hexdigest()


def home_part(fp: Fingerprint) -> None:
    """HOME's top-level dot entries, each by its own metadata (a dot folder's
    content is not walked: ``~/.cache`` may hold millions of files). Left out:
    everything when HOME is the project or inside it (the walk has it then),
    and the entry holding $SUPERQODE_HOME, which SuperQode writes."""
    home = os.environ.get("HOME") or ""
    if not home or not os.path.isabs(home):
        return
    real = os.path.realpath(home)
    root = fp.root.rstrip(os.sep) + os.sep
    if (real + os.sep).startswith(root):
        return
    own = os.path.realpath(working_root().parent)
    try:
        it = os.scandir(real)
    except OSError:
        return
    with it:
        for e in it:
            if not e.name.startswith("."):
                continue
            if (own + os.sep).startswith(os.path.join(real, e.name) + os.sep):
                continue  # $SUPERQODE_HOME (or the dot folder holding it) is SuperQode's
            try:
                st = e.stat(follow_symlinks=False)
            except OSError:
                continue
            ent = _entry(e.path, st)
            if ent[0] == "f":  # a few dotfiles: their xattrs are worth a call
                ent = (*ent, user_xattrs(e.path))
            fp.home[HOME_PREFIX + e.name] = ent


def _walk(root: str, out: dict[str, Entry], skip: set[str]) -> None:
    """Every entry below ``root``; ``skip``: relative paths not descended into
    (nor recorded)."""
    out.update(treewalk.collect(root, lambda r, _name: r in skip, _entry))


def _git_dirs(root: Path) -> tuple[Path, Path] | None:
    dot = root / ".git"
    try:
        st = dot.lstat()
    except FileNotFoundError:
        return None
    except OSError:
        st = None
    if (st is not None and stat.S_ISDIR(st.st_mode) and (dot / "HEAD").is_file()
            and (dot / "objects").is_dir() and (dot / "refs").is_dir()
            and not os.path.lexists(dot / "commondir")):
        # A repository's own ``.git`` folder, as git recognises one (HEAD,
        # objects, refs; not a link, not a linked worktree's git dir): the
        # git dir git finds from ``root`` (resolved) and its own common dir,
        # without a git process (a session asks at its start and its end).
        return dot, dot
    # One path per call and no splitting: a path may hold a newline.
    proc = git(["rev-parse", "--absolute-git-dir"], root, check=False)
    out = proc.stdout.decode("utf-8", "surrogateescape")
    if proc.returncode != 0 or not out.endswith("\n"):
        return None
    gd = Path(out[:-1])
    try:  # a linked worktree's git dir names its common dir, as git reads it
        common = (gd / "commondir").read_text(encoding="utf-8", errors="surrogateescape")
    except FileNotFoundError:
        return gd, gd
    except OSError:
        return None
    cd = Path(common.removesuffix("\n"))
    return gd, (cd if cd.is_absolute() else (gd / cd)).resolve()


def take_fingerprint(root: Path, own: list[str] | None = None) -> Fingerprint:
    """``own``: SuperQode's artifact folders, relative to ``root`` (default:
    the top-level ``.superqode``)."""
    fp = git_part(root, own)
    files_part(fp)
    return fp


def fingerprint_with_proof(root: Path, own: list[str] | None = None) -> tuple[Fingerprint, list[str]]:
    """The fingerprint and :func:`proof_of_objects` of the state it records.
    The git section and then the object check (git processes, tens of ms
    each on a loaded machine) run while the files are walked, so a session's
    end waits for the longer of the two, not their sum. (Nothing of the
    session runs any more: the order of the reads changes nothing.)"""
    fp = _empty(root, own)

    def git_then_proof() -> list[str]:
        _fill_git(fp)
        return proof_of_objects(fp)

    with ThreadPoolExecutor(max_workers=1) as pool:
        proof = pool.submit(git_then_proof)
        files_part(fp)
        return fp, proof.result()


def git_part(root: Path, own: list[str] | None) -> Fingerprint:
    """The git section alone (``files`` empty): taken before a session
    registers its worktree, while :func:`files_part` may walk the tree beside
    the sandbox's checkout, which writes nothing under the project."""
    fp = _empty(root, own)
    _fill_git(fp)
    return fp


def _empty(root: Path, own: list[str] | None) -> Fingerprint:
    return Fingerprint(root=str(Path(root).resolve()), own=list(own or [OWN]))


def _fill_git(fp: Fingerprint) -> None:
    root = Path(fp.root)
    dirs = _git_dirs(root)
    if dirs is not None:
        gd, cd = dirs
        fp.common_dir = str(cd)
        raw: list[str] = []
        fp.git = git_state(root, gd, cd, working_root(), raw)
        fp.refs = raw[0] if raw else None


def files_part(fp: Fingerprint) -> None:
    _walk(fp.root, fp.files, set(fp.own) | {".git"})
    home_part(fp)
    dot = Path(fp.root) / ".git"
    if dot.is_file() or dot.is_symlink():
        fp.files[".git"] = _entry(str(dot), dot.lstat(), hash_content=True)


def proof_of_objects(fp: Fingerprint) -> list[str]:
    """Objects that the state in ``fp`` names (HEAD, refs, stash, index) and
    the store no longer has; empty for a folder without git."""
    if fp.common_dir is None:
        return []
    return missing_objects(Path(fp.root), Path(fp.common_dir), fp.git)


_FIELDS = ("kind", "mode", "size", "mtime", "ctime", "inode", "content", "uid", "gid", "xattrs")
_DIR_FIELDS = ("kind", "mode", "uid", "gid", "xattrs")
# What only metadata calls change (chmod, chown, utimes, setxattr, chattr),
# which the Landlock barrier does not govern; the rest (size, inode, content,
# symlink target, kind) needs a write, a create or a rename.
_METADATA = frozenset({"mode", "mtime", "ctime", "uid", "gid", "xattrs"})


def _changed_fields(a: Entry, b: Entry) -> list[str]:
    names = _DIR_FIELDS if a[0] == "d" else _FIELDS
    return [f for f, x, y in zip(names, a, b, strict=False) if x != y]


def metadata_only(a: Entry, b: Entry) -> bool:
    """True when ``a`` -> ``b`` changed nothing but metadata."""
    return a[0] == b[0] and set(_changed_fields(a, b)) <= _METADATA


def _describe(name: str, a: Entry, b: Entry) -> str:
    if a[0] != b[0]:
        return f"type changed: {name} ({a[0]} -> {b[0]})"
    if a[1] != b[1]:
        return f"mode changed: {name} ({oct(a[1])} -> {oct(b[1])})"
    if a[0] == "l" and a[6] != b[6]:
        return f"symlink changed: {name} ({a[6]} -> {b[6]})"
    diffs = _changed_fields(a, b)
    if "size" in diffs or "content" in diffs:
        return f"modified: {name}"
    if "uid" in diffs or "gid" in diffs:
        return f"owner changed: {name} ({_owner(a)} -> {_owner(b)})"
    return f"touched: {name} ({', '.join(diffs)})"


def _owner(e: Entry) -> str:
    return f"{e[2]}:{e[3]}" if e[0] == "d" else f"{e[7]}:{e[8]}"


def _describe_git(name: str, a: Entry, b: Entry) -> str:
    if a[0] in ("ref", "stash", "head") and a[0] == b[0]:
        return f"moved: {name} ({_short(a)} -> {_short(b)})"
    if a[0] == "index" and a[0] == b[0]:
        return f"staged: {name} ({_short(a)} -> {_short(b)})"
    if a[0] != b[0]:
        return f"type changed: {name} ({a[0]} -> {b[0]})"
    if a[0] != "l" and a[1] != b[1]:
        return f"mode changed: {name} ({oct(a[1])} -> {oct(b[1])})"
    return f"modified: {name}"


def _short(e: Entry) -> str:
    if e[0] == "ref":
        return (e[1][:12] + (f" -> {e[2]}" if e[2] else ""))
    if e[0] == "stash":
        return e[1][:12]
    if e[0] == "head":
        return e[1] if e[1].startswith("ref:") else e[1][:12]
    if e[0] == "index":
        flag = {"S": " skip-worktree", "h": " assume-unchanged", "s": " skip-worktree assume-unchanged"}
        return f"{e[2]} {e[3][:12]}{flag.get(e[1], '')}"
    return e[0]


def _unfold_indexes(a: dict[str, Entry], b: dict[str, Entry]) -> tuple[dict, dict]:
    """An index that differs is compared entry by entry; an equal one (the
    usual case) is never parsed."""
    differing = [k for k in a.keys() & b.keys()
                 if a[k] != b[k] and a[k][0] == "entries" and b[k][0] == "entries"]
    if not differing:
        return a, b
    a, b = dict(a), dict(b)
    for k in differing:
        label = k[: -len("index")]
        a.update(index_entries(label, a.pop(k)[2]))
        b.update(index_entries(label, b.pop(k)[2]))
    return a, b


def differences(before: Fingerprint, after: Fingerprint) -> list[tuple[str, bool]]:
    """``(description, metadata only)`` for each difference: the files, git's
    state, HOME's dot entries; empty means identical."""
    out: list[tuple[str, bool]] = []
    git_a, git_b = _unfold_indexes(before.git, after.git)
    for a, b, describe in ((before.files, after.files, _describe), (git_a, git_b, _describe_git),
                           (before.home, after.home, _describe)):
        if a == b:
            # The usual end of a session: one comparison in C where sorting
            # and comparing 20,000 entries one by one cost 20 ms.
            continue
        for k in sorted(a.keys() - b.keys()):
            out.append((f"deleted: {k}", False))
        for k in sorted(b.keys() - a.keys()):
            out.append((f"created: {k}", False))
        for k in sorted(a.keys() & b.keys()):
            if a[k] != b[k]:
                meta = describe is _describe and metadata_only(a[k], b[k])
                if describe is _describe_git and a[k][0] == b[k][0] and a[k][0] in ("f", "d"):
                    meta = a[k][2:] == b[k][2:]  # content equal: a chmod of a config file
                out.append((describe(k, a[k], b[k]), meta))
    return out


def compare(before: Fingerprint, after: Fingerprint) -> list[str]:
    """Human-readable differences; empty means identical."""
    return [d for d, _ in differences(before, after)]
