"""unit_tester re-runs failed tests once: one that passes then is flaky."""

from __future__ import annotations

from superqode_ls.models import Severity
from superqode_ls.qe.roles import _unit_rerun
from superqode_ls.qe.roles.unit import UnitTester
from tests.role_helpers import make_ctx, run_role, tree_state

# The flaky test fails while its marker (a file outside the repository, named
# by an environment variable) is missing, and makes it: it passes the second time.
SUITE = {
    "tests/test_flaky.py": (
        "import os\n"
        "from pathlib import Path\n"
        "\n"
        "\n"
        "def test_sometimes():\n"
        "    marker = Path(os.environ['FLAKY_MARKER'])\n"
        "    first = not marker.exists()\n"
        "    marker.touch()\n"
        "    assert not first, 'first run fails'\n"
        "\n"
        "\n"
        "def test_always():\n"
        "    assert 1 == 2, 'always fails'\n"
        "\n"
        "\n"
        "def test_fine():\n"
        "    assert True\n"
    ),
}


def test_flaky_test_is_labelled_and_kept(make_repo, tmp_path, monkeypatch):
    repo = make_repo(SUITE)
    before = tree_state(repo)
    marker = tmp_path / "outside" / "marker"
    marker.parent.mkdir()
    ctx = make_ctx(repo)
    ctx.env["FLAKY_MARKER"] = str(marker)
    out = run_role(UnitTester(), ctx)
    assert out.status == "ok"
    assert marker.exists()  # the test ran, and ran with the role's environment
    assert tree_state(repo) == before  # no cache or --lf files in the tree
    by_test = {f.title.split(": ", 1)[1]: f for f in out.findings}
    assert set(by_test) == {"tests/test_flaky.py::test_sometimes", "tests/test_flaky.py::test_always"}
    flaky = by_test["tests/test_flaky.py::test_sometimes"]
    assert flaky.severity == Severity.low and "flaky" in flaky.tags
    assert flaky.title.startswith("Flaky test: ")
    assert "failed once, passed on a re-run" in flaky.message
    assert "first run fails" in flaky.message  # the first failure stays visible
    assert (flaky.file, flaky.range.start_line) == ("tests/test_flaky.py", 9)
    always = by_test["tests/test_flaky.py::test_always"]
    assert always.severity == Severity.high and "flaky" not in always.tags
    assert always.title.startswith("Test fails: ")
    assert "2 failed test(s) re-run: 1 flaky" in (out.reason or "")

    # The label keeps the finding's id: the same as when nothing is re-run.
    monkeypatch.setattr(_unit_rerun, "MAX_RERUN", 1)
    marker.unlink()
    ctx = make_ctx(repo)
    ctx.env["FLAKY_MARKER"] = str(marker)
    plain = run_role(UnitTester(), ctx)
    assert "2 failed tests not re-run (more than 1)" in (plain.reason or "")
    assert all(f.severity == Severity.high for f in plain.findings)
    assert {f.id for f in plain.findings} == {flaky.id, always.id}


def test_many_failures_are_not_rerun(make_repo):
    body = "".join(f"def test_bad_{i}():\n    assert False, 'bad {i}'\n\n\n" for i in range(11))
    repo = make_repo({"tests/test_many.py": body})
    out = run_role(UnitTester(), make_ctx(repo))
    assert out.status == "ok" and len(out.findings) == 11
    assert all(f.severity == Severity.high and "flaky" not in f.tags for f in out.findings)
    assert "11 failed tests not re-run (more than 10)" in (out.reason or "")


def test_plan_needs_twice_the_failures_time_and_a_margin():
    failed = {"t::a": 10.0, "t::b": 5.0}
    needed = 2 * 15.0 + _unit_rerun.MARGIN_S
    timeout, why = _unit_rerun.plan(failed, needed + _unit_rerun.RESERVE_S - 1, 3.0)
    assert timeout is None and "not re-run" in why and "deadline" in why
    timeout, why = _unit_rerun.plan(failed, needed + _unit_rerun.RESERVE_S + 1, 3.0)
    assert why is None and timeout == needed  # bounded by what is left, less the reserve
    timeout, why = _unit_rerun.plan(failed, None, 100.0)
    assert why is None and timeout == 100.0  # no deadline: at most the whole suite's time


def test_rerun_proves_a_pass_or_changes_nothing():
    ids = ["t.py::a", "t.py::b"]
    summary = {"kind": "summary", "exitstatus": 1, "collected": 2, "passed": 1, "skipped": 0}
    fail_b = {"kind": "test", "nodeid": "t.py::b", "when": "call"}
    assert _unit_rerun.passed_again(ids, [fail_b, summary], False) == {"t.py::a"}
    # Timed out, not all collected, a skip, a usage error: no proof.
    assert _unit_rerun.passed_again(ids, [fail_b, summary], True) is None
    assert _unit_rerun.passed_again(ids, [fail_b, {**summary, "collected": 1}], False) is None
    assert _unit_rerun.passed_again(ids, [{**summary, "skipped": 1, "passed": 1}], False) is None
    assert _unit_rerun.passed_again(ids, [{**summary, "exitstatus": 4}], False) is None
    assert _unit_rerun.passed_again(ids, [], False) is None
