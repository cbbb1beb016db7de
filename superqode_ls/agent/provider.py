"""OpenAI-compatible chat completions over httpx, with tool calling.

One ``Provider`` per configured endpoint (Ollama, vLLM, LM Studio, a hosted
API). Every request carries ``max_tokens`` and, with tools, ``tool_choice``;
answers are streamed (``stream.py``) so that giving up on one closes its
connection. Transient failures (429, 502-504, timeouts, refused connections) are
retried with exponential backoff; a 500 once (the same request answered 500 twice
keeps failing: llama.cpp's servers answer 500 to a history they cannot parse),
501/505 and 4xx never. A server that cannot stream tool calls (llama-cpp-python:
"Automatic streaming tool choice is not supported") is asked again without
streaming, and from then on. A full context is named as such. A ``ProviderChain``
falls back to a second provider when the first gives up. API keys are read from the environment at request
time and every error message is redacted before it leaves this module.
"""

from __future__ import annotations

import asyncio
import json
import os
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from typing import Any
from urllib.parse import urlsplit

import httpx

from ..config import Config, ProviderConfig
from ..errors import EXIT_FAILED, SuperQodeError
from ..models import Usage
from .redact import Redactor
from .stream import StreamError, fold_sse

MAX_BACKOFF_S = 30.0
_BODY_SNIPPET = 200


class ProviderError(SuperQodeError):
    """A provider call that failed; the message is one redacted line (exit 3:
    the run could not do what was asked)."""

    exit_code = EXIT_FAILED

    def __init__(self, message: str, *, retryable: bool = False, status: int | None = None):
        super().__init__(message)
        self.retryable = retryable
        self.status = status
        self.retry_after: float | None = None
        self.from_stream = False  # the stream itself broke or carried an error


@dataclass
class ToolCall:
    id: str
    name: str
    arguments: str  # raw JSON text as the model sent it; parsed by the loop


@dataclass
class ChatReply:
    content: str | None
    tool_calls: list[ToolCall]
    finish_reason: str | None
    prompt_tokens: int
    completion_tokens: int
    provider: str
    model: str
    usage_estimated: bool = False
    raw_message: dict[str, Any] = field(default_factory=dict)

    def assistant_message(self) -> dict[str, Any]:
        """The message to append to the conversation (OpenAI shape). Arguments
        that are not a JSON object go back as ``{}``: servers parse the history
        they are sent, and one malformed call there makes every later request
        fail (the tool's answer tells the model what was wrong)."""
        msg: dict[str, Any] = {"role": "assistant", "content": self.content or ""}
        if self.tool_calls:
            msg["tool_calls"] = [
                {
                    "id": tc.id,
                    "type": "function",
                    "function": {"name": tc.name,
                                 "arguments": tc.arguments if json_object(tc.arguments) else "{}"},
                }
                for tc in self.tool_calls
            ]
        return msg

    @property
    def cut_off(self) -> bool:
        """The answer stopped at the token cap (``finish_reason: length``)."""
        return self.finish_reason == "length"

    @property
    def empty(self) -> bool:
        return not self.content and not self.tool_calls


def json_object(text: str) -> bool:
    try:
        return isinstance(json.loads(text), dict)
    except ValueError:
        return False


# Words servers use when a request does not fit the model's context.
_CONTEXT_FULL = ("context size", "context length", "context window", "exceeds the available",
                 "too many tokens", "maximum context")


def completions_url(base_url: str) -> str:
    """``base_url`` as the OpenAI SDK takes it (``.../v1``); a bare host gets ``/v1``."""
    base = base_url.rstrip("/")
    if urlsplit(base).path in ("", "/"):
        base += "/v1"
    return base + "/chat/completions"


