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
import os
import time
from dataclasses import dataclass, field
from pathlib import Path, PurePosixPath
from typing import Any

from ..config import Config, ConfigError, load_config
from ..events import EventBus
from ..models import Finding, Interpreter, Patch, QualityReport, RoleRun, summarize, utcnow
from ..workspace import landlock
from ..workspace.artifacts import Artifacts, check_superqode_dir, ensure_superqode_dir
from ..workspace.errors import WorkspaceError
from ..workspace.git import GitError, git, head_commit, repo_root, resolve_commit
from ..workspace.paths import check_home, new_session_id
from ..workspace.pyenv import ProjectPython
from ..workspace.pyenv_build import resolve_python
from . import baseline as baseline_mod
from .noise import FileLines, NoiseResult, filter_findings
from .report import compute_verdict, render_markdown, write_json
from .roles import REGISTRY, UnknownRole, role_class
from .roles.base import Role, RoleContext, RoleOutput
from .verifier import Verifier, patch_files

log = logging.getLogger(__name__)

MODES = ("quick", "deep")
ISOLATIONS = (None, "auto", "worktree", "snapshot")
TEST_ROLE = "unit_tester"


class SessionFailed(Exception):
    """The session could not complete; ``report`` holds what was saved."""

    def __init__(self, message: str, report: QualityReport | None = None):
        super().__init__(message)
        self.report = report


@dataclass
class QERequest:
    project: Path
    mode: str = "quick"  # "quick" | "deep"
    roles: list[str] | None = None  # None = the mode's roles from config
    files: list[str] | None = None  # restrict to these project-relative files
    overlays: dict[str, bytes] = field(default_factory=dict)  # unsaved editor buffers
    isolation: str | None = None  # None/"auto" | "worktree" | "snapshot"
    base_ref: str | None = None
    config_overrides: dict = field(default_factory=dict)
    trusted: bool = True  # False: roles with executes_code are skipped
    baseline: Path | None = None
    update_baseline: bool = False
    timeout: float | None = None
    python: str | None = None  # the interpreter the editor selected (roles.python wins)


@dataclass
class _Resolved:
    project: Path
    config: Config
    mode: str
    roles: list[str]
    explicit: bool
    files: list[str] | None
    isolation: str | None
    budget: float
    baseline_path: Path | None
    baseline: Any  # Counter[str] | None


def _norm_rel(project: Path, rel: str) -> str:
    p = Path(rel)
    if p.is_absolute():
        try:
            p = p.resolve().relative_to(project)
        except ValueError:
            raise ConfigError(f"file outside the project: {rel}") from None
    pure = PurePosixPath(p.as_posix())
    if ".." in pure.parts:
        raise ConfigError(f"file outside the project: {rel}")
    text = pure.as_posix()
    return text.removeprefix("./")


def resolve_request(req: QERequest) -> _Resolved:
    """Validate everything the user gave; raise before anything is created."""
    project = Path(req.project).expanduser()
    if not project.exists():
        raise WorkspaceError(f"no such project folder: {project}")
    if not project.is_dir():
        raise WorkspaceError(f"not a folder: {project}")
    project = project.resolve()
    config = load_config(project, req.config_overrides or None)
    if req.mode not in MODES:
        raise ConfigError(f"unknown mode {req.mode!r} (use quick or deep)")
    if req.isolation not in ISOLATIONS:
        raise ConfigError(f"unknown isolation {req.isolation!r} (use worktree or snapshot)")
    isolation = req.isolation or config.workspace.isolation
    if isolation == "auto":
        isolation = None
    _check_git_needs(project, isolation, req.base_ref)
    check_superqode_dir(project)
    check_home(project)
    explicit = req.roles is not None
    if explicit:
        names = list(dict.fromkeys(req.roles or []))
        if not names:
            raise ConfigError("no roles selected")
    else:
        names = list(dict.fromkeys(config.qe.quick_roles if req.mode == "quick" else config.qe.deep_roles))
    for name in names:
        if name not in REGISTRY:
            raise ConfigError(str(UnknownRole(name)))
    files = None
    if req.files is not None:
        files = list(dict.fromkeys(_norm_rel(project, f) for f in req.files))
    if req.timeout is not None and not req.timeout > 0:
        raise ConfigError(f"timeout must be a positive number of seconds (got {req.timeout})")
    budget = req.timeout or (config.qe.budgets.quick if req.mode == "quick" else config.qe.budgets.deep)
    path = baseline_mod.resolve_path(project, req.baseline, config.qe.baseline)
    if req.update_baseline and path is None:
        path = project / baseline_mod.DEFAULT_PATH
    counts = None
    if path is not None:
        if req.update_baseline:
            baseline_mod.check_writable(path)
        else:
            counts = baseline_mod.load(path)
    return _Resolved(project, config, req.mode, names, explicit, files, isolation, budget, path, counts)


