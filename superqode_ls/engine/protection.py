"""The barrier level sessions get on this machine: what ``superqe status``
prints and what the editor says once when its first run starts."""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from ..config import Config


@dataclass(frozen=True)
class Protection:
    level: str  # the one line: "namespaces + Landlock", "Landlock only ...", "guard only"
    kernel_barrier: bool  # Landlock is there (else the git guard alone protects the project)
    namespaces: bool  # sessions run in the namespace sandbox
    namespaces_missing: str | None  # why not, when not


def protection(config: Config | None = None) -> Protection:
    """The level with ``config``'s network opt-in (None: the machine's own)."""
    from ..workspace import landlock, namespaces

    active = namespaces.active()
    return Protection(
        level=namespaces.protection_level(config),
        kernel_barrier=landlock.abi() is not None,
        namespaces=active,
        namespaces_missing=None if active else namespaces.unavailable_reason(),
    )
