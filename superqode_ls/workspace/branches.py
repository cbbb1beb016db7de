"""Long-lived branch worktrees: real git worktrees for the user's own work.

Unlike QE sandboxes these are meant to be kept and edited, so creating the
branch (``git worktree add -b``) in the user's repository is the point; the
only other traces in the repository are git's own worktree registration and,
when work would otherwise be lost, a patch under ``.superqode/qe-artifacts``.

Layout (``<root>`` is ``$SUPERQODE_WORKTREE_ROOT`` or ``$SUPERQODE_HOME/working``)::

    <root>/<repo>-<hash8>/branches/<name>/       the worktree
    <root>/<repo>-<hash8>/branches/<name>.json   its record (owner marker, repo, branch, last use)
    <root>/<repo>-<hash8>/branches/.lock         serialises creation per repository

The record lets the reaper find every worktree and recognise an orphan (the
repository was moved or deleted) without asking git, which cannot answer then.
"""

from __future__ import annotations

import fcntl
import json
import os
import re
import shutil
import socket
import tempfile
import time
import uuid
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field

from ..config import Config, ConfigError, load_config
from ..models import utcnow
from .artifacts import Artifacts, atomic_write
from .errors import WorkspaceError
from .git import GitError, copy_index, git, git_out, head_commit, repo_root, resolve_commit
from .paths import home, is_within, repo_key, working_root
from .records import OWNER
from .slug import folder_name, task_slug

ENV_ROOT = "SUPERQODE_WORKTREE_ROOT"
NOT_A_REPO = "Error: worktrees can only be used within a Git repository."
ROOTS_FILE = "worktree-roots.json"
DAY = 86400.0

Origin = Literal["new", "existing", "remote", "task", "exploration", "promote"]


class NotARepository(WorkspaceError):
    def __init__(self) -> None:
        super().__init__(NOT_A_REPO)


class BranchRecord(BaseModel):
    """``branches/<name>.json``; ``sandbox`` is the worktree path (same key as session records)."""

    model_config = ConfigDict(extra="ignore")

    owner: str = OWNER
    kind: Literal["branch"] = "branch"
    id: str
    name: str
    repo: str
    repo_key: str
    sandbox: str
    branch: str | None = None  # None: detached (exploration)
    created_branch: bool = False
    base_commit: str
    origin: Origin = "new"
    task: str | None = None
    promoted_from: str | None = None
    state: Literal["creating", "ready"] = "creating"
    host: str = Field(default_factory=socket.gethostname)
    created: datetime = Field(default_factory=utcnow)
    last_used: datetime = Field(default_factory=utcnow)

    @property
    def path(self) -> Path:
        return Path(self.sandbox)

    @property
    def detached(self) -> bool:
        return self.branch is None


# ---------------------------------------------------------------- locations


def worktree_root() -> Path:
    env = os.environ.get(ENV_ROOT)
    return Path(os.path.abspath(Path(env).expanduser())) if env else working_root()


def branches_dir(repo: Path) -> Path:
    return worktree_root() / repo_key(repo) / "branches"


def _record_path(rec_dir: Path, name: str) -> Path:
    return rec_dir / f"{name}.json"


def _known_roots() -> list[Path]:
    """Every root a worktree was ever created under, so a reaper run without
    ``SUPERQODE_WORKTREE_ROOT`` still finds worktrees made with it."""
    roots = [worktree_root(), working_root()]
    try:
        data = json.loads((home() / ROOTS_FILE).read_text(encoding="utf-8"))
        roots += [Path(p) for p in data.get("roots", []) if isinstance(p, str)]
    except (OSError, ValueError, AttributeError):
        pass
    seen: list[Path] = []
    for r in roots:
        if r not in seen:
            seen.append(r)
    return seen


def _register_root(root: Path) -> None:
    if root == working_root():
        return
    path = home() / ROOTS_FILE
    path.parent.mkdir(parents=True, exist_ok=True)
    with _flock(home() / f".{ROOTS_FILE}.lock"):
        try:
            roots = json.loads(path.read_text(encoding="utf-8")).get("roots", [])
        except (OSError, ValueError, AttributeError):
            roots = []
        if str(root) not in roots:
            roots.append(str(root))
            atomic_write(path, json.dumps({"roots": roots}, indent=2) + "\n")


