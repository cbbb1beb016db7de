"""Arguments of ``workspace/executeCommand``: one object (``[{...}]``), checked
by a pydantic model; bad arguments get an InvalidParams error response, never
a crash."""

from __future__ import annotations

from typing import Any, TypeVar

from pydantic import BaseModel, ConfigDict, ValidationError
from pygls.exceptions import JsonRpcInvalidParams


class Args(BaseModel):
    model_config = ConfigDict(extra="ignore", defer_build=True)


A = TypeVar("A", bound=Args)


def parse(model: type[A], args: tuple[Any, ...], command: str) -> A:
    raw: Any = args[0] if args else {}
    if raw is None:
        raw = {}
    if isinstance(raw, str):  # a bare URI or id, as some editors pass it
        first = next(iter(model.model_fields))
        raw = {first: raw}
    if not isinstance(raw, dict):
        raise JsonRpcInvalidParams(f"{command}: expected an object argument")
    try:
        return model.model_validate(raw)
    except ValidationError as e:
        err = e.errors()[0]
        loc = ".".join(str(p) for p in err["loc"]) or "argument"
        raise JsonRpcInvalidParams(f"{command}: {loc}: {err['msg']}") from None
