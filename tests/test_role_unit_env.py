"""A test that fails because of where it ran (the sandbox has no network,
SuperQode runs as root) is named for that cause, counted in the role's
line and kept as noise at info: never a finding to act on, never a `fail`.
A real failure beside it stays high."""

from __future__ import annotations

import os

import pytest

from superqode_ls.qe.roles._unit_env import environment_cause
from superqode_ls.workspace import namespaces
from tests.pyenv_helpers import run_unit_cli

NET_TEST = '''import socket

import pytest


def test_reaches_out():
    # an unroutable address: no route in a sandbox without network
    socket.create_connection(("10.255.255.1", 80), timeout=5).close()


def test_real_bug():
    assert 1 + 1 == 3


@pytest.mark.network
def test_marked_network():
    # what pip says when its index cannot be reached (pip-tools' own tests)
    raise RuntimeError("No matching distribution found for six==1.15.0")
'''

ROOT_TEST = '''import os

import pytest


def test_unreadable(tmp_path):
    f = tmp_path / "secret"
    f.write_text("x")
    os.chmod(f, 0)
    with pytest.raises(PermissionError):
        f.read_text()
'''


def test_causes_are_named_from_the_failure_text():
    unreachable = {"message": "requests.exceptions.ConnectionError: ... Failed to establish a "
                              "new connection: [Errno 101] Network is unreachable"}
    assert "no network" in environment_cause(unreachable)
    dns = {"longrepr": "socket.gaierror: [Errno -3] Temporary failure in name resolution"}
    assert "no network" in environment_cause(dns)
    # A refused local connection is the suite's (its server did not start).
    assert environment_cause({"message": "ConnectionRefusedError: [Errno 111] Connection "
                                         "refused"}) is None
    root = {"message": "Failed: DID NOT RAISE <class 'PermissionError'>"}
    assert "root" in environment_cause(root, root=True)
    assert environment_cause(root, root=False) is None  # as a user it is the code's
    guard = {"message": "Exception: superqode guard: blocked: Writing git configuration changes "
                        "how the repository behaves (read settings with `git config --get KEY`)"}
    assert environment_cause(guard) == ("SuperQode's guard refused it (Writing git configuration "
                                        "changes how the repository behaves)")
    assert environment_cause({"message": "AssertionError: assert 2 == 3"}) is None
    # A test the project marks as needing the network, in a sandbox without it.
    marked = {"message": "RuntimeError: No matching distribution found for six", "markers": ["network"]}
    assert "marks the test `network`" in environment_cause(marked, offline=True)
    assert environment_cause(marked, offline=False) is None  # with a network it is the code's
    assert environment_cause({**marked, "markers": ["slow"]}, offline=True) is None


@pytest.mark.skipif(not namespaces.active(),
                    reason="the network is open without the namespace layer: no test fails for want of it")
def test_an_environment_failure_is_not_a_finding_to_act_on(make_repo):
    files = {"tests/test_net.py": NET_TEST}
    as_root = hasattr(os, "geteuid") and os.geteuid() == 0
    if as_root:
        files["tests/test_perm.py"] = ROOT_TEST
    repo = make_repo(files)
    proc, report, unit = run_unit_cli(repo)
    by_test = {f["title"].rsplit("::", 1)[-1]: f for f in report["findings"]}
    bug, net = by_test["test_real_bug"], by_test["test_reaches_out"]
    assert bug["severity"] == "high" and bug["noise"] is None
    assert net["severity"] == "info" and "no network" in net["noise"], net
    marked = by_test["test_marked_network"]
    assert marked["severity"] == "info" and "marks the test `network`" in marked["noise"], marked
    assert "environment" in net["tags"]
    assert "1 failure(s) the environment's: the sandbox has no network (the test reaches" in unit["reason"]
    assert "1 failure(s) the environment's: the sandbox has no network (the project marks" in unit["reason"]
    assert report["verdict"] == "fail"  # for the real bug only
    if "test_unreadable" in by_test:  # where the sandbox leaves root its powers
        perm = by_test["test_unreadable"]
        assert perm["severity"] == "info" and "root" in perm["noise"]
    assert proc.returncode == 1, proc.stdout + proc.stderr


PARAM_TEST = '''import pytest


@pytest.mark.parametrize("n", [1, 2])
def test_variants(n):
    assert n == 0, f"variant {n}"
'''


