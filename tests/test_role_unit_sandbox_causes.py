"""A test that fails because of the sandbox itself, not the code: it writes
a fixed path outside the sandbox (``/tmp/foo`` where no private /tmp could
be given, the home), or it reads the machine's network interfaces and finds
none but the loopback. Named for that cause, counted in the role's line,
kept as noise at info: never a `fail`. A real failure beside it stays high."""

from __future__ import annotations

import os

import pytest

from superqode_ls.qe.roles._unit_env import environment_cause
from superqode_ls.workspace import landlock, namespaces
from tests.pyenv_helpers import run_unit_cli

SANDBOX_TEST = '''import socket
import uuid


def test_writes_fixed_tmp_path():
    # supervisor's tests: a log file at a fixed path under /tmp
    with open("/tmp/sq-fixed-" + uuid.uuid4().hex, "w") as fh:
        fh.write("log")


def test_lists_network_interfaces():
    # glances' network plugin test: the machine's interfaces, loopback aside
    names = [n for _, n in socket.if_nameindex() if n != "lo"]
    assert len(names) > 0


def test_real_bug():
    assert 1 + 1 == 3
'''


def test_sandbox_causes_are_named_from_the_failure_text(monkeypatch):
    monkeypatch.setenv("HOME", "/home/u")
    sandbox = "/home/u/.superqode/working/p/qe/s1"
    erofs = {"message": "OSError: [Errno 30] Read-only file system: '/tmp/foo'"}
    assert "read-only outside its folders (the test writes under /tmp)" in environment_cause(
        erofs, sandbox=sandbox)
    home = {"message": f"PermissionError: [Errno 13] Permission denied: "
                       f"'{os.path.expanduser('~')}/.cache/x'"}
    assert "read-only outside its folders (the test writes in the home)" in environment_cause(
        home, sandbox=sandbox)
    usr = {"message": "OSError: [Errno 30] Read-only file system: '/usr/lib/x.log'"}
    assert "(the test writes /usr/lib/x.log)" in environment_cause(usr, sandbox=sandbox)
    # Inside the sandbox, or a path the developer's machine refuses too: the code's.
    inside = {"message": f"PermissionError: [Errno 13] Permission denied: '{sandbox}/data'"}
    assert environment_cause(inside, sandbox=sandbox) is None
    etc = {"message": "PermissionError: [Errno 13] Permission denied: '/etc/shadow'"}
    assert environment_cause(etc, sandbox=sandbox) is None
    # glances' test_api, as pytest reports it.
    empty = {"longrepr": "    keys = gl.network.keys()\n>       assert len(keys) > 0\n"
                         "E       assert 0 > 0\nE        +  where 0 = len([])"}
    assert "no interface but the loopback" in environment_cause(empty, offline=True)
    assert environment_cause(empty, offline=False) is None  # with a network it is the code's
    wrong = {"longrepr": "    keys = gl.network.keys()\n>       assert keys == ['eth0']\n"
                         "E       AssertionError: assert ['eth1'] == ['eth0']"}
    assert environment_cause(wrong, offline=True) is None  # interfaces there: the code's
    # pytest's short traceback: the failing line only; the test's name says what it reads.
    short = {"nodeid": "tests/test_api.py::test_glances_api_plugin_network",
             "longrepr": "tests/test_api.py:66: in test_glances_api_plugin_network\n"
                         "    assert len(keys) > 0\nE   assert 0 > 0\nE    +  where 0 = len([])"}
    assert "no interface but the loopback" in environment_cause(short, offline=True)
    other = {**short, "nodeid": "tests/test_api.py::test_glances_api_plugin_process"}
    assert environment_cause(other, offline=True) is None


@pytest.mark.skipif(not namespaces.active() or landlock.abi() is None,
                    reason="no namespace sandbox here: the network and /tmp are the host's")
