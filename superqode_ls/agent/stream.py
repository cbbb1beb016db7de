"""Server-sent events of a streamed chat completion, folded back into the
non-streamed answer shape (``choices[0].message``, ``usage``), so the provider
parses one shape whatever the server sent.

Streaming is there for the connection, not for partial output: a request the
agent gives up on (cancel, timeout) closes it, and servers that honour a
disconnect (llama-server) stop generating instead of making the next request
queue behind an answer nobody reads.
"""

from __future__ import annotations

import json
from collections.abc import AsyncIterator
from typing import Any


class StreamError(Exception):
    """The stream carried an error or could not be read; one line."""


async def fold_sse(lines: AsyncIterator[str]) -> dict[str, Any]:
    """The chat completion the SSE ``lines`` describe."""
    content: list[str] = []
    calls: dict[int, dict[str, Any]] = {}
    finish: str | None = None
    usage: dict[str, Any] | None = None
    model: str | None = None
    seen = False
    async for line in lines:
        if not line.startswith("data:"):
            continue  # comments (": ping"), event names, blank separators
        payload = line[5:].strip()
        if payload == "[DONE]":
            break
        try:
            chunk = json.loads(payload)
        except ValueError:
            raise StreamError(f"a streamed chunk is not JSON: {payload[:120]}") from None
        if not isinstance(chunk, dict):
            raise StreamError("a streamed chunk is not an object")
        if chunk.get("error"):
            err = chunk["error"]
            msg = err.get("message") if isinstance(err, dict) else err
            raise StreamError(f"the server reported an error mid-answer: {str(msg)[:200]}")
        seen = True
        model = chunk.get("model") or model
        if isinstance(chunk.get("usage"), dict):
            usage = chunk["usage"]
        for choice in chunk.get("choices") or []:
            if not isinstance(choice, dict) or choice.get("index", 0) != 0:
                continue
            finish = choice.get("finish_reason") or finish
            delta = choice.get("delta") or {}
            if not isinstance(delta, dict):
                continue
            if isinstance(delta.get("content"), str):
                content.append(delta["content"])
            for i, raw in enumerate(delta.get("tool_calls") or []):
                if isinstance(raw, dict):
                    _merge_call(calls, raw, i)
    if not seen:
        raise StreamError("the stream ended without an answer")
    message: dict[str, Any] = {"role": "assistant", "content": "".join(content) or None}
    if calls:
        message["tool_calls"] = [calls[k] for k in sorted(calls)]
    data: dict[str, Any] = {"choices": [{"index": 0, "message": message, "finish_reason": finish}]}
    if model:
        data["model"] = model
    if usage is not None:
        data["usage"] = usage
    return data


def _merge_call(calls: dict[int, dict[str, Any]], raw: dict[str, Any], pos: int) -> None:
    # A call arrives in pieces: the first carries id and name, the rest
    # append to the arguments text. Servers that omit "index" send whole calls.
    idx = raw.get("index")
    idx = idx if isinstance(idx, int) else len(calls) + pos
    call = calls.setdefault(idx, {"id": None, "type": "function",
                                  "function": {"name": "", "arguments": ""}})
    if raw.get("id"):
        call["id"] = raw["id"]
    got = raw.get("function")
    fn: dict[str, Any] = got if isinstance(got, dict) else {}
    if fn.get("name") and not call["function"]["name"]:  # some servers repeat it per piece
        call["function"]["name"] = str(fn["name"])
    args = fn.get("arguments")
    if isinstance(args, str):
        call["function"]["arguments"] += args
    elif args is not None:
        call["function"]["arguments"] += json.dumps(args)
