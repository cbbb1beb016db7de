"""Editor settings, section ``superqode``: from ``initializationOptions``, then
``workspace/configuration`` per folder, refreshed on ``didChangeConfiguration``.

An invalid value is reported in one line and the previous valid settings stay.

``Settings`` is a plain frozen dataclass, and a payload whose values already
have their exact types (what editors send) is taken without pydantic: the
server parses settings at ``initialize``, on the way to the first file's
findings, and building the pydantic model there cost CPU the first open
waited for. Anything else (a value to coerce, a wrong one) goes through the
pydantic model ``_Validated``, built at that first use, which decides exactly
as before and words the one-line error.
"""

from __future__ import annotations

import dataclasses
import functools
from typing import Any, Literal, get_args

from ..errors import SuperQodeError

SECTION = "superqode"

Mode = Literal["quick", "deep"]
Isolation = Literal["auto", "worktree", "snapshot"]


@dataclasses.dataclass(frozen=True)
class Settings:
    mode: Mode = "quick"
    roles: list[str] | None = None
    runOnSave: bool = False
    isolation: Isolation | None = None
    trustedFolders: list[str] = dataclasses.field(default_factory=list)
    provider: str | None = None
    # The interpreter the editor selected for this folder (VS Code's Python
    # extension or any client's own setting).
    python: str | None = None
    # Fix all takes fixes ruff marks unsafe too (off: they are offered one by
    # one, labelled, as ruff's own extension does).
    fixAllUnsafe: bool = False
    # The read-only analyzers (ruff, bandit, secrets) run by themselves on the
    # files the user looks at: on open, on save, on a pause in typing.
    lintOnOpen: bool = True
    lintOnSave: bool = True
    lintOnType: bool = True


FIELDS = {f.name for f in dataclasses.fields(Settings)}


def _strs(v: Any) -> bool:
    return type(v) is list and all(type(x) is str for x in v)


# Each field's check for a value pydantic would take unchanged; a value that
# fails it is left to pydantic (which may still coerce it, or reject it).
_EXACT = {
    "mode": lambda v: type(v) is str and v in get_args(Mode),
    "roles": lambda v: v is None or _strs(v),
    "isolation": lambda v: v is None or (type(v) is str and v in get_args(Isolation)),
    "trustedFolders": _strs,
    "provider": lambda v: v is None or type(v) is str,
    "python": lambda v: v is None or type(v) is str,
    **{name: (lambda v: type(v) is bool) for name in
       ("runOnSave", "fixAllUnsafe", "lintOnOpen", "lintOnSave", "lintOnType")},
}
assert set(_EXACT) == FIELDS, "every setting has its exact check"


class SettingsError(SuperQodeError, ValueError):
    """Settings from the client that cannot be used (one line; exit 2 as configuration)."""


@functools.cache
def _validated() -> type:
    """The pydantic model that decides a payload the fast path does not take:
    the same fields, types and defaults as ``Settings``."""
    from typing import get_type_hints

    from pydantic import ConfigDict, Field, create_model

    hints = get_type_hints(Settings)
    fields = {f.name: (hints[f.name], f.default if f.default_factory is dataclasses.MISSING
                       else Field(default_factory=f.default_factory))
              for f in dataclasses.fields(Settings)}
    return create_model("Settings", __config__=ConfigDict(extra="ignore", frozen=True), **fields)


def section_of(raw: Any) -> dict[str, Any]:
    """Accept both ``{"superqode": {...}}`` and the bare section."""
    if raw is None:
        return {}
    if not isinstance(raw, dict):
        raise SettingsError(f"settings must be an object, got {type(raw).__name__}")
    if isinstance(raw.get(SECTION), dict):
        return raw[SECTION]
    return raw


def parse(raw: Any, base: Settings | None = None) -> Settings:
    """Settings from a client payload layered over ``base``; SettingsError on bad input."""
    data = section_of(raw)
    merged = {**(dataclasses.asdict(base) if base else {}),
              **{k: v for k, v in data.items() if v is not None}}
    known = {k: v for k, v in merged.items() if k in FIELDS}  # others are ignored
    if all(_EXACT[k](v) for k, v in known.items()):
        return Settings(**{k: list(v) if type(v) is list else v for k, v in known.items()})
    from pydantic import ValidationError

    try:
        checked = _validated().model_validate(merged)
    except ValidationError as e:
        first = e.errors()[0]
        loc = ".".join(str(p) for p in first["loc"])
        raise SettingsError(f"superqode.{loc}: {first['msg']} (got {first.get('input')!r})") from None
    return Settings(**checked.model_dump())
