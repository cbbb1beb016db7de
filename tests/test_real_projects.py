"""End to end on real projects built from PyPI sdists (tests/realprojects.py
caches them): the project's tests run in the project's own environment, with
its pytest plugins, importing the sandbox's sources even when the project is
installed in editable mode; a configuration failure is a role failure with
pytest's words; no tests is "no tests"; a project without an environment gets
one built from its declared dependencies (and reused)."""

from __future__ import annotations

import asyncio
import subprocess
import sys
from pathlib import Path

import pytest

from superqode_ls.events import EventBus
from superqode_ls.qe.pipeline import QERequest, QESession
from tests import realprojects

pytestmark = pytest.mark.slow

BLINKER = "blinker==1.9.0"  # src layout, flit; its tests need pytest-asyncio (asyncio_mode = auto)
ITSDANGEROUS = "itsdangerous==2.2.0"  # src layout; tests need freezegun (requirements/tests.txt)
TOMLI = "tomli==2.5.0"  # its sdist ships no tests
# Newer pytest-asyncio warns at configure time, which blinker's
# filterwarnings = error turns into a failure (its own CI pins 0.24 / pytest 8.3).
PLUGIN_ENV = ["pytest==8.3.3", "pytest-asyncio==0.23.8"]
VERSION = f"{sys.version_info[0]}.{sys.version_info[1]}"


def _session(project: Path, roles: list[str], **kw) -> tuple[object, list[dict]]:
    events: list[dict] = []
    bus = EventBus()
    bus.subscribe(lambda e: events.append({"type": e.type, **e.data}))
    req = QERequest(project=project, mode="deep", roles=roles, trusted=True, **kw)
    report = asyncio.run(QESession(req, bus=bus).run())
    return report, events


def _role(report, name: str):
    return next(r for r in report.roles if r.role == name)


def test_editable_install_with_plugin_runs_the_sandbox_copy(isolated_home):
    project = realprojects.project(
        BLINKER, tag="editable", venv=PLUGIN_ENV, editable=True
    )
    venv_py = project / ".venv" / "bin" / "python"
    # Control: the environment really imports blinker from the user's tree.
    where = subprocess.run([str(venv_py), "-c", "import blinker; print(blinker.__file__)"],
                           capture_output=True, text=True, cwd="/", check=True).stdout.strip()
    assert where == str(project / "src" / "blinker" / "__init__.py")
    init = (project / "src" / "blinker" / "__init__.py").read_bytes()
    probe = (
        "import os\n\nimport blinker\n\n\n"
        "def test_the_sandbox_copy_is_imported():\n"
        "    assert blinker.SANDBOX_ONLY == 1\n"
        f"    assert not blinker.__file__.startswith({str(project) + '/'!r})\n"
        "    assert blinker.__file__.startswith(os.getcwd())\n\n\n"
        "async def test_plugin_runs_coroutines():\n"
        "    assert blinker.SANDBOX_ONLY == 1\n"
    )
    report, events = _session(project, ["unit_tester"], overlays={
        "src/blinker/__init__.py": init + b"\nSANDBOX_ONLY = 1\n",
        "tests/test_sandbox_probe.py": probe.encode(),
    })
    run = _role(report, "unit_tester")
    assert run.status == "ok", run.reason
    assert report.findings == [], [f.message for f in report.findings][:3]
    assert f"tests: .venv/bin/python {VERSION}" in run.reason
    n = int(run.reason.split(" test(s) run")[0].rsplit(" ", 1)[-1])
    assert n > 20  # blinker's own suite ran, async tests included
    assert report.interpreter is not None and report.interpreter.source == ".venv"
    assert any("environment: tests: .venv/bin/python" in str(e.get("message")) for e in events)
    markdown = Path(report.artifacts["markdown"]).read_text()
    assert f"Interpreter: `tests: .venv/bin/python {VERSION}`" in markdown
    # The user's file never saw the edit.
    assert (project / "src" / "blinker" / "__init__.py").read_bytes() == init