@contextmanager
def _flock(path: Path) -> Iterator[None]:
    while True:
        path.parent.mkdir(parents=True, exist_ok=True)
        fh = open(path, "a+")  # noqa: SIM115 - held across the yield below
        try:
            fcntl.flock(fh, fcntl.LOCK_EX)
            try:
                same = os.fstat(fh.fileno()).st_ino == os.stat(path).st_ino
            except FileNotFoundError:
                same = False
            if not same:
                # _tidy removed the lock file while we waited: lock the new one.
                continue
            try:
                yield
            finally:
                fcntl.flock(fh, fcntl.LOCK_UN)
            return
        finally:
            fh.close()


# ---------------------------------------------------------------- records


def write_branch_record(rec: BranchRecord) -> Path:
    path = _record_path(rec.path.parent, rec.name)
    atomic_write(path, rec.model_dump_json(indent=2) + "\n")
    return path


def read_branch_record(path: Path) -> BranchRecord | None:
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
        if data.get("owner") != OWNER or data.get("kind") != "branch":
            return None
        rec = BranchRecord.model_validate(data)
    except (OSError, ValueError):
        return None
    # The worktree sits next to its record: if $SUPERQODE_HOME (or the root) was
    # moved, the folder moved with it and the stored absolute path is stale.
    here = path.parent / path.name.removesuffix(".json")
    if rec.path != here:
        rec.sandbox, rec.name = str(here), here.name
    return rec


def iter_records(repo: Path | None = None) -> Iterator[tuple[Path, BranchRecord]]:
    """Records of ``repo`` (its main work tree), or of every repository."""
    seen: set[Path] = set()
    for root in _known_roots():
        pattern = f"{repo_key(repo)}/branches/*.json" if repo else "*/branches/*.json"
        for path in sorted(root.glob(pattern)):
            if path in seen:
                continue
            seen.add(path)
            rec = read_branch_record(path)
            if rec is not None:
                yield path, rec


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
    return git(["rev-parse", "--verify", "-q", f"refs/heads/{branch}"], repo, check=False).returncode == 0


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
    p = Path(text[len("gitdir:"):].strip())
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
    return proc.stdout.decode("utf-8", "surrogateescape").strip() or None if proc.returncode == 0 else None


def _not_elsewhere(exclude_branch: str | None) -> list[str]:
    excl = [f"--exclude={exclude_branch}"] if exclude_branch else []
    return ["--not", *excl, "--branches", "--remotes", "--tags"]


def unique_commits(repo: Path, commit: str, own_branch: str | None) -> list[str]:
    """Commits reachable from ``commit`` but from no other branch, remote branch or tag."""
    out = git_out(["rev-list", commit, *_not_elsewhere(own_branch)], repo)
    return out.split()


# ---------------------------------------------------------------- create


Namer = Callable[[str], "str | None"]


@contextmanager
def _repo_lock(repo: Path) -> Iterator[Path]:
    d = branches_dir(repo)
    d.mkdir(parents=True, exist_ok=True)
    with _flock(d / ".lock"):
        yield d


def _new_id() -> str:
    now = datetime.now(UTC)
    return f"wt-{now:%Y%m%d}-{now:%H%M%S}-{uuid.uuid4().hex[:6]}"


def _checked_out_at(repo: Path, branch: str) -> Path | None:
    for wt in git_worktrees(repo):
        if wt.branch == branch:
            return wt.path
    return None


def _unique_slug(repo: Path, slug: str) -> str:
    """``slug``, or ``slug-2``... when a branch of that name exists already."""
    candidate, n = slug, 1
    while _branch_exists(repo, candidate) or _remote_branch(repo, candidate):
        n += 1
        candidate = f"{slug}-{n}"
    return candidate


def _free_folder(rec_dir: Path, name: str, branch: str | None) -> str:
    """``name`` unless another branch already owns that folder (``a/b`` and ``a-b``)."""
    candidate = name
    n = 1
    while (rec_dir / candidate).exists() or _record_path(rec_dir, candidate).exists():
        other = read_branch_record(_record_path(rec_dir, candidate))
        if other is not None and branch is not None and other.branch == branch:
            raise WorkspaceError(
                f"branch {branch!r} already has a worktree at {other.sandbox}; "
                f"open it: superqe worktree open {other.name}"
            )
        n += 1
        candidate = f"{name}-{n}"
    return candidate


