"""When a run gets a sparse sandbox (workspace/sparse.py): the one set of
rules the pipeline (one session) and the language server (which may split a
file run in two) both follow."""

from __future__ import annotations

from pathlib import Path

from ..config import Config
from ..workspace import sparse
from .roles import role_class


def allowed(project: Path, files: list[str] | None, overlays: dict[str, bytes], config: Config,
            *, isolation: str | None, base_ref: str | None = None) -> bool:
    """Whether the run's shape allows one: a few files, isolation left to
    SuperQode, the current state (not a base commit, not HEAD's files)."""
    if isolation not in (None, "auto") or config.workspace.isolation != "auto" or base_ref:
        return False
    if not config.workspace.copy_uncommitted:  # the sandbox is to hold HEAD's files
        return False
    return sparse.eligible(project, files, overlays)


def split(names: list[str], config: Config) -> tuple[list[str], list[str]] | None:
    """(the file-local roles, the others that can run here); None when a
    name is not a role (the session says so). A role whose tool is missing
    runs nowhere, so it is in neither list."""
    local: list[str] = []
    rest: list[str] = []
    for name in names:
        try:
            role = role_class(name)()
        except Exception:  # noqa: BLE001 - unknown or broken: the session reports it
            return None
        if role.file_local:
            local.append(name)
        elif role.unavailable(config) is None:
            rest.append(name)
    return local, rest
