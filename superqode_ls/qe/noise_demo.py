"""A demo Django project inside a library's repository (noise_project.py's
project step): django-silk's ``project/`` with its own ``manage.py`` and
``settings.py``, which the package (``packages=['silk']``) does not ship.
Its ``DEBUG = True``, literal ``SECRET_KEY`` and empty ``ALLOWED_HOSTS`` are
the demo's, run on a developer's machine, not the settings of anything a
user installs: noise, with the reason said.

Decided by what the tree proves, not by a folder's name: the packaging
names the packages it ships as a literal list (setup.py's ``packages=[...]``,
pyproject's ``[tool.setuptools] packages``, hatch's wheel ``packages``,
poetry's ``packages = [{include = ...}]``), the settings module sits under a
folder with a ``manage.py`` (a Django site), and neither that folder nor the
settings module is in a shipped package. Where the packaging finds its
packages itself (``find_packages()``), ships the settings' folder, or the
repository ships no package (a web application), the settings are the
product's and their findings stay; so does a provider's token.
"""

from __future__ import annotations

import re
import tomllib
from collections.abc import Callable
from pathlib import Path

from ..models import Finding
from .noise_paths import provider_token
from .roles._common import read_head

_CATEGORIES = frozenset({"security", "secrets"})
# A Django settings module: it sets one of the settings a site must have.
_SETTINGS = re.compile(r"^(SECRET_KEY|INSTALLED_APPS|ROOT_URLCONF|ALLOWED_HOSTS)\s*=",
                       re.MULTILINE)
_SETUP_PACKAGES = re.compile(r"\bpackages\s*=\s*\[([^\]]*)\]")
_NAME = re.compile(r"['\"]([\w.]+)['\"]")


class DemoSites:
    """What one filter run learns of the tree (the packaging, the sites),
    kept for that run only: a long-lived server sees an edited setup.py."""

    def __init__(self, root: Path | None) -> None:
        self.root = root
        self._sites: dict[str, str | None] = {}
        self._shipped: frozenset[str] | None = None

    def shipped(self) -> frozenset[str]:
        if self._shipped is None:
            self._shipped = _shipped_packages(self.root) if self.root else frozenset()
        return self._shipped

    def site(self, rel: str) -> str | None:
        if rel not in self._sites:
            self._sites[rel] = _demo_site(self.root, rel, self.shipped()) if self.root else None
        return self._sites[rel]


def demo_settings(f: Finding, sites: DemoSites,
                  lines_of: Callable[[str], list[str] | None]) -> str | None:
    """Why ``f`` (a security or secrets finding) is a demo site's setting
    the library does not ship, or None."""
    if not f.file or f.category not in _CATEGORIES or provider_token(f):
        return None
    site = sites.site(f.file)
    if site is None:
        return None
    text = lines_of(f.file)
    if text is None or not _SETTINGS.search("\n".join(text)):
        return None
    return (f"the settings of a demo Django site ({site}/manage.py) that the package does not "
            f"ship (its packaging ships {', '.join(sorted(sites.shipped()))}): DEBUG, "
            "SECRET_KEY and ALLOWED_HOSTS there are the demo's, not the product's")


def _demo_site(root: Path, rel: str, shipped: frozenset[str]) -> str | None:
    """The folder of the Django site (its ``manage.py``) holding ``rel``,
    when no package the packaging ships holds it."""
    if not shipped:
        return None  # no package named as shipped: the settings may be the product's
    parts = rel.split("/")
    site = _site_folder(root, parts)
    if site is None:
        return None
    dotted = ".".join(p.removesuffix(".py") for p in parts)
    if any(dotted == s or dotted.startswith(s + ".") or parts[0] == s.split(".")[0]
           or (parts[0] == "src" and len(parts) > 1 and parts[1] == s.split(".")[0])
           for s in shipped):
        return None
    return site


def _site_folder(root: Path, parts: list[str]) -> str | None:
    """The nearest folder above the settings module with a ``manage.py``."""
    for n in range(len(parts) - 1, 0, -1):
        folder = "/".join(parts[:n])
        if (root / folder / "manage.py").is_file():
            return folder
    return None


def _shipped_packages(root: Path) -> frozenset[str]:
    """The packages the packaging names as a literal list; empty when it
    finds them itself or names none."""
    names: set[str] = set()
    setup = read_head(root / "setup.py", 256_000) or ""
    if "find_packages" in setup or "find_namespace_packages" in setup:
        return frozenset()
    for m in _SETUP_PACKAGES.finditer(setup):
        names.update(_NAME.findall(m.group(1)))
    try:
        data = tomllib.loads(read_head(root / "pyproject.toml", 256_000) or "")
    except tomllib.TOMLDecodeError:
        data = {}
    tool = data.get("tool", {}) if isinstance(data, dict) else {}
    st = tool.get("setuptools", {}) if isinstance(tool, dict) else {}
    if isinstance(st, dict) and isinstance(st.get("packages"), dict):
        return frozenset()  # packages.find: found, not named
    got = [st.get("packages") if isinstance(st, dict) else None,
           _get(tool, "hatch", "build", "targets", "wheel", "packages"),
           [p.get("include") for p in _get(tool, "poetry", "packages") or []
            if isinstance(p, dict)]]
    for value in got:
        if isinstance(value, list):
            names.update(v.rsplit("/", 1)[-1] for v in value
                         if isinstance(v, str) and v)
    return frozenset(names)


def _get(data: object, *keys: str) -> object:
    for key in keys:
        if not isinstance(data, dict):
            return None
        data = data.get(key)
    return data
