"""How a project's own environment is made: read what it declares, choose
the tool its developers use, and say which commands build it.

In order of precedence:

1. ``uv.lock``: ``uv sync --frozen`` (the locked versions, the test/dev
   dependency groups and extras the lock knows);
   ``poetry.lock`` / ``pdm.lock``: the lock exported by its own tool
   (``poetry export`` with its export plugin, ``pdm export``; run through
   ``uv tool run``, so neither needs to be installed), then installed with
   ``uv pip install -r``: the locked versions, no lock read by hand;
2. ``requirements*.txt`` (and ``requirements/*.txt``): ``uv pip install -r``
   with uv's own semantics (``-e .[extra]``, ``-r``/``-c`` includes), run from
   a copy of the sandbox so ``.`` is the project, never the user's checkout;
   a hatch test environment (``hatch test``'s, ``test``, else ``default``):
   its dependencies and features;
3. ``pyproject.toml`` / ``setup.py``: the project with its test extras and
   PEP 735 test/dev groups.

uv refuses a ``pyproject.toml`` whose extras repeat a name once normalized
(PEP 685: SQLAlchemy keeps ``mssql_pymssql`` beside ``mssql-pymssql`` for old
pip); pip, which tox and nox install with, reads it (the legacy spellings
are ignored). Such a project is installed with pip in the environment
(``installer``), its groups with pip's own ``--group``; uv still makes the
environment and installs a lock's export.

The project itself is always installed (non-editable), so its metadata
exists (``importlib.metadata.version``); its code is still imported from the
sandbox, which the isolation puts first (pyisolate); an application that
poetry would not package (``package-mode = false``, no package folder) is
left out, as ``poetry install`` leaves it. The key of a plan hashes every file it reads and the project
it is for: a build runs that project's code (its ``setup.py``, its build
backend, the project installed into the environment), so two projects with
the same declarations never share an environment (docs/safety.md, *Shared
caches*).
"""

from __future__ import annotations

import hashlib
import re
from dataclasses import dataclass, field, replace
from pathlib import Path, PurePosixPath

from .pyenv_read import (
    duplicate_extras,
    for_tests,
    hatch_env,
    included_files,
    poetry_groups,
    poetry_packages,
    poetry_python,
    python_request,
    read_pyproject,
    read_text,
    requirement_files,
    scm_version,
    static_metadata,
    subtable,
)
from .pyenv_tox import tox_testenv
from .pyprojects import uv_workspace
from .pytest_addopts import plugins_needed, project_addopts

# (scm_version, static_metadata, duplicate_extras: importable from here as before)
__all__ = ["LOCKS", "PDM", "PIP", "PLAN_FORMAT", "POETRY", "Plan", "duplicate_extras",
           "make_plan", "scm_version", "static_metadata"]

PLAN_FORMAT = "3"  # 3: keyed by project too
LOCKS = ("uv.lock", "poetry.lock", "pdm.lock")  # kinds whose versions are pinned
# The lock's own tools, run by ``uv tool run`` (their exports are pinned
# requirement files with markers).
POETRY = ("poetry>=2,<3", "poetry-plugin-export>=1.8")
PDM = "pdm>=2.17,<3"
# pip for a project uv refuses: ``--group`` is 25.1's, ``--uploaded-prior-to`` 26.0's.
PIP = "pip>=26"


