"""The LLM agent roles (``agent_security_tester`` ...), run in deep mode.

Each role is ``agent/``'s loop (provider, tools, permissions) with its own
system prompt and focus. Findings and patches come back as ``RoleOutput``, with
the tokens spent, so they pass the same verifier and noise filter as every
other role. ``recheck`` re-runs a finding's reproducer (the failing command the
agent reported) instead of asking the model again, so the verifier's verdict
does not depend on a model's mood.

A run in which the model called no tool, every call failed, no call read the
code, or one call was repeated until the loop stopped it ends ``ineffective``:
it judged nothing, and must not read as a clean pass. One stopped at the turn
or token cap is ``incomplete``, with the reason. ``ok`` is kept for a run that
read the code and ended by the model's own decision.
"""

from __future__ import annotations

import asyncio
import json
from typing import Any, ClassVar

import httpx

from ...agent.acp_check import acp_problem
from ...agent.acp_worker import run_acp
from ...agent.changes import ChangeTracker
from ...agent.confine import shell_refusal
from ...agent.loop import Agent, AgentResult, Budget
from ...agent.permissions import Permissions
from ...agent.prompts import ROLE_FOCUS, system_prompt, task_prompt
from ...agent.provider import ProviderError, build_chain, provider_problem
from ...agent.redact import Redactor
from ...agent.reproduce import place, reproducer, unplace
from ...agent.tools import ToolBox, workspace_guard_refusal
from ...config import Config
from ...models import Finding, Usage
from ...workspace.proc import run_command
from ._pyenv import activated
from .base import Role, RoleContext, RoleOutput

__all__ = ["AGENT_ROLES", "AgentRole", "provider_problem", "reproducer"]

_STATUS = {
    "completed": ("ok", None),
    "max_turns": ("incomplete", "stopped after {turns} turns (agent.max_turns) before it finished"),
    "max_tokens": ("incomplete", "stopped at the token budget (agent.max_tokens) before it finished"),
    "max_seconds": ("incomplete",
                    "stopped at the time budget (agent.max_seconds) before it finished"),
    "repeating": ("ineffective", None),
    "timeout": ("timeout", "stopped at the time budget"),
    "cancelled": ("cancelled", "cancelled"),
    "provider_error": ("error", None),
}


def _worker_problem(cfg: Config) -> str | None:
    """Why no agent role can run with ``cfg``: its ACP agent, or its providers."""
    worker = cfg.agent.worker
    if worker:
        return acp_problem(worker, cfg.agents.get(worker))
    return provider_problem(cfg)


