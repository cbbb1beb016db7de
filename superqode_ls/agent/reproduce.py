"""Re-running a finding's reproducer: the command the agent said fails while
the problem exists, with the files the agent wrote for it put back."""

from __future__ import annotations

from pathlib import Path

from ..models import Finding
from .confine import Refused, kind_inside, remove_inside, resolve_inside, write_inside
from .tools import REPRODUCER_PREFIX


def reproducer(f: Finding) -> str | None:
    for ev in f.evidence:
        if ev.message.startswith(REPRODUCER_PREFIX):
            return ev.message[len(REPRODUCER_PREFIX) :]
    return None


def place(root: Path, files: dict[str, str]) -> list[tuple[Path, str]]:
    """Write the ``files`` the sandbox no longer has; what was made, to undo.
    The reproducer runs between place and unplace: both go through the
    confined walk (agent/confine.py), never a path it could redirect."""
    made: list[tuple[Path, str]] = []
    for rel, text in files.items():
        try:
            p = resolve_inside(root, rel, for_write=True)
            if kind_inside(root, rel) is not None:
                continue
            missing = [d for d in [*reversed(p.parents)] if d.is_relative_to(root.resolve())
                       and kind_inside(root, d.relative_to(root.resolve()).as_posix() or ".") is None]
            _, written = write_inside(root, rel, text.encode("utf-8"))
        except (Refused, OSError):
            continue
        made.extend([(root, written),
                     *((root, d.relative_to(root.resolve()).as_posix()) for d in reversed(missing))])
    return made


def unplace(made: list[tuple[Path, str]]) -> None:
    for root, rel in made:
        try:
            remove_inside(root, rel)
        except (Refused, OSError):
            pass