def new_worktree(
    path: Path,
    branch: str | None = None,
    *,
    task: str | None = None,
    new_branch: bool = False,
    start: str | None = None,
    namer: Namer | None = None,
    origin: Origin | None = None,
    promoted_from: str | None = None,
) -> BranchRecord:
    """Create a worktree for ``path``'s repository and return its record.

    - ``branch`` exists locally: checked out as is (or refused if checked out elsewhere);
    - ``branch`` exists on exactly one remote: a local tracking branch is made;
    - otherwise (or ``new_branch``): a new branch at ``start`` (default: the current commit);
    - ``task``: the branch is named from the text (``namer``, falling back to the slug);
    - neither: a detached ``exploration-<uuid8>`` at the current commit.

    On any failure nothing is left: no folder, no record, no branch.
    """
    if branch is not None and task is not None:
        raise WorkspaceError("give either a branch name or --task, not both")
    repo = main_repo(Path(path))
    here = repo_root(Path(path)) or repo
    if is_within(worktree_root(), repo):
        raise WorkspaceError(
            f"the worktree root {worktree_root()} is inside the repository; "
            f"set {ENV_ROOT} to a folder outside it"
        )
    if start is not None:
        try:
            start_commit = resolve_commit(here, start)
        except GitError:
            raise WorkspaceError(f"unknown start commit {start!r}") from None
    else:
        start_commit = head_commit(here) or ""
        if not start_commit:
            raise WorkspaceError("the repository has no commits yet; commit once, then create a worktree")

    if task is not None:
        if not task.strip():
            raise WorkspaceError("--task needs a description of the work")
        name_ = None
        if namer is not None:
            try:
                name_ = namer(task)
            except Exception:  # noqa: BLE001 - an unavailable namer must never block the slug
                name_ = None
            if name_:
                try:
                    check_branch_name(repo, name_)
                except WorkspaceError:
                    name_ = None
        branch = name_ or task_slug(task)
        check_branch_name(repo, branch)

    if branch is not None:
        check_branch_name(repo, branch)

    with _repo_lock(repo) as rec_dir:
        mode: Origin
        track: str | None = None
        if branch is None:
            mode = "exploration"
            name = _free_folder(rec_dir, f"exploration-{uuid.uuid4().hex[:8]}", None)
        else:
            if task is not None:
                branch = _unique_slug(repo, branch)
            local = _branch_exists(repo, branch)
            if local and (new_branch or task is not None):
                raise WorkspaceError(
                    f"branch {branch!r} already exists; to check it out as is: "
                    f"superqe worktree new {branch}"
                )
            if local and start is not None and origin != "promote":
                raise WorkspaceError(
                    f"--from starts a new branch, and {branch!r} already exists; "
                    f"to check it out as is: superqe worktree new {branch}"
                )
            if local:
                mode = "existing"
                at = _checked_out_at(repo, branch)
                if at is not None:
                    raise _checked_out_error(repo, branch, at)
            else:
                track = None if new_branch else _remote_branch(repo, branch)
                mode = "remote" if track else "new"
            name = _free_folder(rec_dir, folder_name(branch), branch)
        wt = rec_dir / name
        rec = BranchRecord(
            id=_new_id(),
            name=name,
            repo=str(repo),
            repo_key=repo_key(repo),
            sandbox=str(wt),
            branch=branch,
            created_branch=mode in ("new", "remote"),
            base_commit=start_commit,
            origin=origin or ("task" if task is not None else mode),
            task=task,
            promoted_from=promoted_from,
        )
        if mode == "existing":
            rec.base_commit = resolve_commit(repo, f"refs/heads/{branch}")
        elif mode == "remote" and track:
            rec.base_commit = resolve_commit(repo, f"refs/remotes/{track}")
        # Record first: a crash mid-way leaves an owned, reapable folder, never an unknown one.
        write_branch_record(rec)
        _register_root(worktree_root())
        if mode == "exploration":
            args = ["worktree", "add", "--detach", str(wt), start_commit]
        elif mode == "existing":
            args = ["worktree", "add", str(wt), str(branch)]
        elif mode == "remote":
            args = ["worktree", "add", "--track", "-b", str(branch), str(wt), str(track)]
        else:
            args = ["worktree", "add", "--no-track", "-b", str(branch), str(wt), start_commit]
        try:
            git(args, repo)
        except GitError as e:
            if "already exists" in e.stderr:
                rec.created_branch = False  # made by someone else meanwhile: theirs
            _undo_create(repo, rec)
            raise WorkspaceError(f"cannot create the worktree: {e.stderr.splitlines()[-1] if e.stderr else e}") from None
        except BaseException:
            _undo_create(repo, rec)
            raise
        rec.state = "ready"
        write_branch_record(rec)
    return rec


