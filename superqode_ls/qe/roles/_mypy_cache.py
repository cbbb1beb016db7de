"""Who may write mypy's cache: the mypy process, and only one that runs
nothing of the project's.

mypy trusts a cache entry whose source file is unchanged: it reports what
the entry says (nothing, for an entry planted over a file with a type
error) and never checks that file again. Every session of a project used to
be able to write the project's cache (``$SUPERQODE_HOME/cache/<repo-key>/
mypy``), so a hostile branch's tests could hide an error from a later
session of the same checkout. Now the sessions' processes see it read-only
(it is not among their writable folders) and only the types role's mypy
process gets it as one more writable folder — when nothing in that process
runs code a session could have chosen:

- mypy loads the plugins its configuration names and runs the
  ``python_executable`` it names (``install_types`` runs pip with it): a
  project whose mypy configuration mentions one of them (the sandbox's
  ``mypy.ini``, ``.mypy.ini``, ``pyproject.toml``, ``setup.cfg``; a plain
  word search, so a false alarm only costs speed) gets a private copy of the
  cache in the session's TMPDIR instead;
- mypy looks ``python3.X`` up on ``PATH`` (a configuration's
  ``python_version`` that is not its own): its ``PATH`` keeps no folder a
  session may write (the git guard's shim folder is one);
- mypy runs the project's interpreter (``--python-executable``) to ask for
  its search path, and that interpreter runs its environment's ``.pth``
  files: the question is asked here first, in the session's ordinary
  layers, and mypy is given a small script of SuperQode's that answers it
  (written where sessions cannot write), so the project's interpreter never
  runs in mypy's process tree. Where that cannot be done, the private copy.

A private copy is a real copy (``copytree``: new inodes, never hard links,
through which a write would reach the shared entry), seeded from the shared
cache so typeshed stays warm; what the run writes to it is dropped with the
session.
"""

from __future__ import annotations

import ast
import asyncio
import contextlib
import importlib.util
import json
import os
import re
import shutil
import tempfile
from collections.abc import AsyncIterator
from pathlib import Path

from ...workspace.paths import project_cache
from ...workspace.proc import BARRIER_ENV
from .base import RoleContext

# The configuration keys under which mypy itself runs or loads something the
# project names (ini and TOML spellings).
_RUNS_CODE = re.compile(rb"plugins|python[_-]executable|install[_-]types", re.IGNORECASE)
_CONFIGS = ("mypy.ini", ".mypy.ini", "pyproject.toml", "setup.cfg")
_CONFIG_MAX = 4 << 20


def config_runs_code(root: Path) -> str | None:
    """The sandbox's configuration file that may make mypy run the project's
    code, or None. A file too big or unreadable counts (fails closed)."""
    for name in _CONFIGS:
        path = root / name
        if not os.path.lexists(path):
            continue
        try:
            if not path.is_file() or path.stat().st_size > _CONFIG_MAX:
                return name
            if _RUNS_CODE.search(path.read_bytes()):
                return name
        except OSError:
            return name
    return None


def _pyinfo() -> str | None:
    """mypy's own ``pyinfo.py`` (what mypy runs with the interpreter)."""
    try:
        spec = importlib.util.find_spec("mypy.pyinfo")
    except (ImportError, ValueError):
        return None
    return spec.origin if spec is not None and spec.origin else None


async def _search_dirs(ctx: RoleContext, python: str) -> str | None:
    """The project interpreter's answer to mypy's question, asked in the
    session's ordinary layers; None when it gave no well-formed one."""
    pyinfo = _pyinfo()
    if pyinfo is None:
        return None
    env = {**ctx.env, "PYTHONSAFEPATH": "1"}  # as mypy runs it
    res = await ctx.run([python, pyinfo, "getsearchdirs"], env=env, timeout=60)
    if res.returncode != 0 or res.timed_out:
        return None
    try:
        value = ast.literal_eval(res.stdout.strip())
    except (ValueError, SyntaxError, MemoryError, RecursionError):
        return None
    ok = (isinstance(value, tuple) and len(value) == 2
          and all(isinstance(part, list) and all(isinstance(p, str) and os.path.isabs(p)
                                                 for p in part) for part in value))
    return repr(value) if ok else None


def _answering_script(folder: Path, answer: str) -> str:
    """An executable that prints ``answer`` whatever it is asked (with the
    shell's builtin: nothing looked up on ``PATH``)."""
    quoted = answer.replace("'", "'\\''")
    script = folder / "python"
    script.write_text(f"#!/bin/sh\nprintf '%s\\n' '{quoted}'\n", encoding="utf-8")
    script.chmod(0o755)
    return str(script)


async def _private_copy(ctx: RoleContext, shared: str) -> Path:
    private = ctx.mkdtemp("superqode-mypy-")
    await asyncio.to_thread(shutil.copytree, shared, private, symlinks=True, dirs_exist_ok=True)
    return private


def _outside(path: str, allow: list[str]) -> str:
    """``PATH`` without what a session may write (the guard's ``bin``, a
    relative entry): mypy looks ``python3.X`` up on it when the
    configuration's ``python_version`` is not its own."""
    roots = [os.path.realpath(a) for a in allow]
    keep = [d for d in path.split(os.pathsep) if os.path.isabs(d) and not any(
        os.path.realpath(d) == r or os.path.realpath(d).startswith(r + "/") for r in roots)]
    return os.pathsep.join(keep)


@contextlib.asynccontextmanager
async def mypy_cache(ctx: RoleContext, shared: str, where: list[str]
                     ) -> AsyncIterator[tuple[str, dict[str, str] | None, list[str]]]:
    """(the ``--cache-dir``, the environment mypy runs with (None: the
    session's), the ``--python-executable`` arguments) for one run; what it
    made for the run is removed after it."""
    if BARRIER_ENV not in ctx.env:
        yield shared, None, where  # no session's layers: nothing to keep apart
        return
    made: list[Path] = []
    try:
        why = config_runs_code(ctx.sandbox)
        if why is None and where:
            answer = await _search_dirs(ctx, where[1])
            if answer is None:
                why = "the project's interpreter gave no search path"
            else:
                # In the project's cache folder, which sessions cannot write
                # (only mypy, its mypy/).
                runs = project_cache(ctx.project) / "mypy-python"
                runs.mkdir(parents=True, exist_ok=True)
                made.append(Path(tempfile.mkdtemp(dir=runs)))
                where = ["--python-executable", _answering_script(made[-1], answer)]
        if why is not None:
            ctx.emit("progress", message=f"types: a private copy of mypy's cache ({why})")
            made.append(await _private_copy(ctx, shared))
            yield str(made[-1]), None, where
            return
        allow = json.loads(ctx.env[BARRIER_ENV])
        env = dict(ctx.env)
        env[BARRIER_ENV] = json.dumps([*allow, shared])
        env["PATH"] = _outside(env.get("PATH", ""), allow)
        yield shared, env, where
    finally:
        for folder in made:
            await asyncio.to_thread(shutil.rmtree, folder, True)
