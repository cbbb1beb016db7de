"""Baseline files: findings already accepted, so a run shows only new ones.

A finding's id is built from tool, rule, file and the flagged text, not the
line number (``Finding.with_stable_id``), so a baselined problem stays
baselined when code above it moves. The file counts ids: two identical lines
with the same problem are two entries, and a third copy shows up as new.
"""

from __future__ import annotations

import json
from collections import Counter
from datetime import UTC, datetime
from pathlib import Path

from ..config import ConfigError
from ..models import Finding
from ..workspace.artifacts import write_file

VERSION = 1
DEFAULT_PATH = Path(".superqode") / "baseline.json"


def resolve_path(project: Path, given: Path | str | None, configured: str | None) -> Path | None:
    """The baseline file to use: the flag first, then ``qe.baseline``; relative
    paths are relative to the project."""
    chosen = given if given is not None else configured
    if chosen is None:
        return None
    p = Path(chosen).expanduser()
    return p if p.is_absolute() else Path(project) / p


def load(path: Path) -> Counter[str]:
    """Counts of baselined finding ids; raises ConfigError with one line."""
    try:
        data = json.loads(Path(path).read_text(encoding="utf-8"))
    except FileNotFoundError:
        raise ConfigError(f"baseline file not found: {path} (create it with --update-baseline)") from None
    except (OSError, UnicodeDecodeError) as e:
        raise ConfigError(f"baseline file {path}: cannot read ({e})") from None
    except ValueError as e:
        raise ConfigError(f"baseline file {path}: not valid JSON ({e})") from None
    if not isinstance(data, dict) or not isinstance(data.get("findings"), list):
        raise ConfigError(f"baseline file {path}: expected an object with a 'findings' list")
    counts: Counter[str] = Counter()
    for i, entry in enumerate(data["findings"]):
        if not isinstance(entry, dict) or not isinstance(entry.get("id"), str):
            raise ConfigError(f"baseline file {path}: findings[{i}] has no 'id'")
        counts[entry["id"]] += 1
    return counts


def check_writable(path: Path) -> None:
    """Fail before a session starts rather than after it ran for nothing."""
    parent = Path(path).parent
    if parent.exists() and not parent.is_dir():
        raise ConfigError(f"baseline file {path}: {parent} is not a directory")
    if Path(path).is_dir():
        raise ConfigError(f"baseline file {path} is a directory")


def save(path: Path, findings: list[Finding]) -> Path:
    entries = [
        {
            "id": f.id,
            "rule_id": f.rule_id,
            "tool": f.tool,
            "file": f.file,
            "line": f.range.start_line if f.range else None,
            "title": f.title,
        }
        for f in sorted(findings, key=lambda f: (f.file or "", f.range.start_line if f.range else 0, f.id))
    ]
    doc = {
        "version": VERSION,
        "created": datetime.now(UTC).isoformat(timespec="seconds"),
        "findings": entries,
    }
    return write_file(Path(path), json.dumps(doc, indent=2, ensure_ascii=False) + "\n")


def add(path: Path, findings: list[Finding]) -> Path:
    """Accept ``findings`` into the baseline at ``path`` (created if missing),
    keeping the entries it has: the editor's "ignore this finding"."""
    kept: list[dict] = []
    if Path(path).exists():
        load(path)  # a broken file is reported, never overwritten
        kept = json.loads(Path(path).read_text(encoding="utf-8"))["findings"]
    check_writable(path)
    entries = kept + [
        {"id": f.id, "rule_id": f.rule_id, "tool": f.tool, "file": f.file,
         "line": f.range.start_line if f.range else None, "title": f.title}
        for f in findings
    ]
    doc = {"version": VERSION, "created": datetime.now(UTC).isoformat(timespec="seconds"),
           "findings": entries}
    return write_file(Path(path), json.dumps(doc, indent=2, ensure_ascii=False) + "\n")
