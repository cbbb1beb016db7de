"""Code a library does not ship (noise.py, with the path classes).

A project that builds a distribution says which code it ships: a ``src/``
layout, the packages its build configuration lists (hatch's wheel
``packages``, setuptools' ``packages`` / ``package-dir``, poetry's
``packages``), or the one top-level package named after the distribution.
Everything else in its tree -- a test server (urllib3's ``dummyserver/``),
maintainers' scripts (sentry-python's ``scripts/``), a lab folder, CI
helpers, ``setup.py`` -- runs on a developer's machine, never in a user's
install. A static finding there is shown one level lower and is noise, as
the ``tooling`` path class is; a provider's token stays shown (a real key
leaks wherever it is committed).

The shipped set must be certain, or nothing is classified: a project with
no distribution, or with another top-level package beside the one named
after it (a Django site's apps), keeps every finding as it was.
"""

from __future__ import annotations

import configparser
import os
import re
import tomllib
from pathlib import Path

from ..models import Finding
from .noise_paths import PATH_CLASS_CATEGORIES, join_reasons, key_material, provider_token
from .roles._common import read_bounded

# Folders that are tests, docs or examples whatever the layout: a package
# there (``tests/__init__.py``) is no second product package.
_NOT_PRODUCT = frozenset({"tests", "test", "testing", "docs", "doc", "examples", "example",
                          "benchmarks", "bench", "scripts", "tools", "ci", "build", "dist"})
_SKIP = frozenset({".git", ".venv", "venv", "env", "node_modules", "__pycache__", ".tox", ".nox",
                   ".superqode"})
_NAME_IN_SETUP = re.compile(r"""\bname\s*=\s*['"]([A-Za-z0-9][A-Za-z0-9._-]*)['"]""")
_FIND = re.compile(r"\bfind_(?:namespace_)?packages\b|\bpackages\s*=\s*find(?:_namespace)?:")
_PACKAGES_ARG = re.compile(r"\bpackages\s*=")
_PACKAGES_LIST = re.compile(r"\bpackages\s*=\s*\[([^\]]*)\]")
_CFG_PACKAGES = re.compile(r"(?m)^packages\s*=\s*((?:[\w.]+\s*)+)$")
_MAX_BYTES = 256 * 1024
# A deployable application, not a library: its whole tree is the product.
_APP_MARKERS = ("manage.py", "Procfile", "Dockerfile", "docker-compose.yml", "app.yaml")


def _read(path: Path) -> str | None:
    """A regular file's text, not through a link, bounded; None otherwise.
    A build file in another encoding still names its packages in ASCII."""
    raw = read_bounded(path, _MAX_BYTES)
    return None if raw is None else raw.decode("utf-8", "replace")


_BUILDS = re.compile(r"(?m)^\s+build\s*:")


def _services_only(path: Path) -> bool:
    """A ``docker-compose.yml`` that builds no image (every service an
    off-the-shelf ``image:``, redis-py's test servers): it runs what the
    project's tests talk to and deploys nothing of the project itself."""
    if path.name != "docker-compose.yml":
        return False
    text = _read(path)
    return text is not None and not _BUILDS.search(text)


def _norm(name: str) -> str:
    return re.sub(r"[-_.]+", "_", name).lower()


def _is_package(folder: Path) -> bool:
    return (folder / "__init__.py").is_file() and not (folder / "__init__.py").is_symlink()


def _top_packages(root: Path) -> list[str]:
    try:
        entries = sorted(os.scandir(root), key=lambda e: e.name)
    except OSError:
        return []
    return [e.name for e in entries if e.is_dir(follow_symlinks=False)
            and e.name not in _SKIP and not e.name.startswith(".") and _is_package(root / e.name)]


def _table(data: dict, key: str) -> dict:
    """``data[key]`` where it is a table, else an empty one (a hand-written
    TOML may hold any value under any key)."""
    value = data.get(key)
    return value if isinstance(value, dict) else {}


def _declared(data: dict, root: Path) -> list[str]:
    """The folders a build configuration names as its packages."""
    tool = _table(data, "tool")
    out: list[str] = []
    wheel = _table(_table(_table(_table(tool, "hatch"), "build"), "targets"), "wheel")
    if isinstance(wheel.get("packages"), list):
        out += [str(p).strip("/") for p in wheel["packages"] if isinstance(p, str)]
    setup = _table(tool, "setuptools")
    base = ""
    pkg_dir = setup.get("package-dir")
    if isinstance(pkg_dir, dict) and isinstance(pkg_dir.get(""), str):
        base = pkg_dir[""].strip("/")
    if isinstance(setup.get("packages"), list):
        out += [f"{base}/{p.split('.')[0]}".strip("/") for p in setup["packages"]
                if isinstance(p, str)]
    for p in _table(tool, "poetry").get("packages") or []:
        if isinstance(p, dict) and isinstance(p.get("include"), str):
            where = str(p.get("from") or "").strip("/")
            out.append(f"{where}/{p['include'].split('/')[0]}".strip("/"))
    # one folder once: ``packages = ["pkg", "pkg.lib", "pkg.test"]`` names pkg thrice
    return [p for p in dict.fromkeys(out) if p and ".." not in p and (root / p).is_dir()]


