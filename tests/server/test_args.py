"""server/args.py: workspace/executeCommand arguments, checked; bad ones are
an InvalidParams error with one line naming the field, never a crash."""

from __future__ import annotations

import pytest
from pygls.exceptions import JsonRpcInvalidParams

from superqode_ls.server.args import Args, parse


class RunArgs(Args):
    uri: str | None = None
    roles: list[str] | None = None


def test_an_object_a_bare_string_or_nothing():
    assert parse(RunArgs, ({"uri": "file:///a.py", "roles": ["lint_tester"]},), "x").roles == ["lint_tester"]
    assert parse(RunArgs, ("file:///a.py",), "x").uri == "file:///a.py"  # as some editors pass it
    assert parse(RunArgs, (), "x") == RunArgs()
    assert parse(RunArgs, (None,), "x") == RunArgs()
    assert parse(RunArgs, ({"unknown": 1},), "x") == RunArgs()  # extra keys are ignored


@pytest.mark.parametrize(
    "args,needle",
    [(([1, 2],), "superqode.runQE: expected an object argument"),
     ((7,), "superqode.runQE: expected an object argument"),
     (({"roles": "lint_tester"},), "superqode.runQE: roles: ")],
)
def test_bad_arguments_are_invalid_params_naming_the_field(args, needle):
    with pytest.raises(JsonRpcInvalidParams) as err:
        parse(RunArgs, args, "superqode.runQE")
    assert needle in str(err.value.message) and "\n" not in str(err.value.message)
