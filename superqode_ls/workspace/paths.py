"""Where things live. The directory names are the state: a scan of
``working/*/qe/*`` lists every session and its repository after a crash.

Layout under ``$SUPERQODE_HOME``::

    working/<repo-name>-<hash8>/
        repo.json                  owner marker + absolute path of the repository
        store.git/                 private object store (git snapshots)
        qe/<session-id>/           the sandbox of a session
        qe/<session-id>.json       session record (owner marker, pid, mode, state)
        qe/<session-id>.heartbeat  touched while the owner is alive
        parked/<slot>/             warm sandboxes waiting for reuse
        branches/<name>/           long-lived branch worktrees
"""

from __future__ import annotations

import hashlib
import os
import re
import secrets
import unicodedata
from collections.abc import Mapping
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path

from ..config import superqode_home

SESSION_ID_RE = re.compile(r"^qe-(\d{8})-(\d{6})-([0-9a-f]{6})$")
ARTIFACTS_DIR = Path(".superqode") / "qe-artifacts"


def home() -> Path:
    return superqode_home()


def check_home(project: Path | None = None) -> None:
    """Raise WorkspaceError, one line, when sandboxes could not be made
    under $SUPERQODE_HOME (it is a file, or not writable, or inside
    ``project``); create nothing."""
    from .errors import WorkspaceError

    h = home()
    if project is not None and is_within(h, project):
        # Sandboxes would be inside what they copy and what is verified
        # unchanged; removal and the user's own tools would meet each other.
        raise WorkspaceError(f"SUPERQODE_HOME {h} is inside the project {project}; "
                             "set it to a folder outside the project")
    p = h
    while not p.exists() and p != p.parent:
        p = p.parent  # the nearest existing folder decides
    if not p.is_dir():
        raise WorkspaceError(f"SUPERQODE_HOME {h}: {p} is not a folder")
    if not os.access(p, os.W_OK | os.X_OK):
        raise WorkspaceError(f"SUPERQODE_HOME {h}: {p} is not writable")
    work = h / "working"
    if work.exists() and not work.is_dir():
        raise WorkspaceError(f"SUPERQODE_HOME {h}: {work} is not a folder")


def working_root() -> Path:
    return home() / "working"


def _safe_name(name: str, limit: int = 48) -> str:
    name = unicodedata.normalize("NFC", name)
    cleaned = re.sub(r"[^\w.-]+", "-", name, flags=re.UNICODE).strip("-.")
    return (cleaned or "repo")[:limit]


def repo_key(repo: Path) -> str:
    """``<repo-name>-<8 hex of the absolute path>``: stable per checkout."""
    resolved = str(Path(repo).resolve())
    digest = hashlib.sha256(resolved.encode("utf-8", "surrogateescape")).hexdigest()[:8]
    return f"{_safe_name(Path(resolved).name)}-{digest}"


def repo_dir(repo: Path) -> Path:
    return working_root() / repo_key(repo)


def new_session_id(now: datetime | None = None) -> str:
    now = now or datetime.now(UTC)
    return f"qe-{now:%Y%m%d}-{now:%H%M%S}-{secrets.token_hex(3)}"


def parse_session_id(name: str) -> datetime | None:
    m = SESSION_ID_RE.match(name)
    if not m:
        return None
    try:
        return datetime.strptime(m.group(1) + m.group(2), "%Y%m%d%H%M%S").replace(
            tzinfo=UTC
        )
    except ValueError:
        return None


@dataclass(frozen=True)
class SessionPaths:
    repo: Path
    session_id: str

    @property
    def base(self) -> Path:
        return repo_dir(self.repo)

    @property
    def sandbox(self) -> Path:
        return self.base / "qe" / self.session_id

    @property
    def record(self) -> Path:
        return self.base / "qe" / f"{self.session_id}.json"

    @property
    def heartbeat(self) -> Path:
        return self.base / "qe" / f"{self.session_id}.heartbeat"

    @property
    def private(self) -> Path:
        """Session-private scratch (git shim, hooks, temp indexes); never in the sandbox."""
        return self.base / "qe" / f".{self.session_id}.d"

    @property
    def xdg(self) -> Path:
        """XDG_CACHE_HOME of the session's processes: its own, removed with
        it. Shared by a project's sessions, a hostile branch's tests could
        plant what a later session's tools use there (a wheel in pip's cache,
        an entry of a linter's cache that hides a finding)."""
        return self.private / "xdg"


def store_dir(repo: Path) -> Path:
    return repo_dir(repo) / "store.git"


# What a session's processes may write inside its private dir (qe/.<id>.d/):
# the sealed git dir, the guard's event log, role scratch copies, TMPDIR, the
# tools' XDG cache. Not the fingerprint or the tracking index, which decide
# the verification.
PRIVATE_WRITABLE = ("git", "guard", "scratch", "tmp", "xdg")


def project_cache(repo: Path) -> Path:
    """``$SUPERQODE_HOME/cache/<repo-key>``: the caches of ``repo``'s
    sessions. Per project: what one project's session writes there never
    reaches another project's findings. A session's processes write none of
    it (their XDG cache is their own, ``SessionPaths.xdg``); ``mypy/`` only
    the types role's mypy process (qe/roles/_mypy_cache.py)."""
    return home() / "cache" / repo_key(repo)


def hypothesis_dir(env: Mapping[str, str], fallback: Path) -> str:
    """hypothesis' example database for a session's test run: in the
    session's TMPDIR (``fallback`` outside a session), never shared. A
    database shared by a project's sessions would let one session choose the
    examples a later one replays; it is small, and what it costs to start
    afresh is its unicode table, built once per session."""
    tmp = env.get("TMPDIR")
    return str(Path(tmp) / "hypothesis" if tmp and os.path.isabs(tmp) else fallback / "hypothesis")


def parked_dir(repo: Path) -> Path:
    return repo_dir(repo) / "parked"


def artifacts_root(project: Path) -> Path:
    return Path(project) / ARTIFACTS_DIR


def ensure_dir(p: Path) -> Path:
    p.mkdir(parents=True, exist_ok=True)
    return p


def is_within(path: Path, root: Path) -> bool:
    try:
        Path(os.path.realpath(path)).relative_to(os.path.realpath(root))
        return True
    except ValueError:
        return False