class Provider:
    def __init__(
        self,
        cfg: ProviderConfig,
        *,
        redactor: Redactor | None = None,
        client: httpx.AsyncClient | None = None,
        sleep: Callable[[float], Awaitable[None]] = asyncio.sleep,
        on_retry: Callable[[str], None] | None = None,
    ):
        self.cfg = cfg
        self.redactor = redactor or Redactor()
        self._client = client
        self._sleep = sleep
        self._on_retry = on_retry
        # Learnt from the server: None until known (stream as configured).
        self._stream_tools: bool | None = None
        self.url = completions_url(cfg.base_url)

    @property
    def name(self) -> str:
        return self.cfg.name

    def _api_key(self) -> str | None:
        env = self.cfg.api_key_env
        if not env:
            return None
        key = os.environ.get(env)
        if not key:
            raise ProviderError(f"provider {self.cfg.name}: environment variable {env} is not set")
        self.redactor.add(key)
        return key

    def missing_key(self) -> str | None:
        """Why this provider cannot be used now (its key is not set), or None."""
        env = self.cfg.api_key_env
        if env and not os.environ.get(env):
            return f"provider {self.cfg.name}: environment variable {env} is not set"
        return None

    async def chat(
        self, messages: list[dict[str, Any]], tools: list[dict[str, Any]] | None = None,
        *, max_tokens: int | None = None,
    ) -> ChatReply:
        key = self._api_key()
        headers = {"Content-Type": "application/json"}
        if key:
            headers["Authorization"] = f"Bearer {key}"
        body: dict[str, Any] = {
            "model": self.cfg.model,
            "messages": messages,
            "temperature": 0,
            "max_tokens": max_tokens or self.cfg.max_tokens,
        }
        if tools:
            body["tools"] = tools
            body["tool_choice"] = self.cfg.tool_choice
        streaming = self.cfg.stream and not (tools and self._stream_tools is False)
        if streaming:
            body["stream"] = True
            body["stream_options"] = {"include_usage": True}
        # The first streamed request with tools tells whether this server
        # can stream tool calls at all.
        probe = bool(streaming and tools and self._stream_tools is None)
        return await self._retrying(headers, body, messages, probe=probe)

    async def _without_streaming(self, headers: dict[str, str], body: dict[str, Any],
                                 messages: list[dict[str, Any]], why: str) -> ChatReply:
        self._stream_tools = False
        body = {k: v for k, v in body.items() if k not in ("stream", "stream_options")}
        why = why.removeprefix(f"provider {self.cfg.name}: ")
        if self._on_retry:
            self._on_retry(f"provider {self.cfg.name}: {why} with tools; asking without "
                           "streaming from now on (set stream: false to skip this)")
        return await self._retrying(headers, body, messages)

    async def _retrying(self, headers: dict[str, str], body: dict[str, Any],
                        messages: list[dict[str, Any]], *, probe: bool = False) -> ChatReply:
        attempt = 0
        while True:
            try:
                reply = await self._once(headers, body, messages)
            except ProviderError as e:
                if probe and attempt == 0 and (
                        e.from_stream or (e.status is not None and "stream" in str(e).lower())):
                    return await self._without_streaming(headers, body, messages, str(e))
                if not e.retryable or attempt >= self.cfg.max_retries or (
                        e.status == 500 and attempt >= 1):
                    raise
                delay = self.cfg.retry_backoff_s * (2**attempt)
                if e.retry_after is not None:  # the server knows best when to come back
                    delay = max(delay, e.retry_after)
                delay = min(MAX_BACKOFF_S, delay)
                attempt += 1
                if self._on_retry:
                    self._on_retry(f"{e} (retry {attempt}/{self.cfg.max_retries} in {delay:.2f}s)")
                await self._sleep(delay)
                continue
            if probe:
                if reply.empty and not reply.cut_off:
                    # What llama-cpp-python sends for tool calls it cannot stream.
                    return await self._without_streaming(headers, body, messages,
                                                         "an empty streamed answer")
                self._stream_tools = True
            return reply

    async def _once(
        self, headers: dict[str, str], body: dict[str, Any], messages: list[dict[str, Any]]
    ) -> ChatReply:
        name = self.cfg.name
        own = self._client is None
        client = self._client or httpx.AsyncClient(timeout=httpx.Timeout(self.cfg.timeout))
        try:
            # The whole answer, not each read, is bounded: a stream that keeps
            # trickling tokens must still end. Leaving the block closes the
            # connection, also on a cancel, so the server can stop generating.
            async with asyncio.timeout(self.cfg.timeout):
                data = await self._exchange(client, headers, body)
        except TimeoutError:
            raise ProviderError(
                f"provider {name}: no answer within {self.cfg.timeout:g}s", retryable=True
            ) from None
        except httpx.TimeoutException:
            raise ProviderError(
                f"provider {name}: no answer within {self.cfg.timeout:g}s", retryable=True
            ) from None
        except httpx.TransportError as e:
            raise ProviderError(
                # Some httpx errors have no message (a pooled connection the server closed).
                self.redactor.text(f"provider {name}: cannot reach {self.url}: "
                                   f"{str(e) or type(e).__name__}"),
                retryable=True,
            ) from None
        except StreamError as e:
            # A stream cut mid-answer (the server died or restarted) is worth a retry.
            err = ProviderError(self.redactor.text(f"provider {name}: {e}"), retryable=True)
            err.from_stream = True
            raise err from None
        finally:
            if own:
                await client.aclose()
        return self._parse(data, messages)

    async def _exchange(
        self, client: httpx.AsyncClient, headers: dict[str, str], body: dict[str, Any]
    ) -> Any:
        name = self.cfg.name
        async with client.stream(
            "POST", self.url, json=body, headers=headers, timeout=httpx.Timeout(self.cfg.timeout)
        ) as resp:
            if resp.status_code >= 400:
                await resp.aread()
                line = self._status_line(resp)
                full = any(w in resp.text.lower() for w in _CONTEXT_FULL)
                if full:
                    line = (f"provider {name}: the model's context is full ({line.split(': ', 1)[1]}); "
                            "raise the server's context size or lower agent.max_turns")
                err = ProviderError(
                    line,
                    # 501 and 505 never change; neither does a full context.
                    retryable=not full and (resp.status_code == 429 or (
                        resp.status_code >= 500 and resp.status_code not in (501, 505))),
                    status=resp.status_code,
                )
                if err.retryable:
                    err.retry_after = _retry_after(resp.headers.get("retry-after"))
                raise err
            # A server that ignores "stream" answers with plain JSON: both are read.
            if "text/event-stream" in resp.headers.get("content-type", ""):
                return await fold_sse(resp.aiter_lines())
            raw = await resp.aread()
        try:
            return json.loads(raw)
        except ValueError:
            raise ProviderError(f"provider {name}: answer is not JSON") from None

    def models_url(self) -> str:
        return self.url.removesuffix("/chat/completions") + "/models"

    async def model_warning(self) -> str | None:
        """A warning when the server lists its models and ``model`` is not
        among them (single-model servers answer any name, so a typo would go
        unnoticed); None when it is listed or the server lists nothing."""
        headers = {}
        try:
            key = self._api_key()
        except ProviderError:
            return None  # the chat says so, once
        if key:
            headers["Authorization"] = f"Bearer {key}"
        client = self._client or httpx.AsyncClient()
        try:
            resp = await client.get(
                self.models_url(), headers=headers, timeout=min(self.cfg.timeout, 10.0)
            )
            data = resp.json() if resp.status_code == 200 else None
        except (httpx.HTTPError, ValueError):
            return None  # no such endpoint or no server: the chat reports the latter
        finally:
            if client is not self._client:
                await client.aclose()
        items = data.get("data") if isinstance(data, dict) else None
        if not isinstance(items, list):
            return None
        ids = [str(m.get("id")) for m in items if isinstance(m, dict) and m.get("id")]
        # Ollama lists "name:latest" for a model asked for as "name".
        if not ids or self.cfg.model in ids or f"{self.cfg.model}:latest" in ids:
            return None
        shown = ", ".join(ids[:5]) + (f" (+{len(ids) - 5} more)" if len(ids) > 5 else "")
        return self.redactor.text(
            f"provider {self.cfg.name}: model {self.cfg.model!r} is not listed by "
            f"{self.models_url()} (it lists: {shown}); check `model:` in the config"
        )

    def _status_line(self, resp: httpx.Response) -> str:
        snippet = " ".join(resp.text.split())[:_BODY_SNIPPET]
        line = f"provider {self.cfg.name}: HTTP {resp.status_code}"
        if snippet:
            line += f": {snippet}"
        return self.redactor.text(line)

    def _parse(self, data: Any, messages: list[dict[str, Any]]) -> ChatReply:
        name = self.cfg.name
        try:
            choice = data["choices"][0]
            message = choice["message"]
        except (KeyError, IndexError, TypeError):
            raise ProviderError(f"provider {name}: answer has no choices[0].message") from None
        if not isinstance(message, dict):
            raise ProviderError(f"provider {name}: choices[0].message is not an object")
        calls: list[ToolCall] = []
        for i, raw in enumerate(message.get("tool_calls") or []):
            fn = raw.get("function") if isinstance(raw, dict) else None
            fn = fn if isinstance(fn, dict) else {}
            args = fn.get("arguments", "")
            if not isinstance(args, str):
                # Some servers send an object instead of a JSON string.
                args = json.dumps(args)
            calls.append(
                ToolCall(
                    id=str((raw.get("id") if isinstance(raw, dict) else None) or f"call_{i}"),
                    name=str(fn.get("name") or ""),
                    arguments=args,
                )
            )
        content = message.get("content")
        usage = data.get("usage") if isinstance(data.get("usage"), dict) else None
        estimated = usage is None
        if usage is None:
            # Servers without usage reporting: a rough chars/4 estimate keeps
            # the token budget meaningful.
            sent = sum(len(json.dumps(m)) for m in messages)
            usage = {
                "prompt_tokens": sent // 4,
                "completion_tokens": len(json.dumps(message)) // 4,
            }
        return ChatReply(
            content=content if isinstance(content, str) else None,
            tool_calls=calls,
            finish_reason=choice.get("finish_reason"),
            prompt_tokens=int(usage.get("prompt_tokens") or 0),
            completion_tokens=int(usage.get("completion_tokens") or 0),
            provider=name,
            model=str(data.get("model") or self.cfg.model),
            usage_estimated=estimated,
            raw_message=message,
        )


