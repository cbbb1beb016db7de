"""The test environment a project's tox configuration declares.

Projects that test with tox list their test dependencies there and nowhere
else (pytest-asyncio, pytest-socket, mocking libraries): without them the
suite fails for the environment's reason, not the code's. Read here: the
``[testenv]`` section's ``deps`` and ``extras`` (tox's base for every run
environment) from ``tox.ini``, ``setup.cfg``'s tox sections, or
``pyproject.toml`` (``legacy_tox_ini``, or tox 4's ``env_run_base``), in
tox's own order. Only what installs the same everywhere is taken: PEP 508
requirements, ``-r`` files inside the project, ``.[extras]``; a line bound to
a factor (``py38: x``), a substitution other than ``{[section]deps}`` or
``{toxinidir}``, and any other option are left out.
"""

from __future__ import annotations

import configparser
import re
from dataclasses import dataclass
from pathlib import Path, PurePosixPath

from .pyenv_read import pep508, read_text, subtable

__all__ = ["ToxEnv", "tox_testenv"]

_FACTOR = re.compile(r"^!?[\w.{},-]+:\s")  # "py38: x", "!pypy: x", "{py310,py311}: x"
_SECTION_DEPS = re.compile(r"^\{\[([^\]]+)\]deps\}$")
_SELF = re.compile(r"^(?:-e\s*)?\.(?:\[([\w.,\s-]+)\])?$")


@dataclass(frozen=True)
class ToxEnv:
    file: str  # the file read (it makes the environment's key)
    requirements: tuple[str, ...]
    requirement_files: tuple[str, ...]
    extras: tuple[str, ...]


def tox_testenv(root: Path, data: dict) -> ToxEnv | None:
    """``[testenv]``'s dependencies in ``root``; None where tox is not
    configured or its base environment declares nothing this can take."""
    parser, file = _ini(root, data)
    if parser is not None and parser.has_section("testenv"):
        section = dict(parser.items("testenv", raw=True))
        deps = _lines(parser, section.get("deps", ""), depth=2)
        extras = _words(section.get("extras", ""))
        return _made(root, file, deps, extras)
    base = subtable(data, "tool", "tox", "env_run_base")
    if base:
        deps = [d for d in base.get("deps") or [] if isinstance(d, str)]
        extras = [e for e in base.get("extras") or [] if isinstance(e, str)]
        return _made(root, "pyproject.toml", deps, extras)
    return None


def _ini(root: Path, data: dict) -> tuple[configparser.RawConfigParser | None, str]:
    for name, text in (("tox.ini", None), ("setup.cfg", None),
                       ("pyproject.toml", subtable(data, "tool", "tox").get("legacy_tox_ini"))):
        if text is None:
            if not (root / name).is_file():
                continue
            text = read_text(root / name)
            if name == "setup.cfg" and "[tox:tox]" not in text:
                continue
        if not isinstance(text, str):
            continue
        parser = configparser.RawConfigParser(strict=False, interpolation=None)
        try:
            parser.read_string(text)
        except configparser.Error:
            return None, name
        return parser, name
    return None, ""


def _lines(parser: configparser.RawConfigParser, value: str, depth: int) -> list[str]:
    out: list[str] = []
    for raw in value.splitlines():
        line = raw.split(" #", 1)[0].strip()
        if not line or line.startswith("#") or _FACTOR.match(line):
            continue
        m = _SECTION_DEPS.match(line)
        if m:
            if depth > 0 and parser.has_section(m.group(1)):
                out += _lines(parser, parser.get(m.group(1), "deps", raw=True, fallback=""),
                              depth - 1)
            continue
        out.append(line.replace("{toxinidir}/", "").replace("{toxinidir}", "."))
    return out


def _words(value: str) -> list[str]:
    return [w for w in re.split(r"[\s,]+", value) if w and not _FACTOR.match(w + " ")]


def _made(root: Path, file: str, deps: list[str], extras: list[str]) -> ToxEnv | None:
    reqs: list[str] = []
    files: list[str] = []
    wanted = [e for e in extras if re.fullmatch(r"[\w.-]+", e)]
    for dep in deps:
        if dep.startswith(("-r", "--requirement")):
            rel = re.sub(r"^(?:-r|--requirement)[ =]?\s*", "", dep)
            path = PurePosixPath(rel)
            if (rel and not path.is_absolute() and ".." not in path.parts
                    and (root / rel).is_file()):
                files.append(path.as_posix())
        elif m := _SELF.match(dep):
            wanted += [e.strip() for e in (m.group(1) or "").split(",") if e.strip()]
        elif "{" not in dep and pep508(dep):
            reqs.append(dep)
    if not (reqs or files or wanted):
        return None
    return ToxEnv(file, tuple(dict.fromkeys(reqs)), tuple(dict.fromkeys(files)),
                  tuple(dict.fromkeys(wanted)))
