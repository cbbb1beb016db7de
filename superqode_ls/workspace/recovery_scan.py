"""Every session on disk, found from the directory names alone (see
recovery): ``$SUPERQODE_HOME/working/*/qe/*`` names each session's sandbox,
record, heartbeat and private scratch, so a session killed half-way through
creation is still found; its record, when there is one, adds the
repository, the mode and the owning process. Read only."""

from __future__ import annotations

import json
import logging
import os
import re
import time
from dataclasses import dataclass, field
from datetime import datetime
from pathlib import Path
from typing import Any

from .errors import WorkspaceError
from .paths import SESSION_ID_RE, parse_session_id, working_root
from .records import OWNER, SessionRecord, owner_alive, read_record
from .session import extract_patch

log = logging.getLogger(__name__)

ACTIVE_STATES = ("creating", "running", "reverting")
# INCOMPLETE_GRACE_S (registrations): without a record we cannot tell whether a
# live process is still creating the session; leftovers stay that long unless forced.


@dataclass
class SessionInfo:
    id: str
    base: Path  # working/<repo-key>
    record: SessionRecord | None
    repo: Path | None
    alive: bool
    state: str  # record state; "interrupted" when its owner died; "incomplete" without record
    # The session-start fingerprint, read by discard() before the private
    # folder holding it goes, so verify() still works afterwards.
    fingerprint_text: str | None = field(default=None, repr=False)

    @property
    def repo_key(self) -> str:
        return self.base.name

    @property
    def qe(self) -> Path:
        return self.base / "qe"

    @property
    def sandbox(self) -> Path:
        return self.qe / self.id

    @property
    def record_path(self) -> Path:
        return self.qe / f"{self.id}.json"

    @property
    def heartbeat(self) -> Path:
        return self.qe / f"{self.id}.heartbeat"

    @property
    def private(self) -> Path:
        return self.qe / f".{self.id}.d"

    @property
    def created(self) -> datetime | None:
        return parse_session_id(self.id)

    @property
    def mode(self) -> str:
        return self.record.mode if self.record else "?"

    @property
    def kind(self) -> str:
        return self.record.kind if self.record else "?"

    @property
    def changes(self) -> int | None:
        return self.record.changes if self.record else None

    def age_s(self, now: float | None = None) -> float:
        created = self.created
        if created is None:
            return 0.0
        return max(0.0, (now or time.time()) - created.timestamp())

    def last_activity(self) -> float:
        """When the session last did something: its heartbeat, the sandbox's
        git index and reflog, the record — never the top directory's mtime,
        which says nothing about work going on inside."""
        candidates = [self.heartbeat, self.record_path]
        gitdir = sandbox_gitdir(self.sandbox)
        if gitdir is not None:
            candidates += [gitdir / "index", gitdir / "logs" / "HEAD"]
        times = []
        for p in candidates:
            try:
                times.append(p.stat().st_mtime)
            except OSError:
                continue
        created = self.created
        if created is not None:
            times.append(created.timestamp())
        return max(times) if times else 0.0

    def owned_paths(self) -> list[Path]:
        """Every entry of ``qe/`` named after this session."""
        try:
            names = os.listdir(self.qe)
        except OSError:
            return []
        out = []
        for name in names:
            m = _OWNED_NAME.match(name)
            if m and m.group(1) == self.id:
                out.append(self.qe / name)
        return out

    def exists(self) -> bool:
        return any(p.exists() or p.is_symlink() for p in
                   (self.sandbox, self.record_path, self.private, self.heartbeat))

    def to_json(self, now: float | None = None) -> dict[str, Any]:
        return {
            "id": self.id,
            "repo": str(self.repo) if self.repo else None,
            "repo_key": self.repo_key,
            "mode": self.mode,
            "kind": self.kind,
            "state": self.state,
            "owner_alive": self.alive,
            "pid": self.record.pid if self.record else None,
            "age_s": round(self.age_s(now), 1),
            "changes": self.changes,
            "sandbox": str(self.sandbox),
            "sandbox_exists": self.sandbox.exists(),
        }