class AgentRole(Role):
    role_key: ClassVar[str]
    tool = "superqode-agent"
    modes = frozenset({"deep"})
    executes_code = True
    modifies_sandbox = True
    http_client: httpx.AsyncClient | None = None  # tests may inject one

    def __init__(self, config: Config | None = None):
        self.config = config
        # (finding, files its reproducer needs) from this role's last run.
        self._rechecks: list[tuple[Finding, dict[str, str]]] = []

    def unavailable(self, config: Config | None = None) -> str | None:
        """ "no provider configured" (or a missing key) for ``config``.

        Called without a config (the pipeline checks before the session's
        config reaches the role) it cannot know the project's providers, so
        it answers None and ``run`` skips with the same reason instead.
        """
        cfg = config or self.config
        return _worker_problem(cfg) if cfg is not None else None

    async def run(self, ctx: RoleContext) -> RoleOutput:
        cfg = ctx.config
        why = _worker_problem(cfg)
        if why:
            return RoleOutput(status="skipped", reason=why, tool=self.tool)
        result = await self.run_agent(ctx)
        # For recheck: the verifier asks the same role instance, later in the session.
        self._rechecks = [(f, result.reproducer_files.get(f.id, {})) for f in result.findings]
        status, reason = _STATUS[result.stop_reason]
        if result.stop_reason == "provider_error":
            reason = result.error
        elif reason:
            reason = reason.format(turns=result.turns)
        ineffective = result.ineffective()
        if ineffective and status in ("ok", "incomplete", "ineffective"):
            status, reason = "ineffective", ineffective
        notes = [n for n in (reason, *result.warnings) if n]
        if result.dropped:
            notes.append(
                f"dropped {len(result.dropped)} finding(s) on files the agent created and did "
                f"not keep ({', '.join(sorted(set(result.dropped))[:5])})"
            )
        return RoleOutput(
            status=status,  # type: ignore[arg-type]
            reason="; ".join(notes) or None,
            findings=result.findings,
            patches=result.patches,
            tool=self.tool,
            usage=result.usage,
        )

    async def run_agent(
        self, ctx: RoleContext, *, asker: Any = None, cancel: Any = None
    ) -> AgentResult:
        cfg = ctx.config
        acfg = cfg.agent
        redactor = Redactor()
        for p in cfg.providers:
            redactor.add_env(p.api_key_env)

        def emit(type: str, **data: Any) -> None:
            ctx.emit(type, **redactor(data))

        _title, category, _focus = ROLE_FOCUS[self.role_key]
        tracker = ChangeTracker(ctx.sandbox, ctx.session)
        tracker.start()
        budget_s = acfg.max_seconds
        left = ctx.remaining()
        if left is not None:
            budget_s = max(0.1, min(budget_s, left))
        client = self.http_client or httpx.AsyncClient()
        warnings: list[str] = []
        try:
            shell_env = activated(_without_keys(ctx.env, cfg), ctx.python)
            toolbox = ToolBox(
                root=ctx.sandbox,
                role=self.name,
                config=acfg,
                env=shell_env,
                permissions=Permissions(acfg.permissions, asker or ctx.runtime.asker),
                redactor=redactor,
                tracker=tracker,
                emit=emit,
                guard=lambda c: workspace_guard_refusal(c, cfg.qe.git_guard),
                category=category,
                runtime=ctx.runtime,
            )
            if acfg.worker:
                result = await run_acp(
                    acfg.worker, cfg.agents[acfg.worker], root=ctx.sandbox, env=shell_env,
                    system=system_prompt(self.role_key), task=task_prompt(ctx.files, ctx.mode),
                    box=toolbox, permissions=toolbox.permissions, emit=emit,
                    cancel=cancel or asyncio.Event(), budget_s=budget_s)
            else:
                try:
                    chain = build_chain(
                        cfg.providers,
                        acfg.provider,
                        acfg.fallback_provider,
                        redactor=redactor,
                        client=client,
                        on_retry=lambda m: emit("log", level="warning", message=m),
                        on_fallback=lambda m: emit("log", level="warning", message=m),
                    )
                except ProviderError as e:
                    return AgentResult("provider_error", 0, [], [], Usage(), {}, error=str(e))
                for provider in chain.providers:
                    warning = await provider.model_warning()
                    if warning:
                        warnings.append(warning)
                        emit("log", level="warning", message=warning)
                agent = Agent(
                    chain,
                    toolbox,
                    system_prompt(self.role_key),
                    Budget(acfg.max_turns, acfg.max_tokens, budget_s),
                    redactor=redactor,
                    emit=emit,
                    cancel=cancel,
                )
                result = await agent.run(task_prompt(ctx.files, ctx.mode))
            if result.stop_reason == "timeout" and budget_s >= acfg.max_seconds:
                # Its own cap, not the session's budget running out.
                result.stop_reason = "max_seconds"
            result.reproducer_files = dict(toolbox.reproducer_files)
            result.warnings = warnings + result.warnings
            await _drop_made_up(result, tracker)
        finally:
            tracker.close()
            if client is not self.http_client:
                await client.aclose()
        emit(
            "agent.usage",
            stop_reason=result.stop_reason,
            turns=result.turns,
            usage=result.usage.model_dump(),
            by_provider={k: v.model_dump() for k, v in result.usage_by_provider.items()},
        )
        self._write_transcript(ctx, result, redactor)
        return result

    def _write_transcript(self, ctx: RoleContext, result: AgentResult, redactor: Redactor) -> None:
        body = {
            "role": self.name,
            "stop_reason": result.stop_reason,
            "error": result.error,
            "usage": result.usage.model_dump(),
            "messages": result.transcript,
        }
        try:
            ctx.artifacts.write_log(f"agent-{self.name}", redactor.text(json.dumps(body, indent=1)))
        except OSError as e:
            ctx.emit("log", level="warning", message=f"transcript not written: {e}")

    async def recheck(self, ctx: RoleContext, files: list[str]) -> list[Finding]:
        """Findings in ``files`` whose reproducer still fails in ``ctx.sandbox``.

        Test files the agent wrote for a reproducer are put back for the run
        when the sandbox no longer has them, then removed again. A finding
        without a reproducer cannot be rechecked and is kept.
        """
        known = list(self._rechecks)
        wanted = set(files)
        still: list[Finding] = []
        for f, support in known:
            if f.file not in wanted:
                continue
            cmd = reproducer(f)
            if (
                cmd is None
                or shell_refusal(cmd, ctx.sandbox)
                or workspace_guard_refusal(cmd, ctx.config.qe.git_guard)
            ):
                still.append(f)
                continue
            placed = place(ctx.sandbox, support)
            try:
                res = await run_command(
                    ["/bin/sh", "-c", cmd],
                    ctx.sandbox,
                    env=activated(_without_keys(ctx.env, ctx.config), ctx.python),
                    timeout=ctx.config.agent.shell_timeout_s,
                    runtime=ctx.runtime,
                )
            finally:
                unplace(placed)
            if not res.ok:
                still.append(f)
        return still


