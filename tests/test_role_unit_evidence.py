"""A failing test is a finding to act on only on evidence that its cause is
the code: an assertion, or an exception the project's own code raised. One
whose exception chain comes from the network stack, the OS refusing a path,
a program that is not there, a timeout or a client library that cannot
reach its service is the environment's: one setup note per cause, counted,
naming a few tests, never a `fail`. One raised elsewhere with no such sign
is said honestly: medium, low confidence, below the code's findings. Tests
failing with one exception at one place, their messages the same once
numbers are masked, are one finding. Quick mode's skipped slow suite
carries the last run's failures of unchanged code forward."""

from __future__ import annotations

import errno
import json

from superqode_ls.config import Config
from superqode_ls.qe.roles import unit
from superqode_ls.qe.roles._unit_cause import CODE, ENVIRONMENT, UNKNOWN, judge, normalized
from superqode_ls.qe.roles.unit import UnitTester
from tests.pyenv_helpers import run_unit_cli
from tests.role_helpers import make_ctx, run_role

SHOP = '''import socket


class CacheError(Exception):
    pass


def connect(port):
    try:
        return socket.create_connection(("127.0.0.1", port), timeout=5)
    except OSError as e:
        # the project's own error, raised from the OS's: the chain says why
        raise CacheError(f"cannot reach the cache on port {port}") from e


def total(rows):
    out = 0
    for i, row in enumerate(rows):
        if "amount" not in row:
            raise ValueError(f"row {i} has no amount")
        out += row["amount"]
    return out


def total_from(source):
    return total(source())
'''

SHOP_TESTS = '''import json
import socket
import subprocess
from unittest import mock

import pytest

from shop import connect, total, total_from


def _free_port():
    # a port on which nothing listens: the suite's cache server, not running
    s = socket.socket()
    s.bind(("127.0.0.1", 0))
    port = s.getsockname()[1]
    s.close()
    return port


PORT = _free_port()


@pytest.mark.parametrize("n", range(4))
def test_needs_the_cache_server(n):
    assert connect(PORT)


def test_runs_a_program_that_is_not_installed():
    subprocess.run(["superqode-no-such-tool", "--version"], check=True)


def test_total_of_a_row_without_amount():
    assert total([{"price": 1}]) == 1


def test_total_of_mixed_rows():
    assert total([{"amount": 1}, {"price": 2}]) == 3


def test_real_bug():
    assert total([{"amount": 2}, {"amount": 2}]) == 5


def test_reads_settings():
    json.loads("{")


@pytest.mark.parametrize("error", [ValueError("bad row"), KeyError("amount")])
def test_a_failing_source(error):
    # the mock raises the test's own exception: the code does not handle it
    assert total_from(mock.Mock(side_effect=error)) == 0
'''


def test_failures_are_judged_on_their_evidence(make_repo):
    repo = make_repo({"shop/__init__.py": "from .cache import connect, total, total_from\n",
                      "shop/cache.py": SHOP, "tests/test_shop.py": SHOP_TESTS})
    proc, report, unit_run = run_unit_cli(repo)
    by_test = {f["title"].rsplit("::", 1)[-1]: f for f in report["findings"]}
    # A real assertion failure: the code's, high, shown first.
    bug = by_test["test_real_bug"]
    assert bug["severity"] == "high" and bug["noise"] is None, bug
    # A local service that is not running (not on a well-known port): the
    # environment's, from the chain under the project's own CacheError.
    # Before: a high finding.
    for n in range(4):
        cache = by_test[f"test_needs_the_cache_server[{n}]"]
        assert cache["severity"] == "info" and "environment" in cache["tags"], cache
        assert "connection refused" in cache["noise"], cache
    # A program the tests start that is not there. Before: a high finding.
    missing = by_test["test_runs_a_program_that_is_not_installed"]
    assert missing["severity"] == "info", missing
    assert "a program the tests run is not installed here (superqode-no-such-tool)" \
        in missing["noise"], missing
    # One setup note per cause, counted, naming a few tests.
    assert ("4 failure(s) the environment's: a service or server the tests connect to is "
            "not running here (connection refused) (tests/test_shop.py::"
            "test_needs_the_cache_server[0], tests/test_shop.py::test_needs_the_cache_server[1]"
            " and 2 more)") in unit_run["reason"], unit_run["reason"]
    # ... said once on the user's screen, by cause, not among the findings.
    notes = [line for line in proc.stdout.splitlines() if line.startswith("setup (unit_tester): ")]
    assert len(notes) == 1 and "4 failure(s) the environment's: a service" in notes[0] \
        and "1 failure(s) the environment's: a program the tests run is not installed" \
        in notes[0], proc.stdout
    # One exception raised at one place in the project's code by two tests
    # (its message differing by a number): one finding that counts them.
    # Before: two findings.
    rows = [by_test["test_total_of_a_row_without_amount"], by_test["test_total_of_mixed_rows"]]
    shown = [f for f in rows if f["noise"] is None]
    assert len(shown) == 1 and shown[0]["severity"] == "high", rows
    assert shown[0]["message"].startswith("2 tests fail here the same way"), shown[0]["message"]
    assert next(f for f in rows if f["noise"] is not None)["severity"] == "info"
    # Raised in the standard library with no sign of the environment: not
    # proven either way, medium and below the code's. Before: high.
    settings = by_test["test_reads_settings"]
    assert settings["severity"] == "medium" and settings["noise"] is None, settings
    assert "cause-unknown" in settings["tags"] and settings["confidence"] < 0.9
    assert "json/decoder.py" in settings["message"], settings["message"]
    # A mock's side effect is the test's own value; the variants of one
    # parametrized test failing at one place are one failure, whatever each
    # raised. Before: two high findings.
    variants = [by_test["test_a_failing_source[error0]"], by_test["test_a_failing_source[error1]"]]
    shown = [f for f in variants if f["noise"] is None]
    assert len(shown) == 1 and shown[0]["severity"] == "high", variants
    assert shown[0]["message"].startswith("2 tests fail here the same way"), shown[0]["message"]
    assert report["verdict"] == "fail"  # for the code's failures only
    assert proc.returncode == 1, proc.stdout + proc.stderr


