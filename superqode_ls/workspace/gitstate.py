"""Git's logical state, for the fingerprint: what the user's repository
means, not the files git keeps for itself.

Compared: HEAD (its file: symbolic target or detached value), every ref's
value whether loose or packed (``git for-each-ref``), the stash and its
reflog values, the index's entries (mode, object, stage, skip-worktree and
assume-unchanged flags; not the index file's bytes or its stat cache),
config and worktree config, hooks (content and mode), ``info/`` (exclude,
attributes, sparse-checkout), ``shallow``, an operation in progress (merge,
rebase, cherry-pick, bisect, sequencer state), submodule git dirs and the
user's own linked-worktree registrations. Every such file is compared by
content and mode, so a rewrite with the same bytes is no change.

Not compared, because git (or the user's git: gc, ``gc --auto``,
``git maintenance``, a fetch, an editor's status) rewrites them without
changing what the repository means: the object store (packs, loose objects,
their mtimes, ``objects/info``), ``gc.pid``, ``gc.log``, ``*.lock`` files,
``info/refs``, ``sharedindex.*`` (freshened by every read of a split index),
the index file's bytes, the reflogs of refs other than the stash (every
commit appends to them, gc expires them; a lost reflog loses no committed
state), ``FETCH_HEAD`` and ``ORIG_HEAD`` (scratch values of fetch, reset,
rebase, merge, which move HEAD or refs themselves when they matter),
``COMMIT_EDITMSG``, ``refs/prefetch/*`` (``git maintenance``'s prefetch),
``rr-cache/``, ``lost-found/``, the fsmonitor daemon's
socket, and SuperQode's own worktree registrations (their ``gitdir`` points
into ``$SUPERQODE_HOME/working``).

Objects are proved separately (:func:`missing_objects`): a matching
fingerprint says nothing about objects deleted from the store.
"""

from __future__ import annotations

import hashlib
import os
import re
import stat
import threading
import time
from pathlib import Path

from . import treewalk
from .git import git, registration_dirs

# Entries of a git dir handled logically (or not at all) instead of by content.
_LOGICAL = {"refs", "packed-refs", "index", "reftable"}
_HOUSEKEEPING = {"objects", "logs", "gc.pid", "gc.log", "FETCH_HEAD", "ORIG_HEAD",
                 "COMMIT_EDITMSG", "rr-cache", "lost-found", "worktrees", "modules"}
_HOUSEKEEPING_PREFIXES = ("sharedindex.", "fsmonitor--daemon")
_STASH_LOG = ("logs", "refs", "stash")
# ``git maintenance``'s prefetch task keeps its own refs, never the user's branches.
_HOUSEKEEPING_REFS = ("refs/prefetch/",)
_HALF_MADE = re.compile(r"^qe-\d{8}-\d{6}-[0-9a-f]{6}\d*$")
_NUL = "\0"


def _skipped(rel: str, name: str) -> bool:
    if name.endswith(".lock") or name.startswith(_HOUSEKEEPING_PREFIXES):
        return True
    return rel == "info/refs"


def _content_entry(path: str, st: os.stat_result) -> tuple:
    mode = st.st_mode
    if stat.S_ISLNK(mode):
        try:
            return ("l", os.readlink(path))
        except OSError:
            return ("l", "?")
    if stat.S_ISDIR(mode):
        return ("d", stat.S_IMODE(mode))
    try:
        with open(path, "rb") as fh:
            digest = hashlib.sha256(fh.read()).hexdigest()
    except OSError:
        digest = "?"  # unreadable: an entry that cannot match a readable one
    return ("f", stat.S_IMODE(mode), digest)


def _walk_content(root: Path, out: dict[str, tuple], label: str, top_skip: set[str]) -> None:
    def skip(rel: str, name: str) -> bool:
        return (rel == name and name in top_skip) or _skipped(rel, name)

    for rel, path, st in treewalk.walk(str(root), skip):
        out[label + rel] = _content_entry(path, st)


