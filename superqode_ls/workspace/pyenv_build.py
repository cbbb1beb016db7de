"""An environment for a project that has none, built from what it declares.

The requirements come from ``pyproject.toml`` (``[project] dependencies``,
the test/dev extras and dependency groups) and the usual requirements files;
pytest is added. The environment goes to ``$SUPERQODE_HOME/cache/envs/<hash>``
(the hash covers the requirements and the base Python), is built once with
``uv`` when it is on PATH or ``python -m venv`` + pip, and reused while the
hash matches. It is built by SuperQode's own process, never by a role process
(those may write only the sandbox, scratch and the cache), and never installs
the project itself: the sandbox's sources are put first on ``sys.path``.
"""

from __future__ import annotations

import asyncio
import contextlib
import fcntl
import hashlib
import importlib.metadata
import json
import os
import shutil
import sys
import tomllib
from collections.abc import Callable
from dataclasses import replace
from pathlib import Path
from typing import Any

from ..config import Config, superqode_home
from .proc import run_command
from .pyenv import ProjectPython, discover, env_python, own_python, probe, requirement_name

Emit = Callable[..., Any]
ENV_FORMAT = "1"
MARKER = ".superqode-env.json"
TEST_EXTRAS = ("test", "tests", "testing", "dev")
REQUIREMENT_FILES = (
    "requirements.txt", "requirements-dev.txt", "requirements_dev.txt", "dev-requirements.txt",
    "requirements-test.txt", "requirements_test.txt", "requirements-tests.txt",
    "test-requirements.txt", "requirements/test.txt", "requirements/tests.txt",
    "requirements/dev.txt", "requirements/testing.txt",
)
CONFIGURE = "set roles.python (superqode.yaml) or the editor's superqode.python to the project's interpreter"


def envs_dir() -> Path:
    return superqode_home() / "cache" / "envs"


def declared_requirements(root: Path) -> list[str]:
    """Requirement strings the project declares (deduplicated, in order)."""
    reqs: list[str] = []
    pyproject = root / "pyproject.toml"
    if pyproject.is_file():
        try:
            data = tomllib.loads(pyproject.read_text(encoding="utf-8"))
        except (OSError, UnicodeDecodeError, tomllib.TOMLDecodeError):
            data = {}
        project: dict = data["project"] if isinstance(data.get("project"), dict) else {}
        reqs += [r for r in project.get("dependencies") or [] if isinstance(r, str)]
        extras = project.get("optional-dependencies") or {}
        groups = data.get("dependency-groups") or {}
        for name in TEST_EXTRAS:
            reqs += [r for r in extras.get(name) or [] if isinstance(r, str)]
            reqs += _group(groups, name, set())
    for rel in REQUIREMENT_FILES:
        reqs += _requirements_file(root, root / rel, set())
    # The project itself is never installed (its name may appear in a
    # group like ``dev = ["myproj[test]"]``): the sandbox's copy is used.
    own = _project_name(root)
    out = []
    for r in dict.fromkeys(r.strip() for r in reqs if r.strip()):
        if own is not None and requirement_name(r) == own:
            continue
        out.append(r)
    return out


def _project_name(root: Path) -> str | None:
    try:
        data = tomllib.loads((root / "pyproject.toml").read_text(encoding="utf-8"))
        return requirement_name(str(data["project"]["name"]))
    except (OSError, UnicodeDecodeError, tomllib.TOMLDecodeError, KeyError, TypeError):
        return None


def _group(groups: dict, name: str, seen: set[str]) -> list[str]:
    if name in seen or not isinstance(groups.get(name), list):
        return []
    seen.add(name)
    out: list[str] = []
    for item in groups[name]:
        if isinstance(item, str):
            out.append(item)
        elif isinstance(item, dict) and isinstance(item.get("include-group"), str):
            out += _group(groups, item["include-group"], seen)
    return out


