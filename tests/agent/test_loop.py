"""The agent loop: malformed and unknown tool calls go back to the model as
errors; turns, tokens, time and cancel stop it."""

from __future__ import annotations

import asyncio

from superqode_ls.qe.roles.agent import AgentE2eTester, AgentPerformanceTester
from tests.waiting import descendants_running, wait_for_async

from .conftest import agent_config, copy_sandbox, make_ctx, provider_entry
from .scripted_server import tool_messages


def _ctx(make_repo, tmp_path, server, events, **agent):
    project = make_repo({"a.py": "x = 1\n"})
    cfg = agent_config([provider_entry(server)], **agent)
    return make_ctx(project, copy_sandbox(project, tmp_path / "sb"), cfg, events)


async def test_bad_tool_calls_are_answered_with_errors(make_repo, scripted, events, tmp_path):
    server = scripted(
        [
            {
                "tool_calls": [
                    {"name": "read_file", "arguments": "{not json"},
                    {"name": "delete_everything", "arguments": {}},
                    {"name": "read_file", "arguments": {}},
                    {"name": "read_file", "arguments": {"path": "a.py", "mode": "rb"}},
                    {"name": "read_file", "arguments": "[1, 2]"},
                    {
                        "name": "report_finding",
                        "arguments": {
                            "file": "a.py",
                            "start_line": 1,
                            "severity": "urgent",
                            "confidence": 2,
                            "title": "t",
                            "evidence": "e",
                        },
                    },
                ]
            },
            {"tool_calls": [{"name": "read_file", "arguments": {"path": "a.py"}}]},
            {"content": "done"},
        ]
    )
    out = await AgentE2eTester().run(_ctx(make_repo, tmp_path, server, events))
    assert out.status == "ok"
    results = tool_messages(server.requests[1])
    assert results[0].startswith("error: arguments for read_file are not valid JSON")
    assert results[1].startswith("error: unknown tool 'delete_everything' (available: read_file,")
    assert results[2] == "error: invalid arguments for read_file: 'path' is a required property"
    assert "Additional properties are not allowed ('mode' was unexpected)" in results[3]
    assert results[4] == "error: arguments for read_file must be a JSON object"
    assert results[5].startswith("error: invalid arguments for report_finding: severity:")
    # Each answer is tied to its call, and the loop went on.
    msgs = server.requests[1]["body"]["messages"]
    call_ids = [tc["id"] for tc in msgs[2]["tool_calls"]]
    assert [m["tool_call_id"] for m in msgs[3:]] == call_ids
    assert tool_messages(server.requests[2])[-1] == "    1  x = 1"
    assert [c["outcome"] for c in events.of("tool_call")] == ["error"] * 6 + ["ok"]
    assert out.findings == []


async def test_turn_budget(make_repo, scripted, events, tmp_path):
    server = scripted([{"tool_calls": [{"name": "read_file", "arguments": {"path": "a.py"}}]},
                       {"tool_calls": [{"name": "list_files", "arguments": {}}]}] * 3)
    ctx = _ctx(make_repo, tmp_path, server, events, max_turns=2)
    out = await AgentE2eTester().run(ctx)
    # Capped before the model said it was done: what it judged is not the whole.
    assert out.status == "incomplete"
    assert out.reason == "stopped after 2 turns (agent.max_turns) before it finished"
    assert len(server.requests) == 2


async def test_token_budget(make_repo, scripted, events, tmp_path):
    server = scripted(
        [{"tool_calls": [{"name": "read_file", "arguments": {"path": "a.py"}}],
          "usage": [1000, 0]}] * 5
    )
    ctx = _ctx(make_repo, tmp_path, server, events, max_tokens=1500)
    out = await AgentE2eTester().run(ctx)
    assert out.status == "incomplete"
    assert out.reason == "stopped at the token budget (agent.max_tokens) before it finished"
    assert len(server.requests) == 2


async def test_time_budget(make_repo, scripted, events, tmp_path):
    # agent.max_seconds before the first answer: a server too slow for the
    # model judged nothing (ineffective, and why), not a plain "timeout".
    server = scripted([{"delay": 10, "content": "late"}])
    ctx = _ctx(make_repo, tmp_path, server, events, max_seconds=0.5)
    out = await AgentPerformanceTester().run(ctx)
    assert out.status == "ineffective"
    assert out.reason.startswith("the model made no tool call within the time budget "
                                 "(agent.max_seconds) (1 turn(s) asked, 0 answered)")
    assert len(server.requests) == 1


async def test_the_time_cap_after_reading_is_incomplete(make_repo, scripted, events, tmp_path):
    server = scripted([{"tool_calls": [{"name": "read_file", "arguments": {"path": "a.py"}}]},
                       {"delay": 30, "content": "late"}])
    ctx = _ctx(make_repo, tmp_path, server, events, max_seconds=5)
    out = await AgentPerformanceTester().run(ctx)
    assert out.status == "incomplete"
    assert out.reason == "stopped at the time budget (agent.max_seconds) before it finished"
    assert len(server.requests) == 2


