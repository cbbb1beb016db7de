"""A real OpenAI-compatible HTTP server on 127.0.0.1 that replays a script.

Each POST to ``/v1/chat/completions`` takes the next step of the script:

- ``{"tool_calls": [{"name": ..., "arguments": {...} | "raw text"}]}``: an
  assistant turn calling tools (``arguments`` given as a string is sent as is,
  which is how malformed calls are scripted);
- ``{"content": "..."}``: a final answer; ``"finish_reason"`` in a step
  overrides the one sent (``"length"``: cut off at ``max_tokens``);
- ``{"status": 500, "body": "...", "headers": {...}}``: an HTTP error (``"{auth}"`` in the body
  is replaced by the request's Authorization header, to test redaction);
- ``{"delay": 2.0, ...}``: wait before answering (provider timeouts);
- ``{"raw": "..."}``: a 200 with this literal body (malformed answers);
- ``{"trickle": 0.05}``: a streamed answer that sends a token every 0.05 s
  and never ends; the handler notes in ``disconnected`` when the client
  hung up (a cancel must close the connection).

With ``sse=True`` a request with ``"stream": true`` is answered as server-sent
events (content, then each tool call in two pieces, then a usage chunk);
otherwise as one JSON body, as servers that ignore ``stream`` do.
``models=[...]`` makes ``GET /v1/models`` list those ids (404 otherwise).

``{{name}}`` in a step is replaced from ``vars`` and from JSON tool results
already in the conversation (``{{finding_id}}``, ``{{patch_id}}``).
Every request (body and headers) is recorded in ``requests``.
"""

from __future__ import annotations

import copy
import json
import re
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any, Self

_VAR = re.compile(r"\{\{(\w+)\}\}")


