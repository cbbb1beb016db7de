"""The project's interpreter for the code-running roles.

``project_python`` gives the session's interpreter (found once by the
pipeline, or here when a role runs alone). ``pytest_argv`` is how pytest is
started with it: the project's environment loads its own plugins (entry-point
autoload on); SuperQode's own interpreter, the fallback, loads only
general-purpose plugins and those the project declares. ``isolate`` puts the
sandbox's (or a scratch copy's) sources first, ahead of editable installs of
the user's tree (workspace/pyisolate.py). ``tool_paths`` lends SuperQode's
own coverage / hypothesis to the project's interpreter when it has none.
"""

from __future__ import annotations

import hashlib
import importlib.metadata
import importlib.util
import os
import re
import sys
from pathlib import Path

from ...config import superqode_home
from ...workspace.pyenv import ProjectPython, requirement_name
from ...workspace.pyenv_build import resolve_python
from ...workspace.pyenv_declared import declared_requirements
from ...workspace.pyenv_read import read_text, scm_version
from ...workspace.pyisolate import isolated_env, source_roots, write_isolation
from ._common import is_test_path, walk_files
from ._pytest_config import project_test_files
from ._unit_django import django_runner, find_tests
from .base import RoleContext

# Plugins a project's tests commonly rely on, loaded when the suite runs under
# SuperQode's own interpreter (autoload is off there).
OWN_ENV_PLUGINS = (
    "pytest_asyncio.plugin",
    "anyio.pytest_plugin",
    "_hypothesis_pytestplugin",
    "pytest_timeout",
)


# Roles that run the project's own tests: with no test file they run nothing.
TEST_RUNNERS = frozenset({"unit_tester", "mutation_tester"})


def has_test_files(root: Path) -> bool:
    """Whether ``root`` holds a test file by the project's ``python_files``
    (pytest's default: test_*.py / *_test.py),
    or, in a Django project run by manage.py test, one of Django's (tests.py)."""
    if project_test_files(root, list(walk_files(root, (".py",)))):
        return True
    return django_runner(root) is not None and bool(find_tests(root))


def wants_built_env(runs_code: list[str], root: Path) -> bool:
    """Whether a project environment is worth building for this session:
    some role (``runs_code``: the session's roles that run the project's
    code) will use it; a test runner only when there are tests."""
    if any(name not in TEST_RUNNERS for name in runs_code):
        return True
    return bool(runs_code) and has_test_files(root)


async def project_python(ctx: RoleContext) -> ProjectPython:
    """The session's interpreter (set by the pipeline), or found now for a
    role run on its own, and kept in ``ctx``."""
    if ctx.python is None:
        ctx.python = await resolve_python(ctx.project, ctx.sandbox, ctx.config, emit=ctx.emit,
                                          runtime=ctx.runtime)
    return ctx.python


def pytest_argv(py: ProjectPython, configured: list[str] | None, env: dict[str, str],
                root: Path) -> list[str]:
    """The pytest command; may set variables in ``env``."""
    if configured:
        return list(configured)  # the user's own command: their environment, their plugins
    env.pop("PYTEST_DISABLE_PLUGIN_AUTOLOAD", None)
    if not py.own:
        return [py.python, "-m", "pytest"]
    # SuperQode's interpreter: its installed plugins are not the project's
    # (and some are slow to import); load only general-purpose ones and the
    # ones the project declares.
    env["PYTEST_DISABLE_PLUGIN_AUTOLOAD"] = "1"
    cmd = [py.python, "-m", "pytest"]
    declared = declared_plugins(root)
    # A plugin for what the suite does not use is not loaded: pytest-asyncio
    # warns at configure time, which `filterwarnings = error` turns into an
    # internal error of a suite that has no async test at all; hypothesis's
    # imports much of hypothesis (a quarter second of CPU per pytest start).
    used = hinted_plugins(root)
    for module in (*OWN_ENV_PLUGINS, *declared):
        if module in _HINTS and module not in used and module not in declared:
            continue
        if importlib.util.find_spec(module.split(".")[0]) is not None and module not in cmd:
            cmd += ["-p", module]
    return cmd


