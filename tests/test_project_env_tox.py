"""A project that tests with tox declares its test dependencies there
(python-socketio's pytest-asyncio, twine's pytest-socket): the environment
gets tox's base test environment's deps and extras, from tox.ini,
setup.cfg or pyproject.toml; what only some of tox's environments install,
and what tox would substitute, is left out; a lock stays the whole
environment. An async test failing for want of a plugin is the
environment's problem, not a finding."""

from __future__ import annotations

from pathlib import Path

from superqode_ls.qe.roles._unit_env import environment_problem
from superqode_ls.workspace.pyenv_plan import make_plan
from tests.test_project_env import write

PROJECT = '[project]\nname = "p"\nversion = "1"\n[project.optional-dependencies]\nfast = ["idna"]\n'
TOX = """[tox]
envlist = py{310,311},lint

[testenv]
deps =
    pytest
    pytest-asyncio>=0.23  # runs the async tests
    -r{toxinidir}/ci/testdeps.txt
    py310: backports.zoneinfo
    {env:EXTRA_DEP:}
    --index-url=https://example.invalid
    .[fast]
extras = cli
commands = pytest {posargs}

[testenv:lint]
deps = ruff

[testenv:integration]
deps =
    {[testenv]deps}
    pytest-rerunfailures
"""


def test_tox_ini_testenv_deps_join_the_environment(tmp_path: Path):
    root = write(tmp_path / "p", {"pyproject.toml": PROJECT, "tox.ini": TOX,
                                  "ci/testdeps.txt": "pretend\n", "p/__init__.py": ""})
    plan = make_plan(root)
    assert plan.kind == "pyproject" and plan.tox == "tox.ini"
    # Before: tox.ini was not read; the suite ran without pytest-asyncio.
    assert plan.requirements == ("pytest", "pytest-asyncio>=0.23")
    assert plan.requirement_files == ("ci/testdeps.txt",)
    assert set(plan.extras) == {"fast", "cli"}
    assert {"tox.ini", "ci/testdeps.txt"} <= set(plan.inputs)  # they make the key
    assert "tox [testenv] deps from tox.ini" in plan.describe()
    cmd = plan.commands("uv", "/venv/bin/python", root)[-1]
    assert "pytest-asyncio>=0.23" in cmd and str(root / "ci/testdeps.txt") in cmd
    assert not any("ruff" in c or "zoneinfo" in c or "example.invalid" in c or "rerun" in c
                   for c in cmd)
    before = plan.key(root, "3.11", str(root))
    (root / "tox.ini").write_text(TOX.replace("pytest-asyncio>=0.23", "pytest-asyncio>=0.24"))
    assert make_plan(root).key(root, "3.11", str(root)) != before


def test_tox_in_setup_cfg_or_pyproject_and_a_tox_only_project(tmp_path: Path):
    cfg = write(tmp_path / "c", {"setup.cfg": "[metadata]\nname = c\n[tox:tox]\nenvlist = py\n"
                                              "[testenv]\ndeps = pytest-socket\n",
                                 "setup.py": "from setuptools import setup\nsetup()\n"})
    assert make_plan(cfg).requirements == ("pytest-socket",)
    legacy = write(tmp_path / "l", {"pyproject.toml": PROJECT + '[tool.tox]\nlegacy_tox_ini = """\n'
                                    '[testenv]\ndeps = pretend\n"""\n'})
    assert make_plan(legacy).requirements == ("pretend",)
    native = write(tmp_path / "n", {"pyproject.toml": PROJECT + '[tool.tox.env_run_base]\n'
                                    'deps = ["anyio", "-r req.txt"]\nextras = ["fast"]\n',
                                    "req.txt": "idna\n"})
    plan = make_plan(native)
    assert plan.requirements == ("anyio",) and plan.requirement_files == ("req.txt",)
    # Nothing but tox.ini (an application, not a package): a plan of its own.
    app = write(tmp_path / "a", {"tox.ini": "[testenv]\ndeps = pytest\n    -rrequirements.txt\n",
                                 "requirements.txt": "idna\n", "app.py": "x = 1\n"})
    plan = make_plan(app)
    assert plan.kind in ("requirements", "tox") and "pytest" in plan.requirements
    assert make_plan(write(tmp_path / "z", {"tox.ini": "[testenv]\ncommands = pytest\n",
                                            "app.py": "x = 1\n"})) is None
    # A -r file outside the project is never read.
    out = write(tmp_path / "o", {"pyproject.toml": PROJECT,
                                 "tox.ini": "[testenv]\ndeps = -r../secret.txt\n    /etc/x\n"})
    assert make_plan(out).requirement_files == ()


def test_a_lock_stays_the_whole_environment(tmp_path: Path):
    root = write(tmp_path / "p", {"pyproject.toml": PROJECT, "tox.ini": TOX, "uv.lock": "version = 1\n"})
    plan = make_plan(root)
    assert plan.kind == "uv.lock" and not plan.tox and not plan.requirements


def test_an_async_test_without_its_plugin_is_the_environments_problem(tmp_path: Path):
    said = environment_problem({"message": "Failed: async def functions are not natively "
                                           "supported.\nYou need to install a suitable plugin"},
                               tmp_path)
    assert said and "no async test plugin" in said
    assert environment_problem({"message": "AssertionError: assert 1 == 2"}, tmp_path) is None


