"""An agent reads a file, writes a failing test, runs it, reports a finding
and proposes a fix that the verifier accepts; the user's tree stays as it was."""

from __future__ import annotations

import asyncio
import shutil
import subprocess

from superqode_ls.agent.permissions import AllowAsker
from superqode_ls.qe.roles.agent import AgentUnitTester
from superqode_ls.qe.verifier import Verifier
from superqode_ls.workspace.fingerprint import compare, take_fingerprint

from .conftest import (
    agent_config,
    conversation,
    copy_sandbox,
    make_ctx,
    provider_entry,
    sandbox_env,
)
from .scripted_server import tool_messages

CALC = (
    "def clamp(value, low, high):\n"
    '    """Limit value to the range [low, high]."""\n'
    "    if value < low:\n"
    "        return low\n"
    "    if value > high:\n"
    "        return low\n"
    "    return value\n"
)


def _check_run(server, out, events):
    assert out.status == "ok", out.reason
    # The model saw the test fail before the fix and pass after it.
    last = tool_messages(server.requests[-1])
    assert "exit code: 1" in last[3] and "assert 0 == 10" in last[3]
    assert last[6].startswith("exit code: 0")
    [finding] = out.findings
    assert finding.file == "calc.py"
    assert finding.range.start_line == 5 and finding.range.end_line == 6
    assert finding.snippet == "    if value > high:\n        return low"
    assert finding.severity.value == "medium" and finding.confidence == 0.9
    [patch] = out.patches
    assert finding.fix_patch_id == patch.id and patch.finding_ids == [finding.id]
    assert sorted(patch.files) == ["calc.py", "tests/test_clamp_upper.py"]
    assert "+        return high" in patch.diff
    # Every tool call is an event, in order, all allowed.
    calls = events.of("tool_call")
    assert [c["tool"] for c in calls] == [
        "list_files",
        "read_file",
        "write_file",
        "run_shell",
        "report_finding",
        "edit_file",
        "run_shell",
        "propose_fix",
    ]
    assert all(c["allowed"] and c["outcome"] == "ok" for c in calls)
    usage = events.of("agent.usage")[0]
    assert usage["usage"]["requests"] == 9 and usage["usage"]["prompt_tokens"] == 900
    return finding, patch


async def test_fix_flow_on_a_plain_copy(make_repo, scripted, events, tmp_path):
    project = make_repo({"calc.py": CALC})
    before = take_fingerprint(project)
    server = scripted(conversation("fix_clamp"))
    cfg = agent_config(
        [provider_entry(server, input_cost_per_1k=0.5, output_cost_per_1k=1.5)],
        permissions={"run_shell": "allow"},
    )
    sandbox = copy_sandbox(project, tmp_path / "sandbox")
    ctx = make_ctx(project, sandbox, cfg, events, session_id="qe-20261121-170000-aaaaaa")
    role = AgentUnitTester()
    out = await role.run(ctx)
    finding, patch = _check_run(server, out, events)
    assert server.remaining == 0
    # The usage comes back in the role's output (the pipeline sums it into the report).
    assert out.usage.cost_usd == round(9 * (100 * 0.5 + 20 * 1.5) / 1000, 6)

    # The verifier gets the sandbox as the session found it, applies the patch
    # and rechecks: the reproducer now passes.
    shutil.rmtree(sandbox)
    copy_sandbox(project, sandbox)
    verifier = Verifier(
        sandbox=sandbox,
        roles={role.name: role},
        contexts={role.name: ctx},
        findings_by_role={role.name: out.findings},
    )
    result = await verifier.verify(patch)
    # The reproducer passes; no covering tests were given to this verifier, so
    # the fix is "tool-verified only" (the pipeline runs them: test below).
    assert result.level == "tool" and not result.verified, result.message
    assert result.removed == [finding.id]
    assert (sandbox / "calc.py").read_text() == CALC  # verifier put it back

    # The patch applies to the user's project as it is.
    check = await asyncio.to_thread(
        subprocess.run,
        ["git", "apply", "--check", "-"],
        input=patch.diff,
        text=True,
        cwd=project,
        capture_output=True,
        check=False,
    )
    assert check.returncode == 0, check.stderr
    assert compare(before, take_fingerprint(project)) == []


