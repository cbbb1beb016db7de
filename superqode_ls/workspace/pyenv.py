"""The Python environment a project's code runs with.

Roles that run the project's code (tests, types, mutation, generated tests)
must use the project's interpreter, with its dependencies and its pytest
plugins, not SuperQode's. ``discover`` finds it, in this order:

1. an explicit setting (``roles.python`` in the configuration),
2. the interpreter the editor selected (``python`` in the editor settings),
3. ``$VIRTUAL_ENV``,
4. ``.venv`` / ``venv`` (with ``pyvenv.cfg``) in the project (uv's default too),
5. poetry (``poetry env info -p``, only when poetry is installed),
   hatch (``.hatch/``) and pdm (``.pdm-python``),
6. ``$CONDA_PREFIX``.

Each candidate is probed by running it once; one that does not start is
skipped with its reason kept for the report. With none, ``pyenv_build``
builds one from the declared dependencies into the cache, or SuperQode's own
interpreter is used when it already has everything the project declares.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
from collections.abc import Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path

from ..config import Config, SandboxConfig
from . import namespaces
from .proc import BARRIER_ENV, supervise

PROBE = (
    "import sys, importlib.util as u, json;"
    "print(json.dumps({'version': '%d.%d' % sys.version_info[:2], 'prefix': sys.prefix,"
    "'pytest': u.find_spec('pytest') is not None,"
    "'coverage': u.find_spec('coverage') is not None}))"
)
PROBE_TIMEOUT_S = 20.0


@dataclass(frozen=True)
class ProjectPython:
    """One interpreter, where it came from, and what it has."""

    python: str  # absolute path of the interpreter
    source: str  # config | editor | VIRTUAL_ENV | .venv | venv | poetry | hatch | pdm | conda | built | superqode
    version: str = ""
    prefix: str = ""
    has_pytest: bool = False
    has_coverage: bool = False
    note: str | None = None  # why discovery ended here (skipped candidates, build failures)
    # Set when the project's environment could not be built: the code-running
    # roles report this setup problem instead of running without it.
    setup: str | None = None
    # A folder holding the project's metadata (a dist-info) for an
    # interpreter that does not have the project installed.
    metadata: str | None = None
    tried: tuple[str, ...] = field(default_factory=tuple)
    # In a monorepo, the Python project's folder it is for (pyprojects,
    # relative to the repository); "" for the root's project.
    folder: str = ""

    @property
    def own(self) -> bool:
        """SuperQode's own interpreter (no project environment)."""
        return self.source == "superqode"

    def shown(self, project: Path | None = None) -> str:
        """``.venv/bin/python 3.12`` (project-relative when inside the project)."""
        path = self.python
        if project is not None:
            try:
                path = Path(self.python).relative_to(project).as_posix()
            except ValueError:
                pass
        if self.own:
            path = f"SuperQode's own Python ({path})"
        elif self.source == "built":
            path = f"{path} (built from the declared dependencies)"
        return f"{path} {self.version}".strip()

    def label(self, project: Path | None = None) -> str:
        where = f" of {self.folder}/" if self.folder else ""
        return f"tests{where}: {self.shown(project)}"


def probe(python: str, source: str, env: dict[str, str] | None = None,
          hide: Sequence[str] = ()) -> ProjectPython | str:
    """Run ``python`` once; its facts, or why it cannot be used (one line).
    ``hide``: the user's ``sandbox.hide``, masked for it as for a session."""
    path = Path(python)
    if not path.exists():
        return f"{source}: {python} does not exist"
    if not os.access(path, os.X_OK) or path.is_dir():
        return f"{source}: {python} is not an executable file"
    run_env = {k: v for k, v in (env or os.environ).items() if not k.startswith("PYTHON")}
    try:
        with tempfile.TemporaryDirectory(prefix="superqode-probe-") as tmp:
            res = subprocess.run(
                _confined([str(path), "-I", "-c", PROBE], run_env, tmp, hide), capture_output=True,
                text=True, timeout=PROBE_TIMEOUT_S, env=run_env, stdin=subprocess.DEVNULL,
                check=False, cwd=tmp,
            )
    except (OSError, subprocess.TimeoutExpired) as e:
        return f"{source}: {python} does not start ({e})"
    try:
        facts = json.loads(res.stdout.strip().splitlines()[-1])
    except (ValueError, IndexError):
        why = (res.stderr.strip().splitlines() or ["no output"])[-1][:200]
        return f"{source}: {python} does not start ({why})"
    # Keep the path as found (a venv's bin/python is a symlink to the base
    # interpreter; resolving it would lose the environment).
    return ProjectPython(
        python=str(path if path.is_absolute() else path.absolute()),
        source=source,
        version=str(facts.get("version", "")),
        prefix=str(facts.get("prefix", "")),
        has_pytest=bool(facts.get("pytest")),
        has_coverage=bool(facts.get("coverage")),
    )


def _confined(cmd: list[str], env: dict[str, str], tmp: str, hide: Sequence[str] = ()
              ) -> list[str]:
    """The probe behind a session's layers, writing only ``tmp``: what it
    runs is the project's (a ``.venv/bin/python`` or a ``.pdm-python`` the
    repository ships, the ``.pth`` files of its site-packages), and it runs
    before any session exists. Sets ``env`` for it (scrubbed of keys). What
    the user hides from sessions (``hide``, ``sandbox.hide``) it cannot read
    either; the network stays off whatever ``sandbox.network`` says."""
    if sys.platform != "linux":
        return cmd
    clean = namespaces.scrub_env(env)
    env.clear()
    env.update(clean, TMPDIR=tmp)
    env[BARRIER_ENV] = json.dumps([tmp])
    # No network, secrets hidden: the defaults and the user's own list.
    env[namespaces.SPEC_ENV] = namespaces.spec(Config(sandbox=SandboxConfig(hide=list(hide))), env)
    return supervise(cmd, env)


