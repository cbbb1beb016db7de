"""The project's own pytest configuration, read as pytest reads it.

pytest takes its ini options from the first of ``pytest.ini`` (its
``[pytest]`` section, even empty), ``pyproject.toml``'s
``[tool.pytest.ini_options]``, ``tox.ini``'s ``[pytest]`` and
``setup.cfg``'s ``[tool:pytest]`` found in the root. SuperQode reads the
options that change what it must do for the suite to run as the developers
run it: which files are tests (``python_files``, ``testpaths``: PyGithub's
``tests/*.py``) and whether the suite needs pytest's cache plugin (an
``addopts`` with ``--cache-clear``: without the plugin pytest stops on an
unrecognized argument). Read as text, never run.
"""

from __future__ import annotations

import fnmatch
import re
import shlex
from pathlib import Path

from ...workspace.pytest_addopts import (
    ini_options,
    installed,
    plugins_needed,
    project_addopts,
    without_options,
)
from ...workspace.pytest_addopts import words as _words

DEFAULT_PYTHON_FILES = ("test_*.py", "*_test.py")
_NO_CACHE = re.compile(r"-p\s*no:cacheprovider\b")


def python_files(root: Path) -> list[str]:
    """The project's ``python_files`` globs (pytest's default when unset)."""
    return _words(ini_options(root).get("python_files")) or list(DEFAULT_PYTHON_FILES)


def testpaths(root: Path) -> list[str]:
    return [p.strip("/") for p in _words(ini_options(root).get("testpaths")) if p.strip("/.")]


def is_test_file(rel: str, patterns: list[str] | tuple[str, ...]) -> bool:
    """Whether pytest would collect ``rel`` (POSIX, relative to the root) as
    a test module under ``patterns``: a glob without a slash matches the
    file's name, one with a slash the end of its path (pytest's
    ``fnmatch_ex``). conftest.py and __init__.py are never test modules."""
    name = rel.rsplit("/", 1)[-1]
    if not name.endswith(".py") or name in ("conftest.py", "__init__.py"):
        return False
    for pat in patterns:
        if "/" in pat:
            if fnmatch.fnmatch("/" + rel, "*/" + pat.lstrip("/")):
                return True
        elif fnmatch.fnmatch(name, pat):
            return True
    return False


def project_test_files(root: Path, files: list[str]) -> list[str]:
    """Of ``files`` (relative to ``root``), the project's test modules by its
    own ``python_files``; with ``testpaths``, only those below them (pytest
    run with no argument collects nothing else)."""
    patterns = python_files(root)
    paths = testpaths(root)
    out = []
    for rel in files:
        if not is_test_file(rel, patterns):
            continue
        if paths and not any(rel == p or rel.startswith(p + "/") or fnmatch.fnmatch(rel, p)
                             or fnmatch.fnmatch(rel, p + "/*") for p in paths):
            continue
        out.append(rel)
    return out


def cache_args(root: Path, cache_dir: Path, env: dict[str, str] | None = None) -> list[str]:
    """pytest's arguments for its cache plugin: on, as in the developer's own
    runs, with its cache in ``cache_dir`` (SuperQode's scratch, not the
    sandbox); nothing where the project turns the plugin off itself. Turning
    it off broke more than the plugin's own options (``--cache-clear``):
    plugins and fixtures read ``config.cache`` (pytest-xprocess, behind
    flask-caching's Redis and Memcached fixtures)."""
    opts = ini_options(root)
    addopts = " ".join(_words(opts.get("addopts")))
    addopts += " " + (env or {}).get("PYTEST_ADDOPTS", "")
    if _NO_CACHE.search(addopts):
        return []  # the project turns it off itself (and cache_dir would be unknown)
    return ["-o", f"cache_dir={cache_dir}"]


def isolated_cache_args(root: Path, cache_dir: Path, env: dict[str, str] | None = None
                        ) -> list[str]:
    """``cache_args`` for runs that must not see one another's results (each
    mutant, each batch of generated tests): where the project needs the
    plugin, its cache starts empty on every run (``--cache-clear``), so its
    ``--lf``/``--sw`` never select tests from an earlier run's failures."""
    args = cache_args(root, cache_dir, env)
    return [*args, "--cache-clear"] if args[:1] == ["-o"] else args


def missing_plugin_args(root: Path, prefix: str) -> tuple[list[str], str | None]:
    """pytest's arguments for a configuration whose ``addopts`` passes the
    options of well-known plugins (pytest-cov's ``--cov``...) that the
    environment at ``prefix`` does not have: ``-o addopts=`` with the other
    options re-passed (pytest would stop at "unrecognized arguments", no test
    run), and the one line that says so; ([], None) when nothing is missing.
    The environment SuperQode builds installs them (workspace/pytest_addopts);
    this is for one that could not (offline) or that it did not build."""
    words = project_addopts(root)
    needed = plugins_needed(words)
    missing = set(needed) - installed(prefix, needed)
    if not missing:
        return [], None
    keep, dropped = without_options(words, missing)
    names = ", ".join(d for d in needed if d in missing)
    return ["-o", "addopts=" + shlex.join(keep)], (
        f"ran without {shlex.join(dropped)} from the project's addopts ({names} not installed "
        "in the test environment)")