@dataclass(frozen=True)
class Plan:
    """What to build. ``kind``: uv.lock | poetry.lock | pdm.lock |
    requirements | pyproject."""

    kind: str
    inputs: tuple[str, ...]  # project-relative files the plan reads (they make the key)
    requirement_files: tuple[str, ...] = ()
    extras: tuple[str, ...] = ()
    groups: tuple[str, ...] = ()
    requirements: tuple[str, ...] = ()  # a hatch environment's dependencies
    env_name: str | None = None  # that hatch environment
    installable: bool = False  # the project itself can be built and installed
    python_request: str | None = None  # .python-version or requires-python
    notes: tuple[str, ...] = field(default_factory=tuple)
    installer: str = "uv"  # "pip" where uv refuses pyproject.toml (see the module's doc)
    # In a monorepo (pyprojects): the project's folder in the copy of the
    # sandbox, where its commands run; for a uv workspace's member, the
    # member's name (``uv sync --package``) and the workspace's folder,
    # where the lock is and ``uv sync`` runs. "" / None: the root's project.
    folder: str = ""
    package: str | None = None
    lock_dir: str = ""
    tox: str = ""  # the file whose tox [testenv] deps are added (not with a lock)
    # The project's own build failed here (a backend that downloads at build
    # time, a compiler it lacks): its declared dependencies are installed
    # from pyproject.toml's tables instead, read by uv without a build; its
    # code runs from the sandbox either way (pyisolate).
    own_deps: bool = False
    # The well-known pytest plugins the project's addopts passes options of
    # (pyload's --cov: pytest-cov), installed where what it declares lacks
    # them: its developers have them.
    plugins: tuple[str, ...] = ()

    @property
    def deps_without_project(self) -> bool:
        """Whether the project's dependencies can be installed without it."""
        return (self.installable and self.installer == "uv" and not self.locked
                and any(PurePosixPath(i).name == "pyproject.toml" for i in self.inputs))

    @property
    def cwd(self) -> str:
        """Where the install commands run, relative to the copy."""
        return self.lock_dir if self.kind == "uv.lock" else self.folder

    @property
    def locked(self) -> bool:
        return self.kind in LOCKS

    def describe(self) -> str:
        what = {"uv.lock": "uv.lock", "poetry.lock": "poetry.lock", "pdm.lock": "pdm.lock",
                "hatch": f"hatch environment {self.env_name}",
                "tox": f"tox [testenv] deps from {self.tox}",
                "requirements": _some(self.requirement_files),
                "pyproject": "pyproject.toml" if "pyproject.toml" in self.inputs else "setup.py"}
        parts = [what.get(self.kind, self.kind)]
        if self.extras:
            parts.append("extras " + ",".join(self.extras))
        if self.groups:
            parts.append("groups " + ",".join(self.groups))
        if self.package:
            parts[0] += f" (workspace member {self.package})"
        if self.tox and self.kind != "tox":
            parts.append(f"tox [testenv] deps from {self.tox}")
        if self.installer == "pip":
            parts.append("with pip")
        if self.plugins:
            parts.append("pytest plugins its addopts use " + ",".join(self.plugins))
        if self.folder:
            parts[0] = f"{self.folder}: {parts[0]}"
        return "; ".join(parts)

    def key(self, root: Path, python_version: str, project: str) -> str:
        """``project``: the user's project the environment is for (its
        resolved path): one project's build never feeds another's session."""
        h = hashlib.sha256(f"{PLAN_FORMAT}\0{python_version}\0{self.kind}\0".encode())
        h.update(project.encode("utf-8", "surrogateescape") + b"\0")
        h.update(("\0".join([*self.extras, "|", *self.groups])).encode())
        if self.plugins:  # (keys of projects with none stay as they were)
            h.update(("\0plugins\0" + "\0".join(self.plugins)).encode())
        if self.folder or self.package:  # (the root's keys stay as they were)
            h.update(f"\0{self.folder}\0{self.package or ''}\0{self.lock_dir}\0".encode())
        for rel in sorted(self.inputs):
            try:
                h.update(rel.encode() + b"\0" + (root / rel).read_bytes() + b"\0")
            except OSError:
                h.update(rel.encode() + b"\0-\0")
        return h.hexdigest()[:16]

    def commands(self, uv: str, python: str, src: Path, as_of: str | None = None) -> list[list[str]]:
        """The install commands, run in ``src`` (a copy of the sandbox) with
        the environment already created at ``python``'s prefix. ``as_of``:
        for what no lock pins, only releases up to then (the project's last
        commit: what its developers resolved, not what came out since)."""
        pip = [uv, "pip", "install", "-q", "--python", python, "--no-editable", "--compile-bytecode"]
        if as_of:
            pip += ["--exclude-newer", as_of]
        seed: list[list[str]] = []
        if self.installer == "pip" and self.kind != "uv.lock":
            # pip itself is the tool's, not the project's: no --exclude-newer.
            seed = [[uv, "pip", "install", "-q", "--python", python, PIP]]
            # -I: the copy in the working folder is not on sys.path (as tox runs it).
            own_pip = [python, "-I", "-m", "pip", "install", "-q", "--no-input"]
            if as_of:
                own_pip += ["--uploaded-prior-to", as_of]
        else:
            own_pip = pip
        if self.kind == "uv.lock":
            cmd = [uv, "sync", "-q", "--frozen", "--no-editable", "--compile-bytecode",
                   "--python", python, "--no-python-downloads"]
            if self.package:
                cmd += ["--package", self.package]
            for extra in self.extras:
                cmd += ["--extra", extra]
            for group in self.groups:
                cmd += ["--group", group]
            return [cmd]
        if self.kind in ("poetry.lock", "pdm.lock"):
            exported = src.parent / "exported-lock.txt"  # beside the copy, in the build's tmp
            export = self._export(uv, exported)
            own = [*seed, [*own_pip, "--no-deps", "."]] if self.installable else []
            return [export, [*pip, "-r", str(exported)], *own]
        cmd = [*own_pip, *self.requirements]
        for rel in self.requirement_files:
            cmd += ["-r", str(src / self.folder / rel)]
        for group in self.groups:
            cmd += ["--group", f"pyproject.toml:{group}"]
        if self.installable and not self._installs_itself(src):
            if self.own_deps:
                cmd += ["-r", str(src / self.folder / "pyproject.toml"),
                        *(f"--extra={e}" for e in self.extras)]
            else:
                cmd.append("." + (f"[{','.join(self.extras)}]" if self.extras else ""))
        return [*seed, cmd] if len(cmd) > len(own_pip) else []

    def tool_env(self, tmp: Path, python: str) -> dict[str, str]:
        """Where the lock's tool may write (the build's tmp: the confined
        step allows nothing else) and the interpreter it exports for (pdm
        would make a venv of its own); the user's configuration stays read."""
        # pip's cache and prompts (the pip installer): the build's tmp, none.
        pip = ({"PIP_CACHE_DIR": str(tmp / "pip-cache"), "PIP_NO_INPUT": "1"}
               if self.installer == "pip" else {})
        if self.kind not in ("poetry.lock", "pdm.lock"):
            return pip
        return {**pip, "PDM_PYTHON": python, "PDM_IGNORE_SAVED_PYTHON": "1","UV_TOOL_DIR": str(tmp / "uv-tools"), "UV_TOOL_BIN_DIR": str(tmp / "uv-tools-bin"),
                "POETRY_CACHE_DIR": str(tmp / "poetry-cache"),
                "POETRY_DATA_DIR": str(tmp / "poetry-data"),
                "POETRY_VIRTUALENVS_CREATE": "false", "PDM_CACHE_DIR": str(tmp / "pdm-cache"),
                "PDM_CHECK_UPDATE": "false", "XDG_STATE_HOME": str(tmp / "state")}

    def _export(self, uv: str, out: Path) -> list[str]:
        """The lock as a requirements file, written by the lock's own tool
        (hashes left out: the lock's sources are the index's)."""
        if self.kind == "poetry.lock":
            cmd = [uv, "tool", "run", "-q", "--from", POETRY[0], "--with", POETRY[1], "poetry",
                   "export", "--no-interaction", "-f", "requirements.txt", "--without-hashes",
                   "-o", str(out)]
            if self.groups:
                cmd += ["--with", ",".join(self.groups)]
            for extra in self.extras:
                cmd += ["--extras", extra]
            return cmd
        # pdm's default: the default group and every dev group, as ``pdm
        # install`` gives its developers; ``-G`` for the test extras only
        # (a dev group named there would narrow the dev groups to it).
        cmd = [uv, "tool", "run", "-q", "--from", PDM, "pdm", "export", "--no-hashes",
               "-f", "requirements", "-o", str(out)]
        for extra in self.extras:
            cmd += ["-G", extra]
        return cmd

    def _installs_itself(self, src: Path) -> bool:
        """A requirements file already names the project (``-e .[full]``)."""
        for rel in self.requirement_files:
            try:
                text = (src / self.folder / rel).read_text(encoding="utf-8", errors="replace")
            except OSError:
                continue
            if re.search(r"^\s*(-e\s+|--editable[ =]\s*)?\.(\[[^\]]*\])?\s*(#.*)?$", text, re.MULTILINE):
                return True
        return False


