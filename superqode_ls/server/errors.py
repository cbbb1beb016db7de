"""The one place where errors become what the editor sees.

A request that cannot be done answers with LSP ``RequestFailed`` and one line;
work that runs outside a request (a session) shows the same line with
``window/showMessage``. The engine's user errors (``WorkspaceError`` and the
errors that carry a one-line message for the user) are mapped here and
nowhere else, so a new engine error needs one change.
"""

from __future__ import annotations

from pygls.exceptions import JsonRpcException

from ..config import ConfigError
from ..engine.errors import GitError, WorkspaceError

# Errors whose text is written for the user: shown as they are, first line only.
USER_ERRORS: tuple[type[Exception], ...] = (WorkspaceError, ConfigError, GitError)


class RequestFailed(JsonRpcException):
    """LSP ``RequestFailed``: valid request, but it cannot be done now."""

    CODE = -32803
    MESSAGE = "Request failed"


def fail(message: str) -> RequestFailed:
    return RequestFailed(message)


def user_message(exc: BaseException) -> str:
    """One line for the user: an engine user error as written, anything else
    prefixed with its type (it is a bug, and the type helps report it)."""
    if isinstance(exc, JsonRpcException):
        return str(exc.message or exc.MESSAGE)
    text = str(exc).strip()
    first = text.splitlines()[0] if text else ""
    if isinstance(exc, USER_ERRORS):
        return first or type(exc).__name__
    return f"{type(exc).__name__}: {first}" if first else type(exc).__name__


def request_error(exc: BaseException) -> JsonRpcException:
    """The error response for ``exc`` raised while answering a request."""
    if isinstance(exc, JsonRpcException):
        return exc
    return RequestFailed(user_message(exc))


def is_user_error(exc: BaseException) -> bool:
    """An expected failure the user can act on (no traceback in the log)."""
    return isinstance(exc, (*USER_ERRORS, OSError))
