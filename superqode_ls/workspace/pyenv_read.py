"""What a project's files declare for its environment, read as its own
tools read them: its test extras and groups, poetry's and hatch's tables,
its requirement files (with their ``-r``/``-c`` includes), the Python it
asks for, its version from git (for setuptools-scm / hatch-vcs) or stated
outright. Read only; pyenv_plan chooses from these what to build.
"""

from __future__ import annotations

import re
import tomllib
from pathlib import Path

from packaging.requirements import InvalidRequirement, Requirement
from packaging.specifiers import InvalidSpecifier, SpecifierSet
from packaging.utils import canonicalize_name
from packaging.version import InvalidVersion, Version

from ..errors import SuperQodeError
from .git import git_out
from .regular import read_regular_bytes

_MAX_READ = 4 << 20  # a declaration file read whole (bounded)

TEST_NAMES = ("test", "tests", "testing", "dev")


# requirements/extras/*.txt: the files a setup.py reads its extras_require
# from (piccolo's postgres.txt: asyncpg, which its tests import).
_REQ_GLOBS = ("requirements*.txt", "*requirements.txt", "requirements/*.txt", "requirements/*.in",
              "requirements/extras/*.txt")


# Requirement files that are for something else than running the tests.
_NOT_FOR_TESTS = re.compile(r"(^|[-_/])(docs?|doc-requirements|typing|mypy|lint|build|release|"
                            r"publish|pre-commit|benchmarks?)([-_.]|$)")


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


def for_tests(table: object) -> tuple[str, ...]:
    """The test extras/groups of a table; ``dev`` only when there is none
    (it often holds linters and release tools rather than test needs)."""
    names = [n for n in TEST_NAMES if isinstance(table, dict) and n in table]
    return tuple([n for n in names if n != "dev"] or names)


def subtable(data: dict, *keys: str) -> dict:
    for key in keys:
        data = data.get(key) if isinstance(data, dict) else None
    return data if isinstance(data, dict) else {}


def poetry_groups(poetry: dict) -> dict:
    """Poetry's dependency groups (``dev-dependencies`` is the old ``dev``)."""
    groups = dict(subtable(poetry, "group"))
    if isinstance(poetry.get("dev-dependencies"), dict):
        groups.setdefault("dev", poetry["dev-dependencies"])
    return groups


def poetry_packages(root: Path, project: dict, poetry: dict) -> bool:
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


def poetry_python(poetry: dict) -> str | None:
    """``python`` of ``[tool.poetry.dependencies]`` when it is a PEP 440
    specifier (poetry's ``^3.10`` is not one: then no request, and
    SuperQode's own Python is tried first)."""
    value = subtable(poetry, "dependencies").get("python")
    if not isinstance(value, str):
        return None
    try:
        SpecifierSet(value)
    except InvalidSpecifier:
        return None
    return value


HATCH_TEST_ENVS = ("hatch-test", "test", "tests", "testing", "default")


def hatch_env(root: Path, data: dict) -> tuple[str, tuple[str, ...], tuple[str, ...]] | None:
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
            hatch_toml = tomllib.loads(read_text(root / "hatch.toml"))
        except tomllib.TOMLDecodeError:
            hatch_toml = {}
    envs = subtable(hatch_toml, "envs") or subtable(data, "tool", "hatch", "envs")
    name = next((n for n in HATCH_TEST_ENVS if isinstance(envs.get(n), dict)), None)
    if name is None:
        return None
    env, default = envs[name], subtable(envs, "default")
    own = [*(env.get("dependencies") or []), *(env.get("extra-dependencies") or [])]
    inherit = (name != "default" and not env.get("detached")
               and env.get("template", "default") == "default")
    reqs = [*(default.get("dependencies") or []), *own] if inherit else own
    if name == "hatch-test":
        reqs.append("pytest")  # hatch test's own runner
    features = env.get("features") or (default.get("features") if inherit else None) or []
    good = tuple(dict.fromkeys(r for r in reqs if isinstance(r, str) and pep508(r)))
    feats = tuple(f for f in features if isinstance(f, str) and re.fullmatch(r"[\w.-]+", f))
    return (name, good, feats) if good or feats else None


def pep508(text: str) -> bool:
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
    project = read_pyproject(root).get("project")
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


def included_files(root: Path, files: list[str]) -> list[str]:
    """Files reached through ``-r``/``-c`` (they belong in the key too)."""
    out: list[str] = []
    todo = list(files)
    seen = set(files)
    while todo:
        rel = todo.pop()
        for m in re.finditer(r"^\s*(?:-r|-c|--requirement|--constraint)[ =]\s*(\S+)",
                             read_text(root / rel), re.MULTILINE):
            inc = (Path(rel).parent / m.group(1)).as_posix()
            if inc not in seen and (root / inc).is_file():
                seen.add(inc)
                out.append(inc)
                todo.append(inc)
    return out


def python_request(root: Path, project: dict) -> tuple[str | None, tuple[str, ...]]:
    pinned = read_text(root / ".python-version").strip().splitlines()
    if pinned and pinned[0].strip():
        return pinned[0].strip(), ()
    req = project.get("requires-python")
    return (req, ()) if isinstance(req, str) and req.strip() else (None, ())


def read_pyproject(root: Path) -> dict:
    try:
        return tomllib.loads(read_text(root / "pyproject.toml", errors="strict"))
    except (UnicodeDecodeError, tomllib.TOMLDecodeError):
        return {}


def read_text(path: Path, errors: str = "replace") -> str:
    """The file's text; "" where it is not a regular file reached without a
    link (the sandbox's files, which a session may have swapped: never a
    link's target read, never a FIFO waited on)."""
    raw = read_regular_bytes(path, _MAX_READ)
    return "" if raw is None else raw.decode("utf-8", errors=errors)
