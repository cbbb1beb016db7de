"""The sandbox's sources first, in the project's own interpreter.

A project's environment often has the project installed in editable mode: a
``.pth`` line or an import finder (setuptools' ``__editable__`` finders,
hatchling's ``editables``) that maps the package to the *user's* tree. Meta
path finders run before ``sys.path``, so putting the sandbox on PYTHONPATH is
not enough: the tests would import the user's files, mutants would never be
imported, fixes would be verified against unfixed code.

``write_isolation`` writes a ``sitecustomize`` into a scratch directory that
goes first on PYTHONPATH. It runs after the environment's ``.pth`` files and
before any test code: it drops path entries and editable finders that point
into the user's tree (or another shadowed root), puts the source roots first
and SuperQode's helper paths last. It imports nothing from SuperQode and
needs nothing installed.
"""

from __future__ import annotations

import os
from collections.abc import Iterable
from pathlib import Path

MODULE = "sitecustomize"

SITECUSTOMIZE = r'''
import os
import sys


def _superqode_isolate():
    sep = os.pathsep

    def roots(var):
        return [os.path.realpath(p) for p in os.environ.get(var, "").split(sep) if p]

    sources = roots("SUPERQODE_SOURCE_ROOTS")
    shadowed = roots("SUPERQODE_SHADOWED_ROOTS")
    tools = [p for p in os.environ.get("SUPERQODE_TOOL_PATHS", "").split(sep) if p]
    if not (sources or shadowed or tools):
        return

    def inside(path, under):
        if not isinstance(path, str) or not path:
            return False
        real = os.path.realpath(path)
        return any(real == r or real.startswith(r + os.sep) for r in under)

    # The environment itself may live inside the project (.venv): its
    # site-packages stay, only the project's sources are shadowed.
    env_roots = [os.path.realpath(p) for p in {sys.prefix, sys.exec_prefix}]

    def shadows(path):
        return (inside(path, shadowed) and not inside(path, sources)
                and not inside(path, env_roots))

    def mapped_paths(finder):
        module = sys.modules.get(getattr(finder, "__module__", "") or "")
        found = []
        for holder in (finder, type(finder), module):
            for name in ("MAPPING", "_redirections", "NAMESPACES", "mapping"):
                value = getattr(holder, name, None)
                if isinstance(value, dict):
                    for v in value.values():
                        found.extend(v if isinstance(v, (list, tuple)) else [v])
        return [str(p) for p in found if isinstance(p, (str, os.PathLike))]

    for finder in list(sys.meta_path):
        if any(shadows(p) for p in mapped_paths(finder)):
            sys.meta_path.remove(finder)
    kept = [p for p in sys.path if not shadows(p) and p not in tools]
    front = [p for p in os.environ.get("SUPERQODE_SOURCE_ROOTS", "").split(sep) if p]
    kept = [p for p in kept if p not in front]
    sys.path[:] = front + kept + tools
    for name, mod in list(sys.modules.items()):
        if shadows(getattr(mod, "__file__", None)):
            del sys.modules[name]
    import importlib

    importlib.invalidate_caches()


def _superqode_chain():
    """Run the sitecustomize this one hides (a distribution's or the venv's)."""
    import importlib.machinery
    import importlib.util

    here = os.path.dirname(os.path.abspath(__file__))
    rest = [p for p in sys.path if os.path.abspath(p or ".") != here]
    spec = importlib.machinery.PathFinder.find_spec("sitecustomize", rest)
    if spec is None or spec.loader is None:
        return
    module = importlib.util.module_from_spec(spec)
    try:
        spec.loader.exec_module(module)
    except Exception:  # noqa: BLE001 - a broken one must not stop the run (as in site.py)
        pass


_superqode_isolate()
_superqode_chain()
'''


def write_isolation(directory: Path) -> Path:
    """Write the sitecustomize into ``directory``; returns the directory."""
    directory.mkdir(parents=True, exist_ok=True)
    (directory / f"{MODULE}.py").write_text(SITECUSTOMIZE, encoding="utf-8")
    return directory


def source_roots(root: Path) -> list[Path]:
    """Where a tree's importable code lives: ``src/`` (when present) and the root."""
    return ([root / "src"] if (root / "src").is_dir() else []) + [root]


def isolated_env(
    base: dict[str, str],
    isolation_dir: Path,
    sources: Iterable[Path],
    shadowed: Iterable[Path],
    *,
    extra_paths: Iterable[Path] = (),
    tool_paths: Iterable[Path] = (),
) -> dict[str, str]:
    """``base`` with the isolation on: ``isolation_dir`` (holding the
    sitecustomize), ``extra_paths`` (helper plugins) and ``sources`` first on
    PYTHONPATH; ``shadowed`` trees demoted; ``tool_paths`` after
    site-packages, so the project's own versions of anything there win."""
    env = dict(base)
    roots = [str(p) for p in sources]
    paths = [str(isolation_dir), *(str(p) for p in extra_paths), *roots]
    if env.get("PYTHONPATH"):
        paths.append(env["PYTHONPATH"])
    env["PYTHONPATH"] = os.pathsep.join(paths)
    env["SUPERQODE_SOURCE_ROOTS"] = os.pathsep.join(roots)
    env["SUPERQODE_SHADOWED_ROOTS"] = os.pathsep.join(str(p) for p in shadowed)
    tools = [str(p) for p in tool_paths]
    if tools:
        env["SUPERQODE_TOOL_PATHS"] = os.pathsep.join(tools)
    else:
        env.pop("SUPERQODE_TOOL_PATHS", None)
    # The interpreter is the project's: variables that would point it at
    # SuperQode's environment or another home go.
    for var in ("PYTHONHOME", "PYTHONSTARTUP", "PYTHONSAFEPATH", "PYTHONNOUSERSITE"):
        env.pop(var, None)
    return env
