"""What issue 18 found on real local servers, pinned on the scripted server:
tool_choice and max_tokens on every request, streamed answers folded back
into tool calls, a cancel that closes the connection, ineffective runs that
never pass, findings on files the agent made up, /v1/models checked, and
--fail-on-error for CI."""

from __future__ import annotations

import asyncio
import json

from superqode_ls.agent.provider import Provider
from superqode_ls.cli import main as cli_main
from superqode_ls.config import ProviderConfig
from superqode_ls.qe.roles.agent import AgentUnitTester
from superqode_ls.workspace.fingerprint import compare, take_fingerprint
from tests.waiting import wait_for_async

from .conftest import agent_config, copy_sandbox, make_ctx, provider_entry

MESSAGES = [{"role": "user", "content": "hi"}]
TOOLS = [{"type": "function", "function": {"name": "list_files", "parameters": {"type": "object"}}}]


def _provider(server, **kw) -> Provider:
    return Provider(ProviderConfig.model_validate(provider_entry(server, **kw)))


async def test_every_request_carries_tool_choice_max_tokens_and_stream(scripted):
    server = scripted([{"content": "a"}, {"content": "b"}])
    p = _provider(server, max_tokens=77, tool_choice="required")
    await p.chat(MESSAGES, TOOLS)
    await p.chat(MESSAGES)  # no tools: no tool_choice (some servers reject it alone)
    with_tools, without = (r["body"] for r in server.requests)
    assert with_tools["tool_choice"] == "required" and with_tools["max_tokens"] == 77
    assert with_tools["stream"] is True and with_tools["stream_options"] == {"include_usage": True}
    assert "tool_choice" not in without and without["max_tokens"] == 77


async def test_streamed_tool_calls_are_reassembled(scripted):
    args = {"path": "src", "pattern": "def \\w+"}
    server = scripted(
        [
            {"tool_calls": [{"name": "search", "arguments": args},
                            {"name": "list_files", "arguments": {}}], "usage": [321, 12]},
            {"content": "all done here"},
        ],
        sse=True,
    )
    p = _provider(server)
    reply = await p.chat(MESSAGES, TOOLS)
    assert [(c.name, json.loads(c.arguments)) for c in reply.tool_calls] == [
        ("search", args), ("list_files", {})]
    assert reply.tool_calls[0].id == "call_1_0"
    assert (reply.prompt_tokens, reply.completion_tokens) == (321, 12)
    assert reply.usage_estimated is False and reply.finish_reason == "tool_calls"
    reply = await p.chat(MESSAGES, TOOLS)
    assert reply.content == "all done here" and reply.tool_calls == []


async def test_non_streaming_config_sends_no_stream(scripted):
    server = scripted([{"content": "x"}], sse=True)
    reply = await _provider(server, stream=False).chat(MESSAGES)
    assert reply.content == "x" and "stream" not in server.requests[0]["body"]


async def test_a_cancel_mid_answer_closes_the_connection(scripted):
    server = scripted([{"trickle": 0.05}], sse=True)
    task = asyncio.ensure_future(_provider(server, timeout=60).chat(MESSAGES))
    await wait_for_async(lambda: server.tokens_sent >= 3, 30, "tokens to flow")
    task.cancel()
    try:
        await task
    except asyncio.CancelledError:
        pass
    # The server notices the hang-up on its next write: it is not left
    # generating for nobody (the retry would queue behind it).
    assert await asyncio.to_thread(server.disconnected.wait, 10)


async def test_a_stream_that_never_ends_times_out_and_is_closed(scripted):
    server = scripted([{"trickle": 0.05}] * 2, sse=True)
    p = _provider(server, timeout=0.5, max_retries=0)
    try:
        await p.chat(MESSAGES)
    except Exception as e:  # noqa: BLE001
        assert str(e) == "provider primary: no answer within 0.5s"
    else:
        raise AssertionError("a never-ending stream must time out")
    assert await asyncio.to_thread(server.disconnected.wait, 10)


async def test_model_warning_from_v1_models(scripted):
    listed = scripted([], models=["served-model"])
    assert await _provider(listed, model="served-model").model_warning() is None
    warning = await _provider(listed, model="typo-model").model_warning()
    assert warning == (
        f"provider primary: model 'typo-model' is not listed by {listed.base_url}/models "
        "(it lists: served-model); check `model:` in the config"
    )
    unlisted = scripted([])  # no /v1/models: nothing to say
    assert await _provider(unlisted).model_warning() is None