ASYNC_PLUGINS = frozenset({"pytest_asyncio.plugin", "anyio.pytest_plugin"})
_ASYNC_HINT = re.compile(r"async def test|mark\.(asyncio|anyio)|asyncio_mode|anyio_backend")
_HINTS = {**dict.fromkeys(ASYNC_PLUGINS, _ASYNC_HINT),
          "_hypothesis_pytestplugin": re.compile(r"hypothesis")}


def hinted_plugins(root: Path) -> set[str]:
    """Of the plugins loaded only where used (``_HINTS``): those the
    project's tests or test configuration mention."""
    found: set[str] = set()
    for rel in walk_files(root, (".py", ".toml", ".ini", ".cfg")):
        if rel.endswith(".py") and not is_test_path(rel):
            continue
        if not rel.endswith(".py") and "/" in rel:
            continue  # configuration lives at the root
        try:
            text = (root / rel).read_text(encoding="utf-8", errors="replace")
        except OSError:
            continue
        found |= {m for m, hint in _HINTS.items() if m not in found and hint.search(text)}
        if len(found) == len(_HINTS):
            break
    return found


def declared_plugins(root: Path) -> list[str]:
    """Modules of the pytest plugins (installed here) the project declares."""
    names = {requirement_name(r) for r in declared_requirements(root)}
    out = []
    for ep in importlib.metadata.entry_points(group="pytest11"):
        dist = getattr(ep, "dist", None)
        if dist is not None and requirement_name(dist.metadata["Name"] or "") in names:
            out.append(ep.value.split(":")[0].strip())
    return out


def activated(env: dict[str, str], py: ProjectPython | None) -> dict[str, str]:
    """``env`` as in the project's activated environment: its ``bin`` first
    on PATH (a test that runs ``coverage`` or ``python`` by name finds the
    environment's, as in its developers' shell), ``VIRTUAL_ENV`` set; pyenv's
    shims replaced by the versions they run (``without_shims``)."""
    out = dict(env)
    if "PATH" in env:
        out["PATH"] = without_shims(env["PATH"], env)
    if py is None or py.own:
        return out
    out["PATH"] = os.pathsep.join([str(Path(py.python).parent), out.get("PATH", os.defpath)])
    out["VIRTUAL_ENV"] = py.prefix
    return out


_SCM = re.compile(r"setuptools[_-]scm|hatch-vcs|use_scm_version")
SCM_VARIABLE = "SETUPTOOLS_SCM_PRETEND_VERSION"


def scm_pretend(env: dict[str, str], project: Path, tree: Path) -> None:
    """For a project versioned by setuptools-scm / hatch-vcs, its version in
    ``env`` (``SETUPTOOLS_SCM_PRETEND_VERSION``, unless set): its version
    file is generated by a build and git ignores it, so the sandbox's copy
    asks setuptools-scm at import (django-import-export), which cannot read
    the sandbox's git. The version is ``git describe``'s in the user's
    project (pyenv_read.scm_version), "0.0.0" without a tag."""
    if SCM_VARIABLE in env:
        return
    for name in ("pyproject.toml", "setup.py", "setup.cfg"):
        path = tree / name
        if path.is_file() and not path.is_symlink() and _SCM.search(read_text(path)):
            env[SCM_VARIABLE] = scm_version(project) or "0.0.0"
            return


def without_shims(path: str, env: dict[str, str]) -> str:
    """``path`` with pyenv's shim folders replaced by the ``bin`` folders of
    the versions pyenv selects (``PYENV_VERSION``, else its global
    ``version`` file; a project's ``.python-version`` is the sandbox's, not
    read). A shim answers for every installed version and fails for those not
    selected ("pyenv: python3.10: command not found"): nox's tests find
    ``python3.10`` on PATH, run it, and fail for the machine's reason; with
    the versions themselves a program that is not there is not found."""
    root = Path(env.get("PYENV_ROOT") or Path(env.get("HOME") or Path.home()) / ".pyenv")
    dirs = path.split(os.pathsep)
    if not any(_is_shims(d, root) for d in dirs):
        return path
    chosen = env.get("PYENV_VERSION") or ""
    if not chosen:
        try:
            chosen = (root / "version").read_text(encoding="utf-8", errors="replace")[:1000]
        except OSError:
            chosen = ""
    names = [n for n in re.split(r"[\s:]+", chosen) if n and n != "system" and "/" not in n
             and n not in (".", "..")]
    versions = [str(root / "versions" / n / "bin") for n in names[:8]
                if (root / "versions" / n / "bin").is_dir()]
    out: list[str] = []
    for d in dirs:
        out.extend(versions if _is_shims(d, root) else [d])
    return os.pathsep.join(dict.fromkeys(out))


