"""``superqe exec``: any command in a fresh sandbox of a project; what it
changed saved as a patch artifact; the sandbox reverted and the project
verified (or kept)."""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from ..workspace.session import IsolatedSession


@dataclass
class ExecSandbox:
    session: IsolatedSession
    project: Path

    @property
    def id(self) -> str:
        return self.session.id

    @property
    def sandbox(self) -> Path:
        return self.session.sandbox

    def command(self, cmd: list[str]) -> tuple[list[str], dict[str, str]]:
        """(argv, environment) that run ``cmd`` in the sandbox, under the
        supervisor. A Python the command starts (the project's .venv with the
        project installed editable) imports the sandbox's code, not the
        user's checkout (pyisolate)."""
        from ..workspace.proc import supervise
        from ..workspace.pyisolate import isolated_env, source_roots, write_isolation

        iso = write_isolation(self.session.private / "scratch" / "isolation")
        env = isolated_env(self.session.env(), iso, source_roots(self.session.sandbox),
                           [self.project])
        return supervise(cmd, env), env

    def save_changes(self) -> tuple[str, bool]:
        """Save what the command changed as ``<id>-exec.patch``: (the line
        saying so, whether it could be saved)."""
        from ..errors import SuperQodeError
        from ..workspace.artifacts import Artifacts
        from ..workspace.errors import WorkspaceError
        from ..workspace.git import GitError

        try:
            changes = self.session.changes_sync()
            if changes.empty:
                return "patch: none (no changes)", True
            arts = Artifacts(self.project, self.id).prepare()
            path = arts.write_patch("exec", changes.diff, files=[c.path for c in changes.changes])
            return f"patch: {path} ({len(changes.changes)} file(s) changed)", True
        except (WorkspaceError, GitError, OSError) as e:
            # The sandbox was swapped or removed, the disk is full, the home
            # went read-only: no patch, and still the revert and its verdict.
            why = ("the sandbox was removed during the session"
                   if not os.path.lexists(self.sandbox)
                   else e.message if isinstance(e, SuperQodeError) else str(e))
            return f"patch: none (the command's changes could not be saved: {why})", False

    def close(self, *, keep: bool = False) -> Any:
        """Revert (or keep) the sandbox and verify the project: the Verification."""
        return self.session.close_sync(keep=keep)


def open_sandbox(path: Path, *, isolation: str | None = None,
                 base_ref: str | None = None) -> ExecSandbox:
    """A fresh sandbox of the project at ``path`` (its configuration read,
    its ``.superqode`` checked first)."""
    from ..config import load_config
    from ..workspace.artifacts import check_superqode_dir
    from ..workspace.session import IsolatedSession, resolve_project

    project, _ = resolve_project(Path(path))
    config = load_config(project)
    check_superqode_dir(project)
    session = IsolatedSession.create_sync(project, config=config, isolation=isolation,
                                          base_ref=base_ref, kind="exec")
    return ExecSandbox(session, project)
