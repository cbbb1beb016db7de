"""A small ACP agent on the official SDK (``acp``), for the tests. It speaks
ACP on stdio like Claude Code's or Codex's adapters, and asks an
OpenAI-compatible server ($ACP_TEST_LLM, the scripted server or the local
llama.cpp server) what it thinks of the file it reads. Then, as a coding agent
would: announces its reads, reads ``calc.py`` through the client, tries to
write outside the sandbox both through the client (``fs/write_text_file``) and
by itself (open()), writes a fix through the client, and ends its answer with
the findings in a ```json block. ``ACP_TEST_MODE=hang`` waits after the read
until it is cancelled; ``ACP_TEST_MODE=lazy`` answers without reading."""

from __future__ import annotations

import asyncio
import json
import os

import acp
import httpx
from acp import schema

FIX_FROM = "return max(lo, min(x, hi))"
FIX_TO = "if lo > hi:\n        raise ValueError('lo > hi')\n    return max(lo, min(x, hi))"


class TestAgent:
    def __init__(self) -> None:
        self.cancelled = asyncio.Event()

    def on_connect(self, conn) -> None:
        self.conn = conn

    async def initialize(self, protocol_version, client_capabilities=None, client_info=None, **kw):
        return schema.InitializeResponse(protocol_version=protocol_version)

    async def new_session(self, cwd, mcp_servers=None, **kw):
        self.cwd = cwd
        return schema.NewSessionResponse(session_id="test-session")

    async def cancel(self, session_id, **kw) -> None:
        self.cancelled.set()

    async def _say(self, sid: str, text: str) -> None:
        await self.conn.session_update(sid, acp.update_agent_message_text(text))

    async def prompt(self, session_id, prompt, **kw):
        mode = os.environ.get("ACP_TEST_MODE", "full")
        if mode == "lazy":
            await self._say(session_id, "Looks fine.\n```json\n[]\n```")
            return schema.PromptResponse(stop_reason="end_turn")
        target = os.path.join(self.cwd, "calc.py")
        await self.conn.session_update(
            session_id, acp.start_read_tool_call("t1", "Read calc.py", target))
        text = (await self.conn.read_text_file(session_id=session_id, path=target)).content
        if mode == "hang":
            await self.cancelled.wait()
            return schema.PromptResponse(stop_reason="cancelled")
        async with httpx.AsyncClient(timeout=120) as http:
            r = await http.post(os.environ["ACP_TEST_LLM"] + "/chat/completions", json={
                "model": "m", "max_tokens": 24, "temperature": 0,
                "messages": [{"role": "user", "content": f"Review:\n{text}"}]})
            opinion = r.json()["choices"][0]["message"]["content"] or ""
        outside = os.environ["ACP_OUTSIDE"]
        try:
            await self.conn.write_text_file(session_id=session_id, path=outside, content="x\n")
        except acp.RequestError as e:
            await self._say(session_id, f"write outside refused: {e}\n")
        try:
            with open(outside + ".direct", "w") as fh:  # noqa: ASYNC230 - the attempt is the test
                fh.write("x\n")
        except OSError as e:
            await self._say(session_id, f"direct write outside failed: {e.strerror}\n")
        await self.conn.write_text_file(session_id=session_id, path=target,
                                        content=text.replace(FIX_FROM, FIX_TO))
        findings = [{"file": "calc.py", "start_line": 2, "severity": "medium",
                     "confidence": 0.9, "title": "clamp accepts lo > hi",
                     "evidence": f"clamp(5, 10, 0) returns 10; the model said: {opinion[:80]}"}]
        await self._say(session_id, "```json\n" + json.dumps(findings) + "\n```")
        return schema.PromptResponse(stop_reason="end_turn")


if __name__ == "__main__":
    asyncio.run(acp.run_agent(TestAgent()))
