"""Where a repository's Python projects are, found as a developer finds
them: a folder that declares a Python project (``pyproject.toml`` with a
``[project]``, ``[tool.poetry]`` or build system, ``setup.py``,
``setup.cfg`` with metadata, requirement files, or Django's ``manage.py``)
and holds tests
(``test_*.py`` / ``*_test.py``, Django's ``tests.py``) below it.

The repository's root is the project when it is one and has tests of its
own (its developers run ``pytest`` there; subprojects such as
``examples/tutorial`` are its test configuration's business). Otherwise —
a monorepo whose root is a uv workspace, or only tool configuration, or
nothing at all — the projects are the outermost folders below it (at most
``MAX_DEPTH`` levels down) that declare one and hold tests: each is built
and tested on its own, from its own folder, with its own declarations
(``backend/`` of fastapi's full-stack template, with its ``pyproject.toml``
and the workspace's ``uv.lock``). Read only.
"""

from __future__ import annotations

import fnmatch
import os
import re
import tomllib
from pathlib import Path, PurePosixPath

from .regular import read_regular_bytes

MAX_DEPTH = 3
MAX_PROJECTS = 8
# Folders no developer keeps a project's sources in (nor SuperQode reads).
_SKIP = frozenset({".git", ".hg", ".svn", ".superqode", ".venv", "venv", "env", ".tox", ".nox",
                   "node_modules", "__pycache__", "site-packages", "build", "dist", ".eggs",
                   ".mypy_cache", ".pytest_cache", ".ruff_cache"})
# Folders where a Django app keeps the manage.py its tests run with.
HARNESS_DIRS = ("tests", "test", "testproject", "test_project")
_REQUIREMENTS = re.compile(r"^(requirements.*|.*requirements)\.txt$")


def python_projects(root: Path) -> list[str]:
    """The project folders relative to ``root`` (POSIX; ``""`` is the root
    itself), in a stable order. ``[""]`` whenever the root is the project,
    or when no folder below it declares one with tests (loose tests)."""
    subs = _declaring(root)
    if is_project(root):
        # A Django test harness of the root's project (django-import-export's
        # tests/manage.py, run from the root as tests/manage.py test): the
        # root's tests, with the root's environment, not a project of its own.
        subs = [s for s in subs if not s or s not in HARNESS_DIRS or _declares(root / s)]
    if is_project(root) and _has_tests(root, {s for s in subs if s}):
        return [""]
    with_tests = [s for s in subs if s and _has_tests(root / s, _nested(s, subs))]
    return with_tests[:MAX_PROJECTS] or [""]


def loose_tests(root: Path, subs: list[str]) -> list[str]:
    """Test files of ``root`` (POSIX, relative) that lie in none of the
    projects ``subs`` (python_projects' answer): a monorepo's tests of the
    whole, run from the root beside each project's own. [] when the root is
    itself the project (``[""]``: its tests are all of them)."""
    if "" in subs:
        return []
    found: list[str] = []
    inside = set(subs)
    for dirpath, dirnames, filenames in os.walk(root):
        rel = Path(dirpath).relative_to(root).as_posix()
        rel = "" if rel == "." else rel
        dirnames[:] = sorted(d for d in dirnames if d not in _SKIP and not d.startswith(".")
                             and (f"{rel}/{d}" if rel else d) not in inside)
        found += [f"{rel}/{n}" if rel else n for n in sorted(filenames) if _is_test(n)]
    return found


def _is_test(name: str) -> bool:
    return name.endswith(".py") and (name.startswith("test_") or name.endswith("_test.py"))


def is_project(folder: Path) -> bool:
    """Whether ``folder`` declares a Python project of its own (a uv
    workspace's root that lists members and no ``[project]`` does not)."""
    # (a Django project's root: its developers run manage.py test there; a
    # Flask app's manage.py, lemur/manage.py, makes no project of its package)
    return "django" in _text(folder / "manage.py").lower() or _declares(folder)