def _stash_log(cd: Path, out: dict[str, tuple]) -> None:
    try:
        text = cd.joinpath(*_STASH_LOG).read_bytes().decode("utf-8", "surrogateescape")
    except OSError:
        return
    values = [ln.split(" ", 2)[1] for ln in text.splitlines() if ln.count(" ") >= 2]
    for n, oid in enumerate(reversed(values)):
        out[f"stash@{{{n}}}"] = ("stash", oid)


def _refs(root: Path, out: dict[str, tuple], raw: list[str] | None) -> None:
    proc = git(["for-each-ref", "--format=%(objectname) %(refname) %(symref)"], root, check=False)
    if raw is not None and proc.returncode == 0:
        raw.append(proc.stdout.decode("utf-8", "surrogateescape"))
    if proc.returncode != 0:
        # Fail closed: an unreadable ref store is recorded as such, and it
        # will differ from a readable one.
        out["refs"] = ("error", proc.stderr.decode("utf-8", "replace").strip()[-200:])
        return
    for line in proc.stdout.decode("utf-8", "surrogateescape").splitlines():
        oid, name, symref = (line.split(" ", 2) + ["", ""])[:3]
        if name.startswith(_HOUSEKEEPING_REFS):
            continue
        out[f"ref {name}"] = ("ref", oid, symref)


def refs_listing(raw: str) -> str:
    """``for-each-ref --format='%(objectname) %(refname)'``'s output (as
    ``git_out`` strips it) from the fingerprint's listing, which adds
    ``%(symref)``: a session's seal writes it as its git dir's packed-refs
    without asking git again. A ref name holds no space (git refuses one)."""
    return "\n".join(" ".join(line.split(" ", 2)[:2]) for line in raw.splitlines()).strip()


# ``git ls-files -s -v -z``: tag (H, S skip-worktree, lowercase assume-unchanged),
# mode, object, stage, path.
_INDEX_ENTRY = re.compile(r"([^ \0]+) (\d+) ([0-9a-f]+) (\d)\t([^\0]*)\0")


# The last listings of index files, by folder listed from and path: (the file's stat key when it
# was listed, the record). A session lists the user's index when it starts
# and again when it ends, and the next session starts with the same index:
# an index file whose device, inode, size, mtime and ctime are those it had
# when it was listed holds the same bytes (a write moves its ctime, which
# no user-space call sets back: the files part of the fingerprint trusts no
# more), so it is not listed again. A few: one per repository in use.
_LISTED: dict[str, tuple[tuple[int, ...], tuple]] = {}
_LISTED_MAX = 8
# git's racy rule, wider: a file written in the last seconds may be written
# again within the same clock tick, its stat data unchanged; not kept.
_RACY_NS = 2_000_000_000
_listed_lock = threading.Lock()


def _stat_key(path: Path) -> tuple[int, ...] | None:
    try:
        st = os.lstat(path)
    except OSError:
        return None
    if not stat.S_ISREG(st.st_mode) or time.time_ns() - st.st_ctime_ns < _RACY_NS:
        return None
    return (st.st_dev, st.st_ino, st.st_size, st.st_mtime_ns, st.st_ctime_ns)


def _split(gd: Path) -> bool:
    """A split index also reads a ``sharedindex.*`` file, which git may
    expire: its listing is not kept (the index file alone does not say it)."""
    try:
        return any(n.startswith("sharedindex.") for n in os.listdir(gd))
    except OSError:
        return True