def _some(files: tuple[str, ...], named: int = 4) -> str:
    """The files a line names: a project with forty (celery's extras) made
    its setup line 2,500 characters long."""
    more = f" and {len(files) - named} more" if len(files) > named else ""
    return ", ".join(files[:named]) + more


def make_plan(root: Path, sub: str = "") -> Plan | None:
    """The plan for the project in ``root``, or None when it declares
    nothing to install (not a Python project, or only loose scripts).
    ``sub``: in a monorepo, the project's folder below ``root`` (pyprojects);
    its plan is ``root``'s to build (its inputs relative to ``root``), a uv
    workspace's member from the workspace's lock. With the well-known pytest
    plugins its pytest ``addopts`` uses (pytest_addopts)."""
    plan = _plan_for(root, sub)
    needed = plugins_needed(project_addopts(root / sub)) if plan is not None else []
    return replace(plan, plugins=tuple(needed)) if plan is not None and needed else plan


def _plan_for(root: Path, sub: str) -> Plan | None:
    if not sub:
        return _plan_in(root)
    plan = _member_plan(root, sub)
    if plan is not None:
        return plan
    # Its own declarations, else the nearest folder above it that has some
    # (a Django backend/ whose requirements.txt is the repository's).
    for up in (sub, *(str(p) for p in PurePosixPath(sub).parents if str(p) != ".")):
        plan = _plan_in(root / up)
        if plan is not None:
            moved = tuple(f"{up}/{rel}" for rel in plan.inputs)
            return replace(plan, inputs=moved, folder=up, lock_dir=up)  # (its own lock, if any)
    return _plan_in(root)