def test_only_environment_and_unproven_failures_do_not_fail(make_repo):
    tests = SHOP_TESTS.split("def test_total_of_a_row_without_amount")[0] + (
        "def test_reads_settings():\n    json.loads('{')\n")
    repo = make_repo({"shop/__init__.py": "from .cache import connect, total, total_from\n",
                      "shop/cache.py": SHOP, "tests/test_shop.py": tests})
    proc, report, unit_run = run_unit_cli(repo)
    assert report["verdict"] == "conditional", (report["verdict"], unit_run["reason"])
    assert not [f for f in report["findings"] if f["severity"] == "high"], report["findings"]
    assert proc.returncode == 0, proc.stdout + proc.stderr


def _rec(*chain, message="", exc_type="X", entries=None):
    return {"kind": "test", "nodeid": "tests/test_a.py::test_a", "exc_type": exc_type,
            "message": message, "chain": list(chain), "entries": entries or []}


def _exc(*mro, errno_=None, filename=None, where="/usr/lib/python3.11/socket.py",
         function="f"):
    return {"mro": [*mro, "builtins.Exception", "builtins.BaseException", "builtins.object"],
            "errno": errno_, "filename": filename, "where": where, "function": function}


def test_the_chain_names_the_cause(tmp_path):
    os_error = ("builtins.OSError",)
    site = "/venv/lib/python3.11/site-packages"
    cases = [
        (_exc("socket.gaierror", *os_error, errno_=-3), "cannot be resolved"),
        (_exc(*os_error, errno_=errno.ENETUNREACH), "no route to the host"),
        (_exc("builtins.ConnectionRefusedError", "builtins.ConnectionError", *os_error,
              errno_=errno.ECONNREFUSED), "connection refused"),
        (_exc(*os_error, errno_=errno.EADDRNOTAVAIL), "cannot bind its address"),
        (_exc(*os_error, errno_=errno.EROFS, filename="/etc/x.log"), "read-only"),
        (_exc("builtins.PermissionError", *os_error, errno_=errno.EACCES,
              filename="/var/log/app.log"), "refuses a path outside its folders"),
        (_exc("builtins.PermissionError", *os_error, errno_=errno.EPERM),
         "does not permit (EPERM)"),
        (_exc("builtins.TimeoutError", *os_error), "a timeout"),
        (_exc("subprocess.TimeoutExpired", "subprocess.SubprocessError"), "a timeout"),
        (_exc("locale.Error"), "a locale this machine does not have"),
        (_exc("zoneinfo._common.ZoneInfoNotFoundError", "builtins.KeyError"), "time zone data"),
        (_exc("redis.exceptions.ConnectionError", "redis.exceptions.RedisError",
              where=f"{site}/redis/connection.py"), "could not reach its service (ConnectionError)"),
    ]
    for exc, said in cases:
        kind, cause = judge(_rec(_exc("app.Error", where=str(tmp_path / "app.py")), exc), tmp_path)
        assert kind == ENVIRONMENT and said in cause, (exc["mro"][0], cause)
    # The same redis class raised by the project itself is no evidence.
    own = _exc("redis.exceptions.ConnectionError", where=str(tmp_path / "app.py"))
    assert judge(_rec(own), tmp_path) == (CODE, None)
    # EACCES inside the sandbox (a test's chmod): the code's to explain.
    inside = _exc("builtins.PermissionError", *os_error, errno_=errno.EACCES,
                  filename=str(tmp_path / "data"), where=str(tmp_path / "app.py"))
    assert judge(_rec(inside), tmp_path) == (CODE, None)
    # Assertions wherever raised (unittest's assertEqual is in the stdlib).
    assertion = _exc("builtins.AssertionError", where="/usr/lib/python3.11/unittest/case.py")
    assert judge(_rec(assertion), tmp_path) == (CODE, None)
    failed = _exc("_pytest.outcomes.Failed", "_pytest.outcomes.OutcomeException",
                  where=f"{site}/_pytest/outcomes.py")
    assert judge(_rec(failed), tmp_path) == (CODE, None)
    # Raised in a library with no sign of the environment: not known.
    lib = _exc("builtins.AttributeError", where=f"{site}/xprocess/pytest_xprocess.py")
    assert judge(_rec(lib), tmp_path) == (UNKNOWN, "xprocess/pytest_xprocess.py")
    # A mock's side effect, raised in unittest/mock.py: the test's own value.
    mocked = _exc("builtins.ValueError", where="/usr/lib/python3.11/unittest/mock.py")
    assert judge(_rec(mocked, entries=[{"path": str(tmp_path / "t.py"), "lineno": 3}]),
                 tmp_path) == (CODE, None)
    # pytest-timeout's own words.
    assert judge(_rec(message="Failed: Timeout >10.0s"), tmp_path)[0] == ENVIRONMENT


