"""A project as the front ends see it: its root, its artifacts folder, the
watcher on its files, SuperQode's home."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from ..workspace.watcher import Watcher  # the handle ``watch`` returns


def project_root(path: str | Path = ".") -> Path:
    """The project a path names (the git repository holding it, else the
    folder); WorkspaceError when there is none."""
    from ..workspace.session import resolve_project

    return resolve_project(Path(path))[0]


def repo_root(path: str | Path) -> Path | None:
    """The git repository holding ``path`` (None outside one)."""
    from ..workspace.git import repo_root as _repo_root

    return _repo_root(Path(path))


def check_home() -> None:
    """Refuse, in one line, a ``$SUPERQODE_HOME`` that cannot hold sessions."""
    from ..workspace.paths import check_home as _check_home

    _check_home()


def write_file(path: Path, text: str) -> None:
    """Write a report file whole or not at all (new file + rename)."""
    from ..workspace.artifacts import atomic_write

    atomic_write(path, text)


def files_under(folder: Path) -> list[str]:
    """Relative POSIX paths of the files a run takes under ``folder``
    (the analyzers' skipped folders left out)."""
    from ..qe.roles._common import walk_files

    return walk_files(folder)


def artifacts(project: Path, warnings: list[str] | None = None) -> list[dict[str, Any]]:
    """The manifest entries of the project's ``.superqode/qe-artifacts``."""
    from ..workspace.artifacts import read_manifest
    from ..workspace.paths import artifacts_root

    return read_manifest(artifacts_root(project), warnings)["artifacts"]


def clean_artifacts(project: Path, older_than_s: float,
                    warnings: list[str] | None = None) -> list[str]:
    """Remove artifacts older than ``older_than_s``; their relative paths."""
    from ..workspace.artifacts import clean_artifacts as _clean

    return _clean(project, older_than_s, warnings=warnings)


def report_files(project: Path, rel: tuple[str, ...]) -> list[str]:
    """Names in a folder of the project's ``.superqode`` (``rel`` below the
    project), listed without following a link the project planted."""
    from ..workspace import ownfolder

    with ownfolder.folder(project, rel) as fd:
        return ownfolder.names_at(fd) if fd is not None else []


def watch(root: Path, on_change: Callable[[Any], None]) -> Watcher:
    """Start watching ``root`` (debounced batches of changed paths to
    ``on_change``, on the watcher's thread); ``.stop()`` ends it."""
    from ..workspace.watcher import Watcher

    return Watcher(root, on_change=on_change).start()
