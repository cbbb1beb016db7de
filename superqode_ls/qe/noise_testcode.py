"""Test and example code that no folder name gives away (noise.py, step 5,
beside the path classes): what the project's own files prove is there for
its tests, each judged once per file.

- **a Django project the tests run in** (modoboa's ``test_project/``, its
  ``settings.py`` with the tests' key and their OIDC key): a folder with its
  own ``manage.py`` below the top, no package (no ``__init__.py``: nothing
  installs it), where the project's test configuration runs the tests
  (tox's ``changedir`` for a ``manage.py test`` or pytest command, a CI
  step's ``cd`` before ``manage.py test``, pytest-django's
  ``DJANGO_SETTINGS_MODULE`` or ``--ds``), and which no module outside it
  but the tests imports. Class ``tests``.
- **factory_boy factories** (modoboa's ``admin/factories.py`` and its
  ``populate_database()``): a module that imports factory_boy (``factory``,
  not a module of the project's own) and defines a factory (a class with a
  ``Meta`` naming its ``model``, or one derived from ``factory.*``): data
  made for the tests, its passwords the test users'. Class ``fixtures``.
- **the tree pytest is told to collect** (celery's ``testpaths = t/unit/``
  and the ``t/`` around it, its integration and smoke tests beside it): a
  ``testpaths`` folder of the project's pytest configuration, and the top
  folder it lies in, each only where most of its modules are test modules
  by the project's ``python_files`` (or ``conftest.py``) and no module
  outside it but the tests imports it. ``testpaths = mypkg`` for tests kept
  beside the code, or ``src``, matches nothing: mostly product modules.
  Class ``tests``.
- **a runnable example that checks itself** (redis-py's
  ``doctests/cmds_cnxmgmt.py``): a script in a top-level folder that is no
  package, importing the project's own package as a user would, with
  ``assert`` statements at its top level checking what the calls return,
  and that the packaging does not name. Class ``examples``.

A provider's token stays shown wherever it is (``noise_paths``); the
product's code (a settings module the entry points use, a module a shipped
package imports) is never matched: each rule needs the proof above, not a
folder's or a file's name.
"""

from __future__ import annotations

import ast
import configparser
import os
import re
from pathlib import Path

from ..workspace.pyast import parse as parse_python
from .roles._common import read_head
from .roles._pytest_config import is_test_file, python_files, testpaths

_SKIP = frozenset({".git", ".venv", "venv", "env", "node_modules", "__pycache__", ".tox",
                   ".nox", "build", "dist", "site-packages", ".superqode"})
_MAX_FILES = 4000
_MAX_BYTES = 256_000
_TEST_COMMAND = re.compile(r"manage\.py\s+test\b|\bpytest\b|\bpy\.test\b")
_PACKAGING = ("setup.py", "setup.cfg", "pyproject.toml")
# "Mostly test modules": a tests tree keeps helpers, mocks and fixtures
# beside its test modules; a package with tests beside its code is mostly code.
_MOSTLY_TESTS = 0.6