async def test_unfixed_patch_is_not_verified(make_repo, scripted, events, tmp_path):
    """The verifier's verdict follows the reproducer, not the model's word."""
    steps = conversation("fix_clamp")
    # Same conversation, but the "fix" changes nothing that matters.
    steps[5]["tool_calls"][0]["arguments"]["new_text"] = (
        "    if value > high:  # checked\n        return low"
    )
    project = make_repo({"calc.py": CALC})
    server = scripted(steps)
    cfg = agent_config([provider_entry(server)], permissions={"run_shell": "allow"})
    sandbox = copy_sandbox(project, tmp_path / "sandbox")
    ctx = make_ctx(project, sandbox, cfg, events, session_id="qe-20261121-170000-bbbbbb")
    role = AgentUnitTester()
    out = await role.run(ctx)
    [patch] = out.patches
    shutil.rmtree(sandbox)
    copy_sandbox(project, sandbox)
    result = await Verifier(
        sandbox=sandbox,
        roles={role.name: role},
        contexts={role.name: ctx},
        findings_by_role={role.name: out.findings},
    ).verify(patch)
    assert not result.verified
    assert "still reports" in result.message


async def test_fix_flow_in_an_isolated_session(make_repo, scripted, events):
    from superqode_ls.workspace.session import IsolatedSession

    project = make_repo({"calc.py": CALC, "README.md": "calc\n"})
    (project / "notes.txt").write_text("uncommitted work\n")  # must survive untouched
    before = take_fingerprint(project)
    server = scripted(conversation("fix_clamp"))
    # run_shell stays "ask"; the user says yes.
    cfg = agent_config([provider_entry(server)])
    async with await IsolatedSession.create(project, config=cfg, mode="deep") as s:
        ctx = make_ctx(
            project, s.sandbox, cfg, events, session=s, env=s.env(sandbox_env()), session_id=s.id
        )
        role = AgentUnitTester()
        result = await role.run_agent(ctx, asker=AllowAsker())
        from superqode_ls.qe.roles.base import RoleOutput

        out = RoleOutput(findings=result.findings, patches=result.patches)
        _check_run(server, out, events)
        [patch] = out.patches
        # The patch came from the session's change tracker: no debris from the test run.
        assert "__pycache__" not in patch.diff and ".pytest_cache" not in patch.diff
        await s.restore(s.baseline)
        assert (s.sandbox / "calc.py").read_text() == CALC
        # What run() keeps for the verifier's recheck (run_agent was called directly).
        role._rechecks = [(f, result.reproducer_files.get(f.id, {})) for f in out.findings]
        verdict = await Verifier(
            sandbox=s.sandbox,
            roles={role.name: role},
            contexts={role.name: ctx},
            findings_by_role={role.name: out.findings},
            session=s,
        ).verify(patch)
        assert verdict.level == "tool", verdict.message  # no covering tests given here
    assert s.verification.verified, s.verification.line
    assert compare(before, take_fingerprint(project)) == []


async def test_pipeline_runs_the_agent_and_verifies_its_fix(make_repo, scripted, monkeypatch):
    """Deep QE through the real pipeline: sandbox, agent, noise filter,
    verifier, report, revert; the JSONL stream shows every tool call."""
    import json
    import os

    from superqode_ls.events import EventBus
    from superqode_ls.qe.pipeline import QERequest, QESession

    from .conftest import VENV_BIN

    monkeypatch.setenv("PATH", VENV_BIN + os.pathsep + os.environ["PATH"])
    monkeypatch.setenv("PYTEST_DISABLE_PLUGIN_AUTOLOAD", "1")
    project = make_repo({"calc.py": CALC})
    (project / "superqode.yaml").write_text(
        "providers:\n"
        f"  - {{name: local, base_url: '{scripted(conversation('fix_clamp')).base_url}',"
        " model: m, retry_backoff_s: 0.01}\n"
        "agent:\n  permissions: {run_shell: allow}\n"
    )
    before = take_fingerprint(project)
    bus = EventBus()
    jsonl: list[str] = []
    bus.subscribe(lambda e: jsonl.append(e.to_json()))
    report = await QESession(
        QERequest(project=project, mode="deep", roles=["agent_unit_tester"]), bus=bus
    ).run()
    [run] = report.roles
    assert run.status == "ok" and run.findings == 1 and run.patches == 1
    [finding] = report.findings
    [patch] = report.patches
    assert patch.verified, patch.verification
    assert finding.verified and finding.fix_patch_id == patch.id
    assert report.verification.verified
    assert report.usage is not None and report.usage.requests >= 1  # tokens reach the report
    assert report.usage.prompt_tokens > 0
    calls = [json.loads(line)["data"] for line in jsonl if '"type":"tool_call"' in line]
    assert [c["tool"] for c in calls] == [
        "list_files",
        "read_file",
        "write_file",
        "run_shell",
        "report_finding",
        "edit_file",
        "run_shell",
        "propose_fix",
    ]
    assert all(c["role"] == "agent_unit_tester" for c in calls)
    assert compare(before, take_fingerprint(project)) == []
