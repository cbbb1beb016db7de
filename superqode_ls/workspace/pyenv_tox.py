"""The test environment a project's tox configuration declares.

Projects that test with tox list their test dependencies there and nowhere
else (pytest-asyncio, pytest-socket, mocking libraries): without them the
suite fails for the environment's reason, not the code's. Read here: the
``[testenv]`` section's ``deps`` and ``extras`` (tox's base for every run
environment) from ``tox.ini``, ``setup.cfg``'s tox sections, or
``pyproject.toml`` (``legacy_tox_ini``, or tox 4's ``env_run_base``), in
tox's own order. Only what installs the same everywhere is taken: PEP 508
requirements, ``-r`` files inside the project, ``.[extras]``; a substitution
other than ``{[section]deps}`` or ``{toxinidir}``, and any other option are
left out. A line bound to factors (``dj42: django>=4.2,<4.3``) is taken for
one environment of ``envlist``, the first that the Python in use satisfies
(a ``pyXY`` or ``pyX.Y`` factor of its version, or none), preferring one tox runs with
``[testenv]`` itself and one named for pytest: django-constance declares
Django only that way, and without it every test is skipped.
"""

from __future__ import annotations

import configparser
import itertools
import re
import sys
from dataclasses import dataclass
from pathlib import Path, PurePosixPath

from .pyenv_read import pep508, read_text, subtable

__all__ = ["ToxEnv", "tox_commands", "tox_testenv"]

_FACTOR = re.compile(r"^[\w.{},!-]+:\s")  # "py38: x", "!pypy: x", "{py310,py311}: x"
_SECTION_DEPS = re.compile(r"^\{\[([^\]]+)\]deps\}$")
_SELF = re.compile(r"^(?:-e\s*)?\.(?:\[([\w.,\s-]+)\])?$")
# py311, py3, py3.11 (sentry-python's), py3.14t (a free-threaded build: not
# the one in use); not pypy3
_PY_FACTOR = re.compile(r"^py(\d)\.?(\d*)(t?)$")
_TEST_FACTORS = frozenset({"pytest", "test", "tests", "unit", "unittests"})
_MAX_ENVS = 512  # py{38..314}-dj{42..main}-{...}: a few dozen; a bound on brace products


@dataclass(frozen=True)
class ToxEnv:
    file: str  # the file read (it makes the environment's key)
    requirements: tuple[str, ...]
    requirement_files: tuple[str, ...]
    extras: tuple[str, ...]


def tox_testenv(root: Path, data: dict, python: str | None = None) -> ToxEnv | None:
    """``[testenv]``'s dependencies in ``root``; None where tox is not
    configured or its base environment declares nothing this can take.
    ``python``: the X.Y that factor-bound lines are chosen for (SuperQode's
    own, the one an environment is built on unless the project asks for
    another, by default)."""
    parser, file = _ini(root, data)
    if parser is not None and parser.has_section("testenv"):
        section = dict(parser.items("testenv", raw=True))
        factors = _factors(parser, python or f"{sys.version_info[0]}.{sys.version_info[1]}")
        deps = _lines(parser, section.get("deps", ""), depth=2, factors=factors)
        extras = _words(section.get("extras", ""), factors)
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


def _expand(text: str) -> list[str]:
    """tox's brace expansion: ``py{310,311}-dj42`` is two names; commas
    outside braces separate names too."""
    items, depth, start = [], 0, 0
    for i, c in enumerate(text + ","):
        depth += (c == "{") - (c == "}")
        if depth == 0 and c in ",\n":
            items.append(text[start:i].strip())
            start = i + 1
    out: list[str] = []
    for item in filter(None, items):
        parts = re.split(r"(\{[^{}]*\})", item)
        choices = [p[1:-1].split(",") if p.startswith("{") else [p] for p in parts]
        for combo in itertools.islice(itertools.product(*choices), _MAX_ENVS):
            out.append("".join(x.strip() for x in combo))
        if len(out) >= _MAX_ENVS:
            break
    return out[:_MAX_ENVS]


