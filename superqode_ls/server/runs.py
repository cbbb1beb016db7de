"""Running a QE session for the editor: in the background, with the user's
unsaved buffers, progress, findings streamed as diagnostics, cancellable.

Findings are taken in as the engine emits them, through the same per-finding
filter the engine applies to its report (inline suppressions, the confidence
threshold, the baseline), so what the editor shows while a run goes is what it shows at the
end. A finished run hands its patches to its findings (``Tracked.patch``) and
lets go of the engine's session; the run registry then decides how long the run
itself is kept.

The run's request and session come from ``engine.runs`` (the pipeline is
imported when the first run starts, so the server answers ``initialize``
without loading analyzers); which roles run and when is ``run_trust``; what
each engine event does in the editor is ``run_events``.
"""

from __future__ import annotations

import asyncio
import logging
import os
import threading
from pathlib import Path
from typing import TYPE_CHECKING

from lsprotocol import types

from ..engine import reports, runs
from ..engine.protection import protection
from ..engine.runs import finding_filter  # noqa: F401 - the filter streamed findings go through
from ..models import QualityReport
from .details import fix_counts
from .errors import is_user_error, user_message
from .live_runtime import live_runtime
from .progress import RunProgress
from .registry import Run
from .role_list import agent_overrides
from .run_events import finish as _finish
from .run_events import on_event as _on_event
from .run_report import combine, rewrite_report
from .run_trust import resolve_roles, sparse_first
from .server import SuperQodeServer
from .watch import ensure_watcher

if TYPE_CHECKING:
    from ..config import Config

log = logging.getLogger(__name__)


def capture_overlays(ls: SuperQodeServer, folder: str) -> tuple[dict[str, bytes], dict[str, int | None]]:
    """The open buffers under ``folder`` that differ from disk: what the user sees."""
    overlays: dict[str, bytes] = {}
    versions: dict[str, int | None] = {}
    try:
        docs = list(ls.workspace.text_documents.values())
    except RuntimeError:
        return overlays, versions
    for doc in docs:
        if not doc.uri.startswith("file:"):
            continue
        rel = ls.rel_path(folder, doc.uri)
        if rel is None or rel.startswith("../"):
            continue
        versions[doc.uri] = doc.version
        data = doc.source.encode("utf-8", "surrogateescape")
        try:
            on_disk = Path(folder, rel).read_bytes()
        except OSError:
            on_disk = None
        if on_disk != data:
            overlays[rel] = data
    return overlays, versions


def start_run(
    ls: SuperQodeServer,
    folder: str,
    *,
    files: list[str] | None,
    mode: str,
    roles: list[str] | None,
    trigger: str,
    since: str | None = None,
    worker: str | None = None,
) -> Run:
    """Start a run now and return at once; the work continues in the background."""
    overlays, versions = capture_overlays(ls, folder)
    run = Run(
        id=runs.new_session_id(), folder=folder, files=files, mode=mode, roles=roles,
        trigger=trigger, overlays=overlays, versions=versions, since=since, worker=worker,
    )
    ls.runs.add(run)
    if not ls.protection_reported:
        ls.protection_reported = True
        _report_protection(ls)
    run.task = ls.background(_drive(ls, run), f"QE session {run.id}")
    ensure_watcher(ls, folder)
    return run


def _report_protection(ls: SuperQodeServer) -> None:
    here = protection()
    ls.log(f"SuperQode protection: {here.level}")
    if not here.kernel_barrier:
        ls.notify_user(
            "SuperQode: this system has no kernel write barrier (Landlock); sessions are "
            "protected by the git guard only (workspace.require_barrier: true refuses to run)",
            types.MessageType.Warning)
    elif not here.namespaces:
        ls.log(f"SuperQode: no namespace sandbox ({here.namespaces_missing})")


