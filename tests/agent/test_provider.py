"""The OpenAI-compatible provider against a real scripted server: retries with
backoff, fallback, timeouts, refused connections, malformed answers."""

from __future__ import annotations

import pytest

from superqode_ls.agent.provider import (
    Provider,
    ProviderChain,
    ProviderError,
    build_chain,
    completions_url,
)
from superqode_ls.agent.redact import Redactor
from superqode_ls.config import ProviderConfig
from superqode_ls.qe.roles.agent import AgentApiTester

from .conftest import agent_config, copy_sandbox, make_ctx, provider_entry

MESSAGES = [{"role": "user", "content": "hi"}]


def _provider(server_or_url, sleeps=None, retries=None, **kw):
    cfg = ProviderConfig.model_validate(provider_entry(server_or_url, **kw))

    async def sleep(d):
        if sleeps is not None:
            sleeps.append(d)

    return Provider(cfg, sleep=sleep, on_retry=(retries.append if retries is not None else None))


async def test_retries_5xx_and_429_with_exponential_backoff(scripted):
    server = scripted(
        [
            {"status": 500, "body": "overloaded"},
            {"status": 429, "body": "slow down"},
            {"content": "hello"},
        ]
    )
    sleeps, retries = [], []
    reply = await _provider(server, sleeps, retries, retry_backoff_s=0.5).chat(MESSAGES)
    assert reply.content == "hello" and reply.tool_calls == []
    assert (reply.prompt_tokens, reply.completion_tokens) == (100, 20)
    assert len(server.requests) == 3
    assert sleeps == [0.5, 1.0]
    assert "HTTP 500: overloaded (retry 1/2" in retries[0]
    assert "HTTP 429: slow down (retry 2/2" in retries[1]


async def test_gives_up_after_max_retries(scripted):
    server = scripted([{"status": 503, "body": "down"}] * 5)
    with pytest.raises(ProviderError) as e:
        await _provider(server, max_retries=2).chat(MESSAGES)
    assert str(e.value) == "provider primary: HTTP 503: down"
    assert len(server.requests) == 3


async def test_client_errors_are_not_retried(scripted):
    server = scripted([{"status": 400, "body": "bad model"}, {"content": "never"}])
    with pytest.raises(ProviderError, match="HTTP 400: bad model"):
        await _provider(server).chat(MESSAGES)
    assert len(server.requests) == 1


async def test_timeout_is_retried_then_reported(scripted):
    server = scripted([{"delay": 5, "content": "late"}] * 2)
    with pytest.raises(ProviderError, match="no answer within 0.2s") as e:
        await _provider(server, timeout=0.2, max_retries=1).chat(MESSAGES)
    assert e.value.retryable
    assert len(server.requests) == 2


async def test_refused_connection_is_retried(closed_port):
    retries = []
    with pytest.raises(ProviderError, match="cannot reach http://127.0.0.1"):
        await _provider(f"http://127.0.0.1:{closed_port}/v1", retries=retries).chat(MESSAGES)
    assert len(retries) == 2


@pytest.mark.parametrize(
    ("raw", "message"),
    [
        ("this is not json", "answer is not JSON"),
        ('{"choices": []}', "answer has no choices[0].message"),
        ('{"choices": [{"message": "text"}]}', "choices[0].message is not an object"),
    ],
)
async def test_malformed_answers(scripted, raw, message):
    server = scripted([{"raw": raw}])
    with pytest.raises(ProviderError, match=message.replace("[", r"\[").replace("]", r"\]")):
        await _provider(server).chat(MESSAGES)


async def test_tool_calls_are_parsed_and_sent_in_openai_shape(scripted):
    server = scripted(
        [
            {"tool_calls": [{"name": "read_file", "arguments": {"path": "a.py"}}]},
        ]
    )
    tools = [{"type": "function", "function": {"name": "read_file", "parameters": {}}}]
    reply = await _provider(server).chat(MESSAGES, tools)
    [tc] = reply.tool_calls
    assert (tc.name, tc.arguments) == ("read_file", '{"path": "a.py"}')
    body = server.requests[0]["body"]
    assert body["model"] == "scripted-model" and body["tools"] == tools
    assert body["messages"] == MESSAGES
    assert reply.assistant_message()["tool_calls"][0]["function"]["name"] == "read_file"


async def test_api_key_from_the_environment_only(scripted, monkeypatch):
    server = scripted([{"content": "ok"}])
    p = _provider(server, api_key_env="SQ_PROVIDER_KEY")
    with pytest.raises(ProviderError, match="environment variable SQ_PROVIDER_KEY is not set"):
        await p.chat(MESSAGES)
    assert server.requests == []  # nothing sent without the key
    monkeypatch.setenv("SQ_PROVIDER_KEY", "sk-local-abcdef123456")
    await p.chat(MESSAGES)
    assert server.requests[0]["headers"]["authorization"] == "Bearer sk-local-abcdef123456"


