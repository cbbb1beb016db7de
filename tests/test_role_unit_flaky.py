"""unit_tester re-runs failed tests once: one that passes then is flaky."""

from __future__ import annotations

from pathlib import Path

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


# Every pytest run records how it was invoked (arguments and the environment
# the role builds) into a log outside the repository: the re-run must be the
# first run's command, plus only the failed node ids (and -p no:randomly).
_RECORD_INVOCATION = (
    "import json, os\n"
    "\n"
    "\n"
    "def pytest_configure(config):\n"
    "    keys = ('PYTHONPATH', 'PYTHONDONTWRITEBYTECODE', 'HYPOTHESIS_STORAGE_DIRECTORY',\n"
    "            'FLAKY_MARKER', 'SUPERQODE_PYTEST_REPORT')\n"
    "    with open(os.environ['INVOCATION_LOG'], 'a') as fh:\n"
    "        fh.write(json.dumps({'args': list(config.invocation_params.args),\n"
    "                             'env': {k: os.environ.get(k) for k in keys}}) + '\\n')\n"
)


def _runs(log) -> list[dict]:
    import json

    return [json.loads(line) for line in log.read_text().splitlines()]


def _same_but_private(a: str | None, b: str | None, private: tuple[str, str]) -> bool:
    """Equal once each run's private folder (the recorder's copy) is named alike."""
    return (a or "").replace(private[0], "<private>") == (b or "").replace(private[1], "<private>")


def test_rerun_is_the_first_runs_command(make_repo, tmp_path):
    repo = make_repo({**SUITE, "conftest.py": _RECORD_INVOCATION})
    marker, log = tmp_path / "marker", tmp_path / "invocations.jsonl"
    ctx = make_ctx(repo)
    ctx.env.update(FLAKY_MARKER=str(marker), INVOCATION_LOG=str(log))
    out = run_role(UnitTester(), ctx)
    assert "2 failed test(s) re-run: 1 flaky" in (out.reason or "")
    first, again = _runs(log)
    ids = ["tests/test_flaky.py::test_sometimes", "tests/test_flaky.py::test_always"]
    private = (str(Path(first["env"]["SUPERQODE_PYTEST_REPORT"]).parent),
               str(Path(again["env"]["SUPERQODE_PYTEST_REPORT"]).parent))
    assert private[0] != private[1]  # each run its own recorder folder, both removed
    # Same arguments (each run's cache in its own private folder), the failed
    # node ids after them; nothing else added or lost.
    assert len(again["args"]) == len(first["args"]) + 1 + len(ids)
    assert all(_same_but_private(a, b, private) for a, b in zip(first["args"], again["args"]))
    assert again["args"][len(first["args"]):] == ["--", *ids]
    assert not Path(private[0]).exists() and not Path(private[1]).exists()
    for key, value in first["env"].items():
        assert _same_but_private(value, again["env"][key], private), key


def test_rerun_keeps_the_first_runs_fallback(make_repo, tmp_path):
    """The project's addopts name an option SuperQode's interpreter lacks: the
    suite runs again without addopts, and so must the re-run (else pytest's
    usage error would leave the flaky test unproven)."""
    ini = "[pytest]\naddopts = --no-such-plugin-option-xyz\n"
    repo = make_repo({**SUITE, "conftest.py": _RECORD_INVOCATION, "pytest.ini": ini})
    marker, log = tmp_path / "marker", tmp_path / "invocations.jsonl"
    ctx = make_ctx(repo)
    ctx.env.update(FLAKY_MARKER=str(marker), INVOCATION_LOG=str(log))
    out = run_role(UnitTester(), ctx)
    assert "ran without the project's addopts" in (out.reason or "")
    assert "2 failed test(s) re-run: 1 flaky" in (out.reason or ""), out.reason
    runs = _runs(log)  # the run pytest refused never configured: two runs
    assert len(runs) == 2 and all("addopts=" in r["args"] for r in runs)
    flaky = [f for f in out.findings if "flaky" in f.tags]
    assert [f.title for f in flaky] == ["Flaky test: tests/test_flaky.py::test_sometimes"]
