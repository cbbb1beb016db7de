"""What SuperQode wrote as a fix, sealed outside the project.

The reports and patches under ``<project>/.superqode`` are the project's
files: anything can rewrite them after the session (a later session's code,
a repository that ships a forged report). Applying a fix is the one write to
the user's files SuperQode makes, so it applies only bytes it wrote itself:
when a session saves its fixes, the sha256 of each patch's bytes is kept in
``$SUPERQODE_HOME/patch-hashes/<repo-key>/<session-id>.json`` (one file per
session, written once: thousands of fixes cost one small write), and
:func:`check` compares a patch with it before anything is applied.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Mapping
from pathlib import Path

from .artifacts import atomic_write
from .paths import SESSION_ID_RE, home, repo_key


def _file(project: Path, session_id: str) -> Path | None:
    if not SESSION_ID_RE.match(session_id or ""):
        return None  # a forged report's id is never a path
    return home() / "patch-hashes" / repo_key(project) / f"{session_id}.json"


def digest(diff: str) -> str:
    return hashlib.sha256(diff.encode("utf-8", "surrogateescape")).hexdigest()


def seal(project: Path, session_id: str, patches: Mapping[str, str]) -> None:
    """Record ``patch id -> diff`` of a session (added to what it has)."""
    path = _file(project, session_id)
    if path is None or not patches:
        return
    known = _load(path)
    known.update({pid: digest(diff) for pid, diff in patches.items()})
    atomic_write(path, json.dumps(known, indent=0, sort_keys=True) + "\n")


def drop(project: Path, session_ids: list[str]) -> None:
    """Forget the seals of runs whose patches are gone (the artifacts'
    retention): one small file each, else kept for ever."""
    for sid in session_ids:
        path = _file(project, sid)
        if path is not None:
            path.unlink(missing_ok=True)


def _load(path: Path) -> dict[str, str]:
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return {}
    return {k: v for k, v in data.items() if isinstance(k, str) and isinstance(v, str)} \
        if isinstance(data, dict) else {}


def check(project: Path, session_id: str, patch_id: str, diff: str) -> str | None:
    """None when ``diff`` is the patch ``patch_id`` that session wrote for
    ``project``; else why not, one line."""
    path = _file(project, session_id)
    want = _load(path).get(patch_id) if path is not None else None
    if want is None:
        return (f"{patch_id}: SuperQode has no record of writing this patch (session "
                f"{session_id!r}); the report is not one of its own")
    if digest(diff) != want:
        return (f"{patch_id}: the stored patch changed after session {session_id} wrote it "
                "(sha256 differs)")
    return None