def test_configuration_failure_is_a_role_failure_with_pytests_message(isolated_home):
    # blinker sets asyncio_mode and filterwarnings = error: without
    # pytest-asyncio, pytest stops at configuration (as httpx did with trio).
    project = realprojects.project(BLINKER, tag="noplugin", venv=PLUGIN_ENV[:1])
    report, _ = _session(project, ["unit_tester"])
    run = _role(report, "unit_tester")
    assert run.status == "failed", run.reason
    assert "asyncio_mode" in run.reason and "PytestConfigWarning" in run.reason, run.reason
    assert report.verdict != "pass"  # a suite that never ran does not pass


def test_no_environment_builds_one_from_declared_dependencies_and_reuses_it(isolated_home):
    realprojects.link_env_cache(isolated_home)
    project = realprojects.project(ITSDANGEROUS)
    for attempt in (1, 2):
        report, events = _session(project, ["unit_tester"])
        run = _role(report, "unit_tester")
        assert run.status == "ok", run.reason
        assert report.findings == [], [f.message for f in report.findings][:3]
        assert report.interpreter is not None and report.interpreter.source == "built"
        assert "built from the declared dependencies" in run.reason
        messages = [str(e.get("message")) for e in events if e["type"] == "progress"]
        # The second session (and any later CI run) reuses the cached one.
        if attempt == 2:
            assert any("(cached" in m for m in messages), messages
            assert not any("environment: building" in m for m in messages)


def test_a_project_without_tests_says_no_tests(isolated_home):
    project = realprojects.project(TOMLI)
    report, _ = _session(project, ["unit_tester"])
    run = _role(report, "unit_tester")
    assert run.status == "skipped" and run.reason.startswith("no tests"), run.reason


def test_mutants_of_an_editable_project_are_the_code_its_tests_import(isolated_home):
    # blinker is installed editable in its .venv (the user's src/ first for
    # that interpreter) and has no coverage there (SuperQode lends its own).
    # Mutants the tests kill prove the mutated scratch copy is what they import:
    # from the user's unchanged tree every mutant would survive.
    project = realprojects.project(
        BLINKER, tag="editable", venv=PLUGIN_ENV, editable=True
    )
    report, _ = _session(
        project, ["mutation_tester"], files=["src/blinker/_utilities.py"],
        config_overrides={"roles": {"mutation_max_mutants": 6}},
    )
    run = _role(report, "mutation_tester")
    assert run.status == "ok", run.reason
    assert report.interpreter is not None and report.interpreter.source == ".venv"
    killed = int(run.reason.split(" killed")[0].rsplit(" ", 1)[-1]) if " killed" in run.reason else 0
    assert killed >= 3, run.reason


FLASK = "flask==3.0.3"  # [tool.ruff] fix = true in its pyproject


def test_ruff_fix_true_project_is_linted_read_only(isolated_home):
    """flask asks ruff to fix what it reports: the lint role must report
    exactly what `ruff check --no-fix` reports on the same tree, and leave
    the sandbox (and the project) as they were."""
    import json

    project = realprojects.project(FLASK)
    assert "fix = true" in (project / "pyproject.toml").read_text()
    direct = subprocess.run([sys.executable, "-m", "ruff", "check", "--no-fix", "--no-cache",
                             "--output-format", "json", "."], cwd=project,
                            capture_output=True, text=True, check=False)
    expected = {(d["code"], Path(d["filename"]).relative_to(project).as_posix(),
                 d["location"]["row"]) for d in json.loads(direct.stdout)}
    assert len(expected) >= 10
    status = subprocess.run(["git", "status", "--porcelain"], cwd=project, capture_output=True,
                            text=True, check=True).stdout
    report, _ = _session(project, ["lint_tester", "security_tester"])
    got = {(f.rule_id, f.file, f.range.start_line) for f in report.findings
           if f.role == "lint_tester" and f.range is not None}
    assert got == expected
    assert subprocess.run(["git", "status", "--porcelain"], cwd=project, capture_output=True,
                          text=True, check=True).stdout == status