def _retry_after(value: str | None) -> float | None:
    # Only the delta-seconds form; an HTTP date falls back to our backoff.
    try:
        return max(0.0, float(value)) if value is not None else None
    except ValueError:
        return None


class UsageMeter:
    """Tokens and cost across providers, priced per provider."""

    def __init__(self) -> None:
        self.usage = Usage()
        self.by_provider: dict[str, Usage] = {}

    def add(self, reply: ChatReply, cfg: ProviderConfig) -> None:
        cost = (
            reply.prompt_tokens * cfg.input_cost_per_1k
            + reply.completion_tokens * cfg.output_cost_per_1k
        ) / 1000
        for u in (self.usage, self.by_provider.setdefault(cfg.name, Usage())):
            u.prompt_tokens += reply.prompt_tokens
            u.completion_tokens += reply.completion_tokens
            u.cost_usd = round(u.cost_usd + cost, 6)
            u.requests += 1

    @property
    def total_tokens(self) -> int:
        return self.usage.prompt_tokens + self.usage.completion_tokens


class ProviderChain:
    """The configured provider, then the fallback when it gives up."""

    def __init__(self, providers: list[Provider], on_fallback: Callable[[str], None] | None = None):
        if not providers:
            raise ValueError("at least one provider")
        self.providers = providers
        self._on_fallback = on_fallback
        self._active = 0

    @property
    def active(self) -> Provider:
        return self.providers[self._active]

    async def chat(
        self, messages: list[dict[str, Any]], tools: list[dict[str, Any]] | None = None,
        *, max_tokens: int | None = None,
    ) -> tuple[ChatReply, Provider]:
        errors: list[str] = []
        # Once a provider failed for good, later turns go straight to the next.
        for i in range(self._active, len(self.providers)):
            p = self.providers[i]
            try:
                reply = await p.chat(messages, tools, max_tokens=max_tokens)
                self._active = i
                return reply, p
            except ProviderError as e:
                errors.append(str(e))
                if i + 1 < len(self.providers) and self._on_fallback:
                    self._on_fallback(f"{e}; falling back to {self.providers[i + 1].name}")
        raise ProviderError("; ".join(errors))