def _requirements_file(root: Path, path: Path, seen: set[Path]) -> list[str]:
    """Plain requirement lines; ``-r`` includes inside the project are
    followed. Editable/local paths (``-e .``) and options are left out:
    installing them would build in (and write to) the user's tree."""
    try:
        real = path.resolve()
        real.relative_to(root.resolve())
    except (OSError, ValueError):
        return []
    if real in seen or not real.is_file():
        return []
    seen.add(real)
    try:
        lines = real.read_text(encoding="utf-8").splitlines()
    except (OSError, UnicodeDecodeError):
        return []
    out: list[str] = []
    for raw in lines:
        line = raw.split(" #", 1)[0].strip()
        if not line or line.startswith("#"):
            continue
        if line.startswith(("-r ", "--requirement ")):
            out += _requirements_file(root, real.parent / line.split(None, 1)[1].strip(), seen)
            continue
        if line.startswith(("-", ".", "/")) or "://" in line:
            continue
        out.append(line)
    return out


def env_key(reqs: list[str], base_version: str) -> str:
    text = "\n".join([ENV_FORMAT, base_version, *sorted(reqs)])
    return hashlib.sha256(text.encode("utf-8")).hexdigest()[:16]


def missing_in_own(reqs: list[str]) -> list[str]:
    """Declared requirements SuperQode's own environment does not satisfy."""
    from packaging.requirements import InvalidRequirement, Requirement  # pytest needs packaging

    missing = []
    for text in reqs:
        name = requirement_name(text)
        if name is None:
            continue
        try:
            req = Requirement(text)
        except InvalidRequirement:
            missing.append(text)
            continue
        if req.marker is not None and not req.marker.evaluate():
            continue
        try:
            version = importlib.metadata.version(name)
        except importlib.metadata.PackageNotFoundError:
            missing.append(text)
            continue
        if not req.specifier.contains(version, prereleases=True):
            missing.append(text)
    return missing


async def resolve_python(
    project: Path,
    root: Path,
    config: Config,
    *,
    editor: str | None = None,
    environ: dict[str, str] | None = None,
    emit: Emit = lambda *a, **k: None,
) -> ProjectPython:
    """The interpreter for this session's code-running roles (see pyenv).
    ``project`` is the user's folder (its environment), ``root`` the
    sandbox (the declared dependencies are read there)."""
    found, tried = await asyncio.to_thread(
        discover, project, config.roles.python, editor, environ
    )
    if found is not None:
        return found
    passed_over = "; ".join(tried)
    reqs = await asyncio.to_thread(declared_requirements, root)
    missing = await asyncio.to_thread(missing_in_own, reqs)
    if not missing:
        why = ("no project environment found; SuperQode's Python has every declared dependency"
               if reqs else "no project environment found and no dependencies declared")
        return own_python(_join(passed_over, why), tuple(tried))
    if config.roles.unit_test_command:
        why = ("no project environment found; roles.unit_test_command runs the tests, so none "
               f"is built (missing here: {_few(missing)}; set roles.python for the other roles)")
        return own_python(_join(passed_over, why), tuple(tried))
    if not config.roles.build_env:
        why = (f"no project environment found and roles.build_env is off "
               f"(missing here: {_few(missing)}); {CONFIGURE}")
        return own_python(_join(passed_over, why), tuple(tried))
    built = await build_env(reqs, config.roles.env_build_timeout_s, emit)
    if isinstance(built, ProjectPython):
        return replace(built, note=passed_over or None, tried=tuple(tried))
    why = f"could not build an environment from the declared dependencies ({built}); {CONFIGURE}"
    return own_python(_join(passed_over, why), tuple(tried))


def _join(*parts: str) -> str:
    return "; ".join(p for p in parts if p)


def _few(items: list[str], n: int = 3) -> str:
    more = f" and {len(items) - n} more" if len(items) > n else ""
    return ", ".join(items[:n]) + more


