"""A large generated project (500 modules, thousands of lint and security
findings) through a real ``superqe run`` process: quick mode finishes inside
its budget with both roles' findings, and SIGINT at seeded points of every
stage stops it within a bound, sandbox reverted, nothing left behind.

The stop bound is a correctness bound (a run that ignores signals for minutes
is the bug being guarded against), with a margin for a loaded CI machine; the
measured latencies are printed (-s) and reported in docs/performance.md.
"""

from __future__ import annotations

import json
import os
import queue
import random
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest

from superqode_ls.qe.report.bounded import JSON_MAX_FINDINGS
from superqode_ls.qe.roles.base import tool_path
from superqode_ls.workspace.paths import working_root
from tests.conftest import ROOT, run_git
from tests.large_helpers import make_large_project
from tests.waiting import wait_for

pytestmark = [
    pytest.mark.slow,
    pytest.mark.skipif(not (tool_path("ruff") and tool_path("bandit")), reason="needs ruff and bandit"),
]

MODULES = 500
STOP_BOUND_S = 2.0  # spec: 1 s; margin for a shared 2-CPU machine


def _stop_bound() -> float:
    """The bound on this machine now: the stop's work is bounded, its wall
    time is not; with more runnable processes than CPUs each gets a share
    (load 8 on 2 CPUs: a quarter), so the bound widens by that factor."""
    share = max(1.0, os.getloadavg()[0] / (os.cpu_count() or 1))
    return STOP_BOUND_S * share
EXE = str(Path(sys.executable).parent / "superqe")


@pytest.fixture(scope="module")
def large_template(tmp_path_factory):
    return make_large_project(tmp_path_factory.mktemp("large") / "tpl", modules=MODULES, funcs=1)


def _copy(template: Path, dest: Path) -> Path:
    subprocess.run(["git", "clone", "-q", str(template), str(dest)], check=True)
    return dest


def _tree(root: Path) -> dict[str, bytes]:
    return {
        p.relative_to(root).as_posix(): p.read_bytes()
        for p in sorted(root.rglob("*"))
        if p.is_file() and not ({".git", ".superqode"} & set(p.relative_to(root).parts))
    }


def _nothing_left(repo: Path) -> None:
    assert not list(working_root().glob("*/qe/qe-*")), "a sandbox was left"
    assert not list(working_root().glob("*/qe/qe-*.json")), "a session record was left"
    for state in working_root().glob("*/locks/state.json"):
        assert json.loads(state.read_text())["holders"] == [], "a lock was left"
    listed = run_git(repo, "worktree", "list", "--porcelain")
    assert listed.count("worktree ") == 1, listed
    assert run_git(repo, "status", "--porcelain") == ""


def _reader(proc: subprocess.Popen, events: queue.Queue) -> None:
    # Drains stdout all the time: a full pipe would stall the child and
    # make the stop latency the test's fault.
    for line in proc.stdout:
        try:
            events.put(json.loads(line))
        except ValueError:
            events.put({"type": "text", "data": {"line": line}})
    events.put(None)


def test_quick_mode_on_a_large_project_finishes_in_budget(large_template, tmp_path):
    repo = _copy(large_template, tmp_path / "big")
    before = _tree(repo)
    budget = 60  # quick mode's default budget (qe.budgets.quick)
    t0 = time.monotonic()
    proc = subprocess.run(
        [EXE, "run", str(repo), "--mode", "quick", "--jsonl"],
        capture_output=True, text=True, cwd=ROOT, env=os.environ.copy(), timeout=600, check=False,
    )
    wall = time.monotonic() - t0
    # Its shell=True, yaml.load and md5 over a parameter are advisories of
    # the default view (no input traced to them): counted below, and no
    # finding fails the run.
    assert proc.returncode == 0, proc.stderr[-2000:]
    events = [json.loads(line) for line in proc.stdout.splitlines()]
    done = events[-1]["data"]
    report = json.loads(Path(done["report"]).read_text())
    roles = {r["role"]: r for r in report["roles"]}
    assert roles["lint_tester"]["status"] == "ok" and roles["security_tester"]["status"] == "ok"
    assert not report["timed_out"] and report["verification"]["verified"]
    by_tool: dict[str, int] = {}
    # Every finding as it streamed (the report file lists the most severe).
    for e in events:
        if e["type"] == "finding":
            rule = e["data"]["finding"]["rule_id"]
            by_tool[rule] = by_tool.get(rule, 0) + 1
    # Every module has an unused import (F401), a yaml.load (B506) and a
    # shell=True call (B602): all of them found.
    assert by_tool.get("F401", 0) >= MODULES and by_tool.get("B506", 0) >= MODULES
    assert by_tool.get("B602", 0) >= MODULES
    # Verification is capped; the rest is offered, labelled, not verified.
    patches = report["patches"]
    # (a fix its tool calls unsafe is labelled so, never run: not tried; in
    # the default view the unused locals, the one class still shown, rank
    # first and carry that label rather than the cap's)
    tried = [p for p in patches if "over the verification cap" not in (p["verification"] or "")
             and not (p["verification"] or "").startswith("unsafe")]
    assert len(patches) > 200 and len([p for p in tried if p["kind"] == "fix"]) <= 200
    assert all(not p["verified"] for p in patches if "over the verification cap" in (p["verification"] or ""))
    # The md5 "fix" is a suppression, never verified.
    assert all(not p["verified"] for p in patches if p["kind"] == "suppression")
    # The report files stay small: the summary counts every finding, the
    # JSON lists the most severe ones (with their fixes), the Markdown fewer.
    total = sum(report["summary"].values())
    assert report["findings_total"] == total > len(report["findings"]) == JSON_MAX_FINDINGS
    assert Path(done["report"]).stat().st_size < 2_000_000
    md = Path(report["artifacts"]["markdown"])
    assert md.stat().st_size < 1_000_000 and f"of {total} findings are listed" in md.read_text()
    # One manifest for everything, listing every patch file written: one per
    # fix the verifier judged and per suppression, none over the cap.
    manifest = json.loads((repo / ".superqode/qe-artifacts/manifest.json").read_text())
    listed = [a for a in manifest["artifacts"] if a["kind"] == "patch"]
    assert 0 < len([a for a in listed if a["patch_kind"] == "fix"]) <= 200
    # the md5 suppressions are written, though an advisory's stays out of the JSON's list
    assert any(a["patch_kind"] == "suppression" and a["finding_ids"][0].startswith("b324")
               for a in listed)
    assert len(list((repo / ".superqode/qe-artifacts/patches").iterdir())) == len(listed)
    assert _tree(repo) == before
    _nothing_left(repo)
    print(f"\nquick mode, {MODULES} modules, {len(report['findings'])} findings: {wall:.1f} s "
          f"(budget {budget} s)")


