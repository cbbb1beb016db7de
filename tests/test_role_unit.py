"""unit_tester on small real repositories with real pytest suites."""

from __future__ import annotations

import json
import sys
from datetime import UTC, datetime

from superqode_ls.config import Config
from superqode_ls.models import QualityReport, RoleRun
from superqode_ls.qe.report.verdict import compute_verdict
from superqode_ls.qe.roles import unit
from superqode_ls.qe.roles.unit import UnitTester
from tests.role_helpers import make_ctx, run_role, tree_state

LIB = {
    "calc/__init__.py": "",
    "calc/ops.py": (
        "def divide(a, b):\n"
        "    return a / b\n"
        "\n"
        "\n"
        "def average(values):\n"
        "    return divide(sum(values), len(values))\n"
        "\n"
        "\n"
        "def clamp(x, lo, hi):\n"
        "    return max(lo, min(x, lo))\n"
    ),
    "tests/test_ops.py": (
        "import pytest\n"
        "from calc.ops import average, clamp\n"
        "\n"
        "\n"
        "def test_average():\n"
        "    assert average([1, 2, 3]) == 2\n"
        "\n"
        "\n"
        "def test_average_empty_is_zero():\n"
        "    assert average([]) == 0\n"
        "\n"
        "\n"
        "def test_clamp():\n"
        "    assert clamp(5, 0, 10) == 5, 'inside the range stays'\n"
        "\n"
        "\n"
        "@pytest.fixture\n"
        "def broken():\n"
        "    raise RuntimeError('fixture broke')\n"
        "\n"
        "\n"
        "def test_uses_fixture(broken):\n"
        "    pass\n"
    ),
}


def test_failing_suite(make_repo):
    repo = make_repo(LIB)
    before = tree_state(repo)
    ctx = make_ctx(repo)
    out = run_role(UnitTester(), ctx)
    assert out.status == "ok" and out.tool == "pytest"
    assert tree_state(repo) == before  # no __pycache__, no .pytest_cache
    by_test = {f.title.split(": ", 1)[1]: f for f in out.findings}
    assert set(by_test) == {
        "tests/test_ops.py::test_average_empty_is_zero",
        "tests/test_ops.py::test_clamp",
        "tests/test_ops.py::test_uses_fixture",
    }
    empty = by_test["tests/test_ops.py::test_average_empty_is_zero"]
    assert (empty.file, empty.range.start_line, empty.rule_id) == (
        "tests/test_ops.py",
        10,
        "test-failure",
    )
    assert empty.snippet == "    assert average([]) == 0"
    assert "ZeroDivisionError" in empty.message
    # evidence: the deepest frame in project (non-test) code
    user = empty.evidence[-1]
    assert (user.file, user.line) == ("calc/ops.py", 2)
    assert user.snippet == "    return a / b"

    clamp = by_test["tests/test_ops.py::test_clamp"]
    assert clamp.range.start_line == 14
    assert "inside the range stays" in clamp.message and "assert 0 == 5" in clamp.message
    assert len(clamp.evidence) == 1  # a plain assertion: no project frame

    fixture = by_test["tests/test_ops.py::test_uses_fixture"]
    assert fixture.rule_id == "test-error" and "fixture broke" in fixture.message
    assert fixture.range.start_line == 19
    assert len({f.id for f in out.findings}) == 3
    # nothing is written into the project during the run (artifacts are the
    # pipeline's job, after the session)
    assert not (ctx.project / ".superqode").exists()


def test_ids_stable_across_runs(make_repo):
    repo = make_repo(LIB)
    first = run_role(UnitTester(), make_ctx(repo))
    (repo / "calc/ops.py").write_text("# moved down\n\n" + LIB["calc/ops.py"])
    second = run_role(UnitTester(), make_ctx(repo))
    assert sorted(f.id for f in first.findings) == sorted(f.id for f in second.findings)


def test_passing_suite_restricted_to_files(make_repo):
    repo = make_repo(
        {
            **LIB,
            "tests/test_good.py": (
                "from hypothesis import given, strategies as st\n\n"
                "@given(st.text())\n"
                "def test_ok(s):\n"
                "    assert s == s\n"
            ),
        }
    )
    before = tree_state(repo)
    out = run_role(UnitTester(), make_ctx(repo, files=["tests/test_good.py"]))
    assert out.status == "ok" and out.findings == []
    assert tree_state(repo) == before  # hypothesis' database is kept out too