def _checked_out_error(repo: Path, branch: str, at: Path) -> WorkspaceError:
    for _, rec in iter_records(repo):
        if rec.path == at:
            return WorkspaceError(
                f"branch {branch!r} already has a worktree at {at}; "
                f"open it: superqe worktree open {rec.name}"
            )
    return WorkspaceError(
        f"branch {branch!r} is already checked out at {at} (git allows a branch in one "
        f"worktree only); switch that checkout to another branch, or start a new branch "
        f"from the current commit: superqe worktree new {branch}-2"
    )


def _undo_create(repo: Path, rec: BranchRecord) -> None:
    if rec.path.exists():
        git(["worktree", "remove", "--force", "--force", str(rec.path)], repo, check=False)
        shutil.rmtree(rec.path, ignore_errors=True)
    git(["worktree", "prune"], repo, check=False)
    if rec.created_branch and rec.branch and _checked_out_at(repo, rec.branch) is None:
        proc = git(["rev-parse", "--verify", "-q", f"refs/heads/{rec.branch}"], repo, check=False)
        if proc.returncode == 0 and proc.stdout.decode().strip() == rec.base_commit:
            git(["branch", "-D", "--", rec.branch], repo, check=False)
    _record_path(rec.path.parent, rec.name).unlink(missing_ok=True)
    _tidy(rec.path.parent)


def _tidy(rec_dir: Path) -> None:
    """Drop ``branches/`` and ``<repo>-<hash8>/`` once nothing but the lock is left."""
    try:
        left = [p.name for p in rec_dir.iterdir()]
    except OSError:
        return
    if left and left != [".lock"]:
        return
    # Hold the lock while removing it so a concurrent creator is not split in two.
    try:
        with open(rec_dir / ".lock", "a+") as fh:
            try:
                fcntl.flock(fh, fcntl.LOCK_EX | fcntl.LOCK_NB)
            except OSError:
                return
            if [p.name for p in rec_dir.iterdir()] != [".lock"]:
                return
            (rec_dir / ".lock").unlink(missing_ok=True)
        rec_dir.rmdir()
        rec_dir.parent.rmdir()
    except OSError:
        pass


# ---------------------------------------------------------------- list / open


@dataclass
class WorktreeInfo:
    record: BranchRecord
    record_path: Path
    exists: bool
    orphan: bool
    branch: str | None  # what is checked out now (the user may have switched)
    dirty: int | None  # changed + untracked paths; None when git cannot tell
    locked: bool
    last_activity: float

    @property
    def name(self) -> str:
        return self.record.name

    @property
    def path(self) -> Path:
        return self.record.path


def describe(rec_path: Path, rec: BranchRecord) -> WorktreeInfo:
    exists = rec.path.is_dir()
    orphan = is_orphan(rec)
    branch, dirty, locked = rec.branch, None, False
    if exists and not orphan:
        try:
            dirty = len(dirty_paths(rec.path))
            branch = _live_branch(rec.path)
        except GitError:
            dirty = None
        gd = _gitdir(rec.path)
        locked = bool(gd and (gd / "locked").exists())
    return WorktreeInfo(rec, rec_path, exists, orphan, branch, dirty, locked, last_activity(rec))


def list_worktrees(repo: Path | None = None) -> list[WorktreeInfo]:
    """Worktrees of ``repo`` (any path inside it), or of every repository when None."""
    key_repo = main_repo(repo) if repo is not None else None
    return [describe(p, r) for p, r in iter_records(key_repo)]