async def build_env(reqs: list[str], timeout: float, emit: Emit) -> ProjectPython | str:
    """The cached environment for ``reqs`` (built now if needed), or why not."""
    base_version = f"{sys.version_info[0]}.{sys.version_info[1]}"
    wanted = list(reqs)
    if not any(requirement_name(r) == "pytest" for r in wanted):
        wanted.append("pytest")
    key = env_key(wanted, base_version)
    target = envs_dir() / key
    cached = await asyncio.to_thread(_ready, target)
    if cached is not None:
        emit("progress", message=f"environment: reusing {target} (cached)")
        return cached
    try:
        envs_dir().mkdir(parents=True, exist_ok=True)
    except OSError as e:
        return f"cannot create {envs_dir()}: {e.strerror}"
    async with _locked(envs_dir() / f"{key}.lock"):
        cached = await asyncio.to_thread(_ready, target)  # another session built it meanwhile
        if cached is not None:
            return cached
        # A build stopped half-way (a quick run's budget, Ctrl-C) is resumed:
        # pip skips what is already installed, so each try gets further.
        resume = await asyncio.to_thread(_resumable, target)
        emit("progress", message=f"environment: building from {len(wanted)} declared "
                                 f"requirement(s) into {target}" + (" (resumed)" if resume else ""))
        why = await _install(target, wanted, timeout, resume)
        if why is not None:
            return why
        await asyncio.to_thread(
            (target / MARKER).write_text,
            json.dumps({"format": ENV_FORMAT, "requirements": wanted}), "utf-8",
        )
        emit("progress", message=f"environment: built {target}")
    built = await asyncio.to_thread(_ready, target)
    return built if built is not None else f"the environment built in {target} does not start"


def _ready(target: Path) -> ProjectPython | None:
    if not (target / MARKER).is_file():
        return None
    found = probe(str(env_python(target)), "built")
    return found if isinstance(found, ProjectPython) and found.has_pytest else None


def _resumable(target: Path) -> bool:
    """A half-built environment whose interpreter starts is kept; anything
    else there is removed."""
    if target.is_dir() and isinstance(probe(str(env_python(target)), "built"), ProjectPython):
        return True
    shutil.rmtree(target, ignore_errors=True)
    return False


async def _install(target: Path, reqs: list[str], timeout: float, resume: bool = False) -> str | None:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("PYTHON", "VIRTUAL_ENV"))}
    env["PIP_DISABLE_PIP_VERSION_CHECK"] = "1"
    uv = shutil.which("uv")
    base = getattr(sys, "_base_executable", None) or sys.executable
    if uv:
        steps = [[uv, "venv", "-q", "--python", base, str(target)],
                 [uv, "pip", "install", "-q", "--python", str(env_python(target)), *reqs]]
    else:
        # SuperQode's own pip installs into the new environment
        # (``pip --python``): no pip bootstrapped into every environment.
        steps = [[base, "-m", "venv", "--without-pip", str(target)],
                 [sys.executable, "-m", "pip", "--python", str(env_python(target)),
                  "install", "-q", *reqs]]
    if resume:
        steps = steps[1:]
    loop = asyncio.get_running_loop()
    deadline = loop.time() + timeout
    for cmd in steps:
        res = await run_command(cmd, envs_dir(), env=env, timeout=max(1.0, deadline - loop.time()))
        if res.timed_out:
            return f"{Path(cmd[0]).name} did not finish in {timeout:.0f} s"
        if res.returncode != 0:
            lines = [ln for ln in (res.stderr or res.stdout).strip().splitlines() if ln.strip()]
            errors = [ln for ln in lines if "error" in ln.lower()] or lines
            return f"{Path(cmd[0]).name} {cmd[1]}: " + (errors[-1][:300] if errors else f"exit {res.returncode}")
    return None


@contextlib.asynccontextmanager
async def _locked(path: Path):
    """An exclusive file lock, waited for without blocking the event loop."""
    fd = os.open(path, os.O_RDWR | os.O_CREAT, 0o600)
    try:
        while True:
            try:
                fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
                break
            except BlockingIOError:
                await asyncio.sleep(0.2)
        yield
    finally:
        os.close(fd)  # closing releases the lock