def own_python(note: str | None = None, tried: tuple[str, ...] = (), folder: str = ""
               ) -> ProjectPython:
    import importlib.util

    return ProjectPython(
        python=sys.executable, source="superqode",
        version=f"{sys.version_info[0]}.{sys.version_info[1]}", prefix=sys.prefix,
        has_pytest=importlib.util.find_spec("pytest") is not None,
        has_coverage=importlib.util.find_spec("coverage") is not None,
        note=note, tried=tried, folder=folder,
    )


def env_python(prefix: Path) -> Path:
    """The interpreter of an environment rooted at ``prefix``."""
    for rel in ("bin/python", "bin/python3", "Scripts/python.exe", "python.exe"):
        p = prefix / rel
        if p.exists():
            return p
    return prefix / "bin" / "python"


def candidates(
    project: Path,
    configured: str | None = None,
    editor: str | None = None,
    environ: dict[str, str] | None = None,
) -> list[tuple[str, str]]:
    """(source, interpreter path) in discovery order, without probing."""
    environ = dict(os.environ if environ is None else environ)
    out: list[tuple[str, str]] = []

    def interp(value: str) -> str:
        p = Path(value).expanduser()
        if not p.is_absolute():
            p = project / p
        # A setting may name the environment rather than its interpreter.
        return str(env_python(p) if p.is_dir() else p)

    if configured:
        out.append(("config", interp(configured)))
    if editor:
        out.append(("editor", interp(editor)))
    if environ.get("VIRTUAL_ENV"):
        out.append(("VIRTUAL_ENV", str(env_python(Path(environ["VIRTUAL_ENV"])))))
    for folder in _up_to_repo_root(project):
        for name in (".venv", "venv"):
            if (folder / name / "pyvenv.cfg").is_file():
                shown = name if folder == project else f"{folder.name}/{name}"
                out.append((shown, str(env_python(folder / name))))
    poetry = _poetry_env(project, environ)
    if poetry:
        out.append(("poetry", str(env_python(Path(poetry)))))
    hatch = project / ".hatch"
    if hatch.is_dir():
        for cfg in sorted(hatch.glob("*/pyvenv.cfg")):
            out.append(("hatch", str(env_python(cfg.parent))))
    pdm = project / ".pdm-python"
    if pdm.is_file():
        try:
            text = pdm.read_text(encoding="utf-8").strip()
        except (OSError, UnicodeDecodeError):
            text = ""
        if text:
            out.append(("pdm", interp(text)))
    if environ.get("CONDA_PREFIX"):
        out.append(("conda", str(env_python(Path(environ["CONDA_PREFIX"])))))
    return out


def _up_to_repo_root(project: Path) -> list[Path]:
    """The project folder and, for a folder inside a repository, its parents
    up to the repository's root (a monorepo's shared ``.venv``)."""
    out = [project]
    if (project / ".git").exists():
        return out
    for parent in project.parents:
        out.append(parent)
        if (parent / ".git").exists():
            return out
    return [project]  # not in a repository: only the folder itself


def _poetry_env(project: Path, environ: dict[str, str]) -> str | None:
    """Poetry's environment for the project, only when it is a poetry
    project and poetry is installed (asking it may take a second)."""
    pyproject = project / "pyproject.toml"
    try:
        if "[tool.poetry" not in pyproject.read_text(encoding="utf-8"):
            return None
    except (OSError, UnicodeDecodeError):
        return None
    poetry = shutil.which("poetry", path=environ.get("PATH"))
    if poetry is None:
        return None
    try:
        res = subprocess.run(
            [poetry, "env", "info", "-p", "--no-interaction"], cwd=project, capture_output=True,
            text=True, timeout=PROBE_TIMEOUT_S, env=environ, stdin=subprocess.DEVNULL, check=False,
        )
    except (OSError, subprocess.TimeoutExpired):
        return None
    path = res.stdout.strip()
    return path if res.returncode == 0 and path and Path(path).is_dir() else None


def discover(
    project: Path,
    configured: str | None = None,
    editor: str | None = None,
    environ: dict[str, str] | None = None,
    hide: Sequence[str] = (),
) -> tuple[ProjectPython | None, list[str]]:
    """The first candidate that starts (None when none does) and why the
    ones before it were passed over: a broken explicit setting is never
    skipped silently, its reason rides along in the result's ``note``."""
    tried: list[str] = []
    for source, python in candidates(project, configured, editor, environ):
        found = probe(python, source, environ, hide)
        if isinstance(found, ProjectPython):
            note = "; ".join(tried) or None
            return replace(found, note=note, tried=tuple(tried)), tried
        tried.append(found)
    return None, tried


_NAME = re.compile(r"^\s*([A-Za-z0-9][A-Za-z0-9._-]*)")


def requirement_name(req: str) -> str | None:
    m = _NAME.match(req)
    return re.sub(r"[-_.]+", "-", m.group(1)).lower() if m else None