def sandbox_gitdir(sandbox: Path) -> Path | None:
    dot = sandbox / ".git"
    try:
        if dot.is_file():
            text = dot.read_text(encoding="utf-8").strip()
            if text.startswith("gitdir:"):
                return Path(text.split(":", 1)[1].strip())
        elif dot.is_dir():
            return dot
    except OSError:
        pass
    return None


def count_changes(info: SessionInfo) -> int | None:
    """Files the session changed: from its record, or for a session whose
    owner is gone, counted from its sandbox (never for a live one: that
    would race its owner's own bookkeeping)."""
    if info.changes is not None:
        return info.changes
    if info.record is None or info.alive or not info.sandbox.is_dir():
        return None
    if info.repo is None or not info.repo.is_dir():
        return None
    try:
        diff = extract_patch(info.record)
    except Exception:  # a broken sandbox shows as unknown
        log.debug("cannot count changes of %s", info.id, exc_info=True)
        return None
    return sum(1 for line in diff.splitlines() if line.startswith("diff --git "))


def read_repo_marker(base: Path) -> dict[str, Any] | None:
    """``working/<key>/repo.json`` when it carries our owner marker."""
    try:
        data = json.loads((base / "repo.json").read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None
    if not isinstance(data, dict) or data.get("owner") != OWNER:
        return None
    return data


def marker_repo(marker: dict[str, Any] | None) -> Path | None:
    if not marker:
        return None
    value = marker.get("repo") or marker.get("path")
    return Path(value) if isinstance(value, str) and value else None


def _session_ids(qe: Path) -> set[str]:
    ids: set[str] = set()
    try:
        names = os.listdir(qe)
    except OSError:
        return ids
    for name in names:
        m = _OWNED_NAME.match(name)
        if m:
            ids.add(m.group(1))
    return ids


# Everything in qe/ named after a session: the sandbox, record, heartbeat,
# private folder, and temp files of an atomic write cut short (".<id>.json.x").
_OWNED_NAME = re.compile(r"^\.?(qe-\d{8}-\d{6}-[0-9a-f]{6})(?:$|\.)")


def repo_bases(root: Path | None = None) -> list[Path]:
    root = root or working_root()
    try:
        return sorted(p for p in root.iterdir() if p.is_dir() and not p.name.startswith("."))
    except OSError:
        return []


def scan(repo: Path | None = None) -> list[SessionInfo]:
    """Every session on disk (of ``repo`` only, when given), oldest first."""
    from .paths import repo_dir

    bases = [repo_dir(repo)] if repo is not None else repo_bases()
    out: list[SessionInfo] = []
    for base in bases:
        marked = marker_repo(read_repo_marker(base))
        for sid in sorted(_session_ids(base / "qe")):
            rec = read_record(base / "qe" / f"{sid}.json")
            if rec is not None and rec.id != sid:
                rec = None  # a record that names another session is not this one's
            alive = owner_alive(rec) if rec is not None else False
            if rec is None:
                state = "incomplete"
            elif rec.state in ACTIVE_STATES and not alive:
                state = "interrupted"
            else:
                state = rec.state
            repo_path = Path(rec.repo) if rec is not None and rec.repo else marked
            out.append(SessionInfo(sid, base, rec, repo_path, alive, state))
    out.sort(key=lambda s: (s.id, s.repo_key))
    return out


def find_session(session_id: str) -> SessionInfo:
    if not SESSION_ID_RE.match(session_id):
        raise WorkspaceError(f"not a session id: {session_id!r} (expected qe-YYYYMMDD-HHMMSS-xxxxxx)")
    for info in scan():
        if info.id == session_id:
            return info
    raise WorkspaceError(f"no session {session_id} (see superqe status --all)")


def interrupted_sessions(repo: Path | None = None) -> list[SessionInfo]:
    return [s for s in scan(repo) if s.state == "interrupted"]
