"""The agent loop: ask the model, run its tool calls one by one, feed the
results back, until it answers without a tool call or a budget (turns, tokens,
seconds) runs out or the run is cancelled."""

from __future__ import annotations

import asyncio
import json
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any, Literal

from ..models import Finding, Patch, Usage
from .provider import ProviderChain, ProviderError, UsageMeter, json_object
from .redact import Redactor
from .tool_specs import openai_tools
from .tools import ToolBox

StopReason = Literal[
    "completed", "max_turns", "max_tokens", "max_seconds", "timeout", "cancelled",
    "provider_error", "repeating",
]
# The caps a run may hit while it works: its findings stand, its silence on the rest does not.
CAPS = ("max_turns", "max_tokens", "max_seconds")

# Calls that look at the project's code: a run with none of them judged nothing.
READING_TOOLS = frozenset({"read_file", "search", "run_shell"})
# The same call (name and arguments) this many times in a row, or this many
# times in all, is a model in a loop: its answers will not change, so the run
# stops instead of spending the rest of its turns on it.
REPEAT_IN_A_ROW = 3
REPEAT_IN_ALL = 6


def call_key(name: str, arguments: Any) -> str:
    """One spelling per call: the same arguments in another order or spacing
    are the same call."""
    if isinstance(arguments, str):
        try:
            arguments = json.loads(arguments)
        except ValueError:
            return f"{name} {arguments.strip()}"
    return f"{name} {json.dumps(arguments, sort_keys=True, separators=(',', ':'))}"


@dataclass
class Budget:
    max_turns: int = 30
    max_tokens: int = 200_000
    max_seconds: float = 600


@dataclass
class AgentResult:
    stop_reason: StopReason
    turns: int
    findings: list[Finding]
    patches: list[Patch]
    usage: Usage
    usage_by_provider: dict[str, Usage]
    summary: str = ""
    error: str | None = None
    transcript: list[dict[str, Any]] = field(default_factory=list)
    reproducer_files: dict[str, dict[str, str]] = field(default_factory=dict)
    tool_calls: int = 0  # calls the model made
    failed_tool_calls: int = 0  # of those, the ones that errored or were refused/denied
    last_tool_error: str | None = None
    warnings: list[str] = field(default_factory=list)  # e.g. a model the server does not list
    dropped: list[str] = field(default_factory=list)  # files of findings dropped as made up
    reads: int = 0  # successful calls that looked at the code (READING_TOOLS)
    repeated: str | None = None  # the call the model repeated, when that stopped the run
    calls_by_tool: dict[str, int] = field(default_factory=dict)
    acp_agent: str | None = None  # the ACP agent that did the work, not the built-in loop

    def ineffective(self) -> str | None:
        """Why a run that ended normally did nothing useful, or None.

        A model that never called a tool (or whose every call failed) looked
        at nothing: its "no findings" means nothing, so the run must not
        read as a clean bill of health."""
        if self.stop_reason == "repeating":
            return (
                f"the model repeated the same call ({self.repeated}) and was stopped after "
                f"{self.turns} turn(s); {self._calls()}"
            )
        if self.stop_reason not in ("completed", *CAPS):
            return None
        if self.acp_agent and self.reads == 0:
            return f"the ACP agent {self.acp_agent} never read the code it was to judge"
        if self.tool_calls == 0 and self.stop_reason == "max_seconds":
            # Not a model that refused tools: one whose answers did not come in time.
            return (
                f"the model made no tool call within the time budget (agent.max_seconds) "
                f"({self.turns} turn(s) asked, {self.usage.requests} answered): the server is "
                "too slow for this model and max_tokens; see docs/agents.md"
            )
        if self.tool_calls == 0:
            return (
                "the model answered without calling a tool: does the server support tool "
                "calling for this model? see docs/agents.md"
            )
        if self.failed_tool_calls == self.tool_calls:
            last = f" (last: {self.last_tool_error})" if self.last_tool_error else ""
            return (
                f"every one of the model's {self.tool_calls} tool call(s) failed{last}; "
                "the transcript is in the session's logs"
            )
        if self.reads == 0:
            return f"the model never read the code it was to judge ({self._calls()})"
        return None

    def _calls(self) -> str:
        parts = sorted(self.calls_by_tool.items(), key=lambda kv: -kv[1])
        return "calls: " + (", ".join(f"{n} x{c}" for n, c in parts) or "none")


