"""The well-known pytest plugins a project's ``addopts`` relies on.

A project's pytest configuration may pass a plugin's options in ``addopts``
(pyload's ``--cov pyload --cov-report term-missing``: pytest-cov) without
declaring the plugin: its developers have it installed. pytest without the
plugin stops at once, ``unrecognized arguments``, and no test runs. The
environment SuperQode builds installs those plugins (``plugins_needed``);
where one is still missing (offline, a reused environment), the test run
passes the configuration's ``addopts`` again less exactly those options
(``without_options``), and says so.

The configuration is read as pytest reads it (the first of ``pytest.ini``,
``pyproject.toml``'s ``[tool.pytest.ini_options]``, ``tox.ini``'s
``[pytest]``, ``setup.cfg``'s ``[tool:pytest]``), as text, never run.
"""

from __future__ import annotations

import configparser
import re
import shlex
import tomllib
from dataclasses import dataclass
from pathlib import Path

from packaging.utils import canonicalize_name

from .regular import read_regular_bytes


@dataclass(frozen=True)
class Plugin:
    dist: str  # its distribution, as installed
    flags: tuple[str, ...]  # options that take no value
    valued: tuple[str, ...]  # options whose value may be the next word
    prefix: str = ""  # any ``--prefix...`` option is the plugin's (--benchmark-*)
    optional: tuple[str, ...] = ()  # options whose value is optional (--cov [SOURCE])


PLUGINS = (
    Plugin("pytest-cov", ("--cov-branch", "--cov-append", "--no-cov", "--no-cov-on-fail"),
           ("--cov-report", "--cov-config", "--cov-fail-under", "--cov-context"),
           optional=("--cov",)),
    Plugin("pytest-xdist", ("--looponfail", "-f"),
           ("-n", "--numprocesses", "--dist", "--maxprocesses", "--max-worker-restart", "--tx",
            "--rsyncdir", "--rsyncignore", "--maxschedchunk")),
    Plugin("pytest-timeout", ("--timeout-disable-debugger-detection",),
           ("--timeout", "--timeout-method", "--timeout_method", "--session-timeout")),
    Plugin("pytest-benchmark", (), ("--benchmark-min-time", "--benchmark-max-time",
                                    "--benchmark-min-rounds", "--benchmark-timer",
                                    "--benchmark-calibration-precision", "--benchmark-sort",
                                    "--benchmark-group-by", "--benchmark-columns",
                                    "--benchmark-name", "--benchmark-storage",
                                    "--benchmark-save", "--benchmark-compare-fail",
                                    "--benchmark-warmup-iterations", "--benchmark-cprofile",
                                    "--benchmark-json", "--benchmark-time-unit"),
           prefix="--benchmark-"),
    Plugin("pytest-rerunfailures", (), ("--reruns", "--reruns-delay", "--only-rerun",
                                        "--rerun-except")),
    Plugin("pytest-mypy", ("--mypy", "--mypy-ignore-missing-imports", "--mypy-no-status-check",
                           "--mypy-xfail"), ("--mypy-config-file",)),
    Plugin("pytest-randomly", ("--randomly-dont-reset-seed", "--randomly-dont-reorganize"),
           ("--randomly-seed",)),
    Plugin("pytest-asyncio", (), ("--asyncio-mode",)),
    Plugin("pytest-html", ("--self-contained-html",), ("--html", "--css")),
    Plugin("pytest-instafail", ("--instafail",), ()),
)


def ini_options(root: Path) -> dict[str, str | list[str]]:
    """The ini options of the file pytest would take its configuration from
    ({} when none). Values as written: a string, or a list in TOML."""
    ini = root / "pytest.ini"
    if ini.is_file() and not ini.is_symlink():
        return _ini_section(ini, "pytest") or {}
    # No link followed, no FIFO waited on (a session's planted pyproject.toml).
    raw = read_regular_bytes(root / "pyproject.toml", None)
    try:
        data = tomllib.loads(raw.decode("utf-8")) if raw is not None else {}
    except (UnicodeDecodeError, tomllib.TOMLDecodeError):
        data = {}
    tool = data.get("tool") if isinstance(data.get("tool"), dict) else {}
    pytest = tool.get("pytest") if isinstance(tool.get("pytest"), dict) else {}
    opts = pytest.get("ini_options")
    if isinstance(opts, dict):
        return {str(k): (v if isinstance(v, str) else [str(x) for x in v])
                for k, v in opts.items() if isinstance(v, (str, list))}
    for name, section in (("tox.ini", "pytest"), ("setup.cfg", "tool:pytest")):
        found = _ini_section(root / name, section)
        if found is not None:
            return found
    return {}


