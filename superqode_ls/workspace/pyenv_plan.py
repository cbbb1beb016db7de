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
import tomllib
from dataclasses import dataclass, field, replace
from pathlib import Path, PurePosixPath

from packaging.requirements import InvalidRequirement, Requirement
from packaging.specifiers import InvalidSpecifier, SpecifierSet
from packaging.utils import canonicalize_name
from packaging.version import InvalidVersion, Version

from ..errors import SuperQodeError
from .git import git_out
from .pyprojects import uv_workspace

PLAN_FORMAT = "3"  # 3: keyed by project too
LOCKS = ("uv.lock", "poetry.lock", "pdm.lock")  # kinds whose versions are pinned
# The lock's own tools, run by ``uv tool run`` (their exports are pinned
# requirement files with markers).
POETRY = ("poetry>=2,<3", "poetry-plugin-export>=1.8")
PDM = "pdm>=2.17,<3"
# pip for a project uv refuses: ``--group`` is 25.1's, ``--uploaded-prior-to`` 26.0's.
PIP = "pip>=26"
TEST_NAMES = ("test", "tests", "testing", "dev")
_REQ_GLOBS = ("requirements*.txt", "*requirements.txt", "requirements/*.txt", "requirements/*.in")
# Requirement files that are for something else than running the tests.
_NOT_FOR_TESTS = re.compile(r"(^|[-_/])(docs?|doc-requirements|typing|mypy|lint|build|release|"
                            r"publish|pre-commit|benchmarks?)([-_.]|$)")


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
                "requirements": ", ".join(self.requirement_files),
                "pyproject": "pyproject.toml" if "pyproject.toml" in self.inputs else "setup.py"}
        parts = [what.get(self.kind, self.kind)]
        if self.extras:
            parts.append("extras " + ",".join(self.extras))
        if self.groups:
            parts.append("groups " + ",".join(self.groups))
        if self.package:
            parts[0] += f" (workspace member {self.package})"
        if self.installer == "pip":
            parts.append("with pip")
        if self.folder:
            parts[0] = f"{self.folder}: {parts[0]}"
        return "; ".join(parts)

    def key(self, root: Path, python_version: str, project: str) -> str:
        """``project``: the user's project the environment is for (its
        resolved path): one project's build never feeds another's session."""
        h = hashlib.sha256(f"{PLAN_FORMAT}\0{python_version}\0{self.kind}\0".encode())
        h.update(project.encode("utf-8", "surrogateescape") + b"\0")
        h.update(("\0".join([*self.extras, "|", *self.groups])).encode())
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


def make_plan(root: Path, sub: str = "") -> Plan | None:
    """The plan for the project in ``root``, or None when it declares
    nothing to install (not a Python project, or only loose scripts).
    ``sub``: in a monorepo, the project's folder below ``root`` (pyprojects);
    its plan is ``root``'s to build (its inputs relative to ``root``), a uv
    workspace's member from the workspace's lock."""
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
    project = _pyproject(root / sub).get("project")
    if lock_dir is None or not isinstance(project, dict) or not project.get("name"):
        return None
    data = _pyproject(root / sub)
    # Its own .python-version, else the workspace's (uv reads that), else
    # its requires-python.
    request = (_python_request(root / sub, {})[0] or _python_request(root / lock_dir, {})[0]
               or _python_request(root / sub, project)[0])
    notes: tuple[str, ...] = ()
    at = f"{lock_dir}/" if lock_dir else ""
    inputs = [f"{at}{p}" for p in ("uv.lock", "pyproject.toml", ".python-version")
              if (root / lock_dir / p).is_file()]
    inputs += [f"{sub}/{p}" for p in ("pyproject.toml", ".python-version")
               if (root / sub / p).is_file()]
    return Plan("uv.lock", tuple(inputs), extras=_for_tests(project.get("optional-dependencies")),
                groups=_for_tests(data.get("dependency-groups")), installable=True,
                python_request=request, notes=notes, folder=sub,
                package=str(project["name"]), lock_dir=lock_dir)


def _plan_in(root: Path) -> Plan | None:
    """make_plan for the project whose folder is ``root``."""
    data = _pyproject(root)
    project = data.get("project") if isinstance(data.get("project"), dict) else {}
    installable = bool(project.get("name")) or (root / "setup.py").is_file() or (
        (root / "setup.cfg").is_file() and "[metadata]" in _text(root / "setup.cfg"))
    extras = _for_tests(project.get("optional-dependencies"))
    groups = _for_tests(data.get("dependency-groups"))
    request, notes = _python_request(root, project)
    base = [p for p in ("pyproject.toml", "setup.py", "setup.cfg", ".python-version")
            if (root / p).is_file()]
    if (root / "uv.lock").is_file() and project.get("name"):
        return Plan("uv.lock", ("uv.lock", *base), extras=extras, groups=groups,
                    installable=True, python_request=request, notes=notes)
    plan = _make_plan(root, data, project, installable, extras, groups, request, base, notes)
    dups = duplicate_extras(project)
    if plan is None or not dups:
        return plan
    more = f" and {len(dups) - 1} more" if len(dups) > 1 else ""
    said = (f"uv refuses pyproject.toml (extra {dups[0]}{more}: a name another extra has once "
            "normalized, PEP 685); installed with pip, as tox and nox do")
    return replace(plan, installer="pip", notes=(*plan.notes, said))


