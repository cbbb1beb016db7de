"""The QE pipeline: request -> resolve -> sandbox -> roles -> verify -> noise
filter -> Quality Report -> revert + artifacts.

One ``QESession`` per run; the CLI and the language server drive it the same
way and watch the same ``EventBus``. Bad input fails in ``resolve`` before
anything is created. After that nothing escapes without a revert: a timeout,
a cancel or a crashing role still leaves the partial results on disk and the
user's tree verified unchanged.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import threading
import time
from collections import Counter
from collections.abc import Iterable
from pathlib import Path
from typing import Any

from ..errors import EXIT_FAILED, SuperQodeError
from ..events import EventBus
from ..models import Finding, Interpreter, Patch, QualityReport, RoleRun, RoleStatus, Usage, utcnow
from ..workspace.artifacts import Artifacts
from ..workspace.errors import CreationAborted, WorkspaceError
from ..workspace.paths import new_session_id
from ..workspace.pyenv import ProjectPython
from ..workspace.pyenv_build import resolve_python
from ..workspace.session import IsolatedSession
from . import delta, shard, sparse_plan, verify_step
from .covering import SuiteProbe
from .finish import (
    Stamp,
    build_report,
    epoch_moved,
    normalize_finding,
    poll_guard,
    sandbox_root,
    save_report,
)
from .noise import FileLines, NoiseResult, filter_findings
from .request import ISOLATIONS, MODES, QERequest, Resolved, resolve_request
from .roles import role_class
from .roles._pyenv import wants_built_env
from .roles.base import Role, RoleContext, RoleOutput, SandboxSession
from .verifier import patch_files, suppression_reason

__all__ = ["ISOLATIONS", "MODES", "QERequest", "QESession", "SessionFailed", "resolve_request"]

log = logging.getLogger(__name__)
TEST_ROLE = verify_step.TEST_ROLE


class SessionFailed(SuperQodeError):
    """The session could not complete (exit 3); ``report`` holds what was
    saved, for the caller to show before the failure line."""

    exit_code = EXIT_FAILED
    report: QualityReport | None

    def __init__(self, message: str, report: QualityReport | None = None):
        super().__init__(message)
        self.report = report


class QESession:
    def __init__(
        self, request: QERequest, *, bus: EventBus | None = None, session_id: str | None = None
    ):
        self.request = request
        self.id = session_id or new_session_id()
        self.bus = bus or EventBus(self.id)
        if self.bus.session_id is None:
            self.bus.session_id = self.id
        self.report: QualityReport | None = None
        self.patches: dict[str, Patch] = {}
        self._cancel_requested = False
        self._timed_out = False
        self._loop: asyncio.AbstractEventLoop | None = None
        self._phase: asyncio.Task | None = None
        self._runs: dict[str, RoleRun] = {}
        self._found: dict[str, list[Finding]] = {}
        self._usage: dict[str, Usage] = {}  # what each model-driven role spent
        self._raw_patches: dict[str, Patch] = {}
        self._roles: dict[str, Role] = {}
        self._contexts: dict[str, RoleContext] = {}
        self._epoch_moved = False
        # Roles finish in worker threads (their findings are many on a large
        # tree); this keeps the shared tables consistent between them.
        self._lock = threading.Lock()
        self._abort = threading.Event()  # stops sandbox creation between its steps
        self._python: asyncio.Task[ProjectPython] | None = None
        self._probe: SuiteProbe | None = None
        self._base: delta.BaseRun | None = None  # --since: the merge-base's run
        self._timings: dict[str, float] = {}  # step -> seconds (the report's ``timings``)

    # ----------------------------------------------------------------- control
    def cancel(self) -> None:
        """Stop the session: partial results saved, sandbox reverted."""
        self._cancel_requested = True
        self._abort.set()
        if self._base is not None:
            self._base.cancel()
        loop = self._loop
        if loop is None or loop.is_closed():
            return
        try:
            running = asyncio.get_running_loop()
        except RuntimeError:
            running = None
        if running is loop:
            self._cancel_phase()
        else:
            loop.call_soon_threadsafe(self._cancel_phase)

    def _cancel_phase(self) -> None:
        if self._phase is not None and not self._phase.done():
            self._phase.cancel()

    @property
    def cancelled(self) -> bool:
        return self._cancel_requested

    async def _guarded(self, coro, deadline: float, optional: bool = False) -> None:
        """Run one phase under the session budget and the cancel switch.
        ``optional``: a phase whose work only adds to what was found (fix
        verification): out of time it stops, and the session has not timed
        out (its fixes stay "not verified")."""
        loop = asyncio.get_running_loop()
        self._phase = asyncio.ensure_future(coro)
        if self._cancel_requested:
            self._phase.cancel()
        try:
            left = deadline - loop.time()
            done, _ = await asyncio.wait({self._phase}, timeout=max(0.0, left))
            cut = False
            if not done:
                if optional:
                    cut = True
                    log.info("session %s: %s stopped at the budget", self.id, "fix verification")
                else:
                    self._timed_out = True
                self._phase.cancel()
            try:
                await self._phase
            except asyncio.CancelledError:
                if not (self._cancel_requested or self._timed_out or cut):
                    raise
        finally:
            self._phase = None

    # -------------------------------------------------------------------- run
    async def run(self) -> QualityReport:
        res = resolve_request(self.request)
        self._loop = asyncio.get_running_loop()
        if self.request.since:
            since = await asyncio.to_thread(delta.resolve_since, res.project, self.request.since)
            self._base = delta.BaseRun(since, self.request, QESession)
            if res.files is None:
                res.files = since.changed
            self._base.start()  # beside this session's own sandbox and roles
        try:
            return await self._run(res)
        finally:
            if self._base is not None:
                await self._base.close()

    def _lap(self, step: str, t: float) -> float:
        now = time.monotonic()
        self._timings[step] = round(self._timings.get(step, 0.0) + now - t, 3)
        return now

    async def _run(self, res: Resolved) -> QualityReport:
        emit = self.bus.emit
        started = utcnow()
        t0 = time.monotonic()
        stamp = await asyncio.to_thread(Stamp, res.project, res.files, self.request.overlays)
        artifacts = Artifacts(res.project, self.id)
        # Git commands the guard refused (most often the project's own tests
        # running git): kept in the session's log, beside the role logs.
        blocked: list[dict] = []
        stop_collecting = self.bus.subscribe(
            lambda e: blocked.append(e.data) if e.type == "git.blocked" else None)
        emit(
            "session_start",
            project=str(res.project),
            mode=res.mode,
            roles=res.roles,
            isolation=res.isolation or "auto",
            files=res.files,
        )
        noise: NoiseResult | None = None
        failure: str | None = None
        isolation = res.isolation or "auto"
        base_commit = None
        # Bad input (ConfigError / WorkspaceError) propagates from here with
        # nothing created.
        sandbox_session: IsolatedSession | None = None
        aborted: CreationAborted | None = None
        lap = self._lap("start", t0)
        try:
            sandbox_session = await self._create_sandbox(res)
        except CreationAborted as e:
            aborted = e  # nothing to revert: its verification is all there is
        lap = self._lap("sandbox", lap)
        # The budget is the roles' (and verification's): a large tree's
        # sandbox must not eat the time the fast roles need.
        deadline = asyncio.get_running_loop().time() + res.budget
        try:
            if aborted is not None:
                raise aborted
            assert sandbox_session is not None
            async with sandbox_session as s:
                isolation = s.isolation
                base_commit = s.base_commit
                root = sandbox_root(s, res.project)
                try:
                    await self._guarded(self._run_roles(res, s, root, artifacts, deadline), deadline)
                    lap = self._lap("roles", lap)
                    known = await self._base.known() if self._base is not None else None
                    lap = self._lap("since_base_wait", lap) if known is not None else lap
                    # Filtering, the report and the artifacts read and write files:
                    # in threads, so a language server's event loop stays free.
                    noise = await asyncio.to_thread(self._filter, res, root, known)
                    lap = self._lap("filter", lap)
                    if not (self._cancel_requested or self._timed_out):
                        await self._guarded(self._verify(res, s, root, noise, deadline), deadline,
                                            optional=True)
                    lap = self._lap("verify", lap)
                except Exception as e:  # a bug in a role or here: report, still revert
                    log.exception("QE session %s failed", self.id)
                    failure = f"{type(e).__name__}: {e}"
                    if noise is None:
                        try:
                            noise = self._filter(res, root)
                        except Exception:  # noqa: BLE001 - the first error is the one to report
                            noise = NoiseResult(findings=[])
                finally:
                    if self._probe is not None:  # never outlives the sandbox
                        await self._probe.close()
                self._epoch_moved = epoch_moved(s)
                lap = time.monotonic()
            lap = self._lap("revert", lap)
            verification = sandbox_session.verification
        except CreationAborted as e:
            verification = e.verification
        except (WorkspaceError, OSError) as e:
            verification = sandbox_session.verification if sandbox_session else None
            failure = failure or str(e)
        report = await asyncio.to_thread(
            self._build_report, res, started, t0, isolation, base_commit,
            noise or NoiseResult(findings=[]), verification, stamp,
        )
        lap = self._lap("report", lap)
        report.timings.update(self._timings)
        stop_collecting()
        try:
            if blocked and self.request.save_artifacts:
                path = await asyncio.to_thread(artifacts.write_log, "guard", _blocked_log(blocked))
                report.artifacts["guard_log"] = str(path)
            if self.request.save_artifacts:
                await asyncio.to_thread(self._save, res, report, artifacts, noise)
        except OSError as e:  # a full disk or a read-only project: say so, keep the report in memory
            failure = failure or f"cannot write the artifacts: {e}"
        self._lap("save", lap)  # after the JSON was written: in memory and --timings only
        report.timings.update(self._timings, total=round(time.monotonic() - t0, 3))
        self.report = report
        # Thousands of events on a large tree: in a thread, so a Ctrl-C is
        # served at once (and stops the rest; the report file has them all).
        await asyncio.to_thread(self._publish_findings, report)
        emit(
            "session_complete",
            verdict=report.verdict,
            summary=report.summary,
            report=report.artifacts.get("json"),
            markdown=report.artifacts.get("markdown"),
            stale=report.stale,
            verification=report.verification.line if report.verification else None,
            cancelled=report.cancelled,
            timed_out=report.timed_out,
            error=failure,
        )
        if failure:
            raise SessionFailed(failure, report)
        return report

    def _publish_findings(self, report: QualityReport) -> None:
        """The report's findings, as every other output has them (final
        severities, noise marked, most important first): one ``finding``
        event each, so a JSONL consumer reads the same report."""
        for n, f in enumerate(report.findings):
            if n % 64 == 0 and self._cancel_requested:
                return
            self.bus.emit("finding", finding=f.model_dump(mode="json", exclude_none=True))

    async def _create_sandbox(self, res: Resolved) -> IsolatedSession:
        sparse = await asyncio.to_thread(self._sparse, res)
        create = asyncio.ensure_future(
            IsolatedSession.create(
                res.project, config=res.config, mode=res.mode,
                isolation="sparse" if sparse else res.isolation,
                base_ref=self.request.base_ref, overlays=dict(self.request.overlays),
                bus=self.bus, session_id=self.id, abort=self._abort,
                files=res.files if sparse else None,
            )
        )
        try:
            return await asyncio.shield(create)
        except asyncio.CancelledError:
            # The sandbox is being made in a worker thread: let it finish,
            # then take it down, so a cancelled task leaves nothing behind.
            with contextlib.suppress(Exception):
                made = await create
                await made.close()
            raise

    def _sparse(self, res: Resolved) -> bool:
        """A sandbox of the requested files only (workspace/sparse.py): when
        the isolation is left to SuperQode, the sandbox is to hold the
        current state, and every role that will run reads single files only."""
        if not sparse_plan.allowed(res.project, res.files, self.request.overlays, res.config,
                                   isolation=res.isolation, base_ref=self.request.base_ref):
            return False
        for name in res.roles:
            try:
                role = role_class(name)()
            except (ImportError, AttributeError):
                continue  # skipped with the reason, runs nowhere
            if not role.file_local and self._why_not(role, res) is None:
                return False
        return True

    async def _find_python(self, res: Resolved, root: Path, build: bool) -> ProjectPython:
        self.bus.emit("progress", message="environment: looking for the project's Python")
        py = await resolve_python(
            res.project, root, res.config, editor=self.request.python,
            emit=lambda type, **data: self.bus.emit(type, **data), build=build,
            runtime=self.request.runtime,
        )
        line = py.label(res.project) + (f" ({py.note})" if py.note else "")
        self.bus.emit("progress", message=f"environment: {line}", interpreter=py.python,
                      source=py.source, version=py.version)
        return py

    # ------------------------------------------------------------------ roles
    async def _run_roles(
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
            reason = self._why_not(role, res)
            if reason:
                self._skip(name, reason, total, res.explicit)
                continue
            self._roles[name] = role
            (modifying if role.modifies_sandbox else plain).append((name, role))
        # Fast roles first: when slots are few or the budget short, the
        # quick analyzers finish and report instead of waiting behind a suite.
        plain.sort(key=lambda nr: nr[1].cost)
        for name, _ in plain + modifying:
            self._runs[name] = RoleRun(role=name, status="cancelled", reason="not started")
        if (self.request.trusted and res.config.qe.verify_max_fixes > 0 and s.isolation != "sparse"
                and not (res.mode == "deep" and TEST_ROLE in self._roles)):
            # Fix verification runs the tests importing a fixed file: whether
            # the suite can start at all is learnt now, beside the roles (a
            # sparse sandbox holds no tests: none run there).
            self._probe = verify_step.start_probe(RoleContext(
                session_id=self.id, project=res.project, sandbox=root, config=res.config,
                mode=res.mode, env=s.env(), artifacts=artifacts, deadline=deadline,
                trusted=True, session=s, runtime=self.request.runtime), res.config)
        if self.request.trusted and any(_needs_python(r) for _, r in plain + modifying):
            # Found (or built) once, while the roles that need no interpreter
            # already run; probing runs programs from the project, so only
            # in trusted folders.
            runs_code = [n for n, r in plain + modifying if r.executes_code]
            build = await asyncio.to_thread(wants_built_env, runs_code, root)
            self._python = asyncio.ensure_future(self._find_python(res, root, build))
        sem = asyncio.Semaphore(res.config.execution.max_parallel_roles)

        async def limited(name: str, role: Role) -> None:
            async with sem:
                await self._run_role(name, role, res, s, root, artifacts, deadline, total)

        try:
            await asyncio.gather(*(limited(n, r) for n, r in plain))
            for name, role in modifying:
                checkpoint = await s.checkpoint()
                try:
                    await self._run_role(name, role, res, s, root, artifacts, deadline, total)
                finally:
                    await asyncio.shield(s.restore(checkpoint))
        finally:
            # A build still running when the session stops is stopped with it.
            if self._python is not None and not self._python.done():
                self._python.cancel()
                with contextlib.suppress(BaseException):
                    await self._python

    def _why_not(self, role: Role, res: Resolved) -> str | None:
        if role.executes_code and not self.request.trusted:
            return "folder not trusted (this role runs the project's code)"
        if res.mode not in role.modes and not res.explicit:
            return f"not part of {res.mode} mode"
        return role.unavailable(res.config)

    def _skip(self, name: str, reason: str, total: int, requested: bool = False) -> None:
        self._runs[name] = RoleRun(role=name, status="skipped", reason=reason, requested=requested)
        self.bus.emit("role_complete", role=name, status="skipped", findings=0, duration_s=0.0,
                      reason=reason, requested=requested)
        self._progress(total)

    def _progress(self, total: int) -> None:
        done = sum(1 for r in self._runs.values() if r.reason != "not started")
        self.bus.emit("progress", message=f"{done}/{total} roles done", done=done, total=total)

    async def _run_role(
        self, name: str, role: Role, res: Resolved, s: SandboxSession, root: Path,
        artifacts: Artifacts,
        deadline: float, total: int,
    ) -> None:
        loop = asyncio.get_running_loop()
        role_deadline = deadline
        per_role = res.config.execution.role_timeout_s
        if per_role:
            role_deadline = min(deadline, loop.time() + per_role)
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
            lines=self._base.since.lines if self._base is not None else None,
            runtime=self.request.runtime,
        )
        self._contexts[name] = ctx
        started = utcnow()
        t0 = time.monotonic()
        self.bus.emit("role_start", role=name)
        status: RoleStatus = "ok"
        reason: str | None = None
        crashed = False
        out = RoleOutput()
        try:
            if self._python is not None and _needs_python(role):
                ctx.python = await self._python
            out = await asyncio.wait_for(role.run(ctx), timeout=max(0.0, role_deadline - loop.time()))
            status, reason = out.status, out.reason
        except TimeoutError:
            status, reason = "timeout", "role ran out of time"
        except asyncio.CancelledError:
            status = "timeout" if self._timed_out else "cancelled"
            reason = "session budget exhausted" if self._timed_out else "cancelled"
            if self._python is not None and not self._python.done() and _needs_python(role):
                reason += " while the project's environment was being built (the next run resumes it)"
            self._finish_role(name, role, out, status, reason, started, t0, total, ctx.sandbox, res)
            raise
        except Exception as e:
            log.exception("role %s crashed", name)
            status, reason = "error", f"{type(e).__name__}: {e}".splitlines()[0]
            crashed = True
        await asyncio.to_thread(poll_guard, s)
        # Thousands of findings to normalise and publish: a worker thread, so
        # a signal (or an editor's request) is served meanwhile. A cancel
        # waits for it (well under a second) so the tables stay whole.
        done = asyncio.ensure_future(asyncio.to_thread(
            self._finish_role, name, role, out, status, reason, started, t0, total, ctx.sandbox, res,
            crashed))
        try:
            await asyncio.shield(done)
        except asyncio.CancelledError:
            await done
            raise

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
        with self._lock:
            patches = [self._register_patch(p, name, findings) for p in out.patches]
        by_id = {f.id: f for f in findings}
        for p in patches:
            for fid in p.finding_ids:
                f = by_id.get(fid)
                if f is not None and f.fix_patch_id is None:
                    by_id[fid] = f.model_copy(update={"fix_patch_id": p.id})
        findings = [by_id.get(f.id, f) for f in findings]
        with self._lock:
            self._found[name] = findings
            if out.usage is not None:
                self._usage[name] = out.usage
        # As found, for progress (the editor shows them while the run goes):
        # severities not yet final. The report's findings go out as
        # ``finding`` events at the end (_publish_findings).
        for f in findings:
            self.bus.emit("role_finding", finding=f.model_dump(mode="json", exclude_none=True))
        self._runs[name] = RoleRun(
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
        while pid in self._raw_patches:
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
        self._raw_patches[p.id] = p
        return p

    # ------------------------------------------------------- filter + verify
    def _all_findings(self) -> list[Finding]:
        out: list[Finding] = []
        for name in self._runs:
            out.extend(self._found.get(name, []))
        return out

    def _filter(
        self, res: Resolved, sandbox: Path, known: Counter[str] | None = None
    ) -> NoiseResult:
        baseline = None if self.request.update_baseline else res.baseline
        if known is not None:  # --since: what the merge-base had is not new
            baseline = known + (baseline or Counter())
        return filter_findings(
            self._all_findings(),
            read_line=FileLines(sandbox),
            threshold=res.config.qe.confidence_threshold,
            baseline=baseline,
            path_classes=res.config.qe.path_classes,
        )

    async def _verify(
        self, res: Resolved, s: SandboxSession, root: Path, noise: NoiseResult, deadline: float
    ) -> None:
        unit = self._runs.get(TEST_ROLE)
        full_suite = (res.mode == "deep" and TEST_ROLE in self._roles
                      and unit is not None and unit.status in ("ok", "failed"))
        await verify_step.verify(
            patches=self._raw_patches, findings=noise.findings, roles=self._roles,
            contexts=self._contexts, found=self._found, session=s, root=root, deadline=deadline,
            cap=res.config.qe.verify_max_fixes, full_suite=full_suite,
            trusted=self.request.trusted, emit=self.bus.emit, python=self._found_python(),
            probe=self._probe,
        )

    def _found_python(self) -> ProjectPython | None:
        task = self._python
        if task is None or not task.done() or task.cancelled() or task.exception() is not None:
            return None
        return task.result()

    # ----------------------------------------------------------------- report
    def _build_report(
        self, res: Resolved, started, t0: float, isolation: str, base_commit: str | None,
        noise: NoiseResult, verification, stamp: Stamp,
    ) -> QualityReport:
        with self._lock:
            report = build_report(
                session_id=self.id, res=res, started=started, t0=t0, isolation=isolation,
                base_commit=base_commit, noise=noise, verification=verification, stamp=stamp,
                runs=self._runs, patches=self._raw_patches, timed_out=self._timed_out,
                cancelled=self._cancel_requested, epoch_moved=self._epoch_moved,
                interpreter=self._interpreter(res), usage=_total(self._usage.values()),
            )
        if self.request.shard is not None:
            report.shard = "{}/{}".format(*self.request.shard)
        if self._base is not None:
            report.since = self._base.info(len(report.findings) if self._base.report else None)
        self.patches = {p.id: p for p in report.patches}
        return report

    def _interpreter(self, res: Resolved) -> Interpreter | None:
        py = self._found_python()
        if py is None:
            return None
        return Interpreter(python=py.python, version=py.version, source=py.source,
                           label=py.label(res.project), note=py.note)

    def _save(self, res: Resolved, report: QualityReport, artifacts: Artifacts, noise: NoiseResult | None) -> None:
        save_report(self.request, res, report, artifacts, noise, stop=lambda: self._cancel_requested)


def _total(usages: Iterable[Usage]) -> Usage | None:
    """Tokens and cost of the session's agent roles; None when none ran."""
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
    return role.executes_code or getattr(role, "uses_project_python", False)


def _blocked_log(records: list[dict]) -> str:
    lines = [f"git commands blocked in the sandbox: {len(records)}"]
    for r in records:
        what = r.get("command") or " ".join(map(str, r.get("argv") or []))
        lines.append(f"{r.get('source', '?')} pid {r.get('pid', '?')} in {r.get('cwd', '?')}: "
                     f"{what}: {r.get('reason', '')}")
    return "\n".join(lines) + "\n"