def _factors(parser: configparser.RawConfigParser, python: str) -> frozenset[str] | None:
    """The factors of the ``envlist`` environment chosen for ``python``;
    None where none fits (factor-bound lines are then all left out)."""
    envlist = parser.get("tox", "envlist", raw=True, fallback=None) or parser.get(
        "tox", "env_list", raw=True, fallback="")
    major, _, minor = python.partition(".")
    best: tuple[tuple[bool, bool, int], frozenset[str]] | None = None
    for i, name in enumerate(_expand(envlist)):
        factors = frozenset(name.split("-"))
        pys = [m for f in factors if (m := _PY_FACTOR.match(f))]
        if any(m.group(1) != major or (m.group(2) and m.group(2) != minor) or m.group(3)
               for m in pys):
            continue
        rank = (parser.has_section(f"testenv:{name}"), not factors & _TEST_FACTORS, i)
        if best is None or rank < best[0]:
            best = (rank, factors)
    return best[1] if best is not None else None


def _holds(condition: str, factors: frozenset[str] | None) -> bool:
    """Whether ``dj42``, ``!pypy``, ``py38,py39``, ``{py310,py311}-dj42``
    (a comma: either; a dash: both) holds for ``factors``."""
    if factors is None:
        return False
    for alternative in _expand(condition):
        wanted = [f for f in alternative.split("-") if f]
        if wanted and all((f[1:] not in factors) if f.startswith("!") else (f in factors)
                          for f in wanted):
            return True
    return False


def _lines(parser: configparser.RawConfigParser, value: str, depth: int,
           factors: frozenset[str] | None = None) -> list[str]:
    out: list[str] = []
    for raw in value.splitlines():
        line = raw.split(" #", 1)[0].strip()
        if not line or line.startswith("#"):
            continue
        if _FACTOR.match(line):
            condition, _, line = line.partition(":")
            line = line.strip()
            if not line or not _holds(condition, factors):
                continue
        m = _SECTION_DEPS.match(line)
        if m:
            if depth > 0 and parser.has_section(m.group(1)):
                out += _lines(parser, parser.get(m.group(1), "deps", raw=True, fallback=""),
                              depth - 1, factors)
            continue
        out.append(line.replace("{toxinidir}/", "").replace("{toxinidir}", "."))
    return out


def _words(value: str, factors: frozenset[str] | None = None) -> list[str]:
    out: list[str] = []
    for line in value.splitlines():
        if _FACTOR.match(line.strip() + " "):
            condition, _, line = line.strip().partition(":")
            if not _holds(condition, factors):
                continue
        out += [w for w in re.split(r"[\s,]+", line) if w and not _FACTOR.match(w + " ")]
    return out


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


def tox_commands(root: Path, data: dict, python: str | None = None
                 ) -> tuple[str, str, list[str]] | None:
    """(file, environment, its ``commands`` lines) of the test environment
    a plain ``tox`` runs: the first of ``envlist`` the Python in use fits
    (as ``tox_testenv`` chooses), its own section's commands or
    ``[testenv]``'s; None where tox is not configured in an ini file.
    Lines bound to factors the environment lacks are left out, continued
    lines joined; read as text, never run."""
    parser, file = _ini(root, data)
    if parser is None or not parser.has_section("testenv"):
        return None
    factors = _factors(parser, python or f"{sys.version_info[0]}.{sys.version_info[1]}")
    envlist = parser.get("tox", "envlist", raw=True, fallback=None) or parser.get(
        "tox", "env_list", raw=True, fallback="")
    name = next((n for n in _expand(envlist) if frozenset(n.split("-")) == factors), "testenv")
    section = f"testenv:{name}" if parser.has_section(f"testenv:{name}") else "testenv"
    if not parser.has_option(section, "commands"):
        section = "testenv"
    raw = parser.get(section, "commands", raw=True, fallback="").replace("\\\n", " ")
    out = []
    for line in raw.splitlines():
        line = line.strip()
        if _FACTOR.match(line):
            condition, _, line = line.partition(":")
            if not _holds(condition, factors):
                continue
        if line and not line.startswith("#"):
            out.append(line.strip())
    return file, name, out
