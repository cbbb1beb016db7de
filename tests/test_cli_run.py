"""``superqe run``, ``superqe roles`` and ``superqe suggestions`` as a user runs
them: exit codes, JSONL events, SARIF, baselines and applying fixes."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from tests import qe_testroles
from tests.cli_helpers import TOY_CLI, superqe
from tests.conftest import ROOT, run_git
from tests.waiting import descendants_running, wait_for

APP = "def f():\n    x = 'PLANTED'\n    return x\n"


@pytest.fixture(autouse=True)
def toy_roles(monkeypatch):
    qe_testroles.register(monkeypatch)



def test_run_jsonl_events_and_exit_code(make_repo, capsys):
    repo = make_repo({"app.py": APP})
    code, out, err = superqe(capsys, "run", str(repo), "-r", "toy_tester", "--jsonl")
    assert code == 1  # a high finding, default --fail-on high
    events = [json.loads(line) for line in out.splitlines()]
    types = [e["type"] for e in events]
    assert types[0] == "session_start" and types[-1] == "session_complete"
    for t in ("role_start", "finding", "role_complete", "progress", "workspace.snapshot",
              "workspace.reverted"):
        assert t in types
    finding = next(e for e in events if e["type"] == "finding")["data"]["finding"]
    assert finding["file"] == "app.py" and finding["range"]["start_line"] == 2
    done = events[-1]["data"]
    assert done["verdict"] == "fail" and Path(done["report"]).is_file()
    assert {e["session_id"] for e in events} == {events[0]["session_id"]}
    assert err == ""


@pytest.mark.parametrize(("fail_on", "expected"), [("never", 0), ("critical", 0), ("high", 1), ("info", 1)])
def test_fail_on(make_repo, capsys, fail_on, expected):
    repo = make_repo({"app.py": APP})
    code, out, _ = superqe(capsys, "run", str(repo), "-r", "toy_tester", "--fail-on", fail_on)
    assert code == expected
    assert "app.py:2:10: high TOY1" in out and "verdict:" in out  # plain output when piped


def test_clean_project_exits_0(make_repo, capsys):
    repo = make_repo({"app.py": "x = 1\n"})
    code, out, _ = superqe(capsys, "run", str(repo), "-r", "toy_tester")
    assert code == 0 and "verdict: pass; 0 finding(s)" in out


def test_sarif_output(make_repo, capsys, tmp_path):
    repo = make_repo({"app.py": APP})
    sarif = tmp_path / "out.sarif"
    code, _, _ = superqe(capsys, "run", str(repo), "-r", "toy_tester", "--sarif", str(sarif))
    assert code == 1
    doc = json.loads(sarif.read_text())
    assert doc["version"] == "2.1.0"
    assert doc["runs"][0]["results"][0]["ruleId"] == "TOY1"


@pytest.mark.parametrize(
    ("argv", "message"),
    [
        (["-r", "nope"], "unknown role 'nope'"),
        (["--sarif", "/nonexistent-dir/x.sarif"], "does not exist"),
        (["--timeout", "0"], "more than 0"),
        (["--mode", "slow"], "invalid choice"),
        (["--baseline", "missing.json"], "baseline file not found"),
    ],
)
def test_usage_errors_exit_2_with_one_line(make_repo, capsys, argv, message):
    repo = make_repo({"app.py": APP})
    code, out, err = superqe(capsys, "run", str(repo), *argv)
    assert code == 2
    assert message in err and len(err.strip().splitlines()) == 1 and out == ""
    assert not (repo / ".superqode").exists()


def test_missing_project_exits_2(tmp_path, capsys):
    code, _, err = superqe(capsys, "run", str(tmp_path / "nope"))
    assert code == 2 and err.startswith("superqe: ")


def test_timeout_exits_3_with_partial_report(make_repo, capsys):
    repo = make_repo({"app.py": APP})
    code, out, err = superqe(capsys, "run", str(repo), "-r", "toy_tester", "-r", "toy_slow",
                             "--timeout", "1.5")
    assert code == 3
    assert "ran out of time" in err and "app.py:2" in out
    assert "Verified: the project is exactly as before" in out


def test_baseline_update_then_only_new_findings(make_repo, capsys):
    repo = make_repo({"app.py": APP})
    code, out, _ = superqe(capsys, "run", str(repo), "-r", "toy_tester", "--update-baseline")
    assert code == 1 and "baseline written" in out
    assert (repo / ".superqode" / "baseline.json").is_file()
    code, out, _ = superqe(capsys, "run", str(repo), "-r", "toy_tester", "--baseline",
                           str(repo / ".superqode" / "baseline.json"))
    assert code == 0 and "1 in the baseline" in out
    (repo / "superqode.yaml").write_text("qe:\n  baseline: .superqode/baseline.json\n")
    (repo / "new.py").write_text("y = 'PLANTED'\n")
    code, out, _ = superqe(capsys, "run", str(repo), "-r", "toy_tester")
    assert code == 1 and "new.py:1" in out and "app.py:2" not in out


def test_roles_lists_registry(capsys):
    code, out, _ = superqe(capsys, "roles")
    assert code == 0 and "security_tester" in out and "toy_tester" in out
    code, out, _ = superqe(capsys, "roles", "--json")
    rows = {r["name"]: r for r in json.loads(out)}
    assert rows["lint_tester"]["quick"] is True and rows["toy_exec"]["executes_code"] is True


def test_suggestions_list_show_apply_and_refuse(make_repo, capsys):
    repo = make_repo({"app.py": APP, "b.py": "b = 'PLANTED'\n"})
    assert superqe(capsys, "run", str(repo), "-r", "toy_tester")[0] == 1
    code, out, _ = superqe(capsys, "suggestions", "-C", str(repo), "list")
    assert code == 0
    lines = out.splitlines()
    assert len(lines) == 2 and all("[tool-verified only]" in ln for ln in lines)
    app_fix = next(ln.split()[0] for ln in lines if "app.py:2" in ln)
    code, out, _ = superqe(capsys, "suggestions", "show", app_fix, "-C", str(repo))
    assert code == 0 and "+    x = 'fixed'" in out
    # The one consented write: apply changes the user's file, not the index.
    code, out, _ = superqe(capsys, "suggestions", "-C", str(repo), "apply", app_fix)
    assert code == 0 and "applied" in out
    assert (repo / "app.py").read_text() == APP.replace("PLANTED", "fixed")
    assert run_git(repo, "diff", "--cached", "--name-only") == ""
    # Applying again: its change is there already; said, file untouched.
    code, out, _ = superqe(capsys, "suggestions", "-C", str(repo), "apply", app_fix)
    assert code == 0 and "in the code already" in out
    assert (repo / "app.py").read_text() == APP.replace("PLANTED", "fixed")
    # The code moved on: refused with the reason, file untouched.
    (repo / "app.py").write_text("x = 'other'\n")
    code, _, err = superqe(capsys, "suggestions", "-C", str(repo), "apply", app_fix)
    assert code == 1 and "no longer fits the code" in err
    assert (repo / "app.py").read_text() == "x = 'other'\n"
    code, _, err = superqe(capsys, "suggestions", "-C", str(repo), "apply", "no-such-fix")
    assert code == 2 and "no suggestion" in err


def test_suggestions_apply_in_plain_folder(tmp_path, capsys):
    folder = tmp_path / "plain"
    folder.mkdir()
    (folder / "m.py").write_text("a = 'PLANTED'\n")
    superqe(capsys, "run", str(folder), "-r", "toy_tester")
    fix = superqe(capsys, "suggestions", "-C", str(folder), "list")[1].split()[0]
    (folder / "sub").mkdir()
    code, _, _ = superqe(capsys, "suggestions", "-C", str(folder / "sub"), "apply", fix)
    assert code == 0 and (folder / "m.py").read_text() == "a = 'fixed'\n"


def test_suggestions_without_reports(tmp_path, capsys):
    code, _, err = superqe(capsys, "suggestions", "-C", str(tmp_path), "list")
    assert code == 2 and "no QE reports" in err


def test_real_cli_with_bandit_and_ruff(make_repo):
    """The installed command, real analyzers, a real pipe."""
    repo = make_repo({
        "pkg/__init__.py": "",
        "pkg/db.py": 'import os\nimport hashlib\n\n\ndef sign(s):\n    return hashlib.md5(s.encode()).hexdigest()\n',
    })
    exe = Path(sys.executable).parent / "superqe"
    proc = subprocess.run(
        # --fail-on medium: the weak hash is medium (a secret would be high).
        [str(exe), "run", str(repo), "-r", "security_tester", "-r", "lint_tester", "--jsonl",
         "--fail-on", "medium"],
        capture_output=True, text=True, cwd=ROOT, env=os.environ.copy(), timeout=240, check=False,
    )
    # Both are advisories of the default view (a weak hash and an unused
    # import, no input traced to them): reported, one click away, and the
    # run passes even at --fail-on medium.
    assert proc.returncode == 0, proc.stderr
    events = [json.loads(line) for line in proc.stdout.splitlines()]
    report = json.loads(Path(events[-1]["data"]["report"]).read_text())
    found = {(f["rule_id"], f["file"], f["range"]["start_line"]) for f in report["findings"]}
    assert ("B324", "pkg/db.py", 6) in found and ("F401", "pkg/db.py", 1) in found
    assert all(f["noise"].startswith("advisory: ") for f in report["findings"]
               if f["rule_id"] in ("B324", "F401")), report["findings"]
    # ruff's S324 (if the project enabled it) would be merged into bandit's B324.
    assert sum(1 for r, fl, ln in found if ln == 6 and r in ("B324", "S324")) == 1
    # No tests in this repository: the tool's word only.
    assert all(p["verified_by"] == "tool" for p in report["patches"] if "f401" in p["id"])
    # usedforsecurity=False declares the hash harmless: a suppression, not a fix.
    b324 = [p for p in report["patches"] if "b324" in p["id"]]
    assert b324 and all(p["kind"] == "suppression" and not p["verified"] for p in b324)
    assert run_git(repo, "status", "--porcelain") == ""


def test_ctrl_c_cancels_reverts_and_keeps_partial_report(make_repo):
    import signal
    import time

    repo = make_repo({"app.py": APP})
    code = TOY_CLI
    proc = subprocess.Popen(
        [sys.executable, "-c", code, "run", str(repo), "-r", "toy_tester", "-r", "toy_slow"],
        cwd=ROOT, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
    )
    try:
        deadline = time.monotonic() + 60
        seen = []
        # The cancel comes once toy_tester has reported (its finding is the
        # partial result) and toy_slow is inside its sleep: on a loaded
        # machine toy_slow may start well before toy_tester ends.
        def tester_done() -> bool:
            return any(ln.startswith("[toy_tester] ")
                       and not ln.startswith(("[toy_tester] started", "[toy_tester] running"))
                       for ln in seen)

        while time.monotonic() < deadline:
            line = proc.stderr.readline()
            seen.append(line)
            if any("[toy_slow] started" in ln for ln in seen) and tester_done():
                break
        assert any("[toy_slow] started" in ln for ln in seen) and tester_done(), seen
        wait_for(lambda: descendants_running("time.sleep(60)", proc.pid), 60, "toy_slow's subprocess")
        proc.send_signal(signal.SIGINT)
        out, err = proc.communicate(timeout=60)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
    assert proc.returncode == 130, err
    # A high finding came back before the cancel, yet no pass/fail is claimed.
    assert "verdict: cancelled (partial results)" in out and "app.py:2" in out
    assert "verdict: pass" not in out and "verdict: fail" not in out
    assert "Verified: the project is exactly as before" in out
    from superqode_ls.workspace.paths import working_root

    assert not list(working_root().glob("*/qe/qe-*/"))
    reports = list((repo / ".superqode" / "qe-artifacts" / "qr").glob("*.json"))
    saved = json.loads(reports[0].read_text()) if len(reports) == 1 else {}
    assert saved.get("cancelled") is True and saved["verdict"] == "cancelled"
    md = reports[0].with_suffix(".md").read_text()
    assert md.startswith("# SuperQode quality report: CANCELLED")


def test_rich_display_renders_to_a_terminal_stream():
    import io

    from superqode_ls.events import EventBus
    from superqode_ls.qe.display import RichDisplay

    stream = io.StringIO()
    display = RichDisplay(stream)
    bus = EventBus("qe-20260101-000000-abcdef")
    bus.subscribe(display)
    bus.emit("session_start", project="/p", mode="quick", roles=["lint_tester"], isolation="auto")
    bus.emit("role_start", role="lint_tester")
    bus.emit("role_complete", role="lint_tester", status="ok", findings=3, duration_s=0.5, reason=None)
    bus.emit("progress", message="verifying 1 fix(es)", done=0, total=1)
    bus.emit("workspace.reverted", verified=True, differences=[], parked=False)
    display.close()
    text = stream.getvalue()
    assert "lint_tester: done: 3 finding(s)" in text and "project verified unchanged" in text


def test_plain_display_in_a_pipe_shows_tool_steps_and_a_mutant_counter():
    import io

    from superqode_ls.events import EventBus
    from superqode_ls.qe.display import PlainDisplay

    stream = io.StringIO()
    bus = EventBus("qe-20260101-000000-abcdef")
    bus.subscribe(PlainDisplay(stream, mutant_every=10))
    bus.emit("role_start", role="mutation_tester")
    for _ in range(3):  # a tool called per mutant is shown once
        bus.emit("tool_call", role="mutation_tester", tool="python", argv=["python"])
    for n in range(1, 26):  # as mutation.py emits them
        bus.emit("progress", role="mutation_tester", message=f"mutant {n}")
    bus.emit("progress", message="1/3 roles done", done=1, total=3)
    lines = stream.getvalue().splitlines()
    assert lines == [
        "[mutation_tester] started",
        "[mutation_tester] running python",
        "[mutation_tester] 10 mutants run",
        "[mutation_tester] 20 mutants run",
    ]


def test_real_cli_piped_prints_each_role_step(make_repo):
    repo = make_repo({"pkg/__init__.py": "", "pkg/a.py": "import os\n"})
    exe = Path(sys.executable).parent / "superqe"
    proc = subprocess.run(
        [str(exe), "run", str(repo), "-r", "security_tester", "-r", "lint_tester"],
        capture_output=True, text=True, cwd=ROOT, env=os.environ.copy(), timeout=240, check=False,
    )
    assert proc.returncode == 0, proc.stderr
    for line in ("[lint_tester] started", "[lint_tester] running ruff",
                 "[security_tester] running bandit", "[lint_tester] done: 1 finding(s)"):
        assert line in proc.stderr, proc.stderr
    # the unused import is an advisory of the default view: counted, one click away
    assert "1 more (noise): 1 advisory" in proc.stdout, proc.stdout


def test_plain_display_heartbeat_when_a_role_is_quiet():
    import io

    from superqode_ls.events import EventBus
    from superqode_ls.qe.display import PlainDisplay

    now = [100.0]
    stream = io.StringIO()
    display = PlainDisplay(stream, heartbeat_s=30, background=False, clock=lambda: now[0])
    bus = EventBus("qe-20260101-000000-abcdef")
    bus.subscribe(display)
    display.tick()  # nothing under way: nothing to say
    bus.emit("role_start", role="unit_tester")
    now[0] += 29
    display.tick()  # printed 29 s ago: not yet
    now[0] += 101
    display.tick()
    display.tick()  # just said it
    bus.emit("role_complete", role="unit_tester", status="ok", findings=0, duration_s=130.0)
    now[0] += 60
    display.tick()  # nothing running any more
    bus.emit("progress", message="verifying 3 fix(es)", done=0, total=3)
    now[0] += 45
    display.tick()
    display.close()
    assert stream.getvalue().splitlines() == [
        "[unit_tester] started",
        "still running: unit_tester (2m 10s)",
        "[unit_tester] done: 0 finding(s) in 130.0s",
        "verifying 3 fix(es)",
        "still running: verifying fixes (45s)",
    ]