def _member_plan(root: Path, sub: str) -> Plan | None:
    """A uv workspace member's plan: the workspace's ``uv.lock``, synced
    for that member (``uv sync --package``) in the workspace's folder."""
    lock_dir = uv_workspace(root, sub)
    project = read_pyproject(root / sub).get("project")
    if lock_dir is None or not isinstance(project, dict) or not project.get("name"):
        return None
    data = read_pyproject(root / sub)
    # Its own .python-version, else the workspace's (uv reads that), else
    # its requires-python.
    request = (python_request(root / sub, {})[0] or python_request(root / lock_dir, {})[0]
               or python_request(root / sub, project)[0])
    notes: tuple[str, ...] = ()
    at = f"{lock_dir}/" if lock_dir else ""
    inputs = [f"{at}{p}" for p in ("uv.lock", "pyproject.toml", ".python-version")
              if (root / lock_dir / p).is_file()]
    inputs += [f"{sub}/{p}" for p in ("pyproject.toml", ".python-version")
               if (root / sub / p).is_file()]
    return Plan("uv.lock", tuple(inputs), extras=for_tests(project.get("optional-dependencies")),
                groups=for_tests(data.get("dependency-groups")), installable=True,
                python_request=request, notes=notes, folder=sub,
                package=str(project["name"]), lock_dir=lock_dir)