def duplicate_extras(project: dict) -> tuple[str, ...]:
    """The extras whose normalized name an earlier one already has (uv
    refuses the file; pip ignores the later spelling)."""
    table = project.get("optional-dependencies")
    seen: set[str] = set()
    dups: list[str] = []
    for name in table if isinstance(table, dict) else ():
        norm = canonicalize_name(str(name))
        if norm in seen:
            dups.append(str(name))
        seen.add(norm)
    return tuple(dups)


def _make_plan(root: Path, data: dict, project: dict, installable: bool,
               extras: tuple[str, ...], groups: tuple[str, ...], request: str | None,
               base: list[str], notes: tuple[str, ...]) -> Plan | None:
    """make_plan's choice after ``uv.lock``."""
    poetry = _table(data, "tool", "poetry")
    if (root / "poetry.lock").is_file() and (poetry or project.get("name")):
        extras = _for_tests(project.get("optional-dependencies") or poetry.get("extras"))
        return Plan("poetry.lock", ("poetry.lock", *base), extras=extras,
                    groups=_for_tests(_poetry_groups(poetry)),
                    installable=_poetry_packages(root, project, poetry),
                    python_request=request or _poetry_python(poetry), notes=notes)
    if (root / "pdm.lock").is_file() and project.get("name"):
        return Plan("pdm.lock", ("pdm.lock", *base), extras=extras,
                    installable=_table(data, "tool", "pdm").get("distribution") is not False,
                    python_request=request, notes=notes)
    reqs = requirement_files(root)
    if reqs:
        return Plan("requirements", (*reqs, *_included(root, reqs), *base),
                    requirement_files=tuple(reqs), extras=extras, groups=groups,
                    installable=installable, python_request=request, notes=notes)
    hatch = _hatch_env(root, data)
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


def _for_tests(table: object) -> tuple[str, ...]:
    """The test extras/groups of a table; ``dev`` only when there is none
    (it often holds linters and release tools rather than test needs)."""
    names = [n for n in TEST_NAMES if isinstance(table, dict) and n in table]
    return tuple([n for n in names if n != "dev"] or names)


def _table(data: dict, *keys: str) -> dict:
    for key in keys:
        data = data.get(key) if isinstance(data, dict) else None
    return data if isinstance(data, dict) else {}


def _poetry_groups(poetry: dict) -> dict:
    """Poetry's dependency groups (``dev-dependencies`` is the old ``dev``)."""
    groups = dict(_table(poetry, "group"))
    if isinstance(poetry.get("dev-dependencies"), dict):
        groups.setdefault("dev", poetry["dev-dependencies"])
    return groups


def _poetry_packages(root: Path, project: dict, poetry: dict) -> bool:
    """Whether poetry would install the project itself: not with
    ``package-mode = false``, and only when poetry-core finds something to
    package (``packages`` declared, or a package or module named after the
    project, at the root or under ``src/``); an application without one is
    left out, as ``poetry install`` does (it only warns)."""
    if poetry.get("package-mode") is False:
        return False
    if poetry.get("packages"):
        return True
    name = project.get("name") or poetry.get("name")
    if not isinstance(name, str) or not name.strip():
        return False
    module = re.sub(r"[-_. ]+", "_", name.strip()).lower()
    return any((root / where / module).is_dir() or (root / where / f"{module}.py").is_file()
               for where in (".", "src"))


def _poetry_python(poetry: dict) -> str | None:
    """``python`` of ``[tool.poetry.dependencies]`` when it is a PEP 440
    specifier (poetry's ``^3.10`` is not one: then no request, and
    SuperQode's own Python is tried first)."""
    value = _table(poetry, "dependencies").get("python")
    if not isinstance(value, str):
        return None
    try:
        SpecifierSet(value)
    except InvalidSpecifier:
        return None
    return value


HATCH_TEST_ENVS = ("hatch-test", "test", "tests", "testing", "default")


