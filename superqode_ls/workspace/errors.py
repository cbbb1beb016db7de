"""The isolation engine's errors, in the package's one error model
(``superqode_ls.errors``)."""

from __future__ import annotations

from ..errors import EXIT_USAGE, SuperQodeError


class WorkspaceError(SuperQodeError):
    """A one-line, user-facing error from the isolation engine: the sandbox
    could not be made or used as asked (exit 2, nothing left behind)."""

    exit_code = EXIT_USAGE


class CreationAborted(WorkspaceError):
    """Sandbox creation stopped on request (Ctrl-C); everything made so far
    is gone again and ``verification`` says whether the project is as before."""

    verification = None