async def test_role_reports_an_unlisted_model_in_its_reason(make_repo, scripted, events, tmp_path):
    server = scripted([{"tool_calls": [{"name": "read_file", "arguments": {"path": "a.py"}}]},
                       {"content": "nothing"}], models=["the-real-one"])
    project = make_repo({"a.py": "x = 1\n"})
    ctx = make_ctx(project, copy_sandbox(project, tmp_path / "sb"),
                   agent_config([provider_entry(server)]), events)
    out = await AgentUnitTester().run(ctx)
    assert out.status == "ok"
    assert "model 'scripted-model' is not listed" in out.reason
    assert any("is not listed" in e["message"] for e in events.of("log"))


async def test_findings_on_files_the_agent_made_up_are_dropped_and_counted(
    make_repo, scripted, events, tmp_path
):
    finding = {"start_line": 1, "severity": "high", "confidence": 0.9, "title": "t",
               "evidence": "e"}
    server = scripted(
        [
            {"tool_calls": [
                {"name": "read_file", "arguments": {"path": "a.py"}},
                {"name": "write_file", "arguments": {"path": "test.txt", "content": "junk\n"}},
                {"name": "write_file", "arguments": {"path": "test_kept.py", "content": "x=1\n"}},
            ]},
            {"tool_calls": [
                {"name": "report_finding", "arguments": {**finding, "file": "test.txt"}},
                {"name": "report_finding", "arguments": {**finding, "file": "a.py", "title": "r"}},
                {"name": "report_finding", "arguments": {**finding, "file": "test_kept.py",
                                                         "title": "k"}},
                {"name": "propose_fix", "arguments": {"description": "keep the test",
                                                      "files": ["test_kept.py"]}},
            ]},
            {"content": "done"},
        ]
    )
    project = make_repo({"a.py": "x = 1\n"})
    ctx = make_ctx(project, copy_sandbox(project, tmp_path / "sb"),
                   agent_config([provider_entry(server)]), events)
    out = await AgentUnitTester().run(ctx)
    assert out.status == "ok"
    assert sorted(f.file for f in out.findings) == ["a.py", "test_kept.py"]
    assert out.reason == (
        "dropped 1 finding(s) on files the agent created and did not keep (test.txt)")


async def test_a_session_with_only_an_ineffective_agent_never_passes(make_repo, scripted):
    from superqode_ls.qe.pipeline import QERequest, QESession

    server = scripted([{"content": "Looks fine to me."}])
    project = make_repo({"a.py": "x = 1\n"})
    (project / "superqode.yaml").write_text(
        f"providers:\n  - {{name: local, base_url: '{server.base_url}', model: m}}\n")
    report = await QESession(
        QERequest(project=project, mode="deep", roles=["agent_unit_tester"], trusted=True)
    ).run()
    [run] = report.roles
    assert run.status == "ineffective" and "without calling a tool" in run.reason
    assert report.findings == [] and report.verdict == "conditional"
    assert server.requests[0]["body"]["tool_choice"] == "auto"


def _run_cli(project, *extra) -> int:
    return cli_main(["run", str(project), "--mode", "deep", "-r", "agent_unit_tester", *extra])


def test_fail_on_error_makes_a_dead_model_server_fail_ci(make_repo, closed_port, capsys):
    project = make_repo({"a.py": "x = 1\n"})
    (project / "superqode.yaml").write_text(
        f"providers:\n  - {{name: local, base_url: 'http://127.0.0.1:{closed_port}/v1',"
        " model: m, max_retries: 0}\n")
    before = take_fingerprint(project)
    assert _run_cli(project) == 0  # without the switch: "conditional", exit 0
    out = capsys.readouterr().out
    assert "verdict: conditional" in out
    [line] = [x for x in out.splitlines() if x.startswith("role agent_unit_tester")]
    assert line.startswith("role agent_unit_tester: error (provider local: cannot reach")
    assert _run_cli(project, "--fail-on-error") == 3
    (project / "superqode.yaml").write_text(
        (project / "superqode.yaml").read_text() + "qe:\n  fail_on_error: true\n")
    assert _run_cli(project) == 3
    # Only the report folder .superqode/ was added; the project's files are as they were.
    diff = [d for d in compare(before, take_fingerprint(project)) if ".superqode" not in d
            and "superqode.yaml" not in d]
    assert diff == []


