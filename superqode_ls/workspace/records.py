"""Session records: ``working/<repo>/qe/<session-id>.json`` beside the sandbox.

The record is the ownership marker (the reaper deletes only what has one) and
tells recovery who owned a session: pid plus the process start time, so a
reused pid is not mistaken for the owner, plus the host.
"""

from __future__ import annotations

import json
import os
import socket
from datetime import datetime
from pathlib import Path
from typing import Literal

import psutil
from pydantic import BaseModel, ConfigDict, Field

from ..models import utcnow
from .artifacts import atomic_write

OWNER = "superqode-ls"
SessionState = Literal["creating", "running", "reverting", "done", "failed", "kept"]


class SessionRecord(BaseModel):
    model_config = ConfigDict(extra="ignore")

    owner: str = OWNER
    id: str
    repo: str
    repo_key: str
    kind: Literal["qe", "exec", "branch"] = "qe"
    mode: str = "quick"
    isolation: str = "worktree"
    state: SessionState = "creating"
    pid: int = Field(default_factory=os.getpid)
    pid_start: float = Field(default_factory=lambda: process_start_time(os.getpid()) or 0.0)
    host: str = Field(default_factory=socket.gethostname)
    created: datetime = Field(default_factory=utcnow)
    updated: datetime = Field(default_factory=utcnow)
    base_commit: str | None = None
    sandbox: str
    # The sandbox folder's device and inode when it was made: removal checks
    # them, so a folder (or symlink) swapped in later is never deleted.
    sandbox_dev: int | None = None
    sandbox_ino: int | None = None
    baseline_snapshot: str | None = None
    fingerprint_file: str | None = None
    changes: int | None = None
    # The Landlock ABI the session's processes ran under (None: no kernel
    # barrier), so a revert after a crash attributes differences the same way.
    barrier_abi: int | None = None
    # namespaces.protection_level() when it started: whether the project, .git
    # and HOME were read-only to it, metadata included (verification.py).
    protection: str | None = None

    @property
    def sandbox_identity(self) -> tuple[int, int] | None:
        if self.sandbox_dev is None or self.sandbox_ino is None:
            return None
        return self.sandbox_dev, self.sandbox_ino


def process_start_time(pid: int) -> float | None:
    try:
        return psutil.Process(pid).create_time()
    except psutil.Error:
        return None



def process_alive(pid: int, pid_start: float, host: str) -> bool:
    """True unless the process is provably gone on this host: no such pid, a
    zombie, or a pid reused by an unrelated process (other start time)."""
    if host != socket.gethostname():
        return True  # another machine sharing the home: cannot tell, keep it
    try:
        proc = psutil.Process(pid)
        if proc.status() == psutil.STATUS_ZOMBIE:
            return False
        started = proc.create_time()
    except psutil.Error:
        return False
    return abs(started - pid_start) < 1.0


def owner_alive(rec: SessionRecord) -> bool:
    """True when the process that owns ``rec`` is still running on this host."""
    return process_alive(rec.pid, rec.pid_start, rec.host)


def write_record(path: Path, rec: SessionRecord) -> None:
    rec.updated = utcnow()
    atomic_write(path, rec.model_dump_json(indent=2))


def read_record(path: Path) -> SessionRecord | None:
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
        if data.get("owner") != OWNER:
            return None
        return SessionRecord.model_validate(data)
    except (OSError, ValueError):
        return None