def _trigger(stage: str, event: dict | None) -> bool:
    if event is None:
        return False
    kind, data = event.get("type"), event.get("data", {})
    if stage == "roles":
        return kind == "role_start"
    if stage == "verification":
        return kind == "progress" and str(data.get("message", "")).startswith("verifying")
    if stage == "report":
        return kind == "workspace.reverted"
    return False


# (stage, seed): the seed picks a delay after the stage's first sign.
POINTS = [("creation", 1), ("roles", 2), ("roles", 3), ("verification", 4), ("report", 5)]


@pytest.mark.parametrize("stage,seed", POINTS, ids=[f"{s}-{n}" for s, n in POINTS])
def test_sigint_stops_within_bound_at_any_stage(large_template, tmp_path, stage, seed):
    repo = _copy(large_template, tmp_path / "big")
    before = _tree(repo)
    rng = random.Random(seed)
    delay = {"creation": 0.0, "roles": rng.uniform(0.1, 1.5), "verification": rng.uniform(0, 0.5),
             "report": rng.uniform(0, 0.05)}[stage]
    proc = subprocess.Popen(
        [EXE, "run", str(repo), "--mode", "quick", "--timeout", "300", "--jsonl"],
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, cwd=ROOT, env=os.environ.copy(),
    )
    events: queue.Queue = queue.Queue()
    threading.Thread(target=_reader, args=(proc, events), daemon=True).start()
    seen: list[dict] = []
    try:
        limit = time.monotonic() + 300
        fired = False
        while time.monotonic() < limit and proc.poll() is None:
            if stage == "creation":
                # The session's record appears as the sandbox is being made.
                wait_for(lambda: proc.poll() is not None or list(working_root().glob("*/qe/qe-*.json")),
                         300, "the session's record (or the run's exit)")
                fired = proc.poll() is None
                break
            try:
                ev = events.get(timeout=0.05)
            except queue.Empty:
                continue
            if ev is None:
                break
            seen.append(ev)
            if _trigger(stage, ev):
                fired = True
                break
        assert fired, f"stage {stage} never reached: {[e.get('type') for e in seen][-5:]}"
        time.sleep(delay)  # the behaviour tested: a Ctrl-C this long into the stage
        sent = time.monotonic()
        proc.send_signal(signal.SIGINT)
        proc.wait(timeout=60)
        latency = time.monotonic() - sent
        bound = _stop_bound()
        err = proc.stderr.read()
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
    while True:
        ev = events.get(timeout=10)
        if ev is None:
            break
        seen.append(ev)
    print(f"\nSIGINT during {stage} (+{delay:.2f} s): stopped in {latency:.2f} s, exit {proc.returncode}")
    assert latency < bound, f"took {latency:.2f} s to stop during {stage} (bound {bound:.1f} s at this load)"
    assert proc.returncode == 130, err[-2000:]
    complete = [e for e in seen if e.get("type") == "session_complete"]
    assert complete and complete[-1]["data"]["cancelled"] is True
    assert complete[-1]["data"]["verification"].startswith("Verified: the project is exactly as before")
    assert _tree(repo) == before
    _nothing_left(repo)
