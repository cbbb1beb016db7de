"""server/errors.py: what the editor sees of an error, in one line."""

from __future__ import annotations

from pygls.exceptions import JsonRpcInvalidParams

from superqode_ls.server import errors
from superqode_ls.workspace.errors import WorkspaceError


def test_a_user_error_is_shown_as_written_first_line_only():
    e = WorkspaceError("not a git repository: /tmp/x\n(details for the log)")
    assert errors.user_message(e) == "not a git repository: /tmp/x"
    assert errors.is_user_error(e) and errors.is_user_error(OSError("disk full"))
    resp = errors.request_error(e)
    assert isinstance(resp, errors.RequestFailed) and resp.CODE == -32803
    assert resp.message == "not a git repository: /tmp/x"


def test_a_bug_is_named_by_its_type_and_protocol_errors_pass_through():
    assert errors.user_message(KeyError("uri")) == "KeyError: 'uri'"
    assert errors.user_message(RuntimeError()) == "RuntimeError"
    assert not errors.is_user_error(RuntimeError("x"))
    bad = JsonRpcInvalidParams("superqode.runQE: roles: bad")
    assert errors.request_error(bad) is bad
    assert errors.user_message(bad) == "superqode.runQE: roles: bad"
