"""ACP agents (Agent Client Protocol) as the worker of an agent role: a small
agent on the official SDK (tests/agent/acp_agent.py) asking a real HTTP model
server, run end to end in the session's sandbox — reads served from the
sandbox, a patch that comes back, writes outside refused (through the client
and, under the kernel barrier, by the agent itself), cancel, an agent that
never reads, a missing binary; and a published agent (Zed's claude-code-acp
from npm, installed by scripts/setup.sh test) through initialize and session
creation, failing cleanly for want of credentials."""

from __future__ import annotations

import asyncio
import json
import shutil
import sys
from pathlib import Path

import pytest

from superqode_ls.cli import main as cli_main
from superqode_ls.qe.pipeline import QERequest, QESession
from superqode_ls.workspace import landlock
from superqode_ls.workspace.fingerprint import compare, take_fingerprint

CALC = "def clamp(x, lo, hi):\n    return max(lo, min(x, hi))\n"
AGENT = Path(__file__).with_name("acp_agent.py")
ROOT = Path(__file__).resolve().parents[2]
CLAUDE = ROOT / "build/acp-agents/node_modules/.bin/claude-code-acp"


def _configure(project: Path, command: list[str], writable: list[str] = (), **env: str) -> None:
    (project / "superqode.yaml").write_text(
        "agent: {worker: tester, max_seconds: 120}\n"
        f"agents:\n  tester:\n    command: {json.dumps(command)}\n"
        f"    env: {json.dumps(env)}\n    writable: {json.dumps(list(writable))}\n")


def _session(project: Path) -> QESession:
    return QESession(QERequest(project=project, mode="deep", roles=["agent_unit_tester"],
                               trusted=True))


@pytest.fixture
def llm(scripted):
    return scripted([{"content": "lo > hi is not checked"}] * 3)


async def test_an_acp_agent_runs_as_a_role_in_the_sandbox(make_repo, llm, tmp_path):
    project = make_repo({"calc.py": CALC})
    outside = tmp_path / "outside.txt"
    _configure(project, [sys.executable, str(AGENT)], ACP_TEST_LLM=llm.base_url,
               ACP_OUTSIDE=str(outside))
    before = take_fingerprint(project)
    report = await _session(project).run()
    [run] = report.roles
    assert run.status == "ok", run.reason
    [finding] = report.findings
    assert (finding.file, finding.range.start_line) == ("calc.py", 2)
    assert "the model said: lo > hi is not checked" in finding.evidence[0].message
    [patch] = report.patches
    assert "raise ValueError('lo > hi')" in patch.diff and patch.files == ["calc.py"]
    # Refused through the client: one line in the role's reason.
    assert "refused 1 request(s) outside the sandbox" in (run.reason or "")
    assert not outside.exists()
    if landlock.abi():
        assert not Path(str(outside) + ".direct").exists()  # the kernel stopped the agent itself
    assert report.verification.verified
    assert [d for d in compare(before, take_fingerprint(project))
            if ".superqode" not in d] == []
    assert (project / "calc.py").read_text() == CALC
    assert llm.requests and "def clamp" in llm.requests[0]["body"]["messages"][0]["content"]


async def test_an_acp_agent_that_never_reads_is_ineffective(make_repo, llm):
    project = make_repo({"calc.py": CALC})
    _configure(project, [sys.executable, str(AGENT)], ACP_TEST_LLM=llm.base_url,
               ACP_OUTSIDE="/nonexistent", ACP_TEST_MODE="lazy")
    report = await _session(project).run()
    [run] = report.roles
    assert run.status == "ineffective"
    assert run.reason == "the ACP agent tester never read the code it was to judge"
    assert report.verdict != "pass"


async def test_a_cancelled_session_stops_the_acp_agent(make_repo, llm):
    project = make_repo({"calc.py": CALC})
    _configure(project, [sys.executable, str(AGENT)], ACP_TEST_LLM=llm.base_url,
               ACP_OUTSIDE="/nonexistent", ACP_TEST_MODE="hang")
    session = _session(project)
    reads = asyncio.Event()
    session.bus.subscribe(lambda e: reads.set() if e.type == "tool_call" else None)
    task = asyncio.create_task(session.run())
    await asyncio.wait_for(reads.wait(), 60)
    session.cancel()
    report = await asyncio.wait_for(task, 60)
    assert report.cancelled
    [run] = report.roles
    assert run.status == "cancelled"
    assert report.verification.verified


def test_a_missing_acp_agent_is_one_line(make_repo, capsys):
    project = make_repo({"calc.py": CALC})
    _configure(project, ["no-such-acp-agent"])
    rc = cli_main(["run", str(project), "--mode", "deep", "-r", "agent_unit_tester",
                   "--fail-on-error"])
    out = capsys.readouterr().out
    assert rc == 3
    [line] = [x for x in out.splitlines() if x.startswith("role agent_unit_tester")]
    assert "command 'no-such-acp-agent' not found" in line


@pytest.mark.skipif(not CLAUDE.exists(), reason="claude-code-acp is installed by "
                    "scripts/setup.sh test (npm); not here")
async def test_a_published_acp_agent_fails_cleanly_without_credentials(make_repo, tmp_path,
                                                                      monkeypatch):
    monkeypatch.delenv("ANTHROPIC_API_KEY", raising=False)
    node = shutil.which("node")
    assert node, "node is needed to run claude-code-acp"
    project = make_repo({"calc.py": CALC})
    state = Path.home() / ".claude"  # the test's HOME (tests/conftest.py)
    state.mkdir(exist_ok=True)
    _configure(project, [str(CLAUDE)], writable=["~/.claude"],
               PATH=str(Path(node).parent) + ":/usr/bin:/bin")
    report = await _session(project).run()
    [run] = report.roles
    assert run.status == "error"
    assert run.reason.startswith("ACP agent tester: ")
    assert "logged in" in run.reason and "\n" not in run.reason
    v = report.verification
    if v.barrier_abi is None:
        # Guard only: nothing in the kernel stops the agent writing its state
        # file beside the allowed ~/.claude; the verification names it.
        assert not v.verified and v.differences
        assert all(d.startswith("created: ~/.claude.json") for d in v.differences), v.differences
    else:
        assert v.verified, v.differences
