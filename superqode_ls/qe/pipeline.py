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
import time
from collections import Counter
from pathlib import Path
from typing import TYPE_CHECKING

from ..errors import EXIT_FAILED, SuperQodeError
from ..events import EventBus
from ..models import Interpreter, Patch, QualityReport, utcnow
from ..workspace import patchseal
from ..workspace.artifacts import Artifacts
from ..workspace.errors import CreationAborted, WorkspaceError
from ..workspace.paths import new_session_id
from .ahead import AFTER_START, import_ahead
from .request import ISOLATIONS, MODES, QERequest, Resolved, resolve_request
from .session_control import SessionControl

# What a session needs only once it has started (the sandbox, the roles, the
# filter, verification, the report's writing) is imported where it is used,
# after ``session_start``: a new ``superqe run`` process then reaches that
# event -- which begins its warm bandit -- before it pays for these imports,
# and they run beside bandit's start instead of ahead of it.
if TYPE_CHECKING:
    from ..workspace.session import IsolatedSession
    from . import delta
    from .finish import PatchFiles
    from .noise import NoiseResult
    from .noise_context import EarlyContext
    from .role_runs import RoleRuns
    from .roles.base import SandboxSession
    from .stamp import Stamp

# AFTER_START: the modules imported here only where they are used; a
# language server imports them ahead of its first run
# (engine.roles.prewarm_roles), a session's own thread beside its sandbox's
# making (import_ahead); qe/ahead.py keeps the one list.
__all__ = ["AFTER_START", "ISOLATIONS", "MODES", "QERequest", "QESession", "SessionFailed",
           "resolve_request"]