def _declares(folder: Path) -> bool:
    """is_project's answer from the project's declarations (not manage.py)."""
    if (folder / "setup.py").is_file():
        return True
    if (folder / "setup.cfg").is_file() and "[metadata]" in _text(folder / "setup.cfg"):
        return True
    if (folder / "requirements").is_dir() or any(
            _REQUIREMENTS.match(p.name) for p in _files(folder)):
        return True
    try:
        data = tomllib.loads(_text(folder / "pyproject.toml"))
    except tomllib.TOMLDecodeError:
        return False
    tool = data.get("tool") if isinstance(data.get("tool"), dict) else {}
    if isinstance(data.get("project"), dict) or "poetry" in tool:
        return True
    return "build-system" in data and "workspace" not in (tool.get("uv") or {})


def uv_workspace(root: Path, sub: str) -> str | None:
    """The folder (relative to ``root``; ``""`` the root) of the uv
    workspace whose ``uv.lock`` and ``[tool.uv.workspace]`` members cover
    the project in ``sub``, or None. Looked for from ``sub``'s parent up to
    ``root``, never above it."""
    path = PurePosixPath(sub)
    for up in path.parents:
        where = "" if str(up) == "." else str(up)
        folder = root / where
        if not (folder / "uv.lock").is_file():
            continue
        try:
            data = tomllib.loads(_text(folder / "pyproject.toml"))
        except tomllib.TOMLDecodeError:
            return None
        table = ((data.get("tool") or {}).get("uv") or {}).get("workspace")
        if not isinstance(table, dict):
            return None  # a lock of another project: not this one's
        rel = path.relative_to(up).as_posix()
        members = [m for m in table.get("members") or [] if isinstance(m, str)]
        excluded = [m for m in table.get("exclude") or [] if isinstance(m, str)]
        if (any(fnmatch.fnmatchcase(rel, m.rstrip("/")) for m in members)
                and not any(fnmatch.fnmatchcase(rel, m.rstrip("/")) for m in excluded)):
            return where
        return None
    return None


def _declaring(root: Path) -> list[str]:
    """Folders (``""``: the root) down to MAX_DEPTH that declare a project,
    sorted."""
    found: list[str] = []
    for dirpath, dirnames, _ in os.walk(root):
        rel = Path(dirpath).relative_to(root).as_posix()
        rel = "" if rel == "." else rel
        depth = rel.count("/") + 1 if rel else 0
        dirnames[:] = sorted(d for d in dirnames if d not in _SKIP and not d.startswith(".")
                             and not d.endswith(".egg-info")) if depth < MAX_DEPTH else []
        if is_project(Path(dirpath)):
            found.append(rel)
    return sorted(found)


def _nested(sub: str, subs: list[str]) -> set[str]:
    """``subs`` below ``sub``, relative to it (their tests are theirs)."""
    return {s[len(sub) + 1:] for s in subs if s.startswith(sub + "/")}


def _has_tests(folder: Path, exclude: set[str]) -> bool:
    """Whether a test file lies below ``folder``, outside the ``exclude``
    subfolders (relative to it)."""
    for dirpath, dirnames, filenames in os.walk(folder):
        rel = Path(dirpath).relative_to(folder).as_posix()
        dirnames[:] = [d for d in dirnames if d not in _SKIP and not d.startswith(".")
                       and (f"{d}" if rel == "." else f"{rel}/{d}") not in exclude]
        if any(_is_test(n) or n == "tests.py" for n in filenames):
            return True
    return False


def _files(folder: Path) -> list[Path]:
    try:
        return [p for p in folder.iterdir() if p.is_file()]
    except OSError:
        return []


def _text(path: Path) -> str:
    """A regular file's text (at most 1 MiB), else "": no link followed and
    no FIFO waited on, also one swapped in after a check."""
    raw = read_regular_bytes(path, 1 << 20)
    return "" if raw is None else raw.decode("utf-8", "replace")