class ScriptedServer:
    def __init__(
        self,
        script: list[dict[str, Any]],
        vars: dict[str, str] | None = None,
        usage: tuple[int, int] = (100, 20),
        sse: bool = False,
        models: list[str] | None = None,
    ):
        self.sse = sse
        self.models = models
        self.disconnected = threading.Event()
        self.tokens_sent = 0  # trickled tokens written: a test waits for the stream to flow
        self.script = list(script)
        self.vars = dict(vars or {})
        self.usage = usage
        self.requests: list[dict[str, Any]] = []
        self._lock = threading.Lock()
        self._stop = threading.Event()
        self._httpd = ThreadingHTTPServer(("127.0.0.1", 0), self._handler())
        self._httpd.daemon_threads = True
        self._thread = threading.Thread(target=self._httpd.serve_forever, daemon=True)

    @property
    def port(self) -> int:
        return self._httpd.server_address[1]

    @property
    def base_url(self) -> str:
        return f"http://127.0.0.1:{self.port}/v1"

    def __enter__(self) -> Self:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def close(self) -> None:
        self._stop.set()  # wakes handlers sleeping in a "delay" step
        self._httpd.shutdown()
        self._httpd.server_close()
        self._thread.join(5)

    @property
    def remaining(self) -> int:
        return len(self.script)

    # -- building answers ---------------------------------------------------

    def _next(self, body: dict[str, Any], headers: dict[str, str]) -> dict[str, Any] | None:
        with self._lock:
            self.requests.append({"body": body, "headers": headers})
            n = len(self.requests)
            step = self.script.pop(0) if self.script else None
        if step is None:
            return None
        values = dict(self.vars)
        for msg in body.get("messages", []):
            if msg.get("role") == "tool":
                try:
                    data = json.loads(msg.get("content") or "")
                except ValueError:
                    continue
                if isinstance(data, dict):
                    values.update({k: str(v) for k, v in data.items() if isinstance(v, (str, int))})
        step = _substitute(copy.deepcopy(step), values)
        step["_n"] = n
        return step

    def completion(self, step: dict[str, Any]) -> dict[str, Any]:
        message: dict[str, Any] = {"role": "assistant", "content": step.get("content")}
        if "tool_calls" in step:
            message["tool_calls"] = [
                {
                    "id": f"call_{step['_n']}_{i}",
                    "type": "function",
                    "function": {
                        "name": tc["name"],
                        "arguments": tc["arguments"]
                        if isinstance(tc.get("arguments"), str)
                        else json.dumps(tc.get("arguments", {})),
                    },
                }
                for i, tc in enumerate(step["tool_calls"])
            ]
        prompt, completion = step.get("usage", self.usage)
        return {
            "id": f"chatcmpl-{step['_n']}",
            "object": "chat.completion",
            "model": step.get("model", "scripted-model"),
            "choices": [
                {
                    "index": 0,
                    "message": message,
                    "finish_reason": step.get(
                        "finish_reason", "tool_calls" if "tool_calls" in step else "stop"),
                }
            ],
            "usage": {
                "prompt_tokens": prompt,
                "completion_tokens": completion,
                "total_tokens": prompt + completion,
            },
        }

    def sse_events(self, step: dict[str, Any]) -> list[dict[str, Any]]:
        """The completion of ``step`` as stream chunks, tool calls in pieces."""
        whole = self.completion(step)
        msg = whole["choices"][0]["message"]
        base = {"id": whole["id"], "object": "chat.completion.chunk", "model": whole["model"]}

        def chunk(delta: dict[str, Any], finish: str | None = None) -> dict[str, Any]:
            return {**base, "choices": [{"index": 0, "delta": delta, "finish_reason": finish}]}

        out = [chunk({"role": "assistant"})]
        if msg.get("content"):
            text = msg["content"]
            out += [chunk({"content": text[: len(text) // 2]}), chunk({"content": text[len(text) // 2 :]})]
        for i, tc in enumerate(msg.get("tool_calls") or []):
            args = tc["function"]["arguments"]
            out.append(chunk({"tool_calls": [{"index": i, "id": tc["id"], "type": "function",
                                              "function": {"name": tc["function"]["name"],
                                                           "arguments": args[:3]}}]}))
            out.append(chunk({"tool_calls": [{"index": i, "function": {"arguments": args[3:]}}]}))
        out.append(chunk({}, whole["choices"][0]["finish_reason"]))
        out.append({**base, "choices": [], "usage": whole["usage"]})
        return out

    def _handler(self) -> type[BaseHTTPRequestHandler]:
        server = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, *args: Any) -> None:  # keep test output clean
                pass

            def _send(
                self, status: int, body: bytes, ctype: str = "application/json", extra=None
            ) -> None:
                self.send_response(status)
                for k, v in (extra or {}).items():
                    self.send_header(k, v)
                self.send_header("Content-Type", ctype)
                self.send_header("Content-Length", str(len(body)))
                self.end_headers()
                try:
                    self.wfile.write(body)
                except (BrokenPipeError, ConnectionResetError):
                    pass

            def _stream(self, chunks: list[dict[str, Any]]) -> None:
                self.send_response(200)
                self.send_header("Content-Type", "text/event-stream")
                self.end_headers()
                for c in chunks:
                    self.wfile.write(b"data: " + json.dumps(c).encode() + b"\n\n")
                self.wfile.write(b"data: [DONE]\n\n")

            def _trickle(self, interval: float) -> None:
                self.send_response(200)
                self.send_header("Content-Type", "text/event-stream")
                self.end_headers()
                piece = {"choices": [{"index": 0, "delta": {"content": "la "}}]}
                try:
                    while not server._stop.wait(interval):
                        self.wfile.write(b"data: " + json.dumps(piece).encode() + b"\n\n")
                        self.wfile.flush()
                        server.tokens_sent += 1
                except (BrokenPipeError, ConnectionResetError):
                    server.disconnected.set()

            def do_GET(self) -> None:
                if self.path == "/v1/models" and server.models is not None:
                    data = {"object": "list", "data": [{"id": m, "object": "model"} for m in server.models]}
                    self._send(200, json.dumps(data).encode())
                else:
                    self._send(404, b'{"error": "not found"}')

            def do_POST(self) -> None:
                length = int(self.headers.get("Content-Length") or 0)
                raw = self.rfile.read(length)
                if self.path != "/v1/chat/completions":
                    self._send(404, b'{"error": "not found"}')
                    return
                try:
                    body = json.loads(raw)
                except ValueError:
                    self._send(400, b'{"error": "bad json"}')
                    return
                headers = {k.lower(): v for k, v in self.headers.items()}
                step = server._next(body, headers)
                if step is None:
                    self._send(500, b'{"error": "script exhausted"}')
                    return
                if step.get("delay") and server._stop.wait(step["delay"]):
                    return
                if "status" in step:
                    text = str(step.get("body", "")).replace(
                        "{auth}", headers.get("authorization", "")
                    )
                    self._send(int(step["status"]), text.encode(), extra=step.get("headers"))
                elif "raw" in step:
                    self._send(200, step["raw"].encode())
                elif "trickle" in step:
                    self._trickle(float(step["trickle"]))
                elif server.sse and body.get("stream"):
                    self._stream(server.sse_events(step))
                else:
                    self._send(200, json.dumps(server.completion(step)).encode())

        return Handler


def _substitute(value: Any, values: dict[str, str]) -> Any:
    if isinstance(value, str):
        return _VAR.sub(lambda m: values.get(m.group(1), m.group(0)), value)
    if isinstance(value, dict):
        return {k: _substitute(v, values) for k, v in value.items()}
    if isinstance(value, list):
        return [_substitute(v, values) for v in value]
    return value


def tool_messages(request: dict[str, Any]) -> list[str]:
    """Contents of the tool results a request carried back to the model."""
    return [m["content"] for m in request["body"]["messages"] if m.get("role") == "tool"]
