"""Branch worktree records (``branches/<name>.json``) and where they live."""

from __future__ import annotations

import json
import os
import socket
from collections.abc import Iterator
from datetime import datetime
from pathlib import Path
from typing import Literal

from pydantic import BaseModel, ConfigDict, Field

from ...models import utcnow
from ..artifacts import atomic_write
from ..errors import WorkspaceError
from ..paths import home, repo_key, working_root
from ..records import OWNER
from .locks import _flock

ENV_ROOT = "SUPERQODE_WORKTREE_ROOT"
NOT_A_REPO = "Error: worktrees can only be used within a Git repository."
ROOTS_FILE = "worktree-roots.json"
DAY = 86400.0

Origin = Literal["new", "existing", "remote", "task", "exploration", "promote"]


class NotARepository(WorkspaceError):
    # The exact line is part of the contract (editors and scripts match it).
    prefixed = False

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


def touch(rec: BranchRecord) -> None:
    rec.last_used = utcnow()
    write_branch_record(rec)