def test_a_broker_that_is_not_running_is_the_environments_a_code_error_is_not(tmp_path):
    # dramatiq's RabbitMQ broker through pika: no port in the words
    said = environment_problem({"message": (
        "dramatiq.errors.ConnectionClosed: AMQPConnectionError: (AMQPConnectorSocketConnectError: "
        "ConnectionRefusedError(111, 'Connection refused'),)")}, tmp_path)
    assert said == "the tests need RabbitMQ, which is not running", said
    assert environment_problem({"message": "dramatiq.errors.ConnectionClosed: channel closed "
                                           "by the test itself"}, tmp_path) is None


CONSTANCE = """[tox]
envlist =
    py{38,39,310,311,312}-dj{42}-{unittest,pytest,checkmigrations}
    py{310,311,312,313}-dj{51}-{unittest,pytest,checkmigrations}
    docs

[testenv]
deps =
    redis
    dj42: django>=4.2,<4.3
    dj51: django>=5.1,<5.2
    djmain: https://github.com/django/django/archive/main.tar.gz
    pytest: pytest-django
    {py310,py311}-!dj51: tomli
    unittest,checkmigrations: coverage
extras =
    pytest: redis
commands = pytest

[testenv:docs]
deps = sphinx
"""


def test_factor_bound_deps_of_one_environment_the_python_satisfies(tmp_path: Path):
    from superqode_ls.workspace.pyenv_tox import tox_testenv

    root = write(tmp_path / "c", {"pyproject.toml": PROJECT, "tox.ini": CONSTANCE,
                                  "c/__init__.py": ""})
    # Before: every factor-bound line was dropped, Django with them, and
    # django-constance's whole suite was skipped ("django is not installed").
    env = tox_testenv(root, {}, "3.11")
    assert env.requirements == ("redis", "django>=4.2,<4.3", "pytest-django", "tomli")
    assert env.extras == ("redis",)
    # 3.13 is only in the dj51 line; 3.7 in none: factor lines left out.
    assert tox_testenv(root, {}, "3.13").requirements == (
        "redis", "django>=5.1,<5.2", "pytest-django")
    assert tox_testenv(root, {}, "3.7").requirements == ("redis",)
    plan = make_plan(root)  # SuperQode's own Python chooses
    assert "pytest-django" in plan.requirements
    assert any(r.startswith("django>=") for r in plan.requirements)
    assert "sphinx" not in plan.requirements and not any("archive" in r for r in plan.requirements)


SENTRY = """[tox]
envlist =
    {py3.6,py3.7,py3.8,py3.11,py3.14t}-common
    {py3.6,py3.12}-gevent

[testenv]
deps =
    common: pytest-asyncio
    {py3.6,py3.7}-common: pytest<7.0.0
    {py3.8,py3.11,py3.14t}-common: pytest
    {py3.14t}-common: coverage==7.11.0
    gevent: gevent
"""


def test_dotted_python_factors_bind_deps_to_their_version(tmp_path: Path):
    """sentry-python names its environments ``py3.11-common``: before, the
    dotted factor was no Python version, the first environment
    (``py3.6-common``) was taken for 3.11 and pytest<7 installed (anyio's
    plugin then failed: No module named '_pytest.scope')."""
    from superqode_ls.workspace.pyenv_tox import tox_testenv

    root = write(tmp_path / "s", {"pyproject.toml": PROJECT, "tox.ini": SENTRY})
    assert tox_testenv(root, {}, "3.11").requirements == ("pytest-asyncio", "pytest")
    assert tox_testenv(root, {}, "3.7").requirements == ("pytest-asyncio", "pytest<7.0.0")
    # py3.14t is the free-threaded build: not a plain 3.14's environment.
    assert tox_testenv(root, {}, "3.14") is None


def test_a_submodule_missing_from_an_installed_package_is_named(tmp_path: Path):
    """Before: "package '_pytest' is not installed" while pytest 6 was."""
    site = tmp_path / "env" / "lib" / "python3.11" / "site-packages"
    (site / "_pytest").mkdir(parents=True)
    (site / "anyio").mkdir()
    (site / "pytest-6.2.5.dist-info").mkdir()
    text = (f'  File "{site}/anyio/pytest_plugin.py", line 10, in <module>\n'
            "    from _pytest.scope import Scope\n"
            "ModuleNotFoundError: No module named '_pytest.scope'")
    said = environment_problem({"message": text}, tmp_path / "proj")
    assert said is not None and said.startswith("No module named '_pytest.scope'"), said
    assert "not installed" not in said and str(site) in said
    # Not there at all: still "not installed".
    gone = environment_problem({"message": text.replace("_pytest", "_nothere")},
                               tmp_path / "proj")
    assert gone is not None and "'_nothere' is not installed" in gone, gone


def test_a_docker_daemon_that_is_not_there_is_the_environments(tmp_path: Path):
    """arq's suite starts Redis through testcontainers: with no Docker
    daemon every test errored and the role said a high finding."""
    said = environment_problem({"message": (
        "docker.errors.DockerException: Error while fetching server API version: "
        "('Connection aborted.', FileNotFoundError(2, 'No such file or directory'))")}, tmp_path)
    assert said == "the tests need a Docker daemon, which is not running", said
    said = environment_problem({"message": "Cannot connect to the Docker daemon at "
                                           "unix:///var/run/docker.sock. Is the docker daemon "
                                           "running?"}, tmp_path)
    assert said == "the tests need a Docker daemon, which is not running", said
    assert environment_problem({"message": "AssertionError: docker image tag wrong"},
                               tmp_path) is None