def find_worktree(repo: Path, name: str) -> tuple[Path, BranchRecord]:
    """By folder name, branch, record id or path."""
    repo = main_repo(repo)
    candidates = list(iter_records(repo))
    for match in (
        lambda r: r.name == name or r.id == name,
        lambda r: r.branch == name,
        lambda r: r.name == folder_name(name),
        lambda r: os.path.abspath(name) == r.sandbox,
    ):
        for path, rec in candidates:
            if match(rec):
                return path, rec
    raise WorkspaceError(f"no worktree {name!r} for {repo} (see: superqe worktree list)")


def touch(rec: BranchRecord) -> None:
    rec.last_used = utcnow()
    write_branch_record(rec)


def open_worktree(repo: Path, name: str) -> Path:
    """Path of worktree ``name`` of ``repo``, marked as used now.

    For ``superqode.openWorktree``: the server asks the editor to open the
    returned folder (``window/showDocument`` with ``external``/new window,
    or hands the path to the editor plugin that opens a window).
    """
    _, rec = find_worktree(repo, name)
    if not rec.path.is_dir():
        raise WorkspaceError(
            f"worktree {rec.name!r} is gone ({rec.sandbox}); clean up with: superqe worktree remove {rec.name}"
        )
    if is_orphan(rec):
        raise WorkspaceError(f"worktree {rec.name!r} lost its repository {rec.repo}")
    touch(rec)
    return rec.path


# ---------------------------------------------------------------- saving work


EMPTY_TREE_INPUT = b""


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
        return git(["diff", "--cached", "--binary", "HEAD"], worktree, env=env).stdout.decode(
            "utf-8", "surrogateescape"
        )


def commits_patch(repo: Path, commit: str, own_branch: str | None) -> str:
    return git(
        ["format-patch", "--stdout", "--binary", commit, *_not_elsewhere(own_branch)], repo
    ).stdout.decode("utf-8", "surrogateescape")


def snapshot_patch(folder: Path) -> str:
    """Every file of ``folder`` (not ignored) as a creation patch, without any
    repository: what an orphaned worktree holds when its repository is gone."""
    with tempfile.TemporaryDirectory(prefix="superqode-orphan-") as tmp:
        gd = Path(tmp) / "g"
        git(["init", "-q", "--bare", str(gd)], tmp)
        base = ["--git-dir", str(gd), "--work-tree", str(folder)]
        git([*base, "add", "-A", "--", "."], folder)
        empty = git_out([*base, "hash-object", "-t", "tree", "--stdin"], folder, input=EMPTY_TREE_INPUT)
        return git([*base, "diff", "--cached", "--binary", empty], folder).stdout.decode(
            "utf-8", "surrogateescape"
        )


# ---------------------------------------------------------------- remove


@dataclass
class Disposal:
    """What removing a worktree did (or, dry, would do)."""

    name: str
    path: Path
    repo: str
    branch: str | None
    removed: bool = False
    patches: list[Path] = field(default_factory=list)
    branch_deleted: bool = False
    branch_kept_reason: str | None = None
    message: str = ""


def _save(
    arts: Artifacts | None, orphan_dir: Path | None, rec: BranchRecord, label: str, text: str,
    **extra: object,
) -> Path:
    # Bytes, not str: a file in another encoding must reach the patch byte for byte.
    raw: Any = text.encode("utf-8", "surrogateescape")
    if arts is not None:
        return arts.prepare().write_patch(
            f"{rec.name}-{label}", raw, worktree=rec.sandbox, branch=rec.branch, **extra
        )
    assert orphan_dir is not None
    path = orphan_dir / f"{rec.id}-{rec.name}-{label}.patch"
    atomic_write(path, raw)
    return path