log = logging.getLogger(__name__)


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
        self.control = SessionControl(self.id)  # the cancel switch and the budget
        self._role_runs: RoleRuns | None = None
        self._epoch_moved = False
        self._base: delta.BaseRun | None = None  # --since: the merge-base's run
        self._timings: dict[str, float] = {}  # step -> seconds (the report's ``timings``)

    @property
    def role_runs(self) -> RoleRuns:
        """The session's roles, their runs and findings: made on first use
        (after ``session_start``, or for ``--since`` before it)."""
        if self._role_runs is None:
            from .role_runs import RoleRuns

            self._role_runs = RoleRuns(self.id, self.request, self.bus, self.control)
        return self._role_runs

    # ----------------------------------------------------------------- control
    def cancel(self) -> None:
        """Stop the session: partial results saved, sandbox reverted."""
        self.control.cancel()
        if self._base is not None:
            self._base.cancel()

    @property
    def cancelled(self) -> bool:
        return self.control.cancel_requested

    # -------------------------------------------------------------------- run
    async def run(self) -> QualityReport:
        res = resolve_request(self.request)
        self.control.loop = asyncio.get_running_loop()
        if self.request.since:
            from . import delta

            since = await asyncio.to_thread(delta.resolve_since, res.project, self.request.since)
            self._base = delta.BaseRun(since, self.request, QESession)
            self.role_runs.since_lines = since.lines
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
        artifacts = Artifacts(
            res.project, self.id, keep_runs=res.config.workspace.keep_artifact_runs,
            run_id=self.request.part_of, on_prune=lambda sids: patchseal.drop(res.project, sids))
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
        from ..workspace import namespaces

        # After session_start: what its listeners begin on it (the CLI's warm
        # bandit, which the security role waits for) starts while this lists
        # and stats the user's files; still before the sandbox reads them.
        # Beside it, the namespace sandbox's one probe of this process (a
        # sandboxed ``true``), which the sandbox's making would wait for: it
        # starts first; the session's later imports are made in a thread
        # while it, the stamp's listing and the sandbox's making run.
        probe = asyncio.ensure_future(asyncio.to_thread(namespaces.backend))
        import_ahead(res.roles)
        from .stamp import Stamp

        stamp, _ = await asyncio.gather(
            asyncio.to_thread(Stamp, res.project, res.files, self.request.overlays), probe)
        self.role_runs.tree_files = len(stamp.files)
        noise: NoiseResult | None = None
        failure: str | None = None
        isolation = res.isolation or "auto"
        base_commit = None
        # Bad input (ConfigError / WorkspaceError) propagates from here with
        # nothing created.
        sandbox_session: IsolatedSession | None = None
        aborted: CreationAborted | None = None
        early: asyncio.Future[PatchFiles] | None = None  # the patch files, written beside the revert
        # The budget is the whole session's, from here: the sandbox, the
        # roles, the filter, verification, the revert and the report. The
        # roles stop early enough to leave the steps after them their share.
        loop = asyncio.get_running_loop()
        began = min(t0, self.request.started or t0)  # the CLI's own start included
        deadline = loop.time() - (time.monotonic() - began) + res.budget
        roles_deadline = deadline - tail_reserve(res.budget)
        # The filter and verification stop here, leaving the revert, the
        # report and the command's own output and exit their share.
        steps_deadline = deadline - end_reserve(res.budget)
        lap = self._lap("start", t0)
        try:
            sandbox_session = await self._create_sandbox(res)
            # SuperQode's own leftovers of the session (its private folder,
            # its snapshot refs) are removed while the report is made and
            # written; waited for before the session is said complete.
            sandbox_session.defer_leftovers = True
        except CreationAborted as e:
            aborted = e  # nothing to revert: its verification is all there is
        lap = self._lap("sandbox", lap)
        try:
            if aborted is not None:
                raise aborted
            assert sandbox_session is not None
            async with sandbox_session as s:
                # Imported beside the sandbox's making (import_ahead); here,
                # where a failure still reverts the sandbox.
                from .finish import epoch_moved, sandbox_root
                from .noise import NoiseResult, unfiltered

                isolation = s.isolation
                base_commit = s.base_commit
                root = sandbox_root(s, res.project)
                if self._early_verify_wanted(res):
                    from .verify_early import EarlyVerify

                    self.role_runs.early_verify = EarlyVerify(
                        session=s, root=root, deadline=steps_deadline,
                        cap=res.config.qe.verify_max_fixes, trusted=self.request.trusted)
                try:
                    # The roles return by their deadline (role_time.finish_reserve);
                    # their findings still being recorded then may take half of
                    # the filter's share before the session is out of time.
                    await self.control.guarded(
                        self.role_runs.run_all(res, s, root, artifacts, roles_deadline),
                        roles_deadline + max(0.0, (steps_deadline - roles_deadline) / 2))
                    checked_early = await self.role_runs.early_context()
                    lap = self._lap("roles", lap)
                    known = await self._base.known() if self._base is not None else None
                    lap = self._lap("since_base_wait", lap) if known is not None else lap
                    # Filtering, the report and the artifacts read and write files:
                    # in threads, so a language server's event loop stays free.
                    noise = await asyncio.to_thread(self._filter, res, root, known, steps_deadline,
                                                    checked_early)
                    lap = self._lap("filter", lap)
                    for line in noise.notes():
                        emit("progress", message=line)
                    if not self.control.stopped:
                        await self.control.guarded(
                            self._verify(res, s, root, noise, steps_deadline), deadline, optional=True)
                    lap = self._lap("verify", lap)
                    early_verify = self.role_runs.early_verify
                    if early_verify is not None and early_verify.took is not None:
                        key = "verify_early" if early_verify.taken else "verify_early_unused"
                        self._timings[key] = early_verify.took
                except Exception as e:  # a bug in a role or here: report, still revert
                    log.exception("QE session %s failed", self.id)
                    failure = f"{type(e).__name__}: {e}"
                    if noise is None:
                        try:
                            noise = self._filter(res, root)
                        except Exception:  # noqa: BLE001 - the first error is the one to report
                            # nothing found is lost: the roles' findings as they
                            # came, marked as never filtered
                            noise = NoiseResult(findings=unfiltered(self.role_runs.all_findings()))
                finally:
                    await self.role_runs.early_context()  # its threads read the sandbox
                    if self.role_runs.probe is not None:  # never outlives the sandbox
                        await self.role_runs.probe.close()
                    if self.role_runs.early_verify is not None:  # nor does its re-run
                        await self.role_runs.early_verify.close()
                self._epoch_moved = epoch_moved(s)
                if failure is None and noise is not None and self.request.save_artifacts:
                    # The patch files and seals need nothing of the revert:
                    # written while it runs (its walk of the project leaves
                    # SuperQode's own folders out, and the seals live in
                    # SuperQode's home, which HOME's check leaves out too).
                    early = asyncio.ensure_future(asyncio.to_thread(
                        self._save_patches, res, noise, artifacts))
                lap = time.monotonic()
            lap = self._lap("revert", lap)
            verification = sandbox_session.verification
        except CreationAborted as e:
            verification = e.verification
        except (WorkspaceError, OSError) as e:
            verification = sandbox_session.verification if sandbox_session else None
            failure = failure or str(e)
        from .noise import NoiseResult

        report = await asyncio.to_thread(
            self._build_report, res, started, t0, isolation, base_commit,
            noise or NoiseResult(findings=[]), verification, stamp,
        )
        if failure and report.verdict == "pass":
            # a run that broke proves nothing: its report never claims a pass
            report.verdict = "conditional"
        lap = self._lap("report", lap)
        report.timings.update(self._timings)
        stop_collecting()
        try:
            written = await early if early is not None else None
            if blocked and self.request.save_artifacts:
                from .finish import blocked_log

                path = await asyncio.to_thread(artifacts.write_log, "guard", blocked_log(blocked))
                report.artifacts["guard_log"] = str(path)
            if self.request.save_artifacts:
                await asyncio.to_thread(self._save, res, report, artifacts, noise, written)
        except OSError as e:  # a full disk or a read-only project: say so, keep the report in memory
            failure = failure or f"cannot write the artifacts: {e}"
        if sandbox_session is not None:
            await asyncio.to_thread(sandbox_session.wait_leftovers)
        self._lap("save", lap)  # after the JSON was written: in memory and --timings only
        report.timings.update(self._timings, total=round(time.monotonic() - t0, 3))
        self.report = report
        # Thousands of events on a large tree: in a thread, so a Ctrl-C is
        # served at once (and stops the rest; the report file has them all).
        await asyncio.to_thread(self._publish_findings, report)
        if self.control.cancel_requested and not report.cancelled:
            # Ctrl-C while the report was written: the run ends as a stop
            # (exit 130) although the files hold every finding.
            report.cancelled = True
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
            if n % 64 == 0 and self.control.cancel_requested:
                return
            self.bus.emit("finding", finding=f.model_dump(mode="json", exclude_none=True))

    async def _create_sandbox(self, res: Resolved) -> IsolatedSession:
        from ..workspace.session import IsolatedSession

        sparse = await asyncio.to_thread(self._sparse, res)
        create = asyncio.ensure_future(
            IsolatedSession.create(
                res.project, config=res.config, mode=res.mode,
                isolation="sparse" if sparse else res.isolation,
                base_ref=self.request.base_ref, overlays=dict(self.request.overlays),
                bus=self.bus, session_id=self.id, abort=self.control.abort,
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
        from . import sparse_plan
        from .role_runs import why_not
        from .roles import role_class

        if not sparse_plan.allowed(res.project, res.files, self.request.overlays, res.config,
                                   isolation=res.isolation, base_ref=self.request.base_ref):
            return False
        for name in res.roles:
            try:
                role = role_class(name)()
            except (ImportError, AttributeError):
                continue  # skipped with the reason, runs nowhere
            if not role.file_local and why_not(role, res, self.request.trusted) is None:
                return False
        return True

    # ------------------------------------------------------- filter + verify
    def _filter(
        self, res: Resolved, sandbox: Path, known: Counter[str] | None = None,
        stop_at: float | None = None, early: EarlyContext | None = None,
    ) -> NoiseResult:
        """``stop_at`` (``time.monotonic()``, the event loop's clock): the
        filter's context step ends there (noise.filter_findings); ``early``:
        what it checked while the roles ran."""
        from . import noise_cache
        from .noise import FileLines, filter_findings

        baseline = None if self.request.update_baseline else res.baseline
        if known is not None:  # --since: what the merge-base had is not new
            baseline = known + (baseline or Counter())
        threshold, classes = res.config.qe.confidence_threshold, res.config.qe.path_classes
        view = res.config.qe.default_view
        settings = {"threshold": threshold, "path_classes": classes, "view": view,
                    "baseline": sorted(baseline.items()) if baseline else None}
        return noise_cache.cached(
            res.project, sandbox, self.role_runs.all_findings(), settings,
            lambda findings: filter_findings(
                findings, read_line=FileLines(sandbox), threshold=threshold, baseline=baseline,
                path_classes=classes, stop_at=stop_at, early=early, view=view),
            files=self.role_runs.tree_files)

    async def _verify(
        self, res: Resolved, s: SandboxSession, root: Path, noise: NoiseResult, deadline: float
    ) -> None:
        from . import verify_step
        from .verify_step import TEST_ROLE

        r = self.role_runs
        unit = r.runs.get(TEST_ROLE)
        full_suite = (res.mode == "deep" and TEST_ROLE in r.roles
                      and unit is not None and unit.status in ("ok", "failed"))
        await verify_step.verify(
            patches=r.patches, findings=noise.findings, roles=r.roles,
            contexts=r.contexts, found=r.found, session=s, root=root, deadline=deadline,
            cap=res.config.qe.verify_max_fixes, full_suite=full_suite,
            trusted=self.request.trusted, emit=self.bus.emit, python=r.found_python(),
            probe=r.probe, type_gate=self.request.type_gate, early=r.early_verify,
        )

    def _early_verify_wanted(self, res: Resolved) -> bool:
        """Fix verification may begin while roles still run: quick
        verification (no whole suite re-run), fixes to verify, a full sandbox."""
        from .verify_step import TEST_ROLE

        return (res.config.qe.verify_max_fixes > 0 and not self.control.stopped
                and (res.isolation or "auto") != "sparse"
                and not (res.mode == "deep" and TEST_ROLE in res.roles))

    # ----------------------------------------------------------------- report
    def _build_report(
        self, res: Resolved, started, t0: float, isolation: str, base_commit: str | None,
        noise: NoiseResult, verification, stamp: Stamp,
    ) -> QualityReport:
        from .finish import build_report

        r = self.role_runs
        with r.lock:
            report = build_report(
                session_id=self.id, res=res, started=started, t0=t0, isolation=isolation,
                base_commit=base_commit, noise=noise, verification=verification, stamp=stamp,
                runs=r.runs, patches=r.patches, timed_out=self.control.timed_out,
                cancelled=self.control.cancel_requested, epoch_moved=self._epoch_moved,
                interpreter=self._interpreter(res), usage=r.total_usage(),
            )
        if self.request.shard is not None:
            report.shard = "{}/{}".format(*self.request.shard)
        if self._base is not None:
            report.since = self._base.info(len(report.findings) if self._base.report else None)
        self.patches = {p.id: p for p in report.patches}
        return report

    def _interpreter(self, res: Resolved) -> Interpreter | None:
        py = self.role_runs.found_python()
        if py is None:
            return None
        return Interpreter(python=py.python, version=py.version, source=py.source,
                           label=py.label(res.project), note=py.note)

    def _save(self, res: Resolved, report: QualityReport, artifacts: Artifacts, noise: NoiseResult | None,
              written: PatchFiles | None = None) -> None:
        from .finish import save_report

        save_report(self.request, res, report, artifacts, noise, stop=lambda: self.control.cancel_requested,
                    written=written)

    def _save_patches(self, res: Resolved, noise: NoiseResult, artifacts: Artifacts) -> PatchFiles:
        """The report's patch files, baseline and seals (finish.save_patches)."""
        from .finish import kept_patches, save_patches

        r = self.role_runs
        with r.lock:
            patches = kept_patches(noise.findings, r.patches)
        return save_patches(self.request, res, patches, len(noise.findings), artifacts, noise,
                            stop=lambda: self.control.cancel_requested, hold=True)


def tail_reserve(budget: float) -> float:
    """What the roles leave of the budget to the steps after them (the
    findings filter, verification, the revert, the report): a share, so a
    large project's thousands of findings are filtered and written in time
    (sqlalchemy's took about 4 s of a quick run's 60 s on a loaded 2-core
    machine)."""
    return min(max(TAIL_SHARE * budget, TAIL_MIN_S), TAIL_MAX_S)


TAIL_SHARE, TAIL_MIN_S, TAIL_MAX_S = 0.15, 1.0, 120.0


def end_reserve(budget: float) -> float:
    """What the filter and verification leave of the budget to the steps
    after them: the revert, the report, the command's output and its exit
    (about 2.5 s on sqlalchemy's thousands of findings on a loaded 2-core
    machine; a fixed 3 s ended such runs at 59.5-60.1 s of 60)."""
    return min(max(END_SHARE * budget, END_MIN_S), END_MAX_S)


END_SHARE, END_MIN_S, END_MAX_S = 0.1, 3.0, 30.0