def test_each_failing_variant_of_a_test_is_its_own_finding(make_repo):
    """Two variants of one parametrized test fail on the same line: the
    report names both (requests' test_connect_timeout[timeout0] and
    [timeout1] were one finding for two failures)."""
    repo = make_repo({"tests/test_params.py": PARAM_TEST})
    proc, report, unit = run_unit_cli(repo)
    titles = sorted(f["title"] for f in report["findings"])
    assert titles == ["Test fails: tests/test_params.py::test_variants[1]",
                      "Test fails: tests/test_params.py::test_variants[2]"], titles
    assert {f["range"]["start_line"] for f in report["findings"]} == {6}
    assert "2 test(s) run (0 passed, 2 failed, 0 skipped)" in unit["reason"]


def test_a_name_an_installed_package_lacks_is_named_as_an_api_change(tmp_path):
    """``cannot import name 'TextField' from 'wtforms'`` with wtforms 3
    installed: the package is there; the project's code (or its unpinned
    dependency's API change) is why, not a missing package."""
    from superqode_ls.qe.roles._unit_env import dependency_api, environment_problem

    site = tmp_path / "env" / "lib" / "python3.11" / "site-packages"
    (site / "WTForms-3.1.2.dist-info").mkdir(parents=True)
    project = tmp_path / "p"
    (project / "app").mkdir(parents=True)
    (project / "requirements.txt").write_text("flask\nwtforms\n")
    record = {"kind": "collect", "longrepr": (
        "ImportError while importing test module 'tests/test_forms.py'.\n"
        "tests/test_forms.py:1: in <module>\n    from app.forms import LoginForm\n"
        "app/forms.py:2: in <module>\n    from wtforms import TextField\n"
        f"E   ImportError: cannot import name 'TextField' from 'wtforms' ({site}/wtforms/__init__.py)")}
    said = dependency_api(record, project)
    assert said.startswith("wtforms 3.1.2 is installed and has no 'TextField'"), said
    assert "the project declares 'wtforms' unpinned" in said and "pin the version" in said
    assert environment_problem(record, project) is None  # not the environment's: a finding
    # The project's own module lacking a name is about its code, said as pytest says it.
    own = {"longrepr": f"cannot import name 'x' from 'app' ({site}/app/__init__.py)"}
    assert dependency_api(own, project) is None
    # The standard library's missing name stays the interpreter's (an older Python needed).
    stdlib = {"longrepr": "cannot import name 'Iterator' from 'collections' "
                          "(/usr/lib/python3.11/collections/__init__.py)"}
    assert dependency_api(stdlib, project) is None
    (project / "requirements.txt").write_text("wtforms<3\n")
    assert "declares 'wtforms<3', which lets this version in" in dependency_api(record, project)


FORM_TEST = '''from idna import TextField


def test_form():
    assert TextField
'''


def test_an_api_change_is_a_finding_that_says_so_never_a_missing_package(make_repo):
    repo = make_repo({"pyproject.toml": '[project]\nname = "p"\nversion = "1"\n'
                                        'dependencies = ["idna"]\n',
                      "tests/test_form.py": FORM_TEST,
                      "tests/test_ok.py": "def test_ok():\n    pass\n"})
    proc, report, unit = run_unit_cli(repo)
    (found,) = [f for f in report["findings"] if f["role"] == "unit_tester"]
    assert found["file"] == "tests/test_form.py" and found["noise"] is None, found
    assert "is installed and has no 'TextField'" in found["message"], found["message"]
    assert "the project declares 'idna' unpinned" in found["message"]
    assert "lacks the package" not in str(found) and "dependency-api" in found["tags"]


