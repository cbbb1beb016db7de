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

Two more of the same kind, outside Django: a configuration module named for
development or the tests in a folder that is no package (PowerDNS-Admin's
``configs/development.py`` and ``configs/test.py``, read by path) that no
file of the project but its tests and docs names (``_unreferenced_config``);
and CSRF turned off in a test or development configuration class whose
module's production class keeps the framework's default (OpenOversight's
``TestingConfig``, ``test_config_class``).
"""

from __future__ import annotations

import ast
import os
import re
from collections.abc import Callable
from functools import lru_cache
from pathlib import Path

from ..config import DEFAULT_PATH_CLASSES
from ..models import Finding
from ..workspace.pyast import parse as parse_python
from .noise_paths import path_class, provider_token
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
    if f.rule_id in _CLASS_RULES:
        return test_config_class(f, lines_of)
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
        return (_development_key(f, root, lines_of, parts, stem)
                or _unreferenced_config(root, f.file))
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
        tree = parse_python(text)
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


# -- a development or test configuration nothing but the tests loads -------

# Files that may load a configuration module: code, container and process
# files, CI and build files. Documentation that tells a developer to use it
# (``README.md``) and the tests' own code do not make it production's.
_REF_SUFFIX = (".py", ".yml", ".yaml", ".cfg", ".ini", ".toml", ".sh", ".env", ".json", ".conf")
_REF_NAMES = ("Dockerfile", "Procfile", "Makefile", "Containerfile")
_REF_SKIP = frozenset({".git", ".venv", "venv", "env", "node_modules", "__pycache__", ".tox",
                       ".nox", "build", "dist", "site-packages", ".superqode", "static"})
_MAX_REF_FILES = 4000


@lru_cache(maxsize=32)
def _unreferenced_config(root: Path, rel: str) -> str | None:
    """Why ``rel`` (a module named for development or the tests that sets
    settings) is loaded by nothing but the tests: PowerDNS-Admin's
    ``configs/development.py`` and ``configs/test.py`` beside the shipped
    ``powerdnsadmin/default_config.py``. It is no module of a package (its
    folder has no ``__init__.py``: it is read by path, as a developer or the
    tests choose), and no file of the project outside its tests and docs names
    it (an import, its path, a container's ``FLASK_CONF``). None otherwise,
    and when the walk is cut short."""
    parts = rel.split("/")
    folder = root.joinpath(*parts[:-1])
    if len(parts) < 2 or (folder / "__init__.py").exists():
        return None
    # A production or base settings module beside it: a settings folder whose
    # own rules (_development_key: does production turn it on too?) decide.
    try:
        siblings = [n[:-3] for n in os.listdir(folder) if n.endswith(".py")]
    except OSError:
        return None
    if any(set(re.split(r"[_\-]+", n.lower())) & _PROD_WORDS for n in siblings):
        return None
    stem = parts[-1][:-3]
    dotted = ".".join([*parts[:-1], stem])
    names = re.compile(rf"(?<![\w-]){re.escape(parts[-1])}\b|\b{re.escape(dotted)}\b"
                       rf"|^\s*(?:from\s+\S*\b{re.escape(stem)}\s+import|import\s+"
                       rf"[\w.]*\b{re.escape(stem)}\b)", re.MULTILINE)
    seen = 0
    users = []
    for dirpath, dirnames, filenames in os.walk(root):
        dirnames[:] = sorted(d for d in dirnames if d not in _REF_SKIP
                             and (not d.startswith(".") or d == ".github"))
        for name in filenames:
            if not (name.endswith(_REF_SUFFIX) or name.startswith(_REF_NAMES)):
                continue
            other = os.path.relpath(os.path.join(dirpath, name), root).replace(os.sep, "/")
            if other == rel or path_class(other, _NOT_PRODUCT) is not None:
                continue
            seen += 1
            if seen > _MAX_REF_FILES:
                return None
            text = read_head(os.path.join(dirpath, name), 256_000)
            if text is not None and names.search(text):
                users.append(other)
                if not other.startswith(".github/"):
                    return None
    if any(not _tests_workflow(root, u) for u in users):
        return None
    return (f"a configuration for development or the tests ({rel}): no package holds it "
            f"and nothing but the tests{' and their CI' if users else ''} loads it (the "
            "application's own configuration is elsewhere)")


# Where a reference is no production use: the tests, their data, the docs.
_NOT_PRODUCT = {k: v for k, v in DEFAULT_PATH_CLASSES.items()
                if k in ("tests", "fixtures", "docs", "examples")}


def _tests_workflow(root: Path, rel: str) -> bool:
    """A CI workflow that runs the tests and deploys nothing."""
    text = read_head(root / rel, 256_000) or ""
    return bool(re.search(r"\b(pytest|tox|nox|manage\.py\s+test|unittest)\b", text)) and not \
        re.search(r"(?i)\bdeploy|publish|release\b", text)


# -- a setting turned off in a development or test configuration class ------

_CLASS_RULES = frozenset({"csrf-disabled"})
_DEV_CLASS = re.compile(r"(?i)dev|test|local|debug")
_PROD_CLASS = re.compile(r"(?i)prod|live|deploy|release")


def test_config_class(f: Finding, lines_of: Callable[[str], list[str] | None]) -> str | None:
    """Why ``f`` (CSRF turned off) is a test or development configuration
    class's choice: OpenOversight's ``TestingConfig`` sets
    ``WTF_CSRF_ENABLED = False`` (its own or in ``__init__`` as
    ``self.WTF_CSRF_ENABLED``), and every production class of the module
    (``ProductionConfig``) leaves that setting at the framework's default or
    sets another literal, itself or through its bases in the module. None
    when there is no production class, or one sets the same value or one not
    known."""
    if f.range is None:
        return None
    text = lines_of(f.file or "")
    try:
        tree = parse_python("\n".join(text or []))
    except (SyntaxError, ValueError, RecursionError, MemoryError):
        return None
    line = f.range.start_line
    classes = {c.name: c for c in tree.body if isinstance(c, ast.ClassDef)}
    own = next((c for c in classes.values() if c.lineno <= line <= (c.end_lineno or c.lineno)),
               None)
    if own is None or not _DEV_CLASS.search(own.name) or _PROD_CLASS.search(own.name):
        return None
    flagged = next(((name, value) for name, value, at in _settings(own) if at == line), None)
    if flagged is None or flagged[1] is _UNKNOWN:
        return None
    prods = [c for c in classes.values() if _PROD_CLASS.search(c.name)]
    if not prods:
        return None
    for prod in prods:
        value = _setting_of(prod, classes, flagged[0], 0)
        if value is _UNKNOWN or value == flagged[1]:
            return None
    return (f"{flagged[0]} = {flagged[1]!r} in {own.name}, a test or development configuration: "
            f"the production one ({prods[0].name}) keeps the framework's protection")


_UNKNOWN = object()


def _settings(cls: ast.ClassDef) -> list[tuple[str, object, int]]:
    """(name, literal value or _UNKNOWN, line) of each setting the class
    assigns: in its body, or as ``self.NAME`` in its methods."""
    out = []
    for n in ast.walk(cls):
        if not isinstance(n, ast.Assign):
            continue
        value = n.value.value if isinstance(n.value, ast.Constant) else _UNKNOWN
        for t in n.targets:
            if isinstance(t, ast.Name) and t.id.isupper():
                out.append((t.id, value, n.lineno))
            elif (isinstance(t, ast.Attribute) and isinstance(t.value, ast.Name)
                  and t.value.id == "self" and t.attr.isupper()):
                out.append((t.attr, value, n.lineno))
    return out


def _setting_of(cls: ast.ClassDef, classes: dict[str, ast.ClassDef], name: str,
                depth: int) -> object:
    """The class's literal for ``name`` (its own, else its bases' in the
    module); None where nothing sets it (the framework's default); _UNKNOWN
    where a value is not a literal or a base is not in the module."""
    values = [v for n, v, _ in _settings(cls) if n == name]
    if values:
        return values[0] if all(v == values[0] for v in values) else _UNKNOWN
    if depth > 8:
        return _UNKNOWN
    for base in cls.bases:
        if isinstance(base, ast.Name) and base.id in classes:
            got = _setting_of(classes[base.id], classes, name, depth + 1)
            if got is not None:
                return got
        elif not (isinstance(base, ast.Name) and base.id == "object"):
            return _UNKNOWN
    return None