def _ini_section(path: Path, section: str) -> dict[str, str | list[str]] | None:
    # No link followed and no FIFO waited on, also one swapped in after a check.
    raw = read_regular_bytes(path, None)
    if raw is None:
        return None
    parser = configparser.RawConfigParser(strict=False, interpolation=None)
    try:
        parser.read_string(raw.decode("utf-8"))
    except (configparser.Error, UnicodeDecodeError):
        return None
    if not parser.has_section(section):
        return None
    return dict(parser.items(section))


def words(value: str | list[str] | None) -> list[str]:
    """An ini value as pytest splits it (shell words; a TOML list as is)."""
    if value is None:
        return []
    if isinstance(value, list):
        return [str(v) for v in value]
    try:
        return shlex.split(value)
    except ValueError:
        return value.split()


def project_addopts(root: Path) -> list[str]:
    """The ``addopts`` of the configuration pytest would read in ``root``."""
    return words(ini_options(root).get("addopts"))


def _owner(word: str) -> tuple[Plugin, bool] | None:
    """The plugin an option word belongs to, and whether the next word is
    its value (``--cov-report term``, ``-n 4``; not ``-n4``, ``--tx=...``)."""
    name, eq, _ = word.partition("=")
    for plugin in PLUGINS:
        if name in plugin.flags:
            return plugin, False
        if name in plugin.valued:
            return plugin, not eq
        if name in plugin.optional:
            return plugin, False  # its optional value is judged by the caller
        for short in (o for o in plugin.valued if len(o) == 2 and o[0] == "-" and o[1] != "-"):
            if word.startswith(short) and len(word) > 2:
                return plugin, False  # -n4, -nauto
        if plugin.prefix and word.startswith(plugin.prefix):
            return plugin, name in plugin.valued and not eq
    return None


def _split(words: list[str]) -> list[tuple[str | None, list[str]]]:
    """``words`` cut into options, each with its plugin's distribution (None
    for an option that is not a known plugin's) and its words."""
    out: list[tuple[str | None, list[str]]] = []
    i = 0
    while i < len(words):
        word = words[i]
        owned = _owner(word)
        if owned is None:
            out.append((None, [word]))
            i += 1
            continue
        plugin, takes_next = owned
        take = [word]
        nxt = words[i + 1] if i + 1 < len(words) else None
        if nxt is not None and (takes_next or (word in plugin.optional and "=" not in word
                                               and not nxt.startswith("-"))):
            take.append(nxt)
        out.append((plugin.dist, take))
        i += len(take)
    return out


def plugins_needed(words: list[str]) -> list[str]:
    """The distributions of the well-known plugins whose options ``words`` use."""
    return list(dict.fromkeys(d for d, _ in _split(words) if d is not None))


def without_options(words: list[str], dists: set[str]) -> tuple[list[str], list[str]]:
    """``words`` less the options of the plugins ``dists``, and those options."""
    keep: list[str] = []
    dropped: list[str] = []
    for dist, part in _split(words):
        (dropped if dist in dists else keep).extend(part)
    return keep, dropped


def installed(prefix: str, dists: list[str]) -> set[str]:
    """Of ``dists``, those installed in the environment at ``prefix`` (its
    ``*.dist-info`` folders' names, read, nothing run)."""
    want = {canonicalize_name(d): d for d in dists}
    found: set[str] = set()
    if not want or not prefix:
        return found
    for site in Path(prefix).glob("lib*/python*/site-packages"):
        try:
            infos = list(site.glob("*.dist-info"))
        except OSError:
            continue
        for info in infos:
            name = canonicalize_name(re.split(r"-\d", info.name[:-len(".dist-info")], maxsplit=1)[0])
            if name in want:
                found.add(want[name])
    return found