def dispose(
    rec: BranchRecord,
    *,
    reason: str,
    force: bool = False,
    delete_branch: bool = False,
    dry_run: bool = False,
    save_unpushed: bool = False,
) -> Disposal:
    """Remove one worktree, saving what would be lost first.

    ``force=False`` (a user's plain ``remove``) refuses when there are
    uncommitted changes or commits on no branch; ``force=True`` (``--force``
    and the reaper) saves them as patches and goes on. A branch SuperQode
    created is deleted when every commit on it is also elsewhere; with
    commits of its own it is kept unless ``delete_branch`` (then saved first).
    ``save_unpushed`` (the reaper) also saves the commits of the checked-out
    branch that no remote or other branch has, although the branch keeps them.
    """
    res = Disposal(rec.name, rec.path, rec.repo, rec.branch)
    rec_file = _record_path(rec.path.parent, rec.name)
    if is_orphan(rec):
        return _dispose_orphan(rec, rec_file, res, reason=reason, dry_run=dry_run)
    repo = Path(rec.repo)
    exists = rec.path.is_dir()
    dirty: list[str] = []
    head = None
    live_branch = rec.branch
    if exists:
        dirty = dirty_paths(rec.path)
        head = git_out(["rev-parse", "HEAD"], rec.path)
        live_branch = _live_branch(rec.path)
    own_branch = rec.branch if rec.created_branch else None
    # Commits only this worktree's HEAD reaches (a detached HEAD, or a branch we may delete).
    at_risk: list[str] = []
    if head and live_branch is None:
        at_risk = unique_commits(repo, head, None)
    unpushed: list[str] = []
    if save_unpushed and head and live_branch is not None:
        unpushed = unique_commits(repo, head, live_branch)
    branch_unique: list[str] = []
    if own_branch and _branch_exists(repo, own_branch):
        branch_unique = unique_commits(repo, f"refs/heads/{own_branch}", own_branch)
    if not force:
        if dirty:
            raise WorkspaceError(
                f"worktree {rec.name!r} has {len(dirty)} uncommitted change(s); commit them, or "
                f"remove with --force (they are saved as a patch first)"
            )
        if at_risk:
            raise WorkspaceError(
                f"worktree {rec.name!r} has {len(at_risk)} commit(s) on no branch; keep them with "
                f"`git branch NAME` inside it, or remove with --force (saved as a patch first)"
            )
    if dry_run:
        res.message = f"would remove ({reason})"
        return res
    arts = Artifacts(repo, rec.id)
    if dirty:
        res.patches.append(
            _save(arts, None, rec, "uncommitted", uncommitted_patch(rec.path), reason=reason)
        )
    if at_risk and head:
        res.patches.append(
            _save(arts, None, rec, "commits", commits_patch(repo, head, None), reason=reason)
        )
    if unpushed and head:
        res.patches.append(
            _save(arts, None, rec, "unpushed", commits_patch(repo, head, live_branch), reason=reason)
        )
    if exists:
        proc = git(["worktree", "remove", "--force", "--force", str(rec.path)], repo, check=False)
        if rec.path.exists():
            shutil.rmtree(rec.path, ignore_errors=proc.returncode == 0)
    git(["worktree", "prune"], repo, check=False)
    res.removed = True
    if own_branch and _branch_exists(repo, own_branch):
        elsewhere = _checked_out_at(repo, own_branch)
        if elsewhere is not None:
            res.branch_kept_reason = f"checked out at {elsewhere}"
        elif branch_unique and not delete_branch:
            res.branch_kept_reason = (
                f"{len(branch_unique)} commit(s) on no other branch; "
                f"delete it with: git branch -D {own_branch}"
            )
        else:
            if branch_unique and not (unpushed and live_branch == own_branch):
                res.patches.append(
                    _save(arts, None, rec, "branch", commits_patch(repo, f"refs/heads/{own_branch}", own_branch), reason=reason)
                )
            git(["branch", "-D", "--", own_branch], repo)
            res.branch_deleted = True
    rec_file.unlink(missing_ok=True)
    _tidy(rec.path.parent)
    res.message = f"removed ({reason})"
    return res


def _dispose_orphan(rec: BranchRecord, rec_file: Path, res: Disposal, *, reason: str, dry_run: bool) -> Disposal:
    reason = f"orphan: repository {rec.repo} is gone; {reason}"
    if dry_run:
        res.message = f"would remove ({reason})"
        return res
    if rec.path.is_dir():
        # Either the repository is gone or the worktree lost its link to it;
        # git cannot tell committed from new here, so every file is kept.
        text = snapshot_patch(rec.path)
        if text.strip():
            out_dir = home() / "orphans" / rec.repo_key
            patch = _save(None, out_dir, rec, "worktree", text)
            # The record tells later what the patch was: repository, branch, base commit.
            atomic_write(patch.with_suffix(".json"), rec.model_dump_json(indent=2) + "\n")
            res.patches.append(patch)
        shutil.rmtree(rec.path)
    if Path(rec.repo).is_dir():
        git(["worktree", "prune"], Path(rec.repo), check=False)
    rec_file.unlink(missing_ok=True)
    _tidy(rec.path.parent)
    res.removed = True
    res.message = f"removed ({reason})"
    return res


