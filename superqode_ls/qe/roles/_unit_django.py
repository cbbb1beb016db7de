"""Django projects' tests, run the way their developers run them.

A project with ``manage.py`` naming its settings module runs its suite with
Django's own runner, ``python manage.py test``: its settings, its test
database (sqlite's is in memory; nothing is written to the sandbox), its
discovery (``test*.py``, so ``tests.py`` too). pytest collecting the same
files without settings fails on every import of a model
(ImproperlyConfigured, "Apps aren't loaded yet"): an environment problem,
not the project's. The runner SuperQode passes (``_django_runner.py``, copied
beside pytest's recorder) writes the recorder's records, so one parser
reads both.

A project that declares pytest-django, or whose pytest configuration names
``DJANGO_SETTINGS_MODULE``, runs with pytest as it does; the settings module
from ``manage.py`` is set in the environment when its configuration has none.

The settings module is read the way ``manage.py`` sets it
(``os.environ.setdefault("DJANGO_SETTINGS_MODULE", ...)``), from its syntax
tree, never by running it.
"""

from __future__ import annotations

import ast
import configparser
import re
import tomllib
from pathlib import Path

from ...workspace.pyenv import requirement_name
from ...workspace.pyenv_declared import declared_requirements
from ._common import selected_files

RUNNER_MODULE = "superqode_django_runner"
RUNNER_SOURCE = Path(__file__).with_name("_django_runner.py")
_KEY = "DJANGO_SETTINGS_MODULE"
_DOTTED = re.compile(r"^[A-Za-z_][\w]*(\.[A-Za-z_]\w*)*$")


def settings_module(root: Path) -> str | None:
    """The settings module ``manage.py`` sets by default, or None."""
    try:
        tree = ast.parse((root / "manage.py").read_text(encoding="utf-8", errors="replace"))
    except (OSError, SyntaxError, ValueError):
        return None
    for node in ast.walk(tree):
        value: ast.expr | None = None
        if (isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute)
                and node.func.attr == "setdefault" and len(node.args) == 2
                and _is_key(node.args[0])):
            value = node.args[1]
        elif (isinstance(node, ast.Assign) and len(node.targets) == 1
              and isinstance(node.targets[0], ast.Subscript) and _is_key(node.targets[0].slice)):
            value = node.value
        if (isinstance(value, ast.Constant) and isinstance(value.value, str)
                and _DOTTED.match(value.value)):
            return value.value
    return None


def _is_key(node: ast.expr) -> bool:
    return isinstance(node, ast.Constant) and node.value == _KEY


def declares_pytest_django(root: Path) -> bool:
    return any(requirement_name(r) == "pytest-django" for r in declared_requirements(root))


def ini_names_settings(root: Path) -> bool:
    """Whether the project's pytest configuration names the settings module."""
    for name, section in (("pytest.ini", "pytest"), ("tox.ini", "pytest"),
                          ("setup.cfg", "tool:pytest")):
        parser = configparser.ConfigParser(interpolation=None)
        try:
            parser.read(root / name, encoding="utf-8")
        except (configparser.Error, UnicodeDecodeError):
            continue
        if parser.has_option(section, _KEY):  # option names are case-folded
            return True
    try:
        data = tomllib.loads((root / "pyproject.toml").read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, tomllib.TOMLDecodeError):
        return False
    opts = data.get("tool", {}).get("pytest", {}).get("ini_options", {})
    return isinstance(opts, dict) and _KEY in opts


def pytest_settings(root: Path) -> str | None:
    """For a project that runs Django tests with pytest-django and whose
    configuration does not name the settings: manage.py's, to set in the
    environment (which pytest-django would let override its ini)."""
    if ini_names_settings(root) or not declares_pytest_django(root):
        return None
    return settings_module(root)


def django_runner(root: Path) -> str | None:
    """The settings module when the suite runs with ``manage.py test``."""
    settings = settings_module(root)
    if settings is None or declares_pytest_django(root) or ini_names_settings(root):
        return None
    return settings


def find_tests(root: Path, files: list[str] | None = None) -> list[str]:
    """Test modules by Django's default pattern (``test*.py``)."""
    return [rel for rel in selected_files(root, files, (".py",))
            if Path(rel).name.startswith("test")]


def argv(python: str, targets: list[str]) -> list[str]:
    """``manage.py test`` with SuperQode's runner; ``targets``: test files
    or recorded node ids (``path.py::Class::method``), as Django labels."""
    return [python, "manage.py", "test", "--testrunner", f"{RUNNER_MODULE}.Runner",
            "--noinput", "--verbosity", "1", *dict.fromkeys(label(t) for t in targets)]


def label(target: str) -> str:
    """A dotted test label from a file path or a recorded node id."""
    path, _, rest = target.partition("::")
    rest = rest.split(" [", 1)[0]  # a subtest's description
    mod = path.removesuffix(".py")
    mod = mod.removesuffix("/__init__").strip("/").replace("/", ".")
    return ".".join(p for p in (mod, *rest.split("::")) if p)