def _check_git_needs(project: Path, isolation: str | None, base_ref: str | None) -> None:
    """--worktree and --base-ref need git: say so before the session starts
    (the sandbox layer checks again, with the same words)."""
    if isolation != "worktree" and not base_ref:
        return
    root = repo_root(project)
    if root is None:
        if base_ref:
            raise WorkspaceError("--base-ref needs a git repository")
        raise WorkspaceError(f"{project}: not a git repository; use --snapshot")
    if isolation == "worktree" and not base_ref and head_commit(root) is None:
        raise WorkspaceError(f"{root}: the repository has no commit yet; use --snapshot")
    if base_ref:
        try:
            resolve_commit(root, base_ref)
        except GitError:
            raise WorkspaceError(f"--base-ref: unknown revision {base_ref!r}") from None
        if isolation == "snapshot":
            raise WorkspaceError("--base-ref works with worktree isolation only")


def _session_factory():
    from ..workspace.session import IsolatedSession

    return IsolatedSession


class _Stamp:
    """What the user's files looked like when the session started (stat only),
    to tell at the end whether the results still describe them."""

    def __init__(self, project: Path, files: list[str] | None, overlays: dict[str, bytes]):
        self.project = project
        self.overlays = overlays
        self.files = files if files is not None else self._list(project)
        self.stats = {rel: self._stat(rel) for rel in self.files}

    @staticmethod
    def _list(project: Path) -> list[str]:
        if repo_root(project) is not None:
            out = git(["ls-files", "-z", "-co", "--exclude-standard", "--", "."], project, check=False)
            if out.returncode == 0:
                return [p for p in out.stdout.decode("utf-8", "surrogateescape").split("\0") if p]
        from .roles._common import walk_files

        return walk_files(project)

    def _stat(self, rel: str) -> tuple | None:
        try:
            st = os.lstat(self.project / rel)
        except OSError:
            return None
        return (st.st_size, st.st_mtime_ns, st.st_ctime_ns, st.st_mode)

    def changed(self) -> list[str]:
        out = []
        for rel, before in self.stats.items():
            now = self._stat(rel)
            if now == before:
                continue
            overlay = self.overlays.get(rel)
            if overlay is not None:  # the editor saved the buffer the session analysed
                try:
                    if (self.project / rel).read_bytes() == overlay:
                        continue
                except OSError:
                    pass
            out.append(rel)
        return out


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
        self._raw_patches: dict[str, Patch] = {}
        self._roles: dict[str, Role] = {}
        self._contexts: dict[str, RoleContext] = {}
        self._epoch_moved = False
        self._python: asyncio.Task[ProjectPython] | None = None

    # ----------------------------------------------------------------- control
    def cancel(self) -> None:
        """Stop the session: partial results saved, sandbox reverted."""
        self._cancel_requested = True
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

    async def _guarded(self, coro, deadline: float) -> None:
        """Run one phase under the session budget and the cancel switch."""
        loop = asyncio.get_running_loop()
        self._phase = asyncio.ensure_future(coro)
        if self._cancel_requested:
            self._phase.cancel()
        try:
            left = deadline - loop.time()
            done, _ = await asyncio.wait({self._phase}, timeout=max(0.0, left))
            if not done:
                self._timed_out = True
                self._phase.cancel()
            try:
                await self._phase
            except asyncio.CancelledError:
                if not (self._cancel_requested or self._timed_out):
                    raise
        finally:
            self._phase = None

    # -------------------------------------------------------------------- run
    async def run(self) -> QualityReport:
        res = resolve_request(self.request)
        self._loop = asyncio.get_running_loop()
        emit = self.bus.emit
        started = utcnow()
        t0 = time.monotonic()
        deadline = self._loop.time() + res.budget
        stamp = await asyncio.to_thread(_Stamp, res.project, res.files, self.request.overlays)
        artifacts = Artifacts(res.project, self.id)
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
        sandbox_session = await self._create_sandbox(res)
        try:
            async with sandbox_session as s:
                isolation = s.isolation
                base_commit = s.base_commit
                root = _sandbox_root(s, res.project)
                try:
                    await self._guarded(self._run_roles(res, s, root, artifacts, deadline), deadline)
                    # Filtering, the report and the artifacts read and write files:
                    # in threads, so a language server's event loop stays free.
                    noise = await asyncio.to_thread(self._filter, res, root)
                    if not (self._cancel_requested or self._timed_out):
                        await self._guarded(self._verify(res, s, root, noise, deadline), deadline)
                except Exception as e:  # a bug in a role or here: report, still revert
                    log.exception("QE session %s failed", self.id)
                    failure = f"{type(e).__name__}: {e}"
                    if noise is None:
                        try:
                            noise = self._filter(res, root)
                        except Exception:  # noqa: BLE001 - the first error is the one to report
                            noise = NoiseResult(findings=[])
                self._epoch_moved = _epoch_moved(s)
            verification = getattr(sandbox_session, "verification", None)
        except (WorkspaceError, OSError) as e:
            verification = getattr(sandbox_session, "verification", None)
            failure = failure or str(e)
        report = await asyncio.to_thread(
            self._build_report, res, started, t0, isolation, base_commit,
            noise or NoiseResult(findings=[]), verification, stamp,
        )
        try:
            await asyncio.to_thread(self._save, res, report, artifacts, noise)
        except OSError as e:  # a full disk or a read-only project: say so, keep the report in memory
            failure = failure or f"cannot write the artifacts: {e}"
        self.report = report
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

    async def _create_sandbox(self, res: _Resolved) -> Any:
        create = asyncio.ensure_future(
            _session_factory().create(
                res.project, config=res.config, mode=res.mode, isolation=res.isolation,
                base_ref=self.request.base_ref, overlays=dict(self.request.overlays),
                bus=self.bus, session_id=self.id,
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

    async def _find_python(self, res: _Resolved, root: Path) -> ProjectPython:
        self.bus.emit("progress", message="environment: looking for the project's Python")
        py = await resolve_python(
            res.project, root, res.config, editor=self.request.python,
            emit=lambda type, **data: self.bus.emit(type, **data),
        )
        line = py.label(res.project) + (f" ({py.note})" if py.note else "")
        self.bus.emit("progress", message=f"environment: {line}", interpreter=py.python,
                      source=py.source, version=py.version)
        return py

    # ------------------------------------------------------------------ roles
    async def _run_roles(
        self, res: _Resolved, s: Any, root: Path, artifacts: Artifacts, deadline: float
    ) -> None:
        total = len(res.roles)
        plain: list[tuple[str, Role]] = []
        modifying: list[tuple[str, Role]] = []
        for name in res.roles:
            try:
                role = role_class(name)()
            except (ImportError, AttributeError) as e:
                self._skip(name, f"role not available ({e})", total)
                continue
            reason = self._why_not(role, res)
            if reason:
                self._skip(name, reason, total)
                continue
            self._roles[name] = role
            (modifying if role.modifies_sandbox else plain).append((name, role))
        for name, _ in plain + modifying:
            self._runs[name] = RoleRun(role=name, status="cancelled", reason="not started")
        if self.request.trusted and any(_needs_python(r) for _, r in plain + modifying):
            # Found (or built) once, while the roles that need no interpreter
            # already run; probing runs programs from the project, so only
            # in trusted folders.
            self._python = asyncio.ensure_future(self._find_python(res, root))
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

    def _why_not(self, role: Role, res: _Resolved) -> str | None:
        if role.executes_code and not self.request.trusted:
            return "folder not trusted (this role runs the project's code)"
        if res.mode not in role.modes and not res.explicit:
            return f"not part of {res.mode} mode"
        return role.unavailable(res.config)

    def _skip(self, name: str, reason: str, total: int) -> None:
        self._runs[name] = RoleRun(role=name, status="skipped", reason=reason)
        self.bus.emit("role_complete", role=name, status="skipped", findings=0, duration_s=0.0, reason=reason)
        self._progress(total)

    def _progress(self, total: int) -> None:
        done = sum(1 for r in self._runs.values() if r.reason != "not started")
        self.bus.emit("progress", message=f"{done}/{total} roles done", done=done, total=total)

    async def _run_role(
        self, name: str, role: Role, res: _Resolved, s: Any, root: Path, artifacts: Artifacts,
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
        )
        self._contexts[name] = ctx
        started = utcnow()
        t0 = time.monotonic()
        self.bus.emit("role_start", role=name)
        status, reason, out = "ok", None, RoleOutput()
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
        await asyncio.to_thread(_poll_guard, s)
        self._finish_role(name, role, out, status, reason, started, t0, total, ctx.sandbox, res)

    def _finish_role(
        self, name: str, role: Role, out: RoleOutput, status: str, reason: str | None,
        started, t0: float, total: int, sandbox: Path, res: _Resolved,
    ) -> None:
        findings = [self._normalize(f, name, sandbox) for f in out.findings]
        if res.files is not None:
            wanted = set(res.files)
            findings = [f for f in findings if f.file is None or f.file in wanted]
        patches = [self._register_patch(p, name, findings) for p in out.patches]
        by_id = {f.id: f for f in findings}
        for p in patches:
            for fid in p.finding_ids:
                f = by_id.get(fid)
                if f is not None and f.fix_patch_id is None:
                    by_id[fid] = f.model_copy(update={"fix_patch_id": p.id})
        findings = [by_id.get(f.id, f) for f in findings]
        self._found[name] = findings
        for f in findings:
            self.bus.emit("finding", finding=f.model_dump(mode="json", exclude_none=True))
        duration = time.monotonic() - t0
        self._runs[name] = RoleRun(
            role=name, status=status, reason=reason, tool=out.tool or getattr(role, "tool", None),
            started_at=started, duration_s=round(duration, 3), findings=len(findings), patches=len(patches),
        )
        self.bus.emit(
            "role_complete", role=name, status=status, findings=len(findings),
            duration_s=round(duration, 3), reason=reason,
        )
        self._progress(total)

    @staticmethod
    def _normalize(f: Finding, role: str, sandbox: Path) -> Finding:
        update: dict[str, Any] = {}
        if f.file:
            rel = f.file.replace("\\", "/")
            p = Path(rel)
            if p.is_absolute():
                try:
                    rel = p.relative_to(sandbox).as_posix()
                except ValueError:
                    try:
                        rel = p.resolve().relative_to(sandbox.resolve()).as_posix()
                    except ValueError:
                        pass
            rel = rel.removeprefix("./")
            if rel != f.file:
                update["file"] = rel
        if not f.role:
            update["role"] = role
        if update:
            f = f.model_copy(update=update)
        return f.with_stable_id()

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
        p = p.model_copy(update=update) if update else p
        self._raw_patches[p.id] = p
        return p

    # ------------------------------------------------------- filter + verify
    def _all_findings(self) -> list[Finding]:
        out: list[Finding] = []
        for name in self._runs:
            out.extend(self._found.get(name, []))
        return out

    def _filter(self, res: _Resolved, sandbox: Path) -> NoiseResult:
        return filter_findings(
            self._all_findings(),
            read_line=FileLines(sandbox),
            threshold=res.config.qe.confidence_threshold,
            baseline=None if self.request.update_baseline else res.baseline,
            path_classes=res.config.qe.path_classes,
        )

    async def _verify(
        self, res: _Resolved, s: Any, root: Path, noise: NoiseResult, deadline: float
    ) -> None:
        wanted = {f.fix_patch_id for f in noise.findings if f.fix_patch_id}
        todo = [p for p in self._raw_patches.values() if p.id in wanted]
        if not todo:
            return
        tests = None
        if res.mode == "deep" and TEST_ROLE in self._roles and self._runs.get(TEST_ROLE, RoleRun(role="", status="skipped")).status in ("ok", "failed"):
            tests = TEST_ROLE
        verifier = Verifier(
            sandbox=root, roles=self._roles, contexts=self._contexts,
            findings_by_role=self._found, tests=tests, session=s, deadline=deadline,
        )
        done = 0
        self.bus.emit("progress", message=f"verifying {len(todo)} fix(es)", done=0, total=len(todo))

        def on_result(result) -> None:
            nonlocal done
            done += 1
            p = self._raw_patches[result.patch_id]
            self._raw_patches[p.id] = p.model_copy(
                update={"verified": result.verified, "verification": result.message}
            )
            self.bus.emit("progress", message=f"verifying fixes: {p.id} {'verified' if result.verified else 'not verified'}",
                          done=done, total=len(todo))

        await verifier.verify_many(todo, on_result)
        ok = sum(1 for p in todo if self._raw_patches[p.id].verified)
        self.bus.emit("progress", message=f"fixes verified: {ok} of {len(todo)}", done=len(todo), total=len(todo))

    # ----------------------------------------------------------------- report
    def _build_report(
        self, res: _Resolved, started, t0: float, isolation: str, base_commit: str | None,
        noise: NoiseResult, verification, stamp: _Stamp,
    ) -> QualityReport:
        patches = self._raw_patches
        findings = []
        for f in noise.findings:
            p = patches.get(f.fix_patch_id or "")
            if p is not None and p.verified and not f.verified:
                f = f.model_copy(update={"verified": True})
            findings.append(f)
        for name, run in self._runs.items():
            if run.reason == "not started":
                status = "timeout" if self._timed_out else "cancelled"
                self._runs[name] = run.model_copy(update={"status": status, "reason": f"not started ({status})"})
        used = {f.fix_patch_id for f in findings if f.fix_patch_id}
        # A patch goes with its findings (gone when they were filtered out);
        # one that fixes no finding (a generated test, say) stands alone.
        kept = [p for p in patches.values() if p.id in used or not p.finding_ids]
        self.patches = {p.id: p for p in kept}
        report = QualityReport(
            session_id=self.id,
            project=str(res.project),
            mode=res.mode,
            isolation=isolation or "auto",
            base_commit=base_commit,
            started_at=started,
            finished_at=utcnow(),
            duration_s=round(time.monotonic() - t0, 3),
            roles=list(self._runs.values()),
            findings=findings,
            patches=kept,
            summary=summarize(findings),
            suppressed=noise.suppressed + noise.below_threshold,
            baseline_filtered=noise.baseline_filtered,
            stale=self._epoch_moved or bool(stamp.changed()),
            cancelled=self._cancel_requested,
            timed_out=self._timed_out,
            verification=verification,
            protection=landlock.protection_level(),
            usage=_agent_usage(self.id),
            interpreter=self._interpreter(res),
        )
        report.verdict = _verdict(report, res.config)
        return report

    def _interpreter(self, res: _Resolved) -> Interpreter | None:
        task = self._python
        if task is None or not task.done() or task.cancelled() or task.exception() is not None:
            return None
        py = task.result()
        return Interpreter(python=py.python, version=py.version, source=py.source,
                           label=py.label(res.project), note=py.note)

    def _save(self, res: _Resolved, report: QualityReport, artifacts: Artifacts, noise: NoiseResult | None) -> None:
        artifacts.prepare()
        for p in report.patches:
            path = artifacts.write_patch(p.id, p.diff, finding_ids=p.finding_ids, verified=p.verified)
            report.artifacts[f"patch:{p.id}"] = str(path)
        if self.request.update_baseline and res.baseline_path is not None and noise is not None:
            if _inside(res.baseline_path, res.project / ".superqode"):
                ensure_superqode_dir(res.project)
            baseline_mod.save(res.baseline_path, noise.before_baseline)
            report.artifacts["baseline"] = str(res.baseline_path)
        when = report.started_at
        json_path = artifacts.report_path("json", when)
        md_path = artifacts.report_path("md", when)
        report.artifacts["json"] = str(json_path)
        report.artifacts["markdown"] = str(md_path)
        artifacts.write_report("md", render_markdown(report), when)
        artifacts.write_report("json", write_json(report), when)


def _needs_python(role: Role) -> bool:
    """Roles that run the project's code or ask its interpreter (types)."""
    return role.executes_code or getattr(role, "uses_project_python", False)


def _poll_guard(s: Any) -> None:
    """Publish git commands the sandbox guard refused (``git.blocked``) as
    roles finish, not only when the session ends."""
    poll = getattr(s, "guard_events", None)
    if poll is None:
        return
    try:
        poll()
    except (OSError, ValueError):
        log.warning("could not read the git guard's events", exc_info=True)


def _epoch_moved(s: Any) -> bool:
    """The watcher (language server) bumps the repository's change epoch when
    the user's files change; the session's lock remembers the epoch it began at."""
    lock = getattr(s, "lock", None)
    if lock is None:
        return False
    try:
        from ..workspace.coordinator import Coordinator

        return Coordinator(Path(s.project)).is_result_stale(lock)
    except (ImportError, OSError, WorkspaceError, ValueError):
        return False


def _sandbox_root(s: Any, project: Path) -> Path:
    """Where ``project`` is inside the sandbox: a folder inside a git
    repository is sandboxed with its whole repository."""
    top = Path(getattr(s, "project", project)).resolve()
    try:
        sub = project.resolve().relative_to(top)
    except ValueError:
        sub = Path()
    return Path(s.sandbox) / sub


def _inside(path: Path, root: Path) -> bool:
    try:
        Path(path).resolve().relative_to(root.resolve())
        return True
    except ValueError:
        return False


def _verdict(report: QualityReport, config: Config) -> str:
    return compute_verdict(report, config.qe.fail_on, config.qe.never_fail)


def _agent_usage(session_id: str):
    """Tokens and cost the session's agent roles spent, if any ran."""
    from ..agent.roles import session_usage

    return session_usage(session_id)