class Agent:
    def __init__(
        self,
        chain: ProviderChain,
        tools: ToolBox,
        system_prompt: str,
        budget: Budget,
        *,
        redactor: Redactor,
        emit: Callable[..., Any] = lambda *a, **k: None,
        cancel: asyncio.Event | None = None,
    ):
        self.chain = chain
        self.tools = tools
        self.system_prompt = system_prompt
        self.budget = budget
        self.redactor = redactor
        self.emit = emit
        self.cancel_event = cancel or asyncio.Event()
        self.meter = UsageMeter()
        self._deadline = 0.0

    def cancel(self) -> None:
        self.cancel_event.set()

    def remaining(self) -> float:
        return max(0.0, self._deadline - time.monotonic())

    async def run(self, task: str) -> AgentResult:
        self._deadline = time.monotonic() + self.budget.max_seconds
        self.tools.remaining = self.remaining
        messages: list[dict[str, Any]] = [
            {"role": "system", "content": self.system_prompt},
            {"role": "user", "content": task},
        ]
        specs = openai_tools()
        turns = 0
        summary = ""
        error: str | None = None
        stop: StopReason = "max_turns"
        calls = failed = reads = 0
        last_error: str | None = None
        seen: dict[str, int] = {}
        by_tool: dict[str, int] = {}
        last_key: str | None = None
        in_a_row = 0
        repeated: str | None = None
        bigger: int | None = None  # a larger max_tokens, after a tool call was cut off
        while turns < self.budget.max_turns:
            if self.cancel_event.is_set():
                stop = "cancelled"
                break
            if self.remaining() <= 0:
                stop = "timeout"
                break
            turns += 1
            outcome = await self._ask(messages, specs, bigger)
            if isinstance(outcome, str):
                stop = outcome  # type: ignore[assignment]
                if outcome == "provider_error":
                    error = self._last_error
                break
            reply, provider = outcome
            self.meter.add(reply, provider.cfg)
            if reply.cut_off and (reply.empty or any(
                    not json_object(tc.arguments) for tc in reply.tool_calls)):
                # A call cut off at max_tokens is never sent back as it is:
                # its broken JSON in the history makes servers fail every
                # later request. Asked once more with twice the cap (not a
                # turn of its own); cut off again, the calls go back as {}
                # and are answered with the reason, so the model can retry.
                cap = bigger or provider.cfg.max_tokens
                if reply.tool_calls and bigger is None:
                    bigger = cap * 2
                    turns -= 1
                    self.emit("log", level="warning",
                              message=f"provider {provider.name}: a tool call was cut "
                              f"off at max_tokens ({cap}); asking again with {bigger}")
                    continue
                if not reply.tool_calls:
                    stop, error = "provider_error", (
                        f"provider {provider.name}: the answer was cut off with nothing in it "
                        "(finish_reason: length): the model's context is full; raise the "
                        "server's context size or lower agent.max_turns")
                    break
                cut_note = (f"error: your call was cut off at max_tokens ({cap}) and its "
                            "arguments are incomplete; make a shorter call")
            else:
                cut_note = None
            messages.append(reply.assistant_message())
            self.emit(
                "agent.turn",
                turn=turns,
                provider=provider.name,
                model=reply.model,
                tool_calls=[tc.name for tc in reply.tool_calls],
                prompt_tokens=reply.prompt_tokens,
                completion_tokens=reply.completion_tokens,
            )
            if not reply.tool_calls:
                summary = self.redactor.text(reply.content or "")
                stop = "completed"
                break
            cancelled = False
            for tc in reply.tool_calls:
                if self.cancel_event.is_set():
                    cancelled = True
                    content = "cancelled: the run was stopped before this call"
                else:
                    res = await self.tools.call(tc.name, tc.arguments, turn=turns, call_id=tc.id)
                    content = res.text
                    if cut_note is not None and not json_object(tc.arguments):
                        content = f"{cut_note} ({content})"
                    calls += 1
                    by_tool[tc.name] = by_tool.get(tc.name, 0) + 1
                    if res.outcome != "ok":
                        failed += 1
                        last_error = content[:200]
                    elif tc.name in READING_TOOLS:
                        reads += 1
                    key = call_key(tc.name, tc.arguments)
                    seen[key] = seen.get(key, 0) + 1
                    in_a_row = in_a_row + 1 if key == last_key else 1
                    last_key = key
                    if repeated is None and (in_a_row >= REPEAT_IN_A_ROW
                                             or seen[key] >= REPEAT_IN_ALL):
                        # One line: a broken call's raw arguments may hold newlines.
                        flat = " ".join(key.split())
                        repeated = flat if len(flat) <= 80 else flat[:77] + "..."
                # Every tool_call id must get an answer or the next request is invalid.
                messages.append({"role": "tool", "tool_call_id": tc.id, "content": content})
            if cancelled:
                stop = "cancelled"
                break
            if repeated is not None:
                stop = "repeating"
                break
            if self.meter.total_tokens >= self.budget.max_tokens:
                stop = "max_tokens"
                break
        return AgentResult(
            stop_reason=stop,
            turns=turns,
            findings=list(self.tools.findings),
            patches=list(self.tools.patches),
            usage=self.meter.usage.model_copy(),
            usage_by_provider={k: v.model_copy() for k, v in self.meter.by_provider.items()},
            summary=summary,
            error=error,
            transcript=self.redactor(json.loads(json.dumps(messages, default=str))),
            tool_calls=calls,
            failed_tool_calls=failed,
            last_tool_error=last_error,
            reads=reads,
            repeated=repeated,
            calls_by_tool=by_tool,
        )

    _last_error: str | None = None

    async def _ask(self, messages: list[dict[str, Any]], specs: list[dict[str, Any]],
                   max_tokens: int | None = None) -> Any:
        """The reply, or the stop reason when no reply is coming."""
        chat = asyncio.ensure_future(self.chain.chat(messages, specs, max_tokens=max_tokens))
        stopper = asyncio.ensure_future(self.cancel_event.wait())
        try:
            done, _ = await asyncio.wait(
                {chat, stopper}, timeout=self.remaining(), return_when=asyncio.FIRST_COMPLETED
            )
        except asyncio.CancelledError:
            chat.cancel()
            stopper.cancel()
            raise
        stopper.cancel()
        if chat not in done:
            chat.cancel()
            try:
                await chat
            except (asyncio.CancelledError, ProviderError):
                pass
            return "cancelled" if self.cancel_event.is_set() else "timeout"
        try:
            return chat.result()
        except ProviderError as e:
            self._last_error = self.redactor.text(str(e))
            return "provider_error"
