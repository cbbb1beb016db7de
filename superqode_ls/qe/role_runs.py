"""The roles of one QE session: which run (and why the others do not),
fast ones first and in parallel, sandbox-modifying ones one at a time
between a checkpoint and its restore; each one's findings normalised and
its patches registered as it finishes (off the event loop). The tables
filled here (runs, findings, patches, usage) are what the report is made of.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import subprocess
import threading
import time
from collections.abc import Iterable
from pathlib import Path
from typing import Any

from ..events import EventBus
from ..models import Finding, Patch, RoleRun, RoleStatus, Usage, utcnow
from ..workspace.artifacts import Artifacts
from ..workspace.pyenv import ProjectPython
from ..workspace.pyenv_build import resolve_python, spawn_background_build
from . import shard, verify_step
from .covering import SuiteProbe
from .finish import normalize_finding, poll_guard
from .fix_judge import suppression_reason
from .noise import FileLines, early_context, filter_findings
from .noise_context import EarlyContext
from .patching import patch_files
from .request import QERequest, Resolved
from .role_time import env_deferred, env_wait_until, finish_reserve
from .roles import role_class
from .roles._pyenv import wants_built_env
from .roles.base import Role, RoleContext, RoleOutput, SandboxSession
from .session_control import SessionControl
from .verify_early import EarlyVerify

log = logging.getLogger(__name__)
TEST_ROLE = verify_step.TEST_ROLE
def why_not(role: Role, res: Resolved, trusted: bool) -> str | None:
    """Why ``role`` does not run in this session, or None."""
    if role.executes_code and not trusted:
        return "folder not trusted (this role runs the project's code)"
    if res.mode not in role.modes and not res.explicit:
        return f"not part of {res.mode} mode"
    return role.unavailable(res.config)


class RoleRuns:
    """The roles of one session and what they produced (``runs``, ``found``,
    ``patches``, ``usage``); the project's interpreter (``python``) and the
    suite probe (``probe``) started for them."""

    def __init__(self, session_id: str, request: QERequest, bus: EventBus,
                 control: SessionControl):
        self.id = session_id
        self.request = request
        self.bus = bus
        self.control = control
        # --since: per changed file, the lines the roles look at.
        self.since_lines: dict[str, frozenset[int]] | None = None
        self.runs: dict[str, RoleRun] = {}
        self.found: dict[str, list[Finding]] = {}
        self.usage: dict[str, Usage] = {}  # what each model-driven role spent
        self.patches: dict[str, Patch] = {}  # as the roles proposed them (ids made unique)
        self.roles: dict[str, Role] = {}
        self.contexts: dict[str, RoleContext] = {}
        # Roles finish in worker threads (their findings are many on a large
        # tree); this keeps the shared tables consistent between them.
        self.lock = threading.Lock()
        self.python: asyncio.Task[ProjectPython] | None = None
        self.env_wait_until: float | None = None  # loop time; None: wait for the build
        self.env_deferred = False  # a role gave up waiting: the build goes on detached
        self.env_building = asyncio.Event()  # a build (not a lookup) is under way
        self.background_build: subprocess.Popen | None = None  # that detached builder
        self.env_log: Path | None = None  # its log
        self.env_source: str | None = None  # what the build reads ("poetry.lock; groups dev")
        self.probe: SuiteProbe | None = None
        self._probe_start: asyncio.Future[None] | None = None  # it waits for the interpreter
        # The noise filter's context step for the roles done while others
        # still run (noise.EarlyContext), and its checks under way.
        self.early: EarlyContext | None = None
        self._early_checks: list[asyncio.Future[None]] = []
        # Quick mode's fix verification of the first role with fixes to end
        # while others still run (verify_early.py); set by the pipeline.
        self.early_verify: EarlyVerify | None = None
        # How many files the user's tree has (the session's stamp): whether
        # keeping the filter's results can pay (noise_cache.worth_it).
        self.tree_files: int | None = None
        self._modifying = False

    async def _find_python(self, res: Resolved, root: Path, build: bool) -> ProjectPython:
        self.bus.emit("progress", message="environment: looking for the project's Python")
        loop = asyncio.get_running_loop()

        def emit(type: str, **data: Any) -> None:
            if data.get("building"):  # (from a worker thread too)
                self.env_source = data.get("source") or self.env_source
                loop.call_soon_threadsafe(self.env_building.set)
            self.bus.emit(type, **data)

        py = await resolve_python(
            res.project, root, res.config, editor=self.request.python, emit=emit, build=build,
            runtime=self.request.runtime,
        )
        line = py.label(res.project) + (f" ({py.note})" if py.note else "")
        self.bus.emit("progress", message=f"environment: {line}", interpreter=py.python,
                      source=py.source, version=py.version)
        return py

    async def run_all(
        self, res: Resolved, s: SandboxSession, root: Path, artifacts: Artifacts, deadline: float
    ) -> None:
        total = len(res.roles)
        plain: list[tuple[str, Role]] = []
        modifying: list[tuple[str, Role]] = []
        for name in res.roles:
            try:
                role = role_class(name)()
            except (ImportError, AttributeError) as e:
                self._skip(name, f"role not available ({e})", total, res.explicit)
                continue
            reason = why_not(role, res, self.request.trusted)
            if reason:
                self._skip(name, reason, total, res.explicit)
                continue
            self.roles[name] = role
            (modifying if role.modifies_sandbox else plain).append((name, role))
        # Fast roles first: when slots are few or the budget short, the
        # quick analyzers finish and report instead of waiting behind a suite.
        plain.sort(key=lambda nr: nr[1].cost)
        self._modifying = bool(modifying)
        for name, _ in plain + modifying:
            self.runs[name] = RoleRun(role=name, status="cancelled", reason="not started")
        now = asyncio.get_running_loop().time()
        told = deadline - finish_reserve(deadline - now)
        if self.request.trusted and any(_needs_python(r) for _, r in plain + modifying):
            # Found (or built) once, while the roles that need no interpreter
            # already run; probing runs programs from the project, so only
            # in trusted folders.
            runs_code = [n for n, r in plain + modifying if r.executes_code]
            build = await asyncio.to_thread(wants_built_env, runs_code, root)
            self.python = asyncio.ensure_future(self._find_python(res, root, build))
            if res.mode == "quick":
                self.env_wait_until = env_wait_until(
                    now, told, res.budget, res.config.qe.quick_unit_test_max_s)
        if (self.request.trusted and res.config.qe.verify_max_fixes > 0 and s.isolation != "sparse"
                and not (res.mode == "deep" and TEST_ROLE in self.roles)):
            # Fix verification runs the tests importing a fixed file: whether
            # the suite can start at all is learnt now, beside the roles (a
            # sparse sandbox holds no tests: none run there).
            probe_ctx = RoleContext(
                session_id=self.id, project=res.project, sandbox=root, config=res.config,
                mode=res.mode, env=s.env(), artifacts=artifacts, deadline=deadline,
                trusted=True, session=s, runtime=self.request.runtime)
            if self.python is None:
                self.probe = verify_step.start_probe(probe_ctx, res.config)
            else:
                self._probe_start = asyncio.ensure_future(self._start_probe(probe_ctx, res.config))
        # Checked early only until the roles start wrapping up (as the
        # security role's tools stop: a tenth of the time left, at least 2 s
        # before the deadline): from then on the GIL is theirs.
        self.early = early_context(root, stop_at=deadline - max(2.0, 0.1 * (deadline - now)))
        sem = asyncio.Semaphore(res.config.execution.max_parallel_roles)

        async def limited(name: str, role: Role) -> None:
            async with sem:
                await self._run_role(name, role, res, s, root, artifacts, deadline, total, told)

        try:
            await asyncio.gather(*(limited(n, r) for n, r in plain))
            for name, role in modifying:
                checkpoint = await s.checkpoint()
                try:
                    await self._run_role(name, role, res, s, root, artifacts, deadline, total,
                                         told)
                finally:
                    await asyncio.shield(s.restore(checkpoint))
        finally:
            # A build still running when the session stops is stopped with it.
            if self.python is not None and not self.python.done():
                self.python.cancel()
                with contextlib.suppress(BaseException):
                    await self.python
            if self._probe_start is not None and not self._probe_start.done():
                self._probe_start.cancel()
                with contextlib.suppress(BaseException):
                    await self._probe_start

    async def _start_probe(self, ctx: RoleContext, config: Any) -> None:
        """The suite probe, once the session's interpreter is there: with
        none of its own to find, it never builds a second copy of the
        environment beside the session's (the two took turns on its lock,
        and the probe's held it past a quick run's hand-over, keeping the
        detached builder waiting to the session's end: 33 s on kombu). No
        probe when the build went on without the session."""
        assert self.python is not None
        with contextlib.suppress(Exception, asyncio.CancelledError):
            ctx.python = await asyncio.shield(self.python)
        if ctx.python is not None and not self.env_deferred:
            self.probe = verify_step.start_probe(ctx, config)

    def _skip(self, name: str, reason: str, total: int, requested: bool = False) -> None:
        self.runs[name] = RoleRun(role=name, status="skipped", reason=reason, requested=requested)
        self.bus.emit("role_complete", role=name, status="skipped", findings=0, duration_s=0.0,
                      reason=reason, requested=requested)
        self._progress(total)

    def _progress(self, total: int) -> None:
        done = sum(1 for r in self.runs.values() if r.reason != "not started")
        self.bus.emit("progress", message=f"{done}/{total} roles done", done=done, total=total)

    async def _run_role(
        self, name: str, role: Role, res: Resolved, s: SandboxSession, root: Path,
        artifacts: Artifacts,
        deadline: float, total: int, told: float | None = None,
    ) -> None:
        """``deadline``: when the role must have returned; ``told``: the
        deadline it is given (earlier: its findings are recorded in between)."""
        loop = asyncio.get_running_loop()
        role_deadline = deadline
        per_role = res.config.execution.role_timeout_s
        if per_role:
            role_deadline = min(deadline, loop.time() + per_role)
        hard = role_deadline
        if told is not None:
            role_deadline = min(role_deadline, told)
        ctx = RoleContext(
            session_id=self.id,
            project=res.project,
            sandbox=root,
            config=res.config,
            mode=res.mode,
            env=s.env(),
            artifacts=artifacts,
            files=res.files,
            deadline=role_deadline,
            emit=lambda type, **data: self.bus.emit(type, **{"role": name, **data}),
            trusted=self.request.trusted,
            session=s,
            targets=shard.selector(self.request.shard),
            lines=self.since_lines,
            runtime=self.request.runtime,
        )
        self.contexts[name] = ctx
        started = utcnow()
        t0 = time.monotonic()
        self.bus.emit("role_start", role=name)
        status: RoleStatus = "ok"
        reason: str | None = None
        crashed = False
        out = RoleOutput()
        try:
            if self.python is not None and _needs_python(role):
                ctx.python = await self._wait_python(loop, res.project)
            if self.python is not None and _needs_python(role) and ctx.python is None:
                out = RoleOutput(status="skipped", reason=env_deferred(
                    self.env_source, self.env_log, res.config.roles.env_build_timeout_s))
            else:
                out = await asyncio.wait_for(role.run(ctx), timeout=max(0.0, hard - loop.time()))
            status, reason = out.status, out.reason
            if status == "timeout" and hard >= deadline:
                # Out of the session's time with nothing to show (one that ran
                # short with part of its work done says "incomplete").
                self.control.timed_out = True
        except TimeoutError:
            status, reason = "timeout", "role ran out of time"
            if hard >= deadline:
                # It did not return by the roles' own deadline: the session is
                # out of time, as when the phase itself ends (its last resort).
                self.control.timed_out = True
        except asyncio.CancelledError:
            status = "timeout" if self.control.timed_out else "cancelled"
            reason = "session budget exhausted" if self.control.timed_out else "cancelled"
            if self.python is not None and not self.python.done() and _needs_python(role):
                reason += " while the project's environment was being built (the next run resumes it)"
            self._finish_role(name, role, out, status, reason, started, t0, total, ctx.sandbox, res)
            raise
        except Exception as e:
            log.exception("role %s crashed", name)
            status, reason = "error", f"{type(e).__name__}: {e}".splitlines()[0]
            crashed = True
        # Thousands of findings to normalise and publish: a worker thread, so
        # a signal (or an editor's request) is served meanwhile. A cancel
        # waits for it (well under a second) so the tables stay whole; the
        # guard's events are read in it too, so a cancel landing there (the
        # session's budget ending as the role's own did) still records the
        # role as it ended, not as never started.
        done = asyncio.ensure_future(asyncio.to_thread(
            self._polled_finish, s, name, role, out, status, reason, started, t0, total,
            ctx.sandbox, res, crashed))
        try:
            await asyncio.shield(done)
        except asyncio.CancelledError:
            await done
            raise
        if self.early is not None and any(r.reason == "not started" for r in self.runs.values()):
            # Others still run: the filter's per-file context checks of these
            # findings meanwhile, not after them all.
            self._early_checks.append(asyncio.ensure_future(
                asyncio.to_thread(self.early.check, self.found.get(name, []))))
        if (self.early_verify is not None and not self._modifying and status == "ok"
                and any(r.reason == "not started" for r in self.runs.values())):
            self._verify_early(name, role, ctx, root, res)

    def _verify_early(self, name: str, role: Role, ctx: RoleContext, root: Path, res: Resolved) -> None:
        """This role's fixes judged now, while the others run (verify_early.py):
        on a tree of the session's own, which the roles still running never read."""
        early = self.early_verify
        assert early is not None
        if not early.open_to(ctx):
            return  # (a sparse sandbox, a project's folder: the step after the roles verifies)
        with self.lock:
            mine = {p.id: p for p in self.patches.values() if p.role == name}
        if not mine:
            return
        findings = list(self.found.get(name, []))
        if verify_step.over_the_cap(mine.values(), findings, early.cap):
            early.decline()  # its verdicts would never be taken: nothing started
            return

        def pick() -> tuple[list[Patch], list[Patch]]:
            # The fixes the verification step will pick for this role, as far
            # as its findings alone tell (the filter merges one problem's
            # reports; those merged away bring no fix of their own).
            from . import noise_cache  # imported ahead (ahead.AFTER_START), off the roles' path

            threshold, classes = res.config.qe.confidence_threshold, res.config.qe.path_classes
            view = res.config.qe.default_view
            kept = noise_cache.cached(
                res.project, root, findings,
                {"threshold": threshold, "path_classes": classes, "view": view, "baseline": None},
                lambda found: filter_findings(found, read_line=FileLines(root), threshold=threshold,
                                              path_classes=classes, view=view),
                files=self.tree_files).findings
            return verify_step.choose(mine, kept, early.cap, root, early.reads)

        covering = verify_step.covering_tests(self.roles, dict(self.contexts), self.request.trusted,
                                              root, self.found_python())
        candidates = sorted({f for p in mine.values() for f in (p.files or patch_files(p.diff))})
        early.offer(role, ctx, self.found, pick, candidates, covering, self.probe)

    async def early_context(self) -> EarlyContext | None:
        """The early context checks, stopped (each ends between files) and
        waited for; what they finished is the filter's."""
        if self.early is None:
            return None
        self.early.stop.set()
        for r in await asyncio.gather(*self._early_checks, return_exceptions=True):
            if isinstance(r, BaseException):  # the filter checks those findings itself
                log.warning("early context check failed: %s", r)
        self._early_checks.clear()
        return self.early

    def _polled_finish(self, s: SandboxSession, *args: Any) -> None:
        poll_guard(s)
        self._finish_role(*args)

    def _finish_role(
        self, name: str, role: Role, out: RoleOutput, status: RoleStatus, reason: str | None,
        started, t0: float, total: int, sandbox: Path, res: Resolved, crashed: bool = False,
    ) -> None:
        # The role's own time: publishing its findings below is the session's.
        duration = time.monotonic() - t0
        findings = [normalize_finding(f, name, sandbox) for f in out.findings]
        if res.files is not None:
            wanted = set(res.files)
            findings = [f for f in findings if f.file is None or f.file in wanted]
        with self.lock:
            patches = [self._register_patch(p, name, findings) for p in out.patches]
        by_id = {f.id: f for f in findings}
        for p in patches:
            for fid in p.finding_ids:
                f = by_id.get(fid)
                if f is not None and f.fix_patch_id is None:
                    by_id[fid] = f.model_copy(update={"fix_patch_id": p.id})
        findings = [by_id.get(f.id, f) for f in findings]
        with self.lock:
            self.found[name] = findings
            if out.usage is not None:
                self.usage[name] = out.usage
        # As found, for progress (the editor shows them while the run goes):
        # severities not yet final. The report's findings go out as
        # ``finding`` events at the end (_publish_findings).
        for f in findings:
            self.bus.emit("role_finding", finding=f.model_dump(mode="json", exclude_none=True))
        self.runs[name] = RoleRun(
            role=name, status=status, reason=reason, tool=out.tool or getattr(role, "tool", None),
            started_at=started, duration_s=round(duration, 3), findings=len(findings), patches=len(patches),
            requested=res.explicit,
            crashed=crashed,
        )
        self.bus.emit(
            "role_complete", role=name, status=status, findings=len(findings),
            duration_s=round(duration, 3), reason=reason, requested=res.explicit,
        )
        self._progress(total)

    def _register_patch(self, p: Patch, role: str, findings: list[Finding]) -> Patch:
        update: dict[str, Any] = {}
        if not p.role:
            update["role"] = role
        if not p.files:
            update["files"] = patch_files(p.diff)
        pid = p.id
        n = 2
        while pid in self.patches:
            pid = f"{p.id}-{n}"
            n += 1
        if pid != p.id:
            update["id"] = pid
        if not p.finding_ids:
            update["finding_ids"] = [f.id for f in findings if f.fix_patch_id == p.id]
        silencer = suppression_reason(p.diff) if p.kind == "fix" else None
        if silencer:
            update["kind"] = "suppression"
            update["description"] = f"Suppression ({silencer}), not a fix: {p.description}"
        p = p.model_copy(update=update) if update else p
        self.patches[p.id] = p
        return p

    async def _wait_python(self, loop: asyncio.AbstractEventLoop, project: Path) -> ProjectPython | None:
        """The project's interpreter, or None when it is still being built at
        ``env_wait_until`` (quick mode: when the tests' share of the budget
        is all that is left, see env_wait_until): then the build is handed to a
        detached builder, once, and every role that needs it is skipped
        (one that starts building after that point is handed over at once)."""
        assert self.python is not None
        if self.env_deferred:
            return None
        if self.env_wait_until is None or self.python.done():
            return await self.python
        # Finding or reusing an environment is waited for whole (a loaded
        # machine can take seconds to check a cached one); a build, the share.
        building = asyncio.ensure_future(self.env_building.wait())
        try:
            await asyncio.wait({self.python, building}, return_when=asyncio.FIRST_COMPLETED)
        finally:
            building.cancel()
        if not self.python.done():
            await asyncio.wait({self.python}, timeout=max(0.0, self.env_wait_until - loop.time()))
        if self.env_deferred:  # another role handed it over meanwhile (the task is cancelled)
            return None
        if self.python.done():
            return await self.python
        # Stopped here (its lock released, its processes killed) and finished
        # by a detached builder, bounded and confined alike, for the next run.
        self.env_deferred = True
        self.python.cancel()
        with contextlib.suppress(BaseException):
            await self.python
        started = await asyncio.to_thread(spawn_background_build, project, self.request.runtime.nice)
        if started is not None:
            self.background_build, self.env_log = started
        self.bus.emit("progress", message="environment: " + (
            f"the build goes on in the background (log: {started[1]})" if started
            else "the build could not go on in the background; the next run resumes it"))
        return None

    def found_python(self) -> ProjectPython | None:
        task = self.python
        if task is None or not task.done() or task.cancelled() or task.exception() is not None:
            return None
        return task.result()


    def all_findings(self) -> list[Finding]:
        out: list[Finding] = []
        for name in self.runs:
            out.extend(self.found.get(name, []))
        return out

    def total_usage(self) -> Usage | None:
        """Tokens and cost of the session's agent roles; None when none ran."""
        return _total(self.usage.values())


def _total(usages: Iterable[Usage]) -> Usage | None:
    total: Usage | None = None
    for u in usages:
        total = total or Usage()
        total.prompt_tokens += u.prompt_tokens
        total.completion_tokens += u.completion_tokens
        total.cost_usd = round(total.cost_usd + u.cost_usd, 6)
        total.requests += u.requests
    return total


def _needs_python(role: Role) -> bool:
    """Roles that run the project's code or ask its interpreter (types)."""
    return role.executes_code or role.uses_project_python
