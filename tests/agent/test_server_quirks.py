"""What servers people run do that the loop must survive: tool calls cut off
at max_tokens or malformed (never sent back as they are), a full context named
as such, errors that cannot succeed not retried, and servers that cannot
stream tool calls (llama-cpp-python) asked again without streaming."""

from __future__ import annotations

import pytest

from superqode_ls.agent.provider import ProviderError
from superqode_ls.agent.tool_specs import openai_tools
from superqode_ls.qe.roles.agent import AgentE2eTester

from .test_loop import _ctx
from .test_provider import MESSAGES, _provider

READ = {"name": "read_file", "arguments": {"path": "a.py"}}
TOOLS_SPEC = openai_tools()


def _tool_args(request: dict) -> list[str]:
    return [tc["function"]["arguments"] for m in request["body"]["messages"]
            for tc in m.get("tool_calls") or []]


async def test_a_tool_call_cut_off_is_asked_again_with_a_larger_cap(make_repo, scripted, events,
                                                                    tmp_path):
    server = scripted([
        {"tool_calls": [{"name": "read_file", "arguments": '{"path": "a.'}],
         "finish_reason": "length"},
        {"tool_calls": [READ]},
        {"content": "nothing to report"},
    ])
    out = await AgentE2eTester().run(_ctx(make_repo, tmp_path, server, events))
    assert out.status == "ok"
    first, again, last = server.requests
    assert again["body"]["max_tokens"] == 2 * first["body"]["max_tokens"]
    # The broken call never reached the server's history.
    assert all('"a.' not in a or a == '{"path": "a.py"}' for r in server.requests
               for a in _tool_args(r))
    assert _tool_args(last) == ['{"path": "a.py"}']


async def test_a_call_cut_off_twice_is_answered_with_the_reason(make_repo, scripted, events,
                                                                 tmp_path):
    cut = {"tool_calls": [{"name": "read_file", "arguments": '{"pa'}], "finish_reason": "length"}
    server = scripted([cut, cut, {"tool_calls": [READ]}, {"content": "done"}])
    out = await AgentE2eTester().run(_ctx(make_repo, tmp_path, server, events))
    assert out.status == "ok", out.reason
    third = server.requests[2]
    assert _tool_args(third) == ["{}"]  # never the broken JSON
    answer = next(m for m in third["body"]["messages"] if m["role"] == "tool")
    assert answer["content"].startswith("error: your call was cut off at max_tokens (")
    assert third["body"]["max_tokens"] == 2 * server.requests[0]["body"]["max_tokens"]


async def test_a_malformed_call_goes_back_as_an_empty_object(make_repo, scripted, events,
                                                             tmp_path):
    server = scripted([{"tool_calls": [{"name": "read_file", "arguments": "{not json"}]},
                       {"tool_calls": [READ]}, {"content": "done"}])
    out = await AgentE2eTester().run(_ctx(make_repo, tmp_path, server, events))
    assert out.status == "ok"
    assert _tool_args(server.requests[1]) == ["{}"]
    tool_answer = next(m for m in server.requests[1]["body"]["messages"] if m["role"] == "tool")
    assert "json" in tool_answer["content"].lower()


async def test_an_empty_answer_cut_off_names_a_full_context(make_repo, scripted, events,
                                                            tmp_path):
    server = scripted([{"tool_calls": [READ]}, {"content": "", "finish_reason": "length"}])
    out = await AgentE2eTester().run(_ctx(make_repo, tmp_path, server, events))
    assert out.status == "error"
    assert "the model's context is full" in out.reason
    assert "tool calling" not in out.reason


async def test_a_full_context_error_is_named_and_not_retried(scripted):
    server = scripted([{"status": 400, "body": "the request exceeds the available context size, "
                        "try increasing it"}] * 3)
    with pytest.raises(ProviderError, match="the model's context is full") as e:
        await _provider(server).chat(MESSAGES)
    assert not e.value.retryable and len(server.requests) == 1


@pytest.mark.parametrize(("status", "tries"), [(501, 1), (500, 2), (503, 3)])
async def test_what_cannot_succeed_is_not_retried(scripted, status, tries):
    server = scripted([{"status": status, "body": "nope"}] * 5)
    with pytest.raises(ProviderError, match=f"HTTP {status}"):
        await _provider(server, max_retries=2).chat(MESSAGES)
    assert len(server.requests) == tries


async def test_a_server_that_cannot_stream_tool_calls_is_asked_without_streaming(scripted):
    # llama-cpp-python with its default: an error for a streamed tool request.
    server = scripted([{"status": 500, "body": "Automatic streaming tool choice is not supported"},
                       {"tool_calls": [READ]}, {"content": "done"}], sse=True)
    retries: list[str] = []
    provider = _provider(server, retries=retries, stream=True)
    reply = await provider.chat(MESSAGES, TOOLS_SPEC)
    assert [tc.name for tc in reply.tool_calls] == ["read_file"]
    assert server.requests[0]["body"]["stream"] is True
    assert "stream" not in server.requests[1]["body"]
    assert "asking without streaming from now on" in retries[0]
    assert retries[0].count("provider primary:") == 1, retries[0]  # said once
    await provider.chat(MESSAGES, TOOLS_SPEC)
    assert "stream" not in server.requests[2]["body"]  # remembered


async def test_an_empty_stream_is_asked_again_without_streaming(scripted):
    server = scripted([{"content": None}, {"tool_calls": [READ]}], sse=True)
    provider = _provider(server, stream=True)
    reply = await provider.chat(MESSAGES, TOOLS_SPEC)
    assert [tc.name for tc in reply.tool_calls] == ["read_file"]
    assert "stream" not in server.requests[1]["body"]


async def test_a_server_that_streams_tool_calls_keeps_streaming(scripted):
    server = scripted([{"tool_calls": [READ]}, {"content": "done"}], sse=True)
    provider = _provider(server, stream=True)
    await provider.chat(MESSAGES, TOOLS_SPEC)
    await provider.chat(MESSAGES, TOOLS_SPEC)
    assert [r["body"].get("stream") for r in server.requests] == [True, True]
