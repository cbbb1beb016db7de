"""Re-running a finding's reproducer: the command the agent said fails while
the problem exists, with the files the agent wrote for it put back."""

from __future__ import annotations

from pathlib import Path

from ..models import Finding
from .confine import Refused, resolve_inside
from .tools import REPRODUCER_PREFIX


def reproducer(f: Finding) -> str | None:
    for ev in f.evidence:
        if ev.message.startswith(REPRODUCER_PREFIX):
            return ev.message[len(REPRODUCER_PREFIX) :]
    return None


def place(root: Path, files: dict[str, str]) -> list[Path]:
    """Write the ``files`` the sandbox no longer has; what was made, to undo."""
    made: list[Path] = []
    for rel, text in files.items():
        try:
            p = resolve_inside(root, rel, for_write=True)
        except Refused:
            continue
        if p.exists():
            continue
        missing = [d for d in [*reversed(p.parents)] if not d.exists()]
        p.parent.mkdir(parents=True, exist_ok=True)
        p.write_text(text, encoding="utf-8")
        made.extend([p, *reversed(missing)])
    return made


def unplace(made: list[Path]) -> None:
    for p in made:
        try:
            if p.is_dir():
                p.rmdir()
            else:
                p.unlink()
        except OSError:
            pass