async def _lines(*lines: str):
    for line in lines:
        yield line


async def test_stream_folding_edge_cases():
    import pytest

    from superqode_ls.agent.stream import StreamError, fold_sse

    # An error mid-answer (llama-server's context overflow, say) is one line.
    with pytest.raises(StreamError, match="the server reported an error mid-answer: ctx full"):
        await fold_sse(_lines('data: {"choices": []}', 'data: {"error": {"message": "ctx full"}}'))
    with pytest.raises(StreamError, match="the stream ended without an answer"):
        await fold_sse(_lines(": ping", "", "data: [DONE]"))
    with pytest.raises(StreamError, match="not JSON"):
        await fold_sse(_lines("data: {oops"))
    # A server that sends whole calls without "index", and arguments as an object.
    data = await fold_sse(_lines(
        'data: {"choices": [{"delta": {"tool_calls": [{"id": "a", "function": '
        '{"name": "search", "arguments": {"pattern": "x"}}}]}}]}',
        'data: {"choices": [{"delta": {}, "finish_reason": "tool_calls"}]}',
    ))
    [call] = data["choices"][0]["message"]["tool_calls"]
    assert call["function"] == {"name": "search", "arguments": '{"pattern": "x"}'}
    assert "usage" not in data  # the provider then estimates


def test_a_requested_role_that_cannot_run_is_no_pass(make_repo, capsys):
    # No provider configured: the role asked for by name is skipped with the
    # reason, the verdict says someone should look, and CI can make it exit 3.
    project = make_repo({"a.py": "x = 1\n"})
    assert _run_cli(project) == 0
    out = capsys.readouterr().out
    assert "verdict: conditional" in out
    [line] = [x for x in out.splitlines() if x.startswith("role agent_unit_tester")]
    assert line.startswith("role agent_unit_tester: skipped (")
    assert _run_cli(project, "--fail-on-error") == 3
    # Untrusted: skipped for that reason, and the same exit.
    assert _run_cli(project, "--fail-on-error", "--untrusted") == 3


async def test_a_role_left_out_by_the_mode_still_passes(make_repo):
    from superqode_ls.qe.pipeline import QERequest, QESession

    project = make_repo({"a.py": "x = 1\n"})
    report = await QESession(QERequest(project=project, mode="quick", trusted=True,
                                       roles=None)).run()
    assert all(not r.requested for r in report.roles)
    assert report.verdict in ("pass", "conditional")
    assert not any(r.status == "skipped" and r.requested for r in report.roles)


def test_each_agent_call_shows_as_it_happens_and_tokens_in_the_summary(make_repo, scripted,
                                                                       capsys):
    server = scripted([{"tool_calls": [{"name": "read_file", "arguments": {"path": "a.py"}}],
                        "usage": [1200, 30]},
                       {"content": "nothing to report", "usage": [1300, 5]}])
    captured, both = _cli_on_a_read(make_repo, server, capsys)
    assert "[agent_unit_tester] turn 1: read_file a.py" in both
    assert "model: 2,535 tokens (2,500 prompt, 35 completion) in 2 request(s)" in captured.out


def test_why_an_agent_waits_shows_as_it_happens(make_repo, scripted, capsys):
    # A retry (here HTTP 503) is a warning line of the role's, not silence.
    server = scripted([{"status": 503, "body": "loading model"},
                       {"tool_calls": [{"name": "read_file", "arguments": {"path": "a.py"}}]},
                       {"content": "nothing to report"}])
    _, both = _cli_on_a_read(make_repo, server, capsys)
    assert "[agent_unit_tester] warning: provider local: HTTP 503: loading model (retry 1/" in both


def _cli_on_a_read(make_repo, server, capsys):
    """``superqe run`` of agent_unit_tester on a one-file project against
    ``server``: (what it printed, stdout and stderr together)."""
    project = make_repo({"a.py": "x = 1\n"})
    (project / "superqode.yaml").write_text(
        f"providers:\n  - {{name: local, base_url: '{server.base_url}', model: m,"
        " stream: false, retry_backoff_s: 0.01}\n")
    assert _run_cli(project) == 0
    captured = capsys.readouterr()
    return captured, captured.out + captured.err