def _index(root: Path, out: dict[str, tuple], label: str, index_file: Path | None = None,
           path: Path | None = None) -> bool:
    """The index's entries as one record: the listing's digest, then the
    listing itself. Equal digests settle a comparison without parsing 20k
    entries; :func:`index_entries` unfolds it when something differs.
    ``path``: the index file git reads (``index_file``, else the git dir's),
    whose listing is kept (:data:`_LISTED`)."""
    path = index_file if index_file is not None else path
    key = _stat_key(path) if path is not None and not _split(path.parent) else None
    # Listed from ``root``: a session on a folder inside a repository lists
    # that folder's entries only.
    where = f"{root}\0{path}"
    if key is not None:
        with _listed_lock:
            known = _LISTED.get(where)
        if known is not None and known[0] == key:
            out[f"{label}index"] = known[1]
            return True
    env = {"GIT_INDEX_FILE": str(index_file)} if index_file is not None else None
    proc = git(["ls-files", "-s", "-v", "-z"], root, env=env, check=False)
    if proc.returncode != 0:
        return False
    record = ("entries", hashlib.sha256(proc.stdout).hexdigest(),
              proc.stdout.decode("utf-8", "surrogateescape"))
    out[f"{label}index"] = record
    if key is not None:  # taken before git read it: a rewrite since moves it
        with _listed_lock:
            _LISTED.pop(where, None)
            _LISTED[where] = (key, record)
            while len(_LISTED) > _LISTED_MAX:
                del _LISTED[next(iter(_LISTED))]
    return True


def index_entries(label: str, listing: str) -> dict[str, tuple]:
    """``index <path>`` -> ("index", tag, mode, object, stage)."""
    out: dict[str, tuple] = {}
    for tag, mode, oid, stage, path in _INDEX_ENTRY.findall(listing):
        key = f"{label}index {path}" + (f" (stage {stage})" if stage != "0" else "")
        out[key] = ("index", tag, mode, oid, stage)
    return out


def superqode_registration(entry: Path, working: str) -> bool:
    """A ``.git/worktrees/<name>`` entry of SuperQode's: its gitdir points
    into ``working``; or git is still writing it (no gitdir yet) under a
    session's name. A user's worktree named ``qe-x`` is not one."""
    try:
        target = (entry / "gitdir").read_text(encoding="utf-8").strip()
    except FileNotFoundError:
        return bool(_HALF_MADE.match(entry.name)) and entry.is_dir()
    except (OSError, UnicodeDecodeError):
        return False
    real = os.path.realpath(os.path.dirname(target))
    return real == working or real.startswith(working + os.sep)


def git_state(root: Path, gd: Path, cd: Path, working: Path,
              refs: list[str] | None = None) -> dict[str, tuple]:
    """The logical state of the repository at ``root`` (git dir ``gd``,
    common dir ``cd``), keyed by what a user would call it. ``refs``: gets
    git's listing of the refs, as read (:func:`refs_listing`)."""
    out: dict[str, tuple] = {}
    try:
        out["HEAD"] = ("head", (gd / "HEAD").read_bytes().decode("utf-8", "surrogateescape").strip())
    except OSError:
        out["HEAD"] = ("head", "?")
    # The current worktree's HEAD is recorded above by its meaning.
    current = _LOGICAL | _HOUSEKEEPING | {"HEAD"}
    _walk_content(cd, out, ".git/", current if gd == cd else _LOGICAL | _HOUSEKEEPING)
    _refs(root, out, refs)
    _stash_log(cd, out)
    if not _index(root, out, "", path=gd / "index") and (gd / "index").exists():
        out["index"] = ("error", "unreadable index")
    for mod in _module_dirs(cd):
        rel = mod.relative_to(cd).as_posix()
        _walk_content(mod, out, f".git/{rel}/", {"objects", "logs", "gc.pid", "gc.log",
                                                 "rr-cache", "lost-found", "modules"})
    ours = os.path.realpath(working)
    current_gd = os.path.realpath(gd)
    for entry in registration_dirs(cd):
        if os.path.realpath(entry) == current_gd or superqode_registration(entry, ours):
            continue
        label = f".git/worktrees/{entry.name}/"
        _walk_content(entry, out, label, _LOGICAL | _HOUSEKEEPING)
        index = entry / "index"
        if index.exists() and not _index(root, out, label, index):
            try:
                out[label + "index"] = _content_entry(str(index), index.lstat())
            except OSError:
                pass
    if gd != cd:  # the user works in a linked worktree: its own HEAD, state
        _walk_content(gd, out, "@worktree/", current)
        main_index = cd / "index"  # and the main worktree's staged state
        if main_index.exists() and not _index(root, out, ".git/", main_index):
            out[".git/index"] = _content_entry(str(main_index), main_index.lstat())
    return out