def build_request(
    ls: SuperQodeServer, run: Run, roles: list[str] | None, trusted: bool,
    baseline: Path | None = None, part_of: str | None = None,
):
    settings = ls.settings_for(run.folder)
    return runs.request(
        Path(run.folder),
        mode=run.mode,
        roles=roles,
        files=run.files,
        overlays=run.overlays,
        isolation=settings.isolation,
        trusted=trusted,
        # The editor's provider choice for agent roles, over superqode.yaml.
        config_overrides=agent_overrides(settings.provider, run.worker, run.folder),
        python=settings.python,
        since=run.since,
        baseline=baseline,
        # An automatic run per pause in typing writes no report files.
        save_artifacts=not run.quiet,
        # Nor does it type-check its fixes with the project's mypy: seconds
        # of CPU per pause in typing, beside the next change's run.
        type_gate=not run.quiet,
        # A later phase writes no report of its own: the run's one report,
        # merged, is written under the run's id (run_report.rewrite_report).
        part_of=part_of,
        # An automatic run's tools at the server's priority (live_runtime.py).
        runtime=live_runtime(ls.runtime) if run.quiet else ls.runtime,
    )


async def _drive(ls: SuperQodeServer, run: Run) -> None:
    progress = RunProgress(ls, f"superqode/{run.id}", run.cancel)
    what = ", ".join(run.files) if run.files else os.path.basename(run.folder)
    quiet = run.quiet  # an automatic run: no progress, no end message
    try:
        run.announcing = not quiet
        try:
            if not quiet:
                await progress.begin(f"SuperQode QE ({run.mode})", f"preparing {what}")
        finally:
            run.announcing = False
        if run.cancel_requested:
            raise asyncio.CancelledError
        from ..config import load_config

        cfg = await asyncio.to_thread(load_config, Path(run.folder))
        own_baseline = runs.editor_baseline(run.folder, cfg)
        counts = await asyncio.to_thread(runs.load_baseline, run.folder, cfg, own_baseline)
        run.keep = runs.finding_filter(run.folder, run.overlays, cfg.qe.confidence_threshold,
                                       counts)
        run.shape = runs.finding_shape(cfg.qe.path_classes)
        roles, trusted = await resolve_roles(ls, run, cfg)
        roles = sparse_first(ls, run, cfg, roles, trusted)
        run.trusted = trusted
        if run.next_roles is not None and run.next_roles.done():
            # The whole-tree roles that follow a file's: counted from the start.
            progress.expect(run.next_roles.result())
        if run.cancel_requested:
            raise asyncio.CancelledError
        report = await _phase(ls, run, progress, roles, trusted, own_baseline, run.id)
        more = run.next_roles is not None and run.state == "done"
        if more:
            run.state = "running"  # not over: a poll of listSessions must not see it ended
        await _finish(ls, run, report)
        if more:
            report = await _next_phases(ls, run, progress, report, cfg, own_baseline)
        run.report = report
        await ls.publisher.drain()
        summary = run.summary = _summary(run, report)
        progress.end(summary, tell=not quiet)
        if quiet:
            log.debug("live %s", summary)
        else:
            ls.log(f"SuperQode: {summary}")
        _tell_verification(ls, run, report)
        if report.stale and not quiet:  # a quiet run's newer edit has its own run
            ls.notify_user(
                f"SuperQode: files changed during session {run.id}; its findings are marked stale.",
                types.MessageType.Warning,
            )
        if run.error:
            _tell_error(ls, run, f"SuperQode: session {run.id}: {run.error}")
    except asyncio.CancelledError:
        run.state = "cancelled"
        progress.end(f"session {run.id} cancelled", tell=not quiet)
        if not run.cancel_requested:
            raise
    except Exception as e:
        run.state = "failed"
        run.error = user_message(e)
        if is_user_error(e):
            log.info("run %s failed: %s", run.id, run.error)
        else:
            log.exception("run %s failed", run.id)
        progress.end(f"failed: {run.error}", tell=False)  # said just below
        _tell_error(ls, run, f"SuperQode: {run.error}")
    finally:
        # What only a running session needs goes now; the registry decides
        # how long the rest (report, patches) is kept.
        run.session = None
        run.keep = run.shape = None
        run.overlays = {}
        ls.forget_disk_cache()
        ls.publisher.flush()
        ls.publisher.request_refresh(now=True)
        ls.runs.prune()