def test_a_sandbox_failure_is_not_a_finding_to_act_on(make_repo):
    # Beneath the real /tmp (pytest's tmp_path): no private /tmp is given.
    repo = make_repo({"tests/test_sandbox.py": SANDBOX_TEST})
    proc, report, unit = run_unit_cli(repo)
    by_test = {f["title"].rsplit("::", 1)[-1]: f for f in report["findings"]}
    bug = by_test["test_real_bug"]
    assert bug["severity"] == "high" and bug["noise"] is None
    fixed = by_test["test_writes_fixed_tmp_path"]
    assert fixed["severity"] == "info", fixed
    assert "the sandbox is read-only outside its folders" in fixed["noise"], fixed
    assert "environment" in fixed["tags"]
    ifaces = by_test["test_lists_network_interfaces"]
    assert ifaces["severity"] == "info", ifaces
    assert "no interface but the loopback" in ifaces["noise"], ifaces
    assert "1 failure(s) the environment's: the sandbox is read-only" in unit["reason"], unit
    assert "1 failure(s) the environment's: the sandbox has no network (no interface" \
        in unit["reason"], unit
    assert report["verdict"] == "fail"  # for the real bug only
    assert proc.returncode == 1, proc.stdout + proc.stderr


TMP_TEST = '''import uuid


def test_writes_fixed_tmp_path():
    with open("/tmp/sq-fixed-" + uuid.uuid4().hex, "w") as fh:
        fh.write("log")


def test_real_bug():
    assert 1 + 1 == 3
'''


@pytest.mark.skipif(landlock.abi() is None, reason="no Landlock here: /tmp is writable")
def test_landlock_only_refusal_of_tmp_is_the_sandbox_s(make_repo, monkeypatch):
    """The Landlock-only level (no namespaces, so no private /tmp): the write
    barrier refuses /tmp with EACCES, named as the sandbox's."""
    monkeypatch.setenv(namespaces.OFF_ENV, "off")
    repo = make_repo({"tests/test_tmp.py": TMP_TEST})
    proc, report, unit = run_unit_cli(repo)
    by_test = {f["title"].rsplit("::", 1)[-1]: f for f in report["findings"]}
    fixed = by_test["test_writes_fixed_tmp_path"]
    assert "Permission denied" in fixed["message"] or "Read-only" in fixed["message"], fixed
    assert fixed["severity"] == "info", fixed
    assert "read-only outside its folders (the test writes under /tmp)" in fixed["noise"]
    assert by_test["test_real_bug"]["severity"] == "high"
    assert report["verdict"] == "fail"  # for the real bug only


def test_another_systems_program_failing_in_a_fixture_is_the_environment(tmp_path):
    # commitizen's signed-commit fixture: gpg --quick-gen-key exits 2 in the
    # sandbox and 0 on the developer's machine
    from superqode_ls.qe.roles._unit_cause import CODE, ENVIRONMENT, UNKNOWN, judge

    (tmp_path / "pyproject.toml").write_text(
        '[project]\nname = "cz-like"\n[project.scripts]\ncz = "cz_like.cli:main"\n')

    def record(command: str) -> dict:
        return {"message": f"subprocess.CalledProcessError: Command {command} returned "
                           "non-zero exit status 2.",
                "chain": [{"mro": ["subprocess.CalledProcessError", "subprocess.SubprocessError",
                                   "builtins.Exception"],
                           "where": "/usr/lib/python3.11/subprocess.py", "function": "run"}],
                "entries": [{"path": str(tmp_path / "tests/conftest.py"), "lineno": 145}]}

    kind, why = judge(record("'['gpg', '--batch', '--quick-gen-key', 'a@b']'"), tmp_path)
    assert kind == ENVIRONMENT and "a program the tests run fails here (gpg)" in why, why
    # the project's own command, Python, or a script in the project: not proven the environment's
    assert judge(record("'['cz', 'bump']'"), tmp_path)[0] == UNKNOWN
    assert judge(record("'['python', '-m', 'cz_like']'"), tmp_path)[0] == UNKNOWN
    assert judge(record(f"'['{tmp_path}/bin/run.sh']'"), tmp_path)[0] == UNKNOWN
    # an assertion about the program's output stays the code's
    asserted = record("'['gpg', '--version']'")
    asserted["chain"] = [{"mro": ["builtins.AssertionError"], "where": str(tmp_path / "t.py")}]
    assert judge(asserted, tmp_path)[0] == CODE
