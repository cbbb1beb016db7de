"""The one place where errors become what the editor sees.

A request that cannot be done answers with LSP ``RequestFailed`` and one line;
work that runs outside a request (a session) shows the same line with
``window/showMessage``. Errors are mapped by the one base class,
``superqode_ls.errors.SuperQodeError``, and the line is the package's
``user_line``: the very line ``superqe`` prints for the same error, so a new
engine error needs no change here.
"""

from __future__ import annotations

from pygls.exceptions import JsonRpcException

from ..errors import is_expected, user_line


class RequestFailed(JsonRpcException):
    """LSP ``RequestFailed``: valid request, but it cannot be done now."""

    CODE = -32803
    MESSAGE = "Request failed"


def fail(message: str) -> RequestFailed:
    return RequestFailed(message)


def user_message(exc: BaseException) -> str:
    """One line for the user: ``user_line`` (an engine error as written,
    anything else prefixed with its type); a protocol error's own message."""
    if isinstance(exc, JsonRpcException):
        return str(exc.message or exc.MESSAGE)
    return user_line(exc)


def request_error(exc: BaseException) -> JsonRpcException:
    """The error response for ``exc`` raised while answering a request."""
    if isinstance(exc, JsonRpcException):
        return exc
    return RequestFailed(user_message(exc))


def is_user_error(exc: BaseException) -> bool:
    """An expected failure the user can act on (no traceback in the log)."""
    return is_expected(exc)