class TestCode:
    """What one filter run learns of the tree about test code, kept for that
    run only (a long-lived server sees an edited tox.ini)."""

    def __init__(self, root: str | os.PathLike[str] | None, is_test=None) -> None:
        self.root = Path(root) if root is not None else None
        # the path classes' verdict on a file: an importer that is test code
        self.is_test = is_test or (lambda rel: False)
        self._sites: dict[str, str | None] | None = None
        self._packages: frozenset[str] | None = None
        self._collected: list[tuple[str, str]] | None = None

    def hit(self, rel: str | None) -> tuple[str, str] | None:
        """(class, why) of ``rel`` when the tree proves it test or example
        code, else None."""
        if self.root is None or not rel or not rel.endswith(".py"):
            return None
        site = self._test_site(rel) or self._collected_tree(rel)
        if site is not None:
            return "tests", site
        text = read_head(self.root / rel, _MAX_BYTES)
        if text is None:
            return None
        if "factory" in text and _factory_boy(text) and not self._own("factory"):
            return "fixtures", "factory_boy factories (data made for the tests)"
        if "assert" in text and (why := self._example(rel, text)):
            return "examples", why
        return None

    # -- a Django project the tests run in --------------------------------

    def _test_site(self, rel: str) -> str | None:
        parts = rel.split("/")
        if len(parts) < 3:
            return None
        if self._sites is None:
            self._sites = {}
        for n in range(len(parts) - 1, 0, -1):
            folder = "/".join(parts[:n])
            if folder not in self._sites:
                self._sites[folder] = self._site_why(folder)
            if self._sites[folder]:
                return self._sites[folder]
        return None

    def _site_why(self, folder: str) -> str | None:
        assert self.root is not None
        base = self.root / folder
        if not (base / "manage.py").is_file() or (base / "__init__.py").exists():
            return None
        how = self._tests_run_in(folder)
        if how is None:
            return None
        try:
            inner = {p.name for p in base.iterdir()
                     if p.is_dir() and (p / "__init__.py").is_file()}
        except OSError:
            return None
        if not inner or self._imported_outside(folder, inner):
            return None
        return (f"the Django project the tests run in ({folder}/manage.py: {how}); no package "
                "holds it and nothing outside it but the tests imports it")

    def _tests_run_in(self, folder: str) -> str | None:
        """How the project's test configuration runs its tests in ``folder``."""
        assert self.root is not None
        text = read_head(self.root / "tox.ini", _MAX_BYTES)
        if text:
            cfg = configparser.ConfigParser(interpolation=None, strict=False)
            try:
                cfg.read_string(text)
            except configparser.Error:
                cfg = configparser.ConfigParser()
            for section in cfg.sections():
                if not section.startswith("testenv"):
                    continue
                changedir = cfg.get(section, "changedir", fallback="").strip()
                if (changedir.removeprefix("{toxinidir}/").strip("/") == folder
                        and _TEST_COMMAND.search(cfg.get(section, "commands", fallback=""))):
                    return f"tox.ini's [{section}] runs them there"
        module = re.compile(rf"(?:DJANGO_SETTINGS_MODULE\s*=\s*|--ds[=\s]+)['\"]?"
                            rf"{re.escape(folder.rsplit('/', 1)[-1])}\.")
        for name in ("pytest.ini", "setup.cfg", "pyproject.toml"):
            cfg_text = read_head(self.root / name, _MAX_BYTES) or ""
            if module.search(cfg_text) and "pytest" in cfg_text:
                return f"{name} points pytest-django at its settings"
        cd = re.compile(rf"(?m)^\s*cd\s+(?:\./)?{re.escape(folder)}/?\s*(?:$|&&|;)")
        workflows = self.root / ".github" / "workflows"
        try:
            flows = sorted(p for p in workflows.iterdir() if p.suffix in (".yml", ".yaml"))
        except OSError:
            flows = []
        for flow in flows[:50]:
            body = read_head(flow, _MAX_BYTES) or ""
            for m in cd.finditer(body):
                if re.search(r"manage\.py\s+test\b", body[m.end():m.end() + 400]):
                    return f"CI ({flow.name}) runs them there"
        return None

    # -- the tree pytest is told to collect ---------------------------------

    def _collected_tree(self, rel: str) -> str | None:
        if self._collected is None:
            self._collected = self._collected_roots()
        for folder, why in self._collected:
            if rel.startswith(folder + "/"):
                return why
        return None

    def _collected_roots(self) -> list[tuple[str, str]]:
        assert self.root is not None
        try:
            paths, patterns = testpaths(self.root), python_files(self.root)
        except (OSError, ValueError):
            return []
        roots: list[tuple[str, str]] = []
        for path in paths[:8]:
            path = path.removeprefix("./").strip("/")
            if not path or any(c in path for c in "*?[") or ".." in path.split("/"):
                continue
            top = path.split("/")[0]
            for folder in dict.fromkeys((top, path)):
                if folder in ("src", "lib") or any(folder == f for f, _ in roots):
                    continue
                if not self._mostly_tests(folder, patterns):
                    continue
                if self._imported_outside(folder, {folder.replace("/", ".")}):
                    continue
                where = f"pytest's testpaths ({path})"
                roots.append((folder, where if folder == path else
                              f"the folder of {where}, its modules mostly tests"))
                break  # the top folder holds the entry
        return roots

    def _mostly_tests(self, folder: str, patterns: list[str]) -> bool:
        assert self.root is not None
        base = self.root / folder
        if not base.is_dir() or base.is_symlink():
            return False
        tests = others = 0
        for dirpath, dirnames, filenames in os.walk(base):
            dirnames[:] = sorted(d for d in dirnames if d not in _SKIP and not d.startswith("."))
            for name in filenames:
                if not name.endswith(".py") or name == "__init__.py":
                    continue
                rel = os.path.relpath(os.path.join(dirpath, name), self.root).replace(os.sep, "/")
                if name == "conftest.py" or is_test_file(rel, patterns):
                    tests += 1
                else:
                    others += 1
                if tests + others > _MAX_FILES:
                    return False
        return tests > 0 and tests >= _MOSTLY_TESTS * (tests + others)

    def _imported_outside(self, folder: str, names: set[str]) -> bool:
        """A module outside ``folder`` that is no test code imports one of
        ``names`` (or the walk was cut short: not proved)."""
        assert self.root is not None
        alternatives = "|".join(re.escape(n) for n in sorted(names))
        pattern = re.compile(rf"(?m)^[ \t]*(?:from|import)[ \t]+(?:{alternatives})\b")
        seen = 0
        for dirpath, dirnames, filenames in os.walk(self.root):
            dirnames[:] = sorted(d for d in dirnames if d not in _SKIP and not d.startswith("."))
            rel_dir = os.path.relpath(dirpath, self.root).replace(os.sep, "/")
            if rel_dir == folder or rel_dir.startswith(folder + "/"):
                dirnames[:] = []
                continue
            for name in filenames:
                if not name.endswith(".py"):
                    continue
                seen += 1
                if seen > _MAX_FILES:
                    return True
                rel = name if rel_dir == "." else f"{rel_dir}/{name}"
                if self.is_test(rel):
                    continue
                text = read_head(os.path.join(dirpath, name), _MAX_BYTES)
                if text is not None and pattern.search(text):
                    return True
        return False

    # -- the project's own packages ----------------------------------------

    def packages(self) -> frozenset[str]:
        """The top-level packages at the top or under ``src/``."""
        if self._packages is None:
            found: set[str] = set()
            assert self.root is not None
            for base in (self.root, self.root / "src"):
                try:
                    found.update(p.name for p in base.iterdir()
                                 if p.is_dir() and (p / "__init__.py").is_file())
                except OSError:
                    continue
            self._packages = frozenset(found)
        return self._packages

    def _own(self, name: str) -> bool:
        assert self.root is not None
        return name in self.packages() or (self.root / f"{name}.py").is_file()

    # -- a runnable example that checks itself ------------------------------

    def _example(self, rel: str, text: str) -> str | None:
        assert self.root is not None
        parts = rel.split("/")
        if len(parts) != 2 or (self.root / parts[0] / "__init__.py").exists():
            return None
        if parts[0] in self.packages() or parts[0] == "src":
            return None
        try:
            tree = parse_python(text)
        except (SyntaxError, ValueError, RecursionError, MemoryError):
            return None
        if not any(isinstance(n, ast.Assert) for n in tree.body):
            return None
        imported = {a.name.split(".")[0] for n in tree.body if isinstance(n, ast.Import)
                    for a in n.names}
        imported |= {n.module.split(".")[0] for n in tree.body
                     if isinstance(n, ast.ImportFrom) and n.module and not n.level}
        own = sorted(imported & self.packages())
        if not own:
            return None
        for name in _PACKAGING:
            body = read_head(self.root / name, _MAX_BYTES) or ""
            if rel in body or re.search(rf"['\"]{re.escape(parts[-1][:-3])}['\"]", body):
                return None
        return (f"a runnable example in {parts[0]}/ (no package, not packaged): it uses the "
                f"project's {own[0]} as a user would and asserts what the calls return")


_FACTORY_IMPORT = re.compile(r"(?m)^[ \t]*(?:import[ \t]+factory\b|from[ \t]+factory[\w.]*"
                             r"[ \t]+import\b)")


def _factory_boy(text: str) -> bool:
    """The module imports factory_boy and defines a factory with it."""
    if not _FACTORY_IMPORT.search(text):
        return False
    try:
        tree = parse_python(text)
    except (SyntaxError, ValueError, RecursionError, MemoryError):
        return False
    for node in tree.body:
        if not isinstance(node, ast.ClassDef):
            continue
        for base in node.bases:
            root = base
            while isinstance(root, ast.Attribute):
                root = root.value
            if isinstance(root, ast.Name) and root.id == "factory" and root is not base:
                return True
        for inner in node.body:
            if isinstance(inner, ast.ClassDef) and inner.name == "Meta" and any(
                    isinstance(s, ast.Assign) and any(
                        isinstance(t, ast.Name) and t.id == "model" for t in s.targets)
                    for s in inner.body):
                return True
    return False
