"""What a project declares it needs: its requirement strings, read from
``pyproject.toml`` (dependencies, the test extras and PEP 735 groups) and
its requirement files (``-r`` includes inside the project followed), and
which of them SuperQode's own environment does not satisfy. Read only:
nothing here builds or runs the project."""

from __future__ import annotations

import importlib.metadata
import tomllib
from pathlib import Path

from .pyenv import requirement_name
from .pyenv_read import requirement_files

TEST_EXTRAS = ("test", "tests", "testing", "dev")
REQUIREMENT_FILES = (
    "requirements.txt", "requirements-dev.txt", "requirements_dev.txt", "dev-requirements.txt",
    "requirements-test.txt", "requirements_test.txt", "requirements-tests.txt",
    "test-requirements.txt", "requirements/test.txt", "requirements/tests.txt",
    "requirements/dev.txt", "requirements/testing.txt",
)


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
    # The files the environment is built from (requirements/*.txt, the
    # extras' files a setup.py reads) declare as much as the usual names.
    for rel in dict.fromkeys((*REQUIREMENT_FILES, *requirement_files(root))):
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


def declared_where(root: Path, module: str) -> str | None:
    """"django-extensions, in its `dev` extra": the declared requirement that
    provides the import name ``module`` (its name, or ``python-``/``py``
    before it: python-ldap's ``ldap``) and where it is declared; None when
    the project declares none."""
    wanted = requirement_name(module)
    names = {wanted, f"python-{wanted}", f"py{wanted}"}
    try:
        data = tomllib.loads((root / "pyproject.toml").read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, tomllib.TOMLDecodeError):
        data = {}
    project: dict = data["project"] if isinstance(data.get("project"), dict) else {}
    extras = project.get("optional-dependencies")
    groups = data.get("dependency-groups")
    sources: list[tuple[str, list]] = [("its dependencies", project.get("dependencies") or [])]
    sources += [(f"its `{k}` extra", v) for k, v in (extras or {}).items()
                if isinstance(extras, dict) and isinstance(v, list)]
    sources += [(f"its `{k}` dependency group", _group(groups, k, set()))
                for k in (groups or {}) if isinstance(groups, dict)]
    sources += [(rel, _requirements_file(root, root / rel, set()))
                for rel in dict.fromkeys((*REQUIREMENT_FILES, *requirement_files(root)))]
    for where, reqs in sources:
        for r in reqs:
            if isinstance(r, str) and requirement_name(r) in names:
                return f"{requirement_name(r)}, in {where}"
    return None


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