def test_messages_are_compared_with_numbers_paths_and_addresses_masked():
    assert normalized("ValueError: row 3 has no amount") == normalized(
        "ValueError: row 12 has no amount")
    assert normalized("OSError: cannot open /tmp/a/b.log at 0x7f3a") == normalized(
        "OSError: cannot open /home/u/x.log at 0x55aa")
    assert normalized("KeyError: 'amount'") != normalized("KeyError: 'price'")


def test_quick_mode_carries_the_last_failures_when_no_test_ran(make_repo):
    # A conftest that takes longer than quick mode's cap to load when the
    # file slow-start is there (no code: not in the code's hash).
    repo = make_repo({"tests/test_ok.py": "def test_ok():\n    assert 1 == 2\n",
                      "tests/conftest.py": ("import time\nfrom pathlib import Path\n"
                                            "if Path(__file__).with_name('slow-start').exists():\n"
                                            "    time.sleep(60)\n"),
                      "app.py": "X = 1\n"})
    cfg = Config.model_validate({"qe": {"quick_unit_test_max_s": 15}})
    first = run_role(UnitTester(), make_ctx(repo, mode="deep"))
    assert len(first.findings) == 1
    path = unit._durations_file(repo.parent / f"{repo.name}-project")  # make_ctx's project
    at = json.loads(path.read_text())["at"]
    (repo / "tests" / "slow-start").write_text("")
    # The cap comes before any test ran: the tests were not run (said, not a
    # pass), the last failure carried forward with the same id.
    out = run_role(UnitTester(), make_ctx(repo, config=cfg, mode="quick"))
    assert out.status == "incomplete", out
    assert out.reason.startswith("tests not run: quick mode's 15 s cap came before the first "
                                 "test ended (no test collected yet)"), out.reason
    assert [f.id for f in out.findings] == [first.findings[0].id], out.findings
    carried = out.findings[0]
    assert carried.message.startswith(f"from the last run, {at}: ") and "carried" in carried.tags
    assert carried.severity == first.findings[0].severity
    assert "the last run's 1 failing test(s) carried forward from " in out.reason, out.reason
    # The code changed since: nothing carried, one line says why.
    (repo / "app.py").write_text("X = 2\n")
    out = run_role(UnitTester(), make_ctx(repo, config=cfg, mode="quick"))
    assert out.status == "incomplete" and not out.findings, out
    assert (f"the last run had 1 failing test(s) ({at}), not carried forward: the project's "
            "code or test configuration changed since") in out.reason, out.reason


def test_many_unproven_failures_of_one_folder_are_one_finding(tmp_path):
    from superqode_ls.qe.roles._unit_findings import failure_findings

    site = "/venv/lib/python3.11/site-packages"
    lib = _exc("builtins.AttributeError", where=f"{site}/xprocess/pytest_xprocess.py")

    def rec(nodeid):
        return {**_rec(lib, message=f"AttributeError: {nodeid}", exc_type="AttributeError"),
                "nodeid": nodeid}

    records = [rec(f"tests/functional/test_api{n}.py::test_{n}") for n in range(7)]
    records += [rec(f"tests/unit/test_m{n}.py::test_{n}") for n in range(2)]
    found = failure_findings("unit_tester", tmp_path, records)
    shown = [f for f in found if f.noise is None]
    functional = [f for f in shown if f.file.startswith("tests/functional/")]
    assert len(functional) == 1 and "7 tests under tests/functional fail" in functional[0].message
    assert functional[0].severity.value == "medium"
    # the others: counted there, one click away, none lost
    assert len([f for f in found if f.file.startswith("tests/functional/")]) == 7
    assert all("one of 7 failures" in f.noise for f in found
               if f.file.startswith("tests/functional/") and f.noise)
    # a few in another folder stay shown one by one
    assert len([f for f in shown if f.file.startswith("tests/unit/")]) == 2
