"""The one error model: every error a user may see derives from
``SuperQodeError`` and carries a one-line message and the exit code ``superqe``
ends with (docs/cli.md: 2 usage or configuration, 3 the session failed).

``user_line`` is the one place an exception becomes the line the user reads:
``cli`` prints it on stderr (after ``superqe: ``, the program's name, as
every command-line tool does) with the error's exit code, and the language
server (``server/errors.py``) shows the same line in the editor. So a full
disk, a bad ``superqode.yaml`` or a failed tool reads the same in both.

The bottom layer on purpose (stdlib only, imports nothing of the package):
``config``, ``models``, ``workspace`` and everything above derive from it.
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
        line = user_line(self)
        return f"superqe: {line}" if self.prefixed else line


def user_line(exc: BaseException) -> str:
    """The user's one line for ``exc``, the same in the editor and the CLI.

    A ``SuperQodeError`` is written for the user: its first line as is. Any
    other exception is a bug (or a cause nobody wrapped): its type leads the
    line, which helps report it, and a multi-line text (a traceback, a
    tool's full output) is cut to its first line."""
    if isinstance(exc, SuperQodeError):
        return exc.message
    name = type(exc).__name__
    for line in str(exc).splitlines():
        if line.strip():
            return f"{name}: {line.strip()}"
    return name


def is_expected(exc: BaseException) -> bool:
    """A failure the user can act on (no traceback in a log for it): an
    error of the model, or the system refusing (a full disk, a permission)."""
    return isinstance(exc, (SuperQodeError, OSError))


class UsageError(SuperQodeError):
    """Bad command-line input: nothing was created (exit 2)."""

    exit_code = EXIT_USAGE