async def test_cancel_during_a_provider_call(make_repo, scripted, events, tmp_path):
    server = scripted(
        [
            {"tool_calls": [{"name": "list_files", "arguments": {}}]},
            {"delay": 10, "content": "late"},
        ]
    )
    ctx = _ctx(make_repo, tmp_path, server, events)
    stop = asyncio.Event()
    task = asyncio.create_task(AgentPerformanceTester().run_agent(ctx, cancel=stop))
    await wait_for_async(lambda: len(server.requests) >= 2, 30, "the second provider call")
    stop.set()
    result = await asyncio.wait_for(task, 5)
    assert result.stop_reason == "cancelled" and result.turns == 2


async def test_task_cancellation_propagates_and_kills_the_shell(
    make_repo, scripted, events, tmp_path
):
    server = scripted(
        [
            {"tool_calls": [{"name": "run_shell", "arguments": {"command": "sleep 30"}}]},
            {"content": "never"},
        ]
    )
    ctx = _ctx(make_repo, tmp_path, server, events, permissions={"run_shell": "allow"})
    task = asyncio.create_task(AgentPerformanceTester().run(ctx))
    await wait_for_async(lambda: descendants_running("sleep 30"), 30, "the shell to run")
    task.cancel()
    try:
        await task
    except asyncio.CancelledError:
        pass
    else:  # pragma: no cover
        raise AssertionError("cancel did not propagate")
    # conftest's no_leftover_processes fails the test if `sleep 30` survived.


async def test_role_prompts_differ_by_focus(make_repo, scripted, events, tmp_path):
    from superqode_ls.qe.roles.agent import AGENT_ROLES

    prompts = {}
    for name, cls in AGENT_ROLES.items():
        server = scripted([{"content": "nothing"}])
        project = make_repo({"a.py": "x = 1\n"}, name=name)
        cfg = agent_config([provider_entry(server)])
        ctx = make_ctx(project, copy_sandbox(project, tmp_path / f"sb-{name}"), cfg, events)
        out = await cls().run(ctx)
        # A prose answer without a tool call looked at nothing: not "ok".
        assert out.status == "ineffective"
        assert out.reason.startswith("the model answered without calling a tool")
        body = server.requests[0]["body"]
        assert body["tool_choice"] == "auto" and body["max_tokens"] == 2048
        prompts[name] = body["messages"][0]["content"]
        assert [t["function"]["name"] for t in body["tools"]] == [
            "read_file",
            "list_files",
            "search",
            "write_file",
            "edit_file",
            "run_shell",
            "report_finding",
            "propose_fix",
        ]
    assert len(set(prompts.values())) == 5
    assert "Injection" in prompts["agent_security_tester"]
    assert "quadratic" in prompts["agent_performance_tester"]


async def test_a_model_that_never_reads_the_code_is_ineffective(make_repo, scripted, events,
                                                                 tmp_path):
    # Listing folders and answering "nothing found" judged nothing.
    server = scripted([{"tool_calls": [{"name": "list_files", "arguments": {}}]},
                       {"tool_calls": [{"name": "list_files", "arguments": {"path": "."}}]},
                       {"content": "no problems found"}])
    out = await AgentE2eTester().run(_ctx(make_repo, tmp_path, server, events))
    assert out.status == "ineffective"
    assert out.reason.startswith("the model never read the code it was to judge")
    assert "list_files x2" in out.reason


async def test_a_repeated_call_stops_the_run_early_as_ineffective(make_repo, scripted, events,
                                                                  tmp_path):
    # The dvpwa run: list_files {} 141 times of 150. The same call three times
    # in a row (arguments in any order or spacing) stops it at once.
    server = scripted([{"tool_calls": [{"name": "read_file", "arguments": {"path": "a.py"}}]},
                       {"tool_calls": [{"name": "list_files", "arguments": {}}]},
                       {"tool_calls": [{"name": "list_files", "arguments": "{ }"}]},
                       {"tool_calls": [{"name": "list_files", "arguments": {}}]}] + [
                       {"tool_calls": [{"name": "list_files", "arguments": {}}]}] * 20)
    out = await AgentE2eTester().run(_ctx(make_repo, tmp_path, server, events, max_turns=30))
    assert out.status == "ineffective"
    assert "repeated the same call (list_files {})" in out.reason
    assert len(server.requests) == 4


async def test_a_run_that_read_the_code_and_ended_by_itself_is_ok(make_repo, scripted, events,
                                                                  tmp_path):
    server = scripted([{"tool_calls": [{"name": "read_file", "arguments": {"path": "a.py"}}]},
                       {"content": "nothing to report"}])
    out = await AgentE2eTester().run(_ctx(make_repo, tmp_path, server, events))
    assert out.status == "ok" and out.reason is None


async def test_a_repeated_broken_call_is_named_on_one_line(make_repo, scripted, events,
                                                            tmp_path):
    # SmolLM2 on llama-server's Functionary template: the same unfinished
    # report_finding, its raw arguments spread over lines, five times.
    broken = '{\n  "severity": "critical",\n  "title": "x'
    server = scripted([{"tool_calls": [{"name": "report_finding", "arguments": broken}]}] * 5)
    out = await AgentE2eTester().run(_ctx(make_repo, tmp_path, server, events))
    assert out.status == "ineffective" and "\n" not in out.reason
    assert 'repeated the same call (report_finding { "severity": "critical",' in out.reason