def remove_worktree(
    repo: Path, name: str, *, force: bool = False, delete_branch: bool = False
) -> Disposal:
    """``superqe worktree remove``: the worktree, its record, and the branch
    when SuperQode created it and nothing would be lost."""
    _, rec = find_worktree(repo, name)
    return dispose(rec, reason="removed by the user", force=force, delete_branch=delete_branch)


# ---------------------------------------------------------------- reaper


@dataclass
class ReapResult:
    """One worktree the reaper looked at and decided on."""

    path: Path
    repo: str
    name: str
    branch: str | None
    kind: Literal["detached", "branch", "orphan", "missing"]
    action: Literal["removed", "would-remove", "kept", "failed"]
    reason: str
    idle_days: float | None = None
    patches: list[Path] = field(default_factory=list)
    branch_deleted: bool = False
    message: str = ""


def _config_for(repo: Path, config: Config | None) -> Config:
    if config is not None:
        return config
    try:
        return load_config(repo if repo.is_dir() else None)
    except ConfigError:
        return Config()


def reap_branch_worktrees(
    *, now: float | None = None, config: Config | None = None, dry_run: bool = False
) -> list[ReapResult]:
    """Remove idle and orphaned branch worktrees of every repository.

    - detached (exploration) worktrees idle > ``workspace.detached_worktree_idle_days``;
    - branch worktrees idle > ``workspace.branch_worktree_idle_days``;
    - orphans: the repository was moved or deleted (saved under ``$SUPERQODE_HOME/orphans``);
    - records whose folder was deleted by hand (the registration is pruned).

    Dirty or unpushed work is saved as patches before anything is removed;
    locked worktrees (``git worktree lock``) and those still being created are
    left alone. ``git worktree prune`` runs in every repository touched.
    """
    now = time.time() if now is None else now
    results: list[ReapResult] = []
    touched: set[Path] = set()
    for rec_path, rec in list(iter_records()):
        repo = Path(rec.repo)
        kind: Literal["detached", "branch", "orphan", "missing"]
        idle_days = (now - last_activity(rec)) / DAY
        if rec.state == "creating" and idle_days < 1:
            continue  # maybe being created right now: its folder may not exist yet
        if is_orphan(rec):
            kind, reason = "orphan", "its repository is gone"
        elif not rec.path.is_dir():
            kind, reason = "missing", "its folder was deleted"
        else:
            kind = "detached" if rec.detached else "branch"
            cfg = _config_for(repo, config).workspace
            limit = cfg.detached_worktree_idle_days if rec.detached else cfg.branch_worktree_idle_days
            gd = _gitdir(rec.path)
            if gd is not None and (gd / "locked").exists():
                results.append(ReapResult(rec.path, rec.repo, rec.name, rec.branch, kind, "kept", "locked", idle_days))
                continue
            if rec.state == "creating":
                reason = "its creation never finished"
            elif idle_days <= limit:
                continue
            else:
                reason = f"idle {idle_days:.0f} days (limit {limit:g})"
        res = ReapResult(rec.path, rec.repo, rec.name, rec.branch, kind, "would-remove" if dry_run else "removed", reason, idle_days)
        try:
            d = dispose(rec, reason=reason, force=True, dry_run=dry_run, save_unpushed=True)
            res.patches = d.patches
            res.branch_deleted = d.branch_deleted
            if d.branch_kept_reason:
                res.message = f"kept branch {rec.branch}: {d.branch_kept_reason}"
            if kind != "orphan":
                touched.add(repo)
        except (GitError, WorkspaceError, OSError) as e:
            res.action = "failed"
            res.message = str(e)
        results.append(res)
    if not dry_run:
        for repo in touched:
            git(["worktree", "prune"], repo, check=False)
    return results


# ---------------------------------------------------------------- promote


def find_session_record(session_id: str) -> Path | None:
    for root in {working_root(), worktree_root()}:
        for path in root.glob(f"*/qe/{session_id}.json"):
            return path
    return None


