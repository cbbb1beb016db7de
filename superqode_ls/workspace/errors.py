class WorkspaceError(Exception):
    """A one-line, user-facing error from the isolation engine."""
