"""The oldest Python a project declares it supports, as ruff's
``--target-version`` (``py37``...): fixes must not rewrite code into syntax
the project's declared Python cannot run (``Optional[int]`` -> ``int | None``
for a project that still supports 3.6).

Read from, first found: ``[project].requires-python`` (pyproject.toml),
``[options].python_requires`` (setup.cfg), ``.python-version``. Nothing is
passed when the project's ruff configuration sets ``target-version`` itself
(ruff then knows), or when nothing is declared.
"""

from __future__ import annotations

import configparser
import re
import tomllib
from pathlib import Path
from typing import Any

from packaging.specifiers import InvalidSpecifier, SpecifierSet
from packaging.version import Version

# ruff's oldest target: a project declaring an older Python gets this one
# (closest to what it asks; ruff would otherwise assume a newer default).
_RUFF_MIN = (3, 7)
_RUFF_MAX = (3, 13)  # the newest every supported ruff (>=0.5) knows
_CANDIDATES = [(3, m) for m in range(20)] + [(2, 7)]


def _toml(path: Path) -> dict[str, Any]:
    """The file's TOML ({} when it is missing or not TOML), to be read, not
    changed: the lint role reads pyproject.toml three times per run (its
    target, its rules), each parse some 5 ms on a large project's, so the
    last few parses are kept, each for exactly the bytes it was made from
    (a time stamp may not change between two quick edits)."""
    try:
        with open(path, "rb") as fh:
            raw = fh.read()
        name = str(path)
        held = _PARSED.get(name)
        if held is not None and held[0] == raw:
            return held[1]
        data = tomllib.loads(raw.decode())
    except (OSError, tomllib.TOMLDecodeError, UnicodeDecodeError):
        return {}
    if len(_PARSED) >= _PARSED_MAX:
        _PARSED.pop(next(iter(_PARSED)), None)
    _PARSED[name] = (raw, data)
    return data


# path -> (the bytes parsed, their TOML); the oldest goes first.
_PARSED: dict[str, tuple[bytes, dict[str, Any]]] = {}
_PARSED_MAX = 8


def ruff_sets_target(root: Path) -> bool:
    """Whether the project's own ruff configuration names a target version."""
    for name in ("ruff.toml", ".ruff.toml"):
        if "target-version" in _toml(root / name):
            return True
    ruff = _toml(root / "pyproject.toml").get("tool", {}).get("ruff", {})
    return isinstance(ruff, dict) and "target-version" in ruff


def declared_python(root: Path) -> str | None:
    """The project's declared Python requirement (a specifier or a version)."""
    project = _toml(root / "pyproject.toml").get("project", {})
    if isinstance(project, dict) and isinstance(project.get("requires-python"), str):
        return project["requires-python"]
    cfg = configparser.ConfigParser(interpolation=None)
    try:
        cfg.read(root / "setup.cfg", encoding="utf-8")
        value = cfg.get("options", "python_requires", fallback=None)
    except (configparser.Error, UnicodeDecodeError):
        value = None
    if value and value.strip():
        return value.strip()
    try:
        text = (root / ".python-version").read_text(encoding="utf-8").split()
    except (OSError, UnicodeDecodeError):
        return None
    return text[0] if text else None


def minimum_python(requirement: str) -> tuple[int, int] | None:
    """The oldest X.Y a requirement (``>=3.6``, ``~=3.8``, ``3.6.15``) allows."""
    requirement = requirement.strip()
    m = re.fullmatch(r"(?:python-?)?(\d+)\.(\d+)(?:\.\d+)?", requirement)
    if m:  # a bare version (.python-version): that interpreter
        return int(m.group(1)), int(m.group(2))
    try:
        spec = SpecifierSet(requirement)
    except InvalidSpecifier:
        return None
    for major, minor in sorted(_CANDIDATES):
        # Any patch release of X.Y allowed counts (">=3.6.2" still means 3.6).
        if any(spec.contains(Version(f"{major}.{minor}.{patch}"), prereleases=True)
               for patch in (0, 99)):
            return major, minor
    return None


def ruff_target(root: Path) -> str | None:
    """``--target-version`` for ruff, or None to leave ruff to its configuration."""
    if ruff_sets_target(root):
        return None
    declared = declared_python(root)
    low = minimum_python(declared) if declared else None
    if low is None:
        return None
    low = min(max(low, _RUFF_MIN), _RUFF_MAX)
    return f"py{low[0]}{low[1]}"