def _user_identity(repo: Path) -> dict[str, str]:
    """The user's own name/email for the promote commit (git.py pins a neutral one)."""
    env: dict[str, str] = {}
    for key, var in (("user.name", "NAME"), ("user.email", "EMAIL")):
        for scope in ("--local", "--global", "--system"):
            proc = git(["config", scope, "--get", key], repo, check=False)
            value = proc.stdout.decode("utf-8", "surrogateescape").strip()
            if proc.returncode == 0 and value:
                env[f"GIT_AUTHOR_{var}"] = env[f"GIT_COMMITTER_{var}"] = value
                break
    return env


# Whole-session diffs, as ``exec``/recovery save them; QE runs save one patch per fix.
_WHOLE_SESSION_PATCHES = ("exec", "recovered", "interrupted")


def session_artifact_patch(project: Path, session_id: str) -> str:
    """A finished session's changes from its saved patch artifacts in ``project``."""
    from .artifacts import read_manifest
    from .paths import artifacts_root

    root = artifacts_root(project)
    entries = [
        e for e in read_manifest(root)["artifacts"]
        if e.get("session_id") == session_id and e.get("kind") == "patch"
    ]
    whole = [e for e in entries if any(e.get("path", "").endswith(f"-{n}.patch") for n in _WHOLE_SESSION_PATCHES)]
    chosen = whole[-1:] or entries
    texts = []
    for e in chosen:
        try:
            texts.append((root / e["path"]).read_text(encoding="utf-8", errors="surrogateescape"))
        except OSError:
            continue
    return "".join(t if t.endswith("\n") else t + "\n" for t in texts if t.strip())


def promote_session(
    session_id: str, branch: str, *, patch: str | None = None, project: Path | None = None
) -> BranchRecord:
    """Turn a QE session's changes into ``branch``: a new worktree at the
    session's base commit with the changes applied and committed.

    A session that is still on disk (kept, or interrupted) gives its sandbox's
    changes; a finished one gives the patches it saved in ``project``'s
    artifacts (then the branch starts at ``project``'s current commit).
    Nothing is left when the changes do not apply (no folder, no branch).
    """
    from .records import read_record

    rec_path = find_session_record(session_id)
    srec = read_record(rec_path) if rec_path else None
    base: str | None = None
    if srec is not None:
        project = Path(srec.repo)
        if not project.is_dir():
            raise WorkspaceError(f"the repository of session {session_id} is gone: {srec.repo}")
        base = srec.base_commit or None
        if patch is None:
            from .session import extract_patch

            patch = extract_patch(srec)
    if project is None:
        raise WorkspaceError(f"no QE session {session_id!r} (see: superqe status --all)")
    if repo_root(project) is None:
        raise NotARepository()
    if not (patch or "").strip():
        project = repo_root(project) or project
        patch = session_artifact_patch(project, session_id)
        if not patch.strip() and srec is None:
            raise WorkspaceError(
                f"no QE session {session_id!r} and no saved patches of it in {project} "
                f"(see: superqe status --all)"
            )
    if not (patch or "").strip():
        raise WorkspaceError(f"session {session_id} has no changes to promote")
    assert patch is not None
    repo = main_repo(project)
    check_branch_name(repo, branch)
    if _branch_exists(repo, branch):
        raise WorkspaceError(f"branch {branch!r} already exists; choose a new name to promote into")
    rec = new_worktree(
        project, branch, new_branch=True, start=base, origin="promote", promoted_from=session_id,
    )
    sub = os.path.relpath(project.resolve(), repo.resolve())
    args = ["apply", "--index", "--binary", "--whitespace=nowarn"]
    if sub != ".":
        args.append(f"--directory={Path(sub).as_posix()}")
    try:
        git(args, rec.path, input=patch.encode("utf-8", "surrogateescape"))
        message = (
            f"Apply changes from SuperQode QE session {session_id}\n\n"
            f"Promoted with `superqe worktree promote {session_id} {branch}`.\n"
        )
        git(["commit", "-q", "--no-verify", "-m", message], rec.path, env=_user_identity(repo))
    except GitError as e:
        _undo_create(repo, rec)
        raise WorkspaceError(
            f"the changes of session {session_id} do not apply to {rec.base_commit[:12]}: "
            f"{e.stderr.splitlines()[-1] if e.stderr else e}"
        ) from None
    touch(rec)
    return rec