async def test_chain_falls_back_and_stays_on_the_fallback(scripted):
    primary = scripted([{"status": 401, "body": "bad key"}])
    backup = scripted([{"content": "one"}, {"content": "two"}])
    notes = []
    redactor = Redactor()
    chain = build_chain(
        [
            ProviderConfig.model_validate(provider_entry(primary)),
            ProviderConfig.model_validate(provider_entry(backup, name="backup")),
        ],
        "primary",
        "backup",
        redactor=redactor,
        on_fallback=notes.append,
    )
    assert isinstance(chain, ProviderChain)
    reply, used = await chain.chat(MESSAGES)
    assert (reply.content, used.name) == ("one", "backup")
    reply, used = await chain.chat(MESSAGES)
    assert (reply.content, used.name) == ("two", "backup")
    assert len(primary.requests) == 1  # not asked again after failing for good
    assert notes == ["provider primary: HTTP 401: bad key; falling back to backup"]


async def test_chain_reports_both_failures(scripted, closed_port):
    primary = scripted([{"status": 500, "body": "a"}] * 3)
    chain = build_chain(
        [
            ProviderConfig.model_validate(provider_entry(primary)),
            ProviderConfig.model_validate(
                provider_entry(f"http://127.0.0.1:{closed_port}", name="b", max_retries=0)
            ),
        ],
        None,
        "b",
        redactor=Redactor(),
    )
    with pytest.raises(ProviderError) as e:
        await chain.chat(MESSAGES)
    assert str(e.value).startswith("provider primary: HTTP 500: a; provider b: cannot reach")


def test_unknown_provider_names():
    cfg = ProviderConfig(name="a", base_url="http://x/v1", model="m")
    with pytest.raises(ProviderError, match="'nope' is not in providers"):
        build_chain([cfg], "nope", None, redactor=Redactor())
    with pytest.raises(ProviderError, match="no provider configured"):
        build_chain([], None, None, redactor=Redactor())


@pytest.mark.parametrize(
    ("base", "url"),
    [
        ("http://localhost:11434", "http://localhost:11434/v1/chat/completions"),
        ("http://localhost:11434/v1/", "http://localhost:11434/v1/chat/completions"),
        ("https://api.example.com/openai/v1", "https://api.example.com/openai/v1/chat/completions"),
    ],
)
def test_completions_url(base, url):
    assert completions_url(base) == url


async def test_role_falls_back_and_accounts_usage_per_provider(
    make_repo, scripted, events, tmp_path
):
    primary = scripted([{"status": 502, "body": "bad gateway"}] * 3)
    backup = scripted(
        [
            {"tool_calls": [{"name": "read_file", "arguments": {"path": "a.py"}}],
             "usage": [300, 40]},
            {"content": "nothing to report", "usage": [400, 10]},
        ]
    )
    cfg = agent_config(
        [provider_entry(primary), provider_entry(backup, name="backup", output_cost_per_1k=2.0)],
        provider="primary",
        fallback_provider="backup",
    )
    project = make_repo({"a.py": "x = 1\n"})
    ctx = make_ctx(project, copy_sandbox(project, tmp_path / "sb"), cfg, events)
    out = await AgentApiTester().run(ctx)
    assert out.status == "ok" and out.findings == []
    [usage] = events.of("agent.usage")
    assert usage["usage"] == {
        "prompt_tokens": 700,
        "completion_tokens": 50,
        "cost_usd": 0.1,
        "requests": 2,
    }
    assert list(usage["by_provider"]) == ["backup"]
    logs = [e["message"] for e in events.of("log")]
    assert sum("retry" in m for m in logs) == 2
    assert any("falling back to backup" in m for m in logs)
    assert len(primary.requests) == 3


async def test_role_reports_provider_failure(make_repo, scripted, events, tmp_path):
    server = scripted([{"raw": "<html>proxy error</html>"}])
    cfg = agent_config([provider_entry(server)])
    project = make_repo({"a.py": "x = 1\n"})
    ctx = make_ctx(project, copy_sandbox(project, tmp_path / "sb"), cfg, events)
    out = await AgentApiTester().run(ctx)
    assert out.status == "error"
    assert out.reason == "provider primary: answer is not JSON"
    assert out.findings == [] and out.patches == []


async def test_retry_after_is_honoured_within_the_cap(scripted):
    server = scripted(
        [
            {"status": 429, "body": "later", "headers": {"Retry-After": "7"}},
            {"status": 429, "body": "much later", "headers": {"Retry-After": "3600"}},
            {
                "status": 503,
                "body": "x",
                "headers": {"Retry-After": "Wed, 21 Oct 2026 07:28:00 GMT"},
            },
            {"content": "ok"},
        ]
    )
    sleeps = []
    p = _provider(server, sleeps, max_retries=3, retry_backoff_s=0.5)
    assert (await p.chat(MESSAGES)).content == "ok"
    assert sleeps == [7.0, 30.0, 2.0]