def test_collection_error(make_repo):
    repo = make_repo(
        {
            "tests/test_broken.py": "def test_x(:\n    pass\n",
            "tests/test_fine.py": "def test_y():\n    pass\n",
        }
    )
    out = run_role(UnitTester(), make_ctx(repo))
    (f,) = out.findings
    assert f.rule_id == "collection-error" and f.file == "tests/test_broken.py"
    assert f.range.start_line == 1


def test_addopts_for_plugins_we_do_not_load(make_repo):
    repo = make_repo(
        {
            "pyproject.toml": '[tool.pytest.ini_options]\naddopts = "--cov=pkg -n 2"\n',
            "tests/test_a.py": "def test_a():\n    assert 1 == 2\n",
        }
    )
    out = run_role(UnitTester(), make_ctx(repo))
    assert out.status == "ok" and "without the project's addopts" in out.reason
    assert [f.range.start_line for f in out.findings] == [2]


def test_no_tests_is_skipped(make_repo):
    repo = make_repo({"pkg/__init__.py": "", "README.md": "x\n"})
    out = run_role(UnitTester(), make_ctx(repo))
    assert out.status == "skipped" and "no tests" in out.reason
    repo = make_repo({"tests/test_nothing.py": "X = 1\n"})
    out = run_role(UnitTester(), make_ctx(repo))
    assert out.status == "skipped" and "collected no tests" in out.reason


def test_configured_command_is_used(make_repo, tmp_path):
    marker = tmp_path / "used"
    wrapper = tmp_path / "runner.sh"
    wrapper.write_text(
        f'#!/bin/sh\necho yes > "{marker}"\nexport PYTEST_DISABLE_PLUGIN_AUTOLOAD=1\nexec "{sys.executable}" -m pytest "$@"\n'
    )
    wrapper.chmod(0o755)
    repo = make_repo({"tests/test_a.py": "def test_a():\n    assert 1 == 2\n"})
    cfg = Config.model_validate({"roles": {"unit_test_command": [str(wrapper)]}})
    out = run_role(UnitTester(), make_ctx(repo, config=cfg))
    assert marker.read_text().strip() == "yes"
    assert [f.range.start_line for f in out.findings] == [2]


def test_deadline_stops_the_suite(make_repo):
    repo = make_repo(
        {
            # It writes a report beside itself, as many suites do: not the
            # code it tests (a fresh sandbox of the next run has no such file).
            "tests/test_fast.py": ("from pathlib import Path\n\ndef test_fails():\n"
                                   "    Path(__file__).with_name('report.txt').write_text('x')\n"
                                   "    assert False\n"),
            # A suite slower than the limit: the subject, not a wait of this test.
            "tests/test_slow.py": "import time\n\ndef test_sleeps():\n    time.sleep(60)\n",
        }
    )
    # 15 s: the fast test must fail before it even on a loaded machine.
    out = run_role(UnitTester(), make_ctx(repo, deadline_in=15))
    assert out.status == "timeout" and "did not finish" in out.reason
    # how far the killed suite got, from the recorder's progress file
    assert "1 of 2 tests run" in out.reason, out.reason
    # what failed before the deadline is kept
    assert [f.file for f in out.findings] == ["tests/test_fast.py"]


def test_quick_mode_stops_the_suite_at_its_cap_and_runs_it_again_next_time(make_repo):
    repo = make_repo(
        {
            # It writes a report beside itself, as many suites do: not the
            # code it tests (a fresh sandbox of the next run has no such file).
            "tests/test_fast.py": ("from pathlib import Path\n\ndef test_fails():\n"
                                   "    Path(__file__).with_name('report.txt').write_text('x')\n"
                                   "    assert False\n"),
            # A suite slower than the limit: the subject, not a wait of this test.
            "tests/test_slow.py": "import time\n\ndef test_sleeps():\n    time.sleep(60)\n",
        }
    )
    # 15 s (as the deadline test): the fast test must end before the cap even
    # on a loaded machine (at load 14-17 the sandbox and pytest may take 8 s).
    cfg = Config.model_validate({"qe": {"quick_unit_test_max_s": 15}})
    out = run_role(UnitTester(), make_ctx(repo, config=cfg, mode="quick"))
    # Quick mode's own cap: "incomplete" (what ran stands), not a session out
    # of time (before: "timeout", which made the run exit 3 with a fail verdict).
    assert out.status == "incomplete" and "quick mode stops the test suite after 15 s" in out.reason
    # and says how much of the suite ran before the cap (a user reads "0
    # failure(s)" alone as nothing run or as everything passed)
    assert "(1 of 2 tests run, 1 failure(s) recorded)" in out.reason, out.reason
    # The next quick run starts the suite again (before: "not started in
    # quick mode", and a suite once slow under load stayed off for good),
    # the module of the last failure first: re-checked, not carried.
    (repo / "tests" / "report.txt").unlink()  # the next sandbox is a fresh checkout
    out = run_role(UnitTester(), make_ctx(repo, config=cfg, mode="quick"))
    assert out.status == "incomplete", out
    assert "(1 of 2 tests run, 1 failure(s) recorded)" in out.reason, out.reason
    assert ("the suite did not fit quick mode's cap last time: it runs in this order: "
            "1 module(s) with the last run's failures, then the rest fastest first"
            in out.reason), out.reason
    assert [f.file for f in out.findings] == ["tests/test_fast.py"], out.findings
    assert "carried" not in out.findings[0].tags
    report = QualityReport(session_id="s", project=str(repo), mode="quick", isolation="worktree",
                           started_at=datetime.now(UTC),
                           roles=[RoleRun(role="unit_tester", status=out.status,
                                          reason=out.reason)])
    assert compute_verdict(report) == "conditional"


