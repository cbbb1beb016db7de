"""The LLM agent roles (``agent_security_tester`` ...), run in deep mode.

Each role is the same loop with its own system prompt and focus. Findings and
patches come back as ``RoleOutput`` so they pass the same verifier and noise
filter as every other role. ``recheck`` re-runs a finding's reproducer (the
failing command the agent reported) instead of asking the model again, so the
verifier's verdict does not depend on a model's mood.
"""

from __future__ import annotations

import json
import os
import threading
from pathlib import Path
from typing import Any, ClassVar

import httpx

from ..config import Config
from ..models import Finding, Usage
from ..qe.roles.base import Role, RoleContext, RoleOutput
from ..workspace.proc import run_command
from .changes import ChangeTracker
from .confine import Refused, resolve_inside, shell_refusal
from .loop import Agent, AgentResult, Budget
from .permissions import Permissions, current_asker
from .prompts import ROLE_FOCUS, system_prompt, task_prompt
from .provider import ProviderError, build_chain
from .redact import Redactor
from .tools import REPRODUCER_PREFIX, ToolBox, workspace_guard_refusal

_usage_lock = threading.Lock()
_SESSION_USAGE: dict[str, Usage] = {}
# (session id, role) -> [(finding, files its reproducer needs)] for recheck.
_SESSION_FINDINGS: dict[tuple[str, str], list[tuple[Finding, dict[str, str]]]] = {}


# A language server lives for days: remember only the recent sessions.
_MAX_SESSIONS = 100


def _trim(d: dict) -> None:
    while len(d) > _MAX_SESSIONS:
        d.pop(next(iter(d)))


def session_usage(session_id: str) -> Usage | None:
    """Tokens and cost of every agent role in ``session_id`` (for QualityReport.usage)."""
    with _usage_lock:
        u = _SESSION_USAGE.get(session_id)
        return u.model_copy() if u else None


def _add_usage(session_id: str, usage: Usage) -> None:
    with _usage_lock:
        total = _SESSION_USAGE.setdefault(session_id, Usage())
        total.prompt_tokens += usage.prompt_tokens
        total.completion_tokens += usage.completion_tokens
        total.cost_usd = round(total.cost_usd + usage.cost_usd, 6)
        total.requests += usage.requests
        _trim(_SESSION_USAGE)


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
        if cfg.api_key_env and not _env_has(cfg.api_key_env):
            problems.append(f"provider {n}: environment variable {cfg.api_key_env} is not set")
    # Usable as long as one provider in the chain has its key.
    return problems[0] if len(problems) == len(names) else None


def _env_has(name: str) -> bool:
    import os

    return bool(os.environ.get(name))


class AgentRole(Role):
    role_key: ClassVar[str]
    tool = "superqode-agent"
    modes = frozenset({"deep"})
    executes_code = True
    modifies_sandbox = True
    http_client: httpx.AsyncClient | None = None  # tests may inject one

    def __init__(self, config: Config | None = None):
        self.config = config

    def unavailable(self, config: Config | None = None) -> str | None:
        """ "no provider configured" (or a missing key) for ``config``.

        Called without a config (the pipeline checks before the session's
        config reaches the role) it cannot know the project's providers, so
        it answers None and ``run`` skips with the same reason instead.
        """
        cfg = config or self.config
        return provider_problem(cfg) if cfg is not None else None

    async def run(self, ctx: RoleContext) -> RoleOutput:
        cfg = ctx.config
        why = provider_problem(cfg)
        if why:
            return RoleOutput(status="skipped", reason=why, tool=self.tool)
        result = await self.run_agent(ctx)
        _add_usage(ctx.session_id, result.usage)
        with _usage_lock:
            _SESSION_FINDINGS[(ctx.session_id, self.name)] = [
                (f, result.reproducer_files.get(f.id, {})) for f in result.findings
            ]
            _trim(_SESSION_FINDINGS)
        status, reason = {
            "completed": ("ok", None),
            "max_turns": ("ok", f"stopped after {result.turns} turns (agent.max_turns)"),
            "max_tokens": ("ok", "stopped at the token budget (agent.max_tokens)"),
            "timeout": ("timeout", "stopped at the time budget"),
            "cancelled": ("cancelled", "cancelled"),
            "provider_error": ("error", result.error),
        }[result.stop_reason]
        return RoleOutput(
            status=status,  # type: ignore[arg-type]
            reason=reason,
            findings=result.findings,
            patches=result.patches,
            tool=self.tool,
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
        try:
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
            shell_env = _project_python_first(_without_keys(ctx.env, cfg), ctx)
            toolbox = ToolBox(
                root=ctx.sandbox,
                role=self.name,
                config=acfg,
                env=shell_env,
                permissions=Permissions(
                    acfg.permissions, asker or getattr(ctx, "asker", None) or current_asker()
                ),
                redactor=redactor,
                tracker=tracker,
                emit=emit,
                guard=lambda c: workspace_guard_refusal(c, cfg.qe.git_guard),
                category=category,
            )
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
            result.reproducer_files = dict(toolbox.reproducer_files)
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
        with _usage_lock:
            known = list(_SESSION_FINDINGS.get((ctx.session_id, self.name), []))
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
            placed = _place(ctx.sandbox, support)
            try:
                res = await run_command(
                    ["/bin/sh", "-c", cmd],
                    ctx.sandbox,
                    env=_project_python_first(_without_keys(ctx.env, ctx.config), ctx),
                    timeout=ctx.config.agent.shell_timeout_s,
                )
            finally:
                _unplace(ctx.sandbox, placed)
            if not res.ok:
                still.append(f)
        return still


def _project_python_first(env: dict[str, str], ctx: Any) -> dict[str, str]:
    """The agent's shell finds the project's interpreter (``python``,
    ``pytest``...) first, as in an activated environment."""
    py = getattr(ctx, "python", None)
    if py is None or py.own:
        return env
    out = dict(env)
    out["PATH"] = os.pathsep.join([str(Path(py.python).parent), env.get("PATH", os.defpath)])
    out["VIRTUAL_ENV"] = py.prefix
    return out


def _without_keys(env: dict[str, str], cfg: Config) -> dict[str, str]:
    # Commands the agent runs never see provider keys, so it cannot print them.
    key_vars = {p.api_key_env for p in cfg.providers if p.api_key_env}
    return {k: v for k, v in env.items() if k not in key_vars}


def _place(root: Path, files: dict[str, str]) -> list[Path]:
    made: list[Path] = []
    for rel, text in files.items():
        try:
            p = resolve_inside(root, rel, for_write=True)
        except Refused:
            continue
        if p.exists():
            continue
        missing = [d for d in [*reversed(p.parents)] if not d.exists()]
        p.parent.mkdir(parents=True, exist_ok=True)
        p.write_text(text, encoding="utf-8")
        made.extend([p, *reversed(missing)])
    return made


def _unplace(root: Path, made: list[Path]) -> None:
    for p in made:
        try:
            if p.is_dir():
                p.rmdir()
            else:
                p.unlink()
        except OSError:
            pass


def reproducer(f: Finding) -> str | None:
    for ev in f.evidence:
        if ev.message.startswith(REPRODUCER_PREFIX):
            return ev.message[len(REPRODUCER_PREFIX) :]
    return None


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
