class WorkspaceError(Exception):
    """A one-line, user-facing error from the isolation engine."""


class CreationAborted(WorkspaceError):
    """Sandbox creation stopped on request (Ctrl-C); everything made so far
    is gone again and ``verification`` says whether the project is as before."""

    verification = None