def _hatch_env(root: Path, data: dict) -> tuple[str, tuple[str, ...], tuple[str, ...]] | None:
    """The hatch environment the tests run in (``hatch test``'s, a test
    one, else the default): its name, its dependencies (the default
    environment's too, which the others inherit unless detached or made
    from another template) and its features. None without one that
    declares dependencies. Only PEP 508 requirements are taken: a context
    string (``{root:uri}``) or anything uv would read as an option is left
    out."""
    hatch_toml = {}
    if (root / "hatch.toml").is_file():
        try:
            hatch_toml = tomllib.loads(_text(root / "hatch.toml"))
        except tomllib.TOMLDecodeError:
            hatch_toml = {}
    envs = _table(hatch_toml, "envs") or _table(data, "tool", "hatch", "envs")
    name = next((n for n in HATCH_TEST_ENVS if isinstance(envs.get(n), dict)), None)
    if name is None:
        return None
    env, default = envs[name], _table(envs, "default")
    own = [*(env.get("dependencies") or []), *(env.get("extra-dependencies") or [])]
    inherit = (name != "default" and not env.get("detached")
               and env.get("template", "default") == "default")
    reqs = [*(default.get("dependencies") or []), *own] if inherit else own
    if name == "hatch-test":
        reqs.append("pytest")  # hatch test's own runner
    features = env.get("features") or (default.get("features") if inherit else None) or []
    good = tuple(dict.fromkeys(r for r in reqs if isinstance(r, str) and _pep508(r)))
    feats = tuple(f for f in features if isinstance(f, str) and re.fullmatch(r"[\w.-]+", f))
    return (name, good, feats) if good or feats else None


def _pep508(text: str) -> bool:
    try:
        Requirement(text)
    except InvalidRequirement:
        return False
    return not text.lstrip().startswith("-")


def scm_version(project: Path) -> str | None:
    """The version setuptools-scm / hatch-vcs would give the checkout, for
    ``SETUPTOOLS_SCM_PRETEND_VERSION``: the build copies the sandbox without
    its ``.git`` (git there would read a session's config), and an
    unsubstituted ``.git_archival.txt`` makes their build fail. From ``git
    describe`` in the user's project (the nearest tag; past it, the next
    patch's ``.devN``, their default scheme), or None (no tag, not git)."""
    try:
        out = git_out(["describe", "--tags", "--long", "--match", "*[0-9]*"], project)
    except (SuperQodeError, OSError):
        return None
    m = re.fullmatch(r"v?(.+)-(\d+)-g[0-9a-f]+", out.strip())
    if m is None:
        return None
    try:
        tag = Version(m.group(1))
    except InvalidVersion:
        return None
    distance = int(m.group(2))
    if distance == 0:
        return str(tag)
    release = (*tag.release[:-1], tag.release[-1] + 1) if not tag.is_prerelease else tag.release
    return f"{'.'.join(map(str, release))}.dev{distance}"


def static_metadata(root: Path) -> tuple[str, str] | None:
    """(name, version) when ``pyproject.toml`` states both outright (no
    build backend needs to run to know them), else None."""
    project = _pyproject(root).get("project")
    if not isinstance(project, dict) or "version" in (project.get("dynamic") or []):
        return None
    name, version = project.get("name"), project.get("version")
    if isinstance(name, str) and isinstance(version, str) and name.strip() and version.strip():
        return name.strip(), version.strip()
    return None


def requirement_files(root: Path) -> list[str]:
    """The project's requirement files for its tests, in a stable order:
    docs/lint/typing-only files are left out."""
    found: set[str] = set()
    for pattern in _REQ_GLOBS:
        for p in root.glob(pattern):
            rel = p.relative_to(root).as_posix()
            if p.is_file() and not _NOT_FOR_TESTS.search(rel.lower()):
                found.add(rel)
    # requirements/x.in beside a compiled requirements/x.txt: the pinned one.
    found = {r for r in found if not (r.endswith(".in") and r[:-3] + ".txt" in found)}
    return sorted(found)


def _included(root: Path, files: list[str]) -> list[str]:
    """Files reached through ``-r``/``-c`` (they belong in the key too)."""
    out: list[str] = []
    todo = list(files)
    seen = set(files)
    while todo:
        rel = todo.pop()
        for m in re.finditer(r"^\s*(?:-r|-c|--requirement|--constraint)[ =]\s*(\S+)",
                             _text(root / rel), re.MULTILINE):
            inc = (Path(rel).parent / m.group(1)).as_posix()
            if inc not in seen and (root / inc).is_file():
                seen.add(inc)
                out.append(inc)
                todo.append(inc)
    return out


def _python_request(root: Path, project: dict) -> tuple[str | None, tuple[str, ...]]:
    pinned = _text(root / ".python-version").strip().splitlines()
    if pinned and pinned[0].strip():
        return pinned[0].strip(), ()
    req = project.get("requires-python")
    return (req, ()) if isinstance(req, str) and req.strip() else (None, ())


def _pyproject(root: Path) -> dict:
    try:
        return tomllib.loads((root / "pyproject.toml").read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, tomllib.TOMLDecodeError):
        return {}


def _text(path: Path) -> str:
    try:
        return path.read_text(encoding="utf-8", errors="replace")
    except OSError:
        return ""