def test_an_unbuilt_extension_of_the_projects_is_the_environments_said_once(make_repo):
    """yarl's tests import ``yarl._quoting_c``, compiled from the
    ``_quoting_c.pyx`` beside it; the sandbox has the sources only. Before:
    a high collection error, twice at one line (pytest collects the module
    for its tests and, with --doctest-modules, for its doctests). A module
    of the project's that is simply not there stays a finding."""
    repo = make_repo({
        "pytest.ini": "[pytest]\naddopts = --doctest-modules\n",
        "fastlib/__init__.py": "", "fastlib/_speed_py.py": "def add(a, b):\n    return a + b\n",
        "fastlib/_speed_c.pyx": "def add(int a, int b):\n    return a + b\n",
        "tests/test_speed.py": "from fastlib._speed_c import add\n\n\ndef test_add():\n"
                               "    assert add(1, 2) == 3\n",
        "tests/test_gone.py": "from fastlib._nowhere import add\n\n\ndef test_add():\n"
                              "    assert add(1, 2) == 3\n",
        "tests/test_py.py": "from fastlib._speed_py import add\n\n\ndef test_add():\n"
                            "    assert add(1, 2) == 3\n"})
    proc, report, unit = run_unit_cli(repo)
    speed = [f for f in report["findings"] if f["file"] == "tests/test_speed.py"]
    assert len(speed) == 1, [f["id"] for f in speed]
    assert speed[0]["severity"] == "info", speed[0]
    assert "compiled extension fastlib._speed_c is not built here" in speed[0]["noise"]
    assert "fastlib/_speed_c.pyx" in speed[0]["noise"]
    gone = [f for f in report["findings"] if f["file"] == "tests/test_gone.py"]
    assert len(gone) == 1 and gone[0]["severity"] == "high" and gone[0]["noise"] is None, gone
    assert report["verdict"] == "fail"  # for the missing module only


SHIM = """#!/bin/sh
echo "pyenv: $(basename "$0"): command not found" >&2
exit 127
"""
NEEDS_310 = '''import shutil
import subprocess

import pytest


@pytest.mark.skipif(shutil.which("python3.10") is None, reason="Python 3.10 required")
def test_runs_on_310():
    assert subprocess.run(["python3.10", "-c", "pass"], check=False).returncode == 0


def test_real_bug():
    assert 1 == 2
'''


def test_a_pyenv_shim_of_a_version_not_selected_is_not_an_interpreter(make_repo, tmp_path,
                                                                      monkeypatch):
    """nox's tests skip what needs python3.10 when it is not on PATH; pyenv's
    shim is on PATH for every installed version and fails for those not
    selected. Before: a high "Test fails" for the machine's reason. Now the
    tests see the selected versions' folders, not the shims: skipped."""
    root = tmp_path / "pyenv"
    (root / "shims").mkdir(parents=True)
    (root / "versions" / "3.11.7" / "bin").mkdir(parents=True)
    (root / "version").write_text("3.11.7\n")
    shim = root / "shims" / "python3.10"
    shim.write_text(SHIM)
    shim.chmod(0o755)
    monkeypatch.setenv("PYENV_ROOT", str(root))
    monkeypatch.delenv("PYENV_VERSION", raising=False)
    monkeypatch.setenv("PATH", f"{root / 'shims'}{os.pathsep}{os.environ['PATH']}")
    repo = make_repo({"tests/test_py310.py": NEEDS_310})
    _proc, report, unit = run_unit_cli(repo)
    titles = {f["title"]: f for f in report["findings"]}
    assert "Test fails: tests/test_py310.py::test_runs_on_310" not in titles, titles
    assert "1 skipped" in unit["reason"], unit["reason"]
    bug = titles["Test fails: tests/test_py310.py::test_real_bug"]
    assert bug["severity"] == "high" and bug["noise"] is None


SHARED_FIXTURE = '''import pytest


@pytest.fixture
def app():
    raise RuntimeError("the proxy did not start")  # jupyterhub's MockHub


@pytest.mark.parametrize("n", range(5))
def test_uses_app(app, n):
    assert app


def test_own_bug():
    assert 1 == 2
'''


def test_tests_failing_the_same_way_at_one_line_are_one_finding(make_repo):
    repo = make_repo({"tests/test_app.py": SHARED_FIXTURE})
    _proc, report, _unit = run_unit_cli(repo)
    shown = [f for f in report["findings"] if not f.get("noise")]
    assert len(shown) == 2, [(f["title"], f["message"][:80], f["range"]) for f in shown]
    fixture = next(f for f in shown if f["rule_id"] == "test-error")
    assert fixture["message"].startswith("5 tests fail here the same way (tests/test_app.py::"
                                         "test_uses_app[0]"), fixture["message"]
    same = [f for f in report["findings"] if (f.get("noise") or "").startswith("the same failure")]
    assert len(same) == 4 and all(f["severity"] == "info" for f in same)
    assert any(f["rule_id"] == "test-failure" for f in shown)  # its own bug stays its own