def _dist_name(data: dict, setup: str, cfg: str) -> str | None:
    project = _table(data, "project")
    if isinstance(project.get("name"), str):
        return project["name"]
    poetry = _table(_table(data, "tool"), "poetry")
    if isinstance(poetry.get("name"), str):
        return poetry["name"]
    if cfg:
        parser = configparser.ConfigParser(interpolation=None)
        try:
            parser.read_string(cfg)
            if parser.has_option("metadata", "name"):
                return parser.get("metadata", "name")
        except configparser.Error:
            pass
    m = _NAME_IN_SETUP.search(setup)
    return m.group(1) if m else None


def _finds_packages(data: dict, setup: str, cfg: str) -> bool:
    """The build searches for its packages (setuptools' ``find_packages``,
    ``packages = find:``, ``[tool.setuptools.packages.find]``)."""
    if isinstance(_table(_table(data, "tool"), "setuptools").get("packages"), dict):
        return True
    return bool(_FIND.search(setup + cfg))


def _setup_packages(root: Path, setup: str, cfg: str) -> list[str] | None:
    """The folders of a literal ``packages=[...]`` in setup.py or setup.cfg's
    ``packages =`` lines; [] when packages are given some other way (not
    certain), None when neither names any."""
    names: list[str] = []
    if _PACKAGES_ARG.search(setup):
        m = _PACKAGES_LIST.search(setup)
        if not m:
            return []
        names += re.findall(r"""['"]([\w.]+)['"]""", m.group(1))
    m = _CFG_PACKAGES.search(cfg)
    if m:
        names += m.group(1).split()
    if not names:
        return None
    tops = sorted({n.split(".")[0] for n in names})
    return tops if all((root / t).is_dir() for t in tops) else []


def shipped(root: Path) -> list[str] | None:
    """The folders (relative to ``root``) a library ships, or None when that
    is not certain (no distribution, an application, two product packages)."""
    return survey(root)[0]


def survey(root: Path) -> tuple[list[str] | None, list[str]]:
    """(what the library certainly ships or None; where that is not certain,
    the product packages of its distribution, else []). A library's own code
    (``noise_threat``) is the first, else the second; an application's or a
    project that builds no distribution is neither."""
    if any((root / m).exists() and not _services_only(root / m) for m in _APP_MARKERS):
        return None, []
    text = _read(root / "pyproject.toml")
    try:
        data = tomllib.loads(text) if text else {}
    except tomllib.TOMLDecodeError:
        return None, []
    # each build file read once, for every question below
    setup = _read(root / "setup.py") or ""
    cfg = _read(root / "setup.cfg") or ""
    name = _dist_name(data, setup, cfg)
    if not name:
        return None, []  # no distribution: nothing says what ships
    declared = _declared(data, root)
    if declared:
        return declared, []
    src = root / "src"
    if src.is_dir() and not src.is_symlink() and _top_packages(src):
        return ["src"], []
    packages = [p for p in _top_packages(root) if p.lower() not in _NOT_PRODUCT]
    if _finds_packages(data, setup, cfg):
        return None, packages  # what a package search finds is not certain from here
    listed = _setup_packages(root, setup, cfg)
    if listed is not None:
        return listed or None, [] if listed else packages
    if packages == [_norm(name)] or [_norm(p) for p in packages] == [_norm(name)]:
        return packages, []
    return None, []


def inside(path: str, folders: list[str]) -> bool:
    return any(path == f or path.startswith(f + "/") for f in folders)


def unshipped(findings: list[Finding], folders: list[str]) -> list[Finding]:
    """Static findings outside what the library ships (``folders``, from
    ``survey``; empty where that is not certain): one level lower, noise (a
    provider's token excepted), the shipped folders named."""
    if not folders:
        return findings
    where = ", ".join(f"{f}/" for f in folders)
    out = []
    for f in findings:
        # (a finding already noise, or in a path class, was judged and lowered once)
        if (f.category in PATH_CLASS_CATEGORIES and f.noise is None and f.file
                and not inside(f.file, folders)
                and not any(t.startswith("path:") for t in f.tags)):
            lowered = f.severity.lower()
            why = f"outside the shipped package ({where}): development code"
            update: dict = {
                "severity": lowered, "tags": [*f.tags, "path:development"],
                "severity_reason": join_reasons(
                    f.severity_reason,
                    why if lowered is f.severity else f"{why}: shown one level lower than "
                                                      f"{f.severity.value}")}
            if key_material(f):
                # a test server's key, made for it (urllib3's dummyserver/certs)
                update["noise"] = f"key material in development code ({where} ships)"
            elif not provider_token(f):
                update["noise"] = why
            f = f.model_copy(update=update)
        out.append(f)
    return out