async def _phase(ls: SuperQodeServer, run: Run, progress: RunProgress, roles: list[str] | None,
                 trusted: bool, baseline: Path | None, session_id: str) -> QualityReport:
    """One engine session of the run (its first, or the roles that follow it
    in a full sandbox or after the trust answer): events into the run's one
    progress, its report and patches handed to the run."""
    from ..events import EventBus

    loop = asyncio.get_running_loop()
    loop_thread = threading.get_ident()
    request = build_request(ls, run, roles, trusted, baseline,
                            part_of=run.id if session_id != run.id else None)
    bus = EventBus(session_id)

    def sink(event) -> None:
        if log.isEnabledFor(logging.DEBUG):
            # Stamped as emitted (``-v --log-file``): where a slow squiggle's time went.
            log.debug("%s event %s %s", session_id, event.type,
                      {k: v for k, v in event.data.items() if k in ("role", "tool", "status", "phase", "warm")})
        # Taken in right away (tens of microseconds a finding): the engine
        # emits a role's findings in one synchronous burst, and anything
        # deferred would wait behind its next synchronous step.
        if threading.get_ident() == loop_thread:
            _on_event(ls, run, progress, event)
        else:
            loop.call_soon_threadsafe(_on_event, ls, run, progress, event)

    bus.subscribe(sink)
    session = runs.session(request, bus=bus, session_id=session_id)
    run.session = session
    if run.cancel_requested:
        session.cancel()
    run.state = "running"
    try:
        report = await session.run()
    except Exception as e:
        partial = getattr(e, "report", None)
        if partial is None:
            raise
        report = partial
        run.error = user_message(e)
    run.report = report
    run.patches.update(dict(session.patches) or {p.id: p for p in report.patches})
    run.session = None
    del session
    run.state = "cancelled" if report.cancelled else ("failed" if run.error else "done")
    return report


async def _next_phases(ls: SuperQodeServer, run: Run, progress: RunProgress, report: QualityReport,
                       cfg: Config, baseline: Path | None) -> QualityReport:
    """The roles that follow the first phase (the whole-tree roles of a file
    run, the roles the trust answer let run): one run to the user, so one
    progress, one end and one report that holds both phases."""
    if run.next_roles is None:
        run.state = "done"
        return report
    if not run.next_roles.done():
        progress.report(f"{run.trust_note}; {progress.status()}")
    roles = await run.next_roles
    run.next_roles = None
    if not roles or run.cancel_requested or ls.shutting_down:
        progress.none_left()
        run.state = "done"
        return report
    first_artifacts = dict(report.artifacts)
    first_roles = run.only_roles
    run.only_roles = set(roles)
    run.trust_note = None
    run.trusted = True
    second = await _phase(ls, run, progress, roles, True, baseline, runs.new_session_id())
    await _finish(ls, run, second)
    run.only_roles = (first_roles or set()) | set(roles)
    whole = combine(report, second, cfg)
    run.findings = len(whole.findings)
    rewrite_report(run, whole, first_artifacts)
    return whole


def _tell_error(ls: SuperQodeServer, run: Run, message: str) -> None:
    """A failed run is said in a pop-up; an automatic one only in the log,
    where a broken analyzer does not pop up at every pause in typing."""
    if run.quiet:
        ls.log(message, types.MessageType.Error)
    else:
        ls.notify_user(message, types.MessageType.Error)


def _tell_verification(ls: SuperQodeServer, run: Run, report: QualityReport) -> None:
    """A breach is an error the user must see; changes the barrier proves
    were the user's own are logged, never alarmed about."""
    v = report.verification
    if v is None:
        return
    if not v.verified:
        ls.notify_user(f"SuperQode: session {run.id}: {v.line}", types.MessageType.Error)
    elif v.outside_changes:
        ls.log(f"SuperQode: session {run.id}: {v.line}")


def _summary(run: Run, report: QualityReport) -> str:
    # The report's verdict, as its title says it; a stale run says so beside
    # it ("conditional, stale"), not in its place: one verdict everywhere.
    state = "cancelled" if report.cancelled else (
        f"{report.verdict}, stale" if report.stale else report.verdict)
    line = (
        f"session {run.id}: {len(report.findings)} finding(s), "
        f"{fix_counts(report.patches)}, {state}"
    )
    if report.verdict == "conditional" and not report.cancelled:
        # Why not "pass" when no finding says so: the roles that did not do their work.
        held = [f"{r.role} {r.status}" + (f": {r.reason[:120]}" if r.reason else "")
                for r in report.roles if reports.unfinished(r)]
        if held:
            line += " (" + "; ".join(held[:3]) + ")"
    if run.trust_note:
        line += f"; {run.trust_note}"
    used = reports.usage_line(report.usage)
    if used:
        line += f"; {used}"
    return line


