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

A project with no ``manage.py`` whose own test command is Django's runner
(django-taggit's tox: ``python -m django test --settings=tests.settings``;
also ``django-admin test``, in tox's ``commands``, a ``noxfile.py`` or a
Makefile's ``test`` target) runs it the same way, ``python -m django test``
under that settings module.

The settings module is the one the project's test configuration declares
(its pytest configuration, tox's ``[testenv] setenv``, the ``--settings``
of the Django test command its tox, nox or Makefile runs, its CI
workflow's ``env``), else the one ``manage.py`` sets by default
(``os.environ.setdefault("DJANGO_SETTINGS_MODULE", ...)``): wger's default,
``settings.main``, needs a database server named in the environment, and its
CI tests with ``settings.ci``. All are read as text (``manage.py`` from its
syntax tree), never run; a declared module is taken only when it is a file
of the project.
"""

from __future__ import annotations

import ast
import configparser
import fnmatch
import itertools
import os
import re
import threading
import tomllib
from collections import OrderedDict
from pathlib import Path

from ...workspace.pyast import parse as parse_python
from ...workspace.pyenv import requirement_name
from ...workspace.pyenv_declared import declared_requirements
from ...workspace.pyprojects import HARNESS_DIRS
from ._common import read_head, selected_files

RUNNER_MODULE = "superqode_django_runner"
RUNNER_SOURCE = Path(__file__).with_name("_django_runner.py")
_KEY = "DJANGO_SETTINGS_MODULE"
_DOTTED = re.compile(r"^[A-Za-z_][\w]*(\.[A-Za-z_]\w*)*$")
# A workflow's ``env:`` entry: ``DJANGO_SETTINGS_MODULE: settings.ci``.
_WORKFLOW_ENV = re.compile(r"^\s*DJANGO_SETTINGS_MODULE\s*:\s*['\"]?([\w.]+)['\"]?\s*(?:#.*)?$",
                           re.MULTILINE)
_MAX_WORKFLOWS = 50
# Where a project writes the command its tests run with.
# ``manage.py test -p "*_tests.py"``: the pattern its discovery uses.
_PATTERN = re.compile(r"(?:-m" + r"""[\s'",]*""" + r"django|django-admin(?:\.py)?|manage\.py)"
                      r"""[\s'",]*test\b[^\n]*?\s(?:-p|--pattern)(?:=|\s+)['"]?([\w*?.\[\]-]+)""")
_COMMAND_FILES = ("tox.ini", "noxfile.py", "Makefile", "package.json", "gulpfile.js", "justfile")
# Django's test command with its settings, as tox, nox or make runs it:
# ``python -m django test --settings=tests.settings``, ``django-admin test
# --settings tests.settings``, nox's ``session.run("django-admin", "test",
# "--settings=x")``; also ``DJANGO_SETTINGS_MODULE=x python -m django test``.
_Q = r"""[\s'",]*"""
_TEST_COMMAND = re.compile(
    r"(?:-m" + _Q + r"django|django-admin(?:\.py)?|manage\.py)" + _Q + r"test\b[^\n]*?--settings(?:=|" + _Q
    + r")([A-Za-z_][\w.]*)|DJANGO_SETTINGS_MODULE=([A-Za-z_][\w.]*)\s+\S*python\S*\s+-m\s+"
    r"django\s+test\b")

_MAX_READ = 1 << 20  # a configuration or script file read whole (the sandbox's: bounded)


def harness(root: Path) -> str | None:
    """The folder (relative; "" the root) of the ``manage.py`` the tests run
    with: the root's, else a test harness's of the root's project
    (django-import-export's ``tests/manage.py``, run from the root as
    ``tests/manage.py test core``); None when there is none. One that sets
    no default settings module counts after those that do (babybuddy's:
    its settings come with the command, ``manage.py test --settings=...``)."""
    for rel in ("", *HARNESS_DIRS):
        if _manage_settings(root / rel / "manage.py") is not None:
            return rel
    for rel in ("", *HARNESS_DIRS):
        if _is_django_manage(root / rel / "manage.py"):
            return rel
    return None


def _is_django_manage(manage: Path) -> bool:
    """Whether ``manage`` is Django's command-line script (it hands its
    arguments to ``execute_from_command_line``); read as text."""
    text = read_head(manage, 100_000)  # (no link followed, no FIFO waited on)
    return text is not None and "execute_from_command_line" in text


def settings_module(root: Path) -> str | None:
    """The settings module ``manage.py`` (the harness's) sets by default, or None."""
    where = harness(root)
    return None if where is None else _manage_settings(root / where / "manage.py")


def _manage_settings(manage: Path) -> str | None:
    text = read_head(manage, _MAX_READ)
    if text is None:
        return None
    try:
        tree = parse_python(text)
    except (SyntaxError, ValueError):
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


def _ini_value(root: Path, name: str, section: str, key: str) -> str | None:
    parser = configparser.ConfigParser(interpolation=None)
    text = read_head(root / name, _MAX_READ)
    if text is None:
        return None
    try:
        parser.read_string(text)
    except configparser.Error:
        return None
    value = parser.get(section, key, fallback=None)  # option names are case-folded
    return value.strip() if isinstance(value, str) else None


def _pytest_ini_settings(root: Path) -> str | None:
    """What the project's pytest configuration sets the settings module to
    ("" when named without a value this can read)."""
    for name, section in (("pytest.ini", "pytest"), ("tox.ini", "pytest"),
                          ("setup.cfg", "tool:pytest")):
        if (value := _ini_value(root, name, section, _KEY)) is not None:
            return value
    text = read_head(root / "pyproject.toml", _MAX_READ)
    try:
        data = tomllib.loads(text) if text is not None else {}
    except tomllib.TOMLDecodeError:
        return None
    opts = data.get("tool", {}).get("pytest", {}).get("ini_options", {})
    if not isinstance(opts, dict) or _KEY not in opts:
        return None
    return opts[_KEY] if isinstance(opts[_KEY], str) else ""


def ini_names_settings(root: Path) -> bool:
    """Whether the project's pytest configuration names the settings module."""
    return _pytest_ini_settings(root) is not None


def _tox_settings(root: Path) -> str | None:
    for line in (_ini_value(root, "tox.ini", "testenv", "setenv") or "").splitlines():
        key, eq, value = line.partition("=")
        if eq and key.strip() == _KEY:
            return value.strip()
    return None


def _makefile_test(text: str) -> str:
    """The recipe of a Makefile's ``test`` target (its lines up to the next rule)."""
    m = re.search(r"^test\s*:[^\n]*\n((?:\t[^\n]*\n?|[ \t]*\n)*)", text, re.MULTILINE)
    return m.group(1) if m else ""


# The command files' texts of the last roots read, with what they were read
# from (each file's lstat): the role asks for the settings, the runner and
# the discovery pattern many times a run; the files are listed and read once.
_TEXTS: OrderedDict[str, tuple[tuple, tuple[str, ...], tuple[str, ...]]] = OrderedDict()
_TEXTS_KEPT = 8
_TEXTS_LOCK = threading.Lock()  # (asked from the role's worker threads too)


def _stat(path: Path) -> tuple | None:
    try:
        st = os.lstat(path)
    except OSError:
        return None
    return (st.st_mode, st.st_ino, st.st_size, st.st_mtime_ns)


def _texts(root: Path) -> tuple[tuple[str, ...], tuple[str, ...]]:
    """(the command texts, the workflows' whole texts) of ``root``."""
    folder = root / ".github" / "workflows"
    with _TEXTS_LOCK:
        cached = _TEXTS.get(str(root))
    names = cached[0][-1] if cached else None  # the workflows listed last time
    def signature(flows):
        return (tuple(_stat(root / n) for n in _COMMAND_FILES), _stat(folder),
                tuple(_stat(folder / n) for n in flows), flows)
    if cached is not None and cached[0] == signature(names):
        return cached[1], cached[2]
    try:  # (a link is not listed through: the folder is lstat'ed in the signature)
        flows = () if folder.is_symlink() else tuple(sorted(
            p.name for p in folder.iterdir() if p.suffix in (".yml", ".yaml"))[:_MAX_WORKFLOWS])
    except OSError:
        flows = ()
    commands, workflows = [], []
    for path in [root / n for n in _COMMAND_FILES] + [folder / n for n in flows]:
        text = read_head(path, _MAX_READ)  # (no link followed, no FIFO waited on)
        if text is None:
            continue
        if path.parent == folder:
            workflows.append(text)
        if path.name == "Makefile":
            text = _makefile_test(text)
        elif path.name.endswith((".js", ".json")):  # an argument list: ["manage.py", "test", ...]
            text = re.sub(r"""['"]\s*,\s*['"]""", " ", text)
        commands.append(text)
    with _TEXTS_LOCK:
        _TEXTS[str(root)] = (signature(flows), tuple(commands), tuple(workflows))
        while len(_TEXTS) > _TEXTS_KEPT:
            _TEXTS.popitem(last=False)
    return tuple(commands), tuple(workflows)


def _command_texts(root: Path) -> tuple[str, ...]:
    """The text of each file where the project writes its test command:
    tox, nox, the Makefile's ``test`` target, npm scripts, gulp tasks
    (an argument list joined into a command line), a justfile, CI workflows."""
    return _texts(root)[0]


def command_settings(root: Path) -> str | None:
    """The settings module of the Django test command the project's tox
    (``commands`` of any test environment), nox or Makefile ``test`` target,
    npm scripts or gulp tasks (babybuddy's ``gulp test``: ``manage.py test
    --settings=babybuddy.settings.test``) or CI workflow runs, or None. Read
    as text, never run."""
    for text in _command_texts(root):
        for m in _TEST_COMMAND.finditer(text):
            value = m.group(1) or m.group(2)
            if _DOTTED.match(value) and _is_module(root, value):
                return value
    return None


def discovery_pattern(root: Path) -> str:
    """The file pattern Django's runner discovers tests with: the ``-p`` /
    ``--pattern`` of the project's Django test command, else Django's
    default ``test*.py``."""
    for text in _command_texts(root):
        if (m := _PATTERN.search(text)) and m.group(1).endswith(".py"):
            return m.group(1)
    return "test*.py"


def _workflow_settings(root: Path) -> str | None:
    for text in _texts(root)[1]:
        if m := _WORKFLOW_ENV.search(text):
            return m.group(1)
    return None


def _is_module(root: Path, dotted: str) -> bool:
    for base in dict.fromkeys((root, root / (harness(root) or ""))):
        path = base.joinpath(*dotted.split("."))
        if path.with_suffix(".py").is_file() or (path / "__init__.py").is_file():
            return True
    return False


def declared_settings(root: Path) -> str | None:
    """The settings module the project's test configuration declares, in
    the order its developers' tools read it: pytest's configuration, tox's
    ``[testenv] setenv``, the ``--settings`` of the Django test command tox,
    nox or make runs, a CI workflow's ``env``."""
    for read in (_pytest_ini_settings, _tox_settings, command_settings, _workflow_settings):
        value = read(root)
        if value and _DOTTED.match(value) and _is_module(root, value):
            return value
    return None


def test_settings(root: Path) -> str | None:
    """The settings module the tests run with: the declared one, else
    manage.py's default."""
    return declared_settings(root) or settings_module(root)


def pytest_settings(root: Path) -> str | None:
    """For a project whose pytest configuration does not name the settings:
    the ones tox or CI declare, else manage.py's for one that declares
    pytest-django; set in the environment (which pytest-django would let
    override its ini)."""
    if ini_names_settings(root):
        return None
    if declared := declared_settings(root):  # tox's setenv (django-constance)
        return declared
    return settings_module(root) if declares_pytest_django(root) else None


def django_runner(root: Path) -> str | None:
    """The settings module when the suite runs with Django's runner:
    ``manage.py test``, or ``python -m django test`` where the project's
    own test command is that (no manage.py)."""
    if declares_pytest_django(root) or ini_names_settings(root):
        return None
    if settings_module(root) is None:
        return command_settings(root)
    return test_settings(root)


def runner_label(root: Path) -> str:
    """How Django's runner is started here, for the role's line."""
    if harness(root) is None and command_settings(root):
        return "python -m django test"
    return "manage.py test"


def unrunnable_tests(root: Path) -> str | None:
    """For a project pytest finds no test in: the one line for Django test
    modules (``test*.py``) beside a Django ``manage.py`` that no settings
    module is declared for (nothing runs them), or None."""
    if (harness(root) is None or declares_pytest_django(root) or ini_names_settings(root)
            or django_runner(root) is not None):
        return None  # (pytest-django's projects: pytest's python_files decide)
    if not (found := find_tests(root)):
        return None
    return (f"setup: {len(found)} Django test module(s) (test*.py, as {found[0]}) and no "
            "settings module to run them with: none set by manage.py, the pytest or tox "
            "configuration, or the test command of tox, nox, make, npm, gulp or CI")


def find_tests(root: Path, files: list[str] | None = None) -> list[str]:
    """Test modules by the pattern Django's runner discovers them with
    (``discovery_pattern``: the project's ``-p``, else ``test*.py``)."""
    pattern = discovery_pattern(root)
    return [rel for rel in selected_files(root, files, (".py",))
            if fnmatch.fnmatch(Path(rel).name, pattern)]


def argv(python: str, targets: list[str], root: Path | None = None) -> list[str]:
    """``manage.py test`` with SuperQode's runner; ``targets``: test files
    or recorded node ids (``path.py::Class::method``), as Django labels.
    A harness's manage.py (``tests/``) runs from the root, as its tox does:
    its folder is the script's, first on the path; labels are relative to
    it, and with no target its test packages are named (discovery from the
    root would not enter a folder that is no package)."""
    runner = ["--testrunner", f"{RUNNER_MODULE}.Runner", "--noinput", "--verbosity", "1"]
    if root is not None and (pattern := discovery_pattern(root)) != "test*.py":
        runner += ["--pattern", pattern]
    if root is not None and harness(root) is None and command_settings(root):
        # No manage.py: Django's own command, from the root (as tox runs it;
        # the settings come from DJANGO_SETTINGS_MODULE, set by the role).
        return [python, "-m", "django", "test", *runner,
                *dict.fromkeys(label(t) for t in targets)]
    where = (harness(root) if root is not None else "") or ""
    labels = [label(t[len(where) + 1:] if where else t) for t in targets
              if not where or t.startswith(where + "/")]
    if where and not labels:
        labels = _test_packages(root / where) if root is not None else []
    return [python, f"{where}/manage.py" if where else "manage.py", "test", *runner,
            *dict.fromkeys(labels)]


def _test_packages(folder: Path) -> list[str]:
    """The packages right in ``folder`` that hold a test module below."""
    out = []
    try:
        subs = sorted(p for p in folder.iterdir() if (p / "__init__.py").is_file())
    except OSError:
        return []
    for pkg in subs:
        if any(f.name.startswith("test") for f in itertools.islice(pkg.rglob("*.py"), 5000)):
            out.append(pkg.name)
    return out


def label(target: str) -> str:
    """A dotted test label from a file path or a recorded node id."""
    path, _, rest = target.partition("::")
    rest = rest.split(" [", 1)[0]  # a subtest's description
    mod = path.removesuffix(".py")
    mod = mod.removesuffix("/__init__").strip("/").replace("/", ".")
    return ".".join(p for p in (mod, *rest.split("::")) if p)
