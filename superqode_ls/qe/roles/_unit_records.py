"""What the unit role reads back from a pytest run: the recorder's JSON
lines, traceback paths made sandbox-relative, the location of a collection
error, a failure message cut to what a report shows."""

from __future__ import annotations

import functools
import json
import os
import re
from pathlib import Path
from typing import Any

from ...models import Range
from ._common import SKIP_DIRS

_FILE_LINE = re.compile(
    r'File "(?P<path>[^"]+)", line (?P<line>\d+)|^(?P<p2>[^\s:]+\.py):(?P<l2>\d+)', re.MULTILINE
)


def read_records(path: Path) -> list[dict[str, Any]]:
    out = []
    try:
        text = path.read_text(encoding="utf-8")
    except OSError:
        return []
    for line in text.splitlines():
        try:
            rec = json.loads(line)
        except ValueError:
            continue  # a line cut short by a kill at the deadline
        if isinstance(rec, dict):
            out.append(rec)
    return out


def read_progress(path: Path) -> dict[str, Any] | None:
    """The recorder's progress file (tests collected, tests done) as a
    ``progress`` record, or None when the suite never got that far."""
    try:
        fields = path.read_bytes().split()
        collected, done = int(fields[0]), int(fields[1])
    except (OSError, ValueError, IndexError):
        return None
    return {"kind": "progress", "collected": collected, "done": done}


def read_durations(path: Path) -> tuple[dict[str, float], str | None]:
    """The recorder's seconds per test module it finished, and the module
    it was in when the run stopped, read as data: ({}, None) when there is
    none or it is not what the recorder writes."""
    try:
        raw = json.loads(path.read_bytes())
    except (OSError, ValueError):
        return {}, None
    done = raw.get("done") if isinstance(raw, dict) else None
    if not isinstance(done, dict):
        return {}, None
    running = raw.get("running")
    return ({k: float(v) for k, v in done.items()
             if isinstance(k, str) and isinstance(v, (int, float)) and v >= 0},
            running if isinstance(running, str) else None)


def progress_said(records: list[dict[str, Any]]) -> str | None:
    """"1,234 of 2,016 tests run" from a stopped run's progress record."""
    rec = next((r for r in records if r.get("kind") == "progress"), None)
    if rec is None or not rec.get("collected"):
        return None
    return f"{rec['done']:,} of {rec['collected']:,} tests run"


def project_rel(root: Path, path: str) -> str | None:
    """Sandbox-relative path of a traceback frame in project code, else None."""
    if not path:
        return None
    try:
        rel = Path(os.path.realpath(path)).relative_to(_real(root))
    except (ValueError, OSError):
        return None
    if any(part in SKIP_DIRS for part in rel.parts[:-1]):
        return None
    return rel.as_posix()


def collect_location(root: Path, text: str, default: str | None) -> tuple[str | None, int]:
    for m in reversed(list(_FILE_LINE.finditer(text))):
        path = m.group("path") or m.group("p2")
        line = int(m.group("line") or m.group("l2"))
        rel = project_rel(root, path if Path(path).is_absolute() else str(root / path))
        if rel is not None:
            return rel, line
    return default, 1


def short_message(text: str) -> str:
    lines = [line.rstrip() for line in text.strip().splitlines() if line.strip()]
    return "\n".join(lines[:8])[:1500] or "test failed"


def line_range(text: str | None, line: int) -> Range:
    """The code on the line, without its indentation."""
    line = max(1, line)
    if not text or not text.strip():
        return Range(start_line=line)
    start = len(text) - len(text.lstrip()) + 1
    return Range(start_line=line, start_col=start, end_line=line, end_col=len(text.rstrip()) + 1)


@functools.lru_cache(maxsize=64)
def _real(root: Path) -> Path:
    return Path(os.path.realpath(root))


def clipped(text: str, size: int) -> str:
    """``text`` cut to at most ``size`` characters, back to where no bracket
    or quote is left open (one line that reads as a whole, balanced)."""
    if len(text) <= size:
        return text
    depth, quoted, last = 0, False, 0
    for i, c in enumerate(text[:size]):
        if c == '"':
            quoted = not quoted
        elif not quoted and c in "([{":
            depth += 1
        elif not quoted and c in ")]}":
            depth = max(depth - 1, 0)
        if depth == 0 and not quoted and (c == " " or c in ")]}\""):
            last = i + (c != " ")
    return text[:last].rstrip(" ,;:") + "..."