def _plan_in(root: Path) -> Plan | None:
    """make_plan for the project whose folder is ``root``."""
    data = read_pyproject(root)
    project = data.get("project") if isinstance(data.get("project"), dict) else {}
    installable = bool(project.get("name")) or (root / "setup.py").is_file() or (
        (root / "setup.cfg").is_file() and "[metadata]" in read_text(root / "setup.cfg"))
    extras = for_tests(project.get("optional-dependencies"))
    groups = for_tests(data.get("dependency-groups"))
    request, notes = python_request(root, project)
    base = [p for p in ("pyproject.toml", "setup.py", "setup.cfg", ".python-version")
            if (root / p).is_file()]
    if (root / "uv.lock").is_file() and project.get("name"):
        return Plan("uv.lock", ("uv.lock", *base), extras=extras, groups=groups,
                    installable=True, python_request=request, notes=notes)
    plan = _with_tox(root, data, _make_plan(root, data, project, installable, extras, groups,
                                            request, base, notes),
                     installable, request, base, notes)
    dups = duplicate_extras(project)
    if plan is None or not dups:
        return plan
    more = f" and {len(dups) - 1} more" if len(dups) > 1 else ""
    said = (f"uv refuses pyproject.toml (extra {dups[0]}{more}: a name another extra has once "
            "normalized, PEP 685); installed with pip, as tox and nox do")
    return replace(plan, installer="pip", notes=(*plan.notes, said))


def _with_tox(root: Path, data: dict, plan: Plan | None, installable: bool,
              request: str | None, base: list[str], notes: tuple[str, ...]) -> Plan | None:
    """``plan`` with what tox's base test environment adds (a lock is the
    developers' whole environment: left as it is)."""
    if plan is not None and plan.locked:
        return plan
    tox = tox_testenv(root, data)
    if tox is None:
        return plan
    files = tuple(f for f in tox.requirement_files
                  if plan is None or f not in plan.requirement_files)
    inputs = (tox.file, *files, *included_files(root, list(files)))
    if plan is None:
        return Plan("tox", tuple(dict.fromkeys((*inputs, *base))), requirement_files=files,
                    requirements=tox.requirements,
                    extras=tox.extras if installable else (), installable=installable,
                    python_request=request, notes=notes, tox=tox.file)
    extras = (*plan.extras, *tox.extras) if plan.installable else plan.extras
    return replace(plan, inputs=tuple(dict.fromkeys((*plan.inputs, *inputs))),
                   requirement_files=(*plan.requirement_files, *files),
                   requirements=tuple(dict.fromkeys((*plan.requirements, *tox.requirements))),
                   extras=tuple(dict.fromkeys(extras)), tox=tox.file)


def _make_plan(root: Path, data: dict, project: dict, installable: bool,
               extras: tuple[str, ...], groups: tuple[str, ...], request: str | None,
               base: list[str], notes: tuple[str, ...]) -> Plan | None:
    """make_plan's choice after ``uv.lock``."""
    poetry = subtable(data, "tool", "poetry")
    if (root / "poetry.lock").is_file() and (poetry or project.get("name")):
        extras = for_tests(project.get("optional-dependencies") or poetry.get("extras"))
        return Plan("poetry.lock", ("poetry.lock", *base), extras=extras,
                    groups=for_tests(poetry_groups(poetry)),
                    installable=poetry_packages(root, project, poetry),
                    python_request=request or poetry_python(poetry), notes=notes)
    if (root / "pdm.lock").is_file() and project.get("name"):
        return Plan("pdm.lock", ("pdm.lock", *base), extras=extras,
                    installable=subtable(data, "tool", "pdm").get("distribution") is not False,
                    python_request=request, notes=notes)
    reqs = requirement_files(root)
    if reqs:
        return Plan("requirements", (*reqs, *included_files(root, reqs), *base),
                    requirement_files=tuple(reqs), extras=extras, groups=groups,
                    installable=installable, python_request=request, notes=notes)
    hatch = hatch_env(root, data)
    if hatch is not None:
        name, reqs, features = hatch
        inputs = (*base, *(["hatch.toml"] if (root / "hatch.toml").is_file() else []))
        return Plan("hatch", tuple(inputs), requirements=reqs,
                    extras=features or (extras if installable else ()), groups=groups,
                    installable=installable, python_request=request, notes=notes, env_name=name)
    if installable or groups:
        return Plan("pyproject", tuple(base), extras=extras if installable else (), groups=groups,
                    installable=installable, python_request=request, notes=notes)
    return None