def _module_dirs(cd: Path) -> list[Path]:
    """Submodule git dirs (``modules/<path>``, nested ones too): a folder
    that has a HEAD file."""
    found: list[Path] = []
    stack = [cd / "modules"]
    while stack:
        d = stack.pop()
        try:
            subs = [p for p in d.iterdir() if p.is_dir() and not p.is_symlink()]
        except OSError:
            continue
        for p in subs:
            if (p / "HEAD").is_file():
                found.append(p)
                stack.append(p / "modules")
            else:
                stack.append(p)
    return found


def _partial_clone(cd: Path) -> bool:
    try:
        text = (cd / "config").read_bytes().lower()
    except OSError:
        return False
    return b"partialclone" in text or b"promisor" in text


def missing_objects(root: Path, cd: Path, state: dict[str, tuple]) -> list[str]:
    """Objects the user's HEAD, refs, stash and index name that the object
    store no longer has (``git cat-file --batch-check``), one line each."""
    wanted: list[tuple[str, str]] = []  # (object name for git, what names it)
    head = state.get("HEAD")
    if head is not None and _head(head, state)[0]:
        wanted += [("HEAD", "HEAD"), ("HEAD^{tree}", "HEAD's tree")]
    for key, val in state.items():
        if val[0] == "ref" and val[1]:
            wanted.append((val[1], key[len("ref "):]))
        elif val[0] == "stash":
            wanted.append((val[1], key))
    blobs: list[tuple[str, str, str]] = []  # (object, path, label of its index)
    if not _partial_clone(cd):  # a partial clone lacks blobs on purpose
        for key, val in state.items():
            if val[0] == "entries":
                # Not submodule commits (another store), not skip-worktree
                # entries (a sparse checkout may never have had them).
                blobs += [(oid, path, key) for tag, mode, oid, _, path
                          in _INDEX_ENTRY.findall(val[2]) if mode != "160000" and tag not in "Ss"]
    if not wanted and not blobs:
        return []
    names = "\n".join([name for name, _ in wanted] + [oid for oid, _, _ in blobs]) + "\n"
    # A missing object in a partial clone must not start a fetch.
    proc = git(["cat-file", "--batch-check=%(objectname)"], root,
               env={"GIT_NO_LAZY_FETCH": "1"}, input=names.encode(), check=False)
    raw = proc.stdout.decode("utf-8", "surrogateescape")
    if proc.returncode != 0 or raw.count("\n") != len(wanted) + len(blobs):
        return [f"objects could not be checked: {proc.stderr.decode('utf-8', 'replace').strip()[-200:]}"]
    if " missing\n" not in raw:
        return []
    lines = raw.splitlines()
    wanted += [(oid, f"{key} {path}") for oid, path, key in blobs]
    out: list[str] = []
    born, head_oid = _head(head, state)
    for (name, what), line in zip(wanted, lines):
        if not line.endswith(" missing"):
            continue
        if name in ("HEAD", "HEAD^{tree}"):
            if born:
                out.append(f"missing object: {what} ({head_oid or 'unresolvable'})")
        else:
            out.append(f"missing object: {name} ({what})")
    return out


def _head(head: tuple | None, state: dict[str, tuple]) -> tuple[bool, str | None]:
    """(born, oid) of HEAD: a symbolic HEAD whose branch has no ref yet is unborn."""
    if head is None:
        return False, None
    text = head[1]
    if text.startswith("ref:"):
        ref = state.get(f"ref {text[4:].strip()}")
        return (ref is not None), (ref[1] if ref else None)
    return True, text