def _is_shims(folder: str, root: Path) -> bool:
    """pyenv's shims (and its plugins'), or another pyenv's beside its
    ``versions``."""
    if not folder.rstrip("/").endswith("/shims"):
        return False
    return folder.startswith(str(root)) or (Path(folder).parent / "versions").is_dir()


def isolate(
    env: dict[str, str],
    scratch: Path,
    tree: Path,
    shadowed: list[Path],
    extra_paths: list[Path] | tuple[Path, ...] = (),
    tool_paths: list[Path] | tuple[Path, ...] = (),
) -> dict[str, str]:
    """``env`` for a Python process whose code is ``tree``: its sources
    first, ``shadowed`` trees (the user's project, the sandbox a copy was
    made from) out of the way. The sitecustomize is written under ``scratch``."""
    iso = write_isolation(scratch / "isolation")
    return isolated_env(env, iso, source_roots(tree), shadowed,
                        extra_paths=extra_paths, tool_paths=tool_paths)


def tool_paths(py: ProjectPython, dists: tuple[str, ...]) -> list[Path] | None:
    """A directory lending the project's interpreter SuperQode's own copies
    of ``dists`` (and what they need), linked from SuperQode's environment;
    [] when the interpreter has them itself; None when they cannot be lent
    (another Python version: compiled parts would not load)."""
    if py.own:
        return []
    if py.version != f"{sys.version_info[0]}.{sys.version_info[1]}":
        return None
    try:
        names = _top_levels(dists)
    except importlib.metadata.PackageNotFoundError:
        return None
    key = hashlib.sha256("\n".join(sorted(f"{n}={p}" for n, p in names.items())).encode()).hexdigest()[:12]
    # Not under $SUPERQODE_HOME/cache, which sessions' processes may write:
    # a planted link there would be imported by another project's run.
    shim = superqode_home() / "tools" / f"py{py.version}-{key}"
    if not (shim / ".complete").is_file():
        tmp = shim.with_name(f"{shim.name}.tmp-{os.getpid()}")
        tmp.mkdir(parents=True, exist_ok=True)
        for name, path in names.items():
            link = tmp / name
            if not link.exists() and not link.is_symlink():
                link.symlink_to(path)
        (tmp / ".complete").write_text("", encoding="utf-8")
        try:
            tmp.rename(shim)
        except OSError:  # another session made it first
            import shutil

            shutil.rmtree(tmp, ignore_errors=True)
    return [shim]


def _top_levels(dists: tuple[str, ...]) -> dict[str, str]:
    """Top-level importable entries of ``dists`` and their requirements."""
    out: dict[str, str] = {}
    seen: set[str] = set()
    todo = list(dists)
    while todo:
        name = todo.pop()
        key = requirement_name(name) or name
        if key in seen:
            continue
        seen.add(key)
        dist = importlib.metadata.distribution(name)
        for f in dist.files or []:
            top = f.parts[0]
            if top.endswith((".dist-info", ".data")) or top in ("..", "__pycache__", "bin"):
                continue
            if len(f.parts) == 1 and not top.endswith((".py", ".so", ".pyd")):
                continue
            out.setdefault(top, str(dist.locate_file(top)))
        for req in dist.requires or []:
            if "extra ==" in req:
                continue
            try:
                from packaging.requirements import Requirement

                parsed = Requirement(req)
                if parsed.marker is not None and not parsed.marker.evaluate():
                    continue
                todo.append(parsed.name)
            except Exception:  # noqa: BLE001,S112 - an odd requirement line: skip it
                continue
    return out
