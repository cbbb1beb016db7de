"""Editor settings, section ``superqode``: from ``initializationOptions``, then
``workspace/configuration`` per folder, refreshed on ``didChangeConfiguration``.

An invalid value is reported in one line and the previous valid settings stay.
"""

from __future__ import annotations

from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from ..errors import SuperQodeError

SECTION = "superqode"


class Settings(BaseModel):
    model_config = ConfigDict(extra="ignore", frozen=True)

    mode: Literal["quick", "deep"] = "quick"
    roles: list[str] | None = None
    runOnSave: bool = False
    isolation: Literal["auto", "worktree", "snapshot"] | None = None
    trustedFolders: list[str] = Field(default_factory=list)
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


class SettingsError(SuperQodeError, ValueError):
    """Settings from the client that cannot be used (one line; exit 2 as configuration)."""


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
    merged = {**(base.model_dump() if base else {}), **{k: v for k, v in data.items() if v is not None}}
    try:
        return Settings.model_validate(merged)
    except ValidationError as e:
        first = e.errors()[0]
        loc = ".".join(str(p) for p in first["loc"])
        raise SettingsError(f"superqode.{loc}: {first['msg']} (got {first.get('input')!r})") from None
