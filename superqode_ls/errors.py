"""The one error model: every error a user may see derives from
``SuperQodeError`` and carries a one-line message and the exit code ``superqe``
ends with (docs/cli.md: 2 usage or configuration, 3 the session failed).

The bottom layer on purpose (stdlib only, imports nothing of the package):
``config``, ``models``, ``workspace`` and everything above derive from it, and
``cli`` maps it to a line on stderr and an exit code in one place.
"""

from __future__ import annotations

EXIT_OK, EXIT_FINDINGS, EXIT_USAGE, EXIT_FAILED = 0, 1, 2, 3
EXIT_INTERRUPTED = 130


class SuperQodeError(Exception):
    """A user-facing error: ``message`` is one line, ``exit_code`` one of
    docs/cli.md's. Subclasses set the code; an instance may override it."""

    exit_code: int = EXIT_USAGE
    # False: the message is printed as is, without ``superqe: `` (a line that
    # editors and scripts match exactly, e.g. "not a Git repository").
    prefixed: bool = True

    def __init__(self, message: str = "", *, exit_code: int | None = None):
        super().__init__(message)
        if exit_code is not None:
            self.exit_code = exit_code

    @property
    def message(self) -> str:
        """The first non-empty line (a multi-line cause never reaches the user raw)."""
        for line in str(self).splitlines():
            if line.strip():
                return line.strip()
        return type(self).__name__

    def cli_line(self) -> str:
        return f"superqe: {self.message}" if self.prefixed else self.message


class UsageError(SuperQodeError):
    """Bad command-line input: nothing was created (exit 2)."""

    exit_code = EXIT_USAGE
