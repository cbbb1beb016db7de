"""Where a session's project is: the folder asked for, the repository
holding it (the whole repository is the project), HEAD's commit, and
SuperQode's own artifact folders inside it; and the marker that names the
project in SuperQode's per-repository folder."""

from __future__ import annotations

import json
from pathlib import Path

from .artifacts import atomic_write
from .errors import WorkspaceError
from .fingerprint import OWN
from .git import repo_root, repo_root_head
from .paths import repo_dir


def write_repo_marker(project: Path) -> None:
    marker = repo_dir(project) / "repo.json"
    if not marker.exists():
        atomic_write(marker, json.dumps({"owner": "superqode-ls", "repo": str(project)}))


def resolve_project(path: Path | str) -> tuple[Path, bool]:
    """(project root, is git): a path inside a git repo means the whole repo."""
    p = _project_folder(path)
    root = repo_root(p)
    if root is not None:
        return root.resolve(), True
    return p, False


def _project_folder(path: Path | str) -> Path:
    p = Path(path).expanduser()
    if not p.exists():
        raise WorkspaceError(f"{p}: no such directory")
    if not p.is_dir():
        raise WorkspaceError(f"{p}: not a directory")
    return p.resolve()


def resolve_with_head(path: Path | str) -> tuple[Path, bool, str | None]:
    """:func:`resolve_project` and HEAD's commit (None: unborn, or no git)
    from one git process (git.repo_root_head)."""
    p = _project_folder(path)
    root, head = repo_root_head(p)
    if root is not None:
        return root.resolve(), True, head
    return p, False, None


def own_folders(root: Path, requested: Path) -> list[str]:
    """SuperQode's artifact folders in ``root``: its top-level ``.superqode``,
    and that of the folder the session was asked for when it is a folder
    inside the repository (a project's artifacts land there)."""
    own = [OWN]
    try:
        rel = requested.expanduser().resolve().relative_to(root)
    except (ValueError, OSError):
        return own
    if rel.parts:
        own.append((rel / OWN).as_posix())
    return own