def _without_keys(env: dict[str, str], cfg: Config) -> dict[str, str]:
    # Commands the agent runs never see provider keys, so it cannot print them.
    key_vars = {p.api_key_env for p in cfg.providers if p.api_key_env}
    return {k: v for k, v in env.items() if k not in key_vars}


async def _drop_made_up(result: AgentResult, tracker: ChangeTracker) -> None:
    """Findings must point at the project's files: the user's state carried
    into the sandbox, or a file the agent created and keeps in a patch (a
    generated test). A finding on a scratch file the agent made (``test.txt``)
    describes nothing of the project; it is dropped and counted."""
    if not result.findings:
        return
    try:
        made = await tracker.created()
    except Exception as e:  # noqa: BLE001 - cannot tell: keep them, and say so
        result.warnings.append(f"could not list the files the agent created ({type(e).__name__})")
        made = None
    kept = {f for p in result.patches for f in p.files}
    out: list[Finding] = []
    for f in result.findings:
        file = (f.file or "").removeprefix("./")
        if made is not None and file in made and file not in kept:
            result.dropped.append(file)
        else:
            out.append(f)
    result.findings = out


class AgentSecurityTester(AgentRole):
    name = "agent_security_tester"
    role_key = "security_tester"
    description = "LLM agent: security tester (your own model; deep mode)"


class AgentApiTester(AgentRole):
    name = "agent_api_tester"
    role_key = "api_tester"
    description = "LLM agent: API tester (your own model; deep mode)"


class AgentUnitTester(AgentRole):
    name = "agent_unit_tester"
    role_key = "unit_tester"
    description = "LLM agent: unit tester (your own model; deep mode)"


class AgentE2eTester(AgentRole):
    name = "agent_e2e_tester"
    role_key = "e2e_tester"
    description = "LLM agent: end-to-end tester (your own model; deep mode)"


class AgentPerformanceTester(AgentRole):
    name = "agent_performance_tester"
    role_key = "performance_tester"
    description = "LLM agent: performance tester (your own model; deep mode)"


AGENT_ROLES = {
    cls.name: cls
    for cls in (
        AgentSecurityTester,
        AgentApiTester,
        AgentUnitTester,
        AgentE2eTester,
        AgentPerformanceTester,
    )
}
