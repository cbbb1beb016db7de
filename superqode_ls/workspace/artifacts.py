"""What a session leaves behind: ``<project>/.superqode/qe-artifacts/``.

Every file name carries the session id, so two sessions (same day, same
second even) never overwrite each other. ``manifest.json`` indexes them.
``.superqode/`` is the one folder SuperQode writes in the user's project; its
``.gitignore`` of ``*`` keeps it out of their commits.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import tempfile
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from .errors import WorkspaceError
from .paths import artifacts_root

SUBDIRS = ("qr", "patches", "generated-tests", "logs", "evidence")
_manifest_lock = threading.Lock()


def _safe(name: str) -> str:
    return re.sub(r"[^\w.-]+", "-", name).strip("-") or "item"


def atomic_write(path: Path, data: bytes | str, *, mode: int | None = None, sync: bool = False) -> Path:
    """``data`` into ``path`` through a temporary file renamed over it;
    ``mode``: the file's permissions, ``sync``: on disk before the rename
    (a user's file: ``superqe suggestions apply``)."""
    path.parent.mkdir(parents=True, exist_ok=True)
    raw = data.encode("utf-8") if isinstance(data, str) else data
    fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", dir=path.parent)
    try:
        with os.fdopen(fd, "wb") as fh:
            fh.write(raw)
            if sync:
                fh.flush()
                os.fsync(fh.fileno())
        if mode is not None:
            os.chmod(tmp, mode)
        os.replace(tmp, path)
    except BaseException:
        try:
            os.unlink(tmp)
        except FileNotFoundError:
            pass
        raise
    return path


class SuperqodeDirError(WorkspaceError, OSError):
    """``<project>/.superqode`` cannot be made or written (both kinds of
    handler catch it: engine callers expect WorkspaceError, writers OSError)."""


def check_superqode_dir(project: Path) -> None:
    """Raise SuperqodeDirError, with one line saying why, when artifacts
    could not be written to ``<project>/.superqode``; create nothing."""
    root = Path(project) / ".superqode"
    if root.is_symlink() and not root.exists():
        raise SuperqodeDirError(f"{root}: a broken symlink; SuperQode needs a folder there")
    if root.exists():
        if not root.is_dir():
            raise SuperqodeDirError(
                f"{root}: exists but is not a folder; SuperQode keeps its artifacts there")
        if not os.access(root, os.W_OK | os.X_OK):
            raise SuperqodeDirError(f"{root}: not writable; SuperQode keeps its artifacts there")
    elif not os.access(project, os.W_OK | os.X_OK):
        raise SuperqodeDirError(
            f"{project}: read-only; SuperQode needs to create .superqode/ there for its artifacts")


def ensure_superqode_dir(project: Path) -> Path:
    root = Path(project) / ".superqode"
    try:
        root.mkdir(exist_ok=True)
        ignore = root / ".gitignore"
        if not ignore.exists():
            atomic_write(ignore, "*\n")
    except OSError as e:
        check_superqode_dir(project)
        raise SuperqodeDirError(f"{root}: cannot write ({e.strerror or e})") from None
    return root


class Artifacts:
    """Writer for one session's artifacts."""

    def __init__(self, project: Path, session_id: str):
        self.project = Path(project)
        self.session_id = session_id
        self.root = artifacts_root(self.project)
        # Entries waiting for one manifest write (see ``batch``); None = write each.
        self._pending: list[dict[str, Any]] | None = None

    @contextmanager
    def batch(self) -> Iterator[Artifacts]:
        """Record everything written inside the block in ONE manifest update:
        the manifest is rewritten whole each time, so thousands of patches
        written one by one cost quadratic time."""
        outer = self._pending is not None
        if not outer:
            self._pending = []
        try:
            yield self
        finally:
            if not outer:
                pending, self._pending = self._pending or [], None
                if pending:
                    update_manifest(self.root, *pending)

    def prepare(self) -> Artifacts:
        ensure_superqode_dir(self.project)
        for sub in SUBDIRS:
            (self.root / sub).mkdir(parents=True, exist_ok=True)
        return self

    def _record(self, kind: str, path: Path, **extra: Any) -> Path:
        entry = {
            "session_id": self.session_id,
            "kind": kind,
            "path": str(path.relative_to(self.root)),
            "created": datetime.now(UTC).isoformat(),
            **extra,
        }
        if self._pending is not None:
            self._pending.append(entry)
        else:
            update_manifest(self.root, entry)
        return path

    def patch_path(self, name: str) -> Path:
        return self.root / "patches" / f"{self.session_id}-{_safe(name)}.patch"

    def write_patch(self, name: str, diff: str, **extra: Any) -> Path:
        path = self.patch_path(name)
        if self._pending is not None:
            # In a batch the manifest lists the file only after it is whole,
            # and its name is this session's alone: no temp file + rename
            # (which doubles the cost of thousands of small files).
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_bytes(diff.encode("utf-8", "surrogateescape"))
        else:
            atomic_write(path, diff)
        return self._record("patch", path, **extra)

    def write_log(self, name: str, text: str) -> Path:
        path = atomic_write(self.root / "logs" / f"{self.session_id}-{_safe(name)}.log", text)
        return self._record("log", path)

    def write_evidence(self, name: str, data: bytes | str) -> Path:
        path = atomic_write(self.root / "evidence" / f"{self.session_id}-{_safe(name)}", data)
        return self._record("evidence", path)

    def generated_tests_dir(self) -> Path:
        d = self.root / "generated-tests" / self.session_id
        d.mkdir(parents=True, exist_ok=True)
        return d

    def write_generated_test(self, rel_name: str, text: str) -> Path:
        path = atomic_write(self.generated_tests_dir() / _safe(rel_name), text)
        return self._record("generated-test", path)

    def report_path(self, ext: str, when: datetime | None = None) -> Path:
        when = when or datetime.now(UTC)
        return self.root / "qr" / f"qr-{when:%Y%m%d}-{self.session_id}.{ext}"

    def write_report(self, ext: str, text: str, when: datetime | None = None) -> Path:
        path = atomic_write(self.report_path(ext, when), text)
        return self._record("report", path, format=ext)


def read_manifest(root: Path) -> dict[str, Any]:
    path = root / "manifest.json"
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
        if isinstance(data, dict) and isinstance(data.get("artifacts"), list):
            return data
    except (OSError, ValueError):
        pass
    return {"version": 1, "artifacts": []}


def update_manifest(root: Path, *entries: dict[str, Any]) -> None:
    # One lock per process plus a lock file across processes: two sessions
    # finishing together must both be listed.
    root.mkdir(parents=True, exist_ok=True)
    lock = root / ".manifest.lock"
    with _manifest_lock, _file_lock(lock):
        data = read_manifest(root)
        data["artifacts"].extend(entries)
        atomic_write(root / "manifest.json", json.dumps(data, indent=2) + "\n")


class _file_lock:
    def __init__(self, path: Path):
        self.path = path
        self.fh: Any = None

    def __enter__(self) -> None:
        import fcntl

        self.fh = open(self.path, "a+")
        fcntl.flock(self.fh, fcntl.LOCK_EX)

    def __exit__(self, *exc: object) -> None:
        import fcntl

        fcntl.flock(self.fh, fcntl.LOCK_UN)
        self.fh.close()


def clean_artifacts(project: Path, older_than_s: float, now: float | None = None) -> list[str]:
    """Remove artifacts older than ``older_than_s``; returns removed relative paths."""
    root = artifacts_root(project)
    if not root.is_dir():
        return []
    now = now or time.time()
    removed: list[str] = []
    with _manifest_lock, _file_lock(root / ".manifest.lock"):
        data = read_manifest(root)
        keep = []
        for entry in data["artifacts"]:
            p = root / entry.get("path", "")
            try:
                age = now - p.stat().st_mtime
            except FileNotFoundError:
                continue
            if age > older_than_s:
                if p.is_dir():
                    shutil.rmtree(p, ignore_errors=True)
                else:
                    p.unlink(missing_ok=True)
                removed.append(entry["path"])
            else:
                keep.append(entry)
        data["artifacts"] = keep
        atomic_write(root / "manifest.json", json.dumps(data, indent=2) + "\n")
        gen = root / "generated-tests"
        if gen.is_dir():
            for d in gen.iterdir():
                if d.is_dir() and not any(d.iterdir()):
                    d.rmdir()
    return removed