def build_chain(
    providers: list[ProviderConfig],
    primary: str | None,
    fallback: str | None,
    *,
    redactor: Redactor,
    client: httpx.AsyncClient | None = None,
    on_retry: Callable[[str], None] | None = None,
    on_fallback: Callable[[str], None] | None = None,
) -> ProviderChain:
    """Chain for ``agent.provider`` (default: the first listed) and ``agent.fallback_provider``."""
    by_name = {p.name: p for p in providers}
    if not providers:
        raise ProviderError("no provider configured")
    names = [primary or providers[0].name]
    if fallback and fallback != names[0]:
        names.append(fallback)
    chain = []
    for n in names:
        cfg = by_name.get(n)
        if cfg is None:
            raise ProviderError(
                f"agent provider {n!r} is not in providers (known: {', '.join(by_name)})"
            )
        redactor.add_env(cfg.api_key_env)
        chain.append(Provider(cfg, redactor=redactor, client=client, on_retry=on_retry))
    return ProviderChain(chain, on_fallback=on_fallback)


def provider_problem(config: Config) -> str | None:
    """Why no agent can run with ``config``, or None."""
    if not config.providers:
        return "no provider configured (add providers: to superqode.yaml; see docs/agents.md)"
    names = [config.agent.provider or config.providers[0].name]
    if config.agent.fallback_provider:
        names.append(config.agent.fallback_provider)
    problems = []
    for n in names:
        cfg = config.provider(n)
        if cfg is None:
            return f"agent provider {n!r} is not in providers"
        if cfg.api_key_env and not os.environ.get(cfg.api_key_env):
            problems.append(f"provider {n}: environment variable {cfg.api_key_env} is not set")
    # Usable as long as one provider in the chain has its key.
    return problems[0] if len(problems) == len(names) else None
