"""A Django settings module for CI or a developer's machine (noise_project.py's
project step): wger's ``settings/ci.py`` and ``settings/local_dev.py`` beside
``settings/main.py``. Their literal ``SECRET_KEY``, ``DEBUG = True`` and
database password are the test run's and the laptop's, never the site's.

Decided by what the tree proves, not by the file's name alone: the module's
name says CI, local, development or tests (``ci``, ``local_dev``,
``settings_test``); it sets Django settings itself; the project's entry points
(``manage.py``, ``wsgi.py``, ``asgi.py``, at the top or above the module) name
their default settings (``os.environ.setdefault("DJANGO_SETTINGS_MODULE",
"settings.main")``) and every default is another module of the same folder
that exists and never imports this one; no container or process file at the
top (``Dockerfile``, ``docker-compose.yml``, ``Procfile``, ``.env``) selects
it. Otherwise (no entry point, a default that is this module, a production
module that star-imports it) the findings stay; so does a provider's token.
"""

from __future__ import annotations

import ast
import re
from collections.abc import Callable
from pathlib import Path

from ..models import Finding
from .noise_paths import provider_token
from .roles._common import read_head, read_prefix

_CATEGORIES = frozenset({"security", "secrets"})
# The words of a module's name that say where it runs: CI, a developer's
# machine, the tests.
_SIDE_WORDS = frozenset({"ci", "local", "dev", "develop", "development", "localdev", "test",
                         "tests", "testing"})
# ...and words that say production: ``dev_prod.py`` is no side module.
_PROD_WORDS = frozenset({"prod", "production", "live", "deploy", "main", "base", "common",
                         "global", "staging"})
_SETS_SETTINGS = re.compile(r"^(SECRET_KEY|DEBUG|DATABASES|ALLOWED_HOSTS|INSTALLED_APPS)\s*=",
                            re.MULTILINE)
_DEFAULT = re.compile(r"DJANGO_SETTINGS_MODULE['\"]\s*(?:,|\]\s*=)\s*['\"]([\w.]+)['\"]")
_ENTRY_POINTS = ("manage.py", "wsgi.py", "asgi.py")
# Files at the top that choose the settings a deployed process runs with.
_DEPLOY_FILES = ("Dockerfile", "docker-compose.yml", "docker-compose.yaml", "compose.yml",
                 "compose.yaml", "Procfile", ".env", "app.yaml", "fly.toml")


def side_settings(f: Finding, root: Path | None,
                  lines_of: Callable[[str], list[str] | None]) -> str | None:
    """Why ``f`` (a security or secrets finding) is in a settings module for
    CI or a developer's machine that the project's entry points do not use,
    or None."""
    if (root is None or not f.file or not f.file.endswith(".py")
            or f.category not in _CATEGORIES or provider_token(f)):
        return None
    parts = f.file.split("/")
    stem = parts[-1][:-3]
    words = set(re.split(r"[_\-]+", stem.lower()))
    if not words & _SIDE_WORDS or words & _PROD_WORDS:
        return None
    own = lines_of(f.file)
    if own is None or not _SETS_SETTINGS.search("\n".join(own)):
        return None
    defaults = _defaults(root, parts[:-1])
    if not defaults:
        return _development_key(f, root, lines_of, parts, stem)
    folder = "/".join(parts[:-1])
    module = ".".join([*parts[:-1], stem])
    for entry_dir, name in defaults:
        target = _resolve(root, entry_dir, name)
        if target is None or target == f.file or target.rsplit("/", 1)[0] != folder:
            return None
        text = "\n".join(lines_of(target) or [])
        if re.search(rf"(?m)^\s*(?:from\s+[\w.]*\.?{re.escape(stem)}\s+import|import\s+"
                     rf"[\w.]*{re.escape(stem)}\b)", text):
            return None  # production takes this module's values
    if _deployed(root, stem, module):
        return None
    chosen = ", ".join(sorted({n for _, n in defaults}))
    return (f"a settings module for CI or a developer's machine ({parts[-1]}): the project's "
            f"entry points run with {chosen} by default, which does not import it")


