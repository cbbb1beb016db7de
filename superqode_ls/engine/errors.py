"""The engine errors a front end tells apart by type (light to import: the
server loads this at start). All derive from
``superqode_ls.errors.SuperQodeError`` (message + exit code); a run's
``SessionFailed`` is in ``engine.runs``."""

from __future__ import annotations

from ..workspace.errors import WorkspaceError
from ..workspace.git import GitError

__all__ = ["GitError", "WorkspaceError"]