def test_a_suite_that_did_not_fit_runs_what_fits_in_quick_mode(make_repo):
    # The slow module comes first in the suite's own order: the cap comes
    # before any test ends.
    repo = make_repo({
        "tests/test_a_slow.py": "import time\n\ndef test_sleeps():\n    time.sleep(60)\n",
        "tests/test_b_ok.py": "def test_ok():\n    assert True\n",
        "tests/test_c_fails.py": "def test_fails():\n    assert 1 == 2\n",
    })
    cfg = Config.model_validate({"qe": {"quick_unit_test_max_s": 15}})
    out = run_role(UnitTester(), make_ctx(repo, config=cfg, mode="quick"))
    # No test ran: said in one line, never a pass (status incomplete).
    assert out.status == "incomplete", out
    assert out.reason.startswith(
        "tests not run: quick mode's 15 s cap came before the first test ended (3 test(s) "
        "collected); `--mode deep` runs the suite"), out.reason
    report = QualityReport(session_id="s", project=str(repo), mode="quick", isolation="worktree",
                           started_at=datetime.now(UTC),
                           roles=[RoleRun(role="unit_tester", status=out.status,
                                          reason=out.reason)])
    assert compute_verdict(report) == "conditional"
    # The next quick run starts the modules never timed first and the one
    # that was stopped last: the failure is found (before: the suite was not
    # started again in quick mode, and the verdict was pass).
    out = run_role(UnitTester(), make_ctx(repo, config=cfg, mode="quick"))
    assert out.status == "incomplete", out
    assert "(2 of 3 tests run, 1 failure(s) recorded)" in out.reason, out.reason
    assert "2 not timed yet, then the rest fastest first" in out.reason, out.reason
    assert [f.file for f in out.findings] == ["tests/test_c_fails.py"], out.findings


def test_a_suite_slow_once_still_runs_in_quick_mode(make_repo):
    repo = make_repo({"tests/test_ok.py": "def test_ok():\n    assert True\n"})
    cfg = Config.model_validate({"qe": {"quick_unit_test_max_s": 15}})
    assert run_role(UnitTester(), make_ctx(repo, mode="deep")).status == "ok"
    # As if it had taken longer than quick mode's cap (a loaded machine).
    path = unit._durations_file(repo.parent / f"{repo.name}-project")  # make_ctx's project
    data = json.loads(path.read_text())
    assert data["failures"] == 0 and data["modules"].keys() == {"tests/test_ok.py"}, data
    path.write_text(json.dumps({**data, "seconds": 40.0}))
    out = run_role(UnitTester(), make_ctx(repo, config=cfg, mode="quick"))
    # Before: "skipped" (not started in quick mode), and the verdict "pass".
    assert out.status == "ok", out
    assert "1 test(s) run (1 passed, 0 failed, 0 skipped)" in out.reason, out.reason
    # A failing test: found by quick mode itself, not carried from a run before.
    (repo / "tests" / "test_ok.py").write_text("def test_ok():\n    assert False\n")
    path.write_text(json.dumps({**json.loads(path.read_text()), "seconds": 40.0}))
    out = run_role(UnitTester(), make_ctx(repo, config=cfg, mode="quick"))
    assert [f.file for f in out.findings] == ["tests/test_ok.py"], out
    assert "carried" not in out.findings[0].tags
    assert "1 changed or covering a changed file" in out.reason, out.reason