def _defaults(root: Path, folder: list[str]) -> list[tuple[str, str]]:
    """(the entry point's folder, the settings module it names by default)
    for each entry point at the top, in the module's folders above it, and
    in the top folder's packages (``wger/wsgi.py``)."""
    dirs = {"/".join(folder[:n]) for n in range(len(folder) + 1)}
    try:
        dirs.update(p.name for p in root.iterdir() if p.is_dir() and not p.name.startswith("."))
    except OSError:
        return []
    found = []
    for d in sorted(dirs):
        for name in _ENTRY_POINTS:
            path = root / d / name if d else root / name
            raw = read_prefix(path, 100_001)
            if raw is None or len(raw) > 100_000:
                continue
            text = raw.decode("utf-8", "replace")
            found += [(d, m) for m in _DEFAULT.findall(text)]
    return found


def _resolve(root: Path, entry_dir: str, name: str) -> str | None:
    """The module's file, relative to the root: from the entry point's folder
    (manage.py puts it on sys.path) or from the top."""
    rel = name.replace(".", "/")
    for base in dict.fromkeys([entry_dir, ""]):
        for cand in (f"{rel}.py", f"{rel}/__init__.py"):
            path = f"{base}/{cand}" if base else cand
            if (root / path).is_file():
                return path
    return None


def _deployed(root: Path, stem: str, module: str) -> bool:
    """A file at the top that starts a deployed process names the module."""
    pattern = re.compile(rf"DJANGO_SETTINGS_MODULE\W+[\w.]*\b{re.escape(stem)}\b|"
                         rf"\b{re.escape(module)}\b")
    for name in _DEPLOY_FILES:
        text = read_head(root / name, 256_000)
        if text is None:
            continue
        if pattern.search(text):
            return True
    return False


_KEY_RULES = frozenset({"secret-signing-key-default"})
_STAR_SIBLING = re.compile(r"(?m)^from\s+\.(\w+)\s+import\s+\*")


def _development_key(f: Finding, root: Path, lines_of: Callable[[str], list[str] | None],
                     parts: list[str], stem: str) -> str | None:
    """Why a signing-key fallback in a development settings module is noise
    when no entry point names a default: babybuddy's ``settings/
    development.py`` (``os.environ.get("SECRET_KEY") or "DEVELOPMENT!!"``)
    builds on ``from .base import *`` whose key has no fallback (``or
    None``), no sibling module imports it, and no deployment file selects
    it. Only the key's fallback: its other findings are not judged here."""
    if f.rule_id not in _KEY_RULES:
        return None
    folder = "/".join(parts[:-1])
    text = "\n".join(lines_of(f.file or "") or [])
    bases = _STAR_SIBLING.findall(text)
    if len(bases) != 1 or bases[0] == stem:
        return None
    base_rel = f"{folder}/{bases[0]}.py" if folder else f"{bases[0]}.py"
    base_lines = lines_of(base_rel)
    if base_lines is None or not _key_without_fallback("\n".join(base_lines)):
        return None
    try:
        siblings = sorted(p.name for p in (root / folder).iterdir() if p.suffix == ".py")
    except OSError:
        return None
    imports = re.compile(rf"(?m)^\s*(?:from\s+[\w.]*\b{re.escape(stem)}\s+import|import\s+"
                         rf"[\w.]*\b{re.escape(stem)}\b)")
    for name in siblings:
        if name == parts[-1]:
            continue
        sib = lines_of(f"{folder}/{name}" if folder else name)
        if sib is None or imports.search("\n".join(sib)):
            return None  # another settings module takes this one's values
    if _deployed(root, stem, ".".join([*parts[:-1], stem])):
        return None
    return (f"a development settings module's key fallback ({parts[-1]}): the settings it "
            f"builds on ({bases[0]}.py) have none, no other settings module imports it and no "
            "deployment file selects it")


def _key_without_fallback(text: str) -> bool:
    """The module sets ``SECRET_KEY`` once, from the environment only: no
    string literal in the value but the variable's name."""
    try:
        tree = ast.parse(text)
    except (SyntaxError, ValueError, RecursionError, MemoryError):
        return False
    values = [n.value for n in tree.body if isinstance(n, ast.Assign) and any(
        isinstance(t, ast.Name) and t.id == "SECRET_KEY" for t in n.targets)]
    if len(values) != 1:
        return False
    names = set()
    for n in ast.walk(values[0]):
        if isinstance(n, ast.Call) and n.args:
            names.add(id(n.args[0]))
        elif isinstance(n, ast.Subscript):
            names.add(id(n.slice))
    return not any(isinstance(n, ast.Constant) and isinstance(n.value, str) and n.value
                   and id(n) not in names for n in ast.walk(values[0]))
