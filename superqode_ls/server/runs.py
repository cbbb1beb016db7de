"""Running a QE session for the editor: in the background, with the user's
unsaved buffers, progress, findings streamed as diagnostics, cancellable.

The engine (``qe.pipeline``) is imported when the first run starts, so the
server answers ``initialize`` without loading analyzers.
"""

from __future__ import annotations

import asyncio
import logging
import os
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from lsprotocol import types

from ..models import Finding, Patch, QualityReport
from ..workspace import landlock
from . import tracking
from .convert import model_range_to_points
from .progress import RunProgress
from .server import SuperQodeServer
from .store import Tracked

log = logging.getLogger(__name__)
EVENT_SLICE = 500


@dataclass(eq=False)
class Run:
    id: str
    folder: str
    files: list[str] | None
    mode: str
    roles: list[str] | None
    trigger: str  # "command" | "save" | "action"
    overlays: dict[str, bytes] = field(default_factory=dict)
    versions: dict[str, int | None] = field(default_factory=dict)  # uri -> version analysed
    since: str | None = None  # superqode.runQE {since}: only what the change introduced
    state: str = "starting"  # starting | running | done | cancelled | failed
    session: Any = None
    task: asyncio.Task | None = None
    report: QualityReport | None = None
    patches: dict[str, Patch] = field(default_factory=dict)
    findings: int = 0
    started: float = field(default_factory=time.monotonic)
    started_ns: int = field(default_factory=time.time_ns)  # wall clock, to compare mtimes
    first_finding_s: float | None = None
    error: str | None = None
    trusted: bool | None = None
    markdown: str | None = None
    cancel_requested: bool = False
    # While the editor is asked to create the progress token: a cancel then
    # waits for its answer, so a token the editor created always gets its end.
    announcing: bool = False

    @property
    def finished(self) -> bool:
        return self.state in ("done", "cancelled", "failed")

    def cancel(self) -> None:
        self.cancel_requested = True
        if self.session is not None:
            self.session.cancel()
        elif self.task is not None and not self.task.done() and not self.announcing:
            self.task.cancel()

    def describe(self) -> dict[str, Any]:
        return {
            "sessionId": self.id,
            "folder": self.folder,
            "mode": self.mode,
            "files": self.files,
            "state": self.state,
            "findings": self.findings,
            "verdict": self.report.verdict if self.report else None,
            "stale": self.report.stale if self.report else False,
            "trusted": self.trusted,
            "error": self.error,
        }


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
) -> Run:
    """Start a run now and return at once; the work continues in the background."""
    from ..workspace.paths import new_session_id

    overlays, versions = capture_overlays(ls, folder)
    run = Run(
        id=new_session_id(), folder=folder, files=files, mode=mode, roles=roles,
        trigger=trigger, overlays=overlays, versions=versions, since=since,
    )
    ls.runs[run.id] = run
    if not ls.protection_reported:
        ls.protection_reported = True
        _report_protection(ls)
    run.task = ls.background(_drive(ls, run), f"QE session {run.id}")
    from .watch import ensure_watcher

    ensure_watcher(ls, folder)
    return run


def _report_protection(ls: SuperQodeServer) -> None:
    level = landlock.protection_level()
    ls.log(f"SuperQode protection: {level}")
    if landlock.abi() is None:
        ls.notify_user(
            "SuperQode: this system has no kernel write barrier (Landlock); sessions are "
            "protected by the git guard only (workspace.require_barrier: true refuses to run)",
            types.MessageType.Warning)


async def _resolve_roles(ls: SuperQodeServer, run: Run) -> tuple[list[str] | None, bool]:
    """Roles to run and whether the folder is trusted (asking once if needed)."""
    from ..config import load_config
    from ..qe.roles import role_class
    from .trust import ask_trust, is_trusted_folder

    names = run.roles
    if names is None:
        cfg = await asyncio.to_thread(load_config, Path(run.folder))
        names = list(cfg.qe.quick_roles if run.mode == "quick" else cfg.qe.deep_roles)
    needs_trust = []
    for name in names:
        try:
            if role_class(name).executes_code:
                needs_trust.append(name)
        except Exception:
            needs_trust.append(name)  # cannot tell: treat as executing code
    trusted = is_trusted_folder(ls, run.folder)
    if not trusted and needs_trust:
        trusted = await ask_trust(ls, run.folder, needs_trust)
    if not trusted:
        dropped = [n for n in names if n in needs_trust]
        if dropped:
            ls.log(
                f"SuperQode: {run.folder} is not trusted; skipping {', '.join(dropped)} "
                "(they run the project's code)",
                types.MessageType.Warning,
            )
    return run.roles, trusted


def build_request(ls: SuperQodeServer, run: Run, roles: list[str] | None, trusted: bool):
    from ..qe.pipeline import QERequest

    settings = ls.settings_for(run.folder)
    return QERequest(
        project=Path(run.folder),
        mode=run.mode,
        roles=roles,
        files=run.files,
        overlays=run.overlays,
        isolation=settings.isolation,
        trusted=trusted,
        # The editor's provider choice for agent roles, over superqode.yaml.
        config_overrides={"agent": {"provider": settings.provider}} if settings.provider else {},
        python=settings.python,
        since=run.since,
    )


async def _drive(ls: SuperQodeServer, run: Run) -> None:
    progress = RunProgress(ls, f"superqode/{run.id}", run.cancel)
    what = ", ".join(run.files) if run.files else os.path.basename(run.folder)
    loop = asyncio.get_running_loop()
    loop_thread = threading.get_ident()
    try:
        run.announcing = True
        try:
            await progress.begin(f"SuperQode QE ({run.mode})", f"preparing {what}")
        finally:
            run.announcing = False
        if run.cancel_requested:
            raise asyncio.CancelledError
        roles, trusted = await _resolve_roles(ls, run)
        run.trusted = trusted
        if run.cancel_requested:
            raise asyncio.CancelledError
        from ..events import EventBus
        from ..qe.pipeline import QESession

        request = build_request(ls, run, roles, trusted)
        bus = EventBus(run.id)

        def sink(event) -> None:
            # Taken in right away (tens of microseconds a finding): the engine
            # emits a role's findings in one synchronous burst, and anything
            # deferred would wait behind its next synchronous step.
            if threading.get_ident() == loop_thread:
                _on_event(ls, run, progress, event)
            else:
                loop.call_soon_threadsafe(_on_event, ls, run, progress, event)

        bus.subscribe(sink)
        run.session = QESession(request, bus=bus, session_id=run.id)
        if run.cancel_requested:
            run.session.cancel()
        run.state = "running"
        try:
            report = await run.session.run()
        except Exception as e:
            report = getattr(e, "report", None)
            if report is None:
                raise
            run.error = str(e)
        run.report = report
        run.patches = dict(run.session.patches) or {p.id: p for p in report.patches}
        run.state = "cancelled" if report.cancelled else ("failed" if run.error else "done")
        await _finish(ls, run, report)
        await ls.publisher.drain()
        summary = _summary(run, report)
        progress.end(summary)
        ls.log(f"SuperQode: {summary}")
        _tell_verification(ls, run, report)
        if report.stale:
            ls.notify_user(
                f"SuperQode: files changed during session {run.id}; its findings are marked stale.",
                types.MessageType.Warning,
            )
        if run.error:
            ls.notify_user(f"SuperQode: session {run.id}: {run.error}", types.MessageType.Error)
    except asyncio.CancelledError:
        run.state = "cancelled"
        progress.end("cancelled")
        if not run.cancel_requested:
            raise
    except Exception as e:
        run.state = "failed"
        run.error = str(e).splitlines()[0] if str(e) else type(e).__name__
        log.exception("run %s failed", run.id)
        progress.end(f"failed: {run.error}")
        ls.notify_user(f"SuperQode: {run.error}", types.MessageType.Error)
    finally:
        ls.forget_disk_cache()
        ls.publisher.flush()
        ls.publisher.request_refresh(now=True)


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
    state = "cancelled" if report.cancelled else ("stale" if report.stale else report.verdict)
    return (
        f"session {run.id}: {len(report.findings)} finding(s), "
        f"{sum(1 for p in report.patches if p.verified)} verified fix(es), {state}"
    )


def _on_event(ls: SuperQodeServer, run: Run, progress: RunProgress, event) -> None:
    data = event.data
    kind = event.type
    if kind == "finding":
        try:
            finding = Finding.model_validate(data.get("finding") or {})
        except Exception as e:
            log.warning("bad finding event: %s", e)
            return
        t = make_tracked(ls, run, finding)
        progress.findings += 1
        run.findings += 1
        if t is not None:
            if run.first_finding_s is None:
                run.first_finding_s = time.monotonic() - run.started
            ls.store.add(t)
            ls.publisher.mark(t.uri)
        progress.report(progress.status(), now=False)
    elif kind == "role_start":
        progress.roles_started.append(str(data.get("role")))
        progress.report(f"{data.get('role')} started; {progress.status()}")
    elif kind == "role_complete":
        if data.get("role") not in progress.roles_started:
            progress.roles_started.append(str(data.get("role")))
        progress.roles_done += 1
        # The role's findings are all in: show them now, not after the engine's
        # next (possibly long) synchronous step.
        ls.publisher.flush(now=True)
        progress.report(
            f"{data.get('role')} {data.get('status')} ({data.get('findings', 0)} finding(s)); "
            f"{progress.status()}"
        )
        if data.get("status") in ("error", "ineffective") and data.get("reason"):
            # Why a role did nothing must reach the user, not only the report file.
            ls.log(f"SuperQode {data.get('role')} {data.get('status')}: {data.get('reason')}",
                   types.MessageType.Warning)
    elif kind == "progress":
        msg = data.get("message")
        if msg and str(msg).startswith("environment: tests:"):
            # The interpreter the project's code runs with: shown at once and
            # kept in the log (a coalesced progress line may be replaced).
            ls.log(f"SuperQode {msg}")
            progress.report(f"{msg}; {progress.status()}")
        elif msg:
            progress.report(f"{msg}; {progress.status()}", now=False)
    elif kind == "session_complete":
        run.markdown = data.get("markdown")


def make_tracked(ls: SuperQodeServer, run: Run, finding: Finding, *, run_stale: bool = False) -> Tracked | None:
    """Place a finding on the current text of its document (None: no file, or
    outside the workspace folder)."""
    if not finding.file:
        return None
    uri = ls.uri_for(run.folder, finding.file)
    if uri is None:
        return None
    lines = ls.current_lines(uri)
    sl, sc, el, ec = model_range_to_points(finding.range, lines)
    t = Tracked(
        finding=finding, session_id=run.id, uri=uri, folder=run.folder,
        sl=sl, sc=sc, el=el, ec=ec, run_stale=run_stale,
    )
    now = ls.document_version(uri)
    if uri in run.versions and now != run.versions[uri]:
        # The buffer changed since the run took it: only keep what still matches.
        tracking.reanchor([t], lines, strict=True)
    elif now is None and uri not in run.versions and ls.disk_changed_since(uri, run.started_ns):
        tracking.reanchor([t], lines, strict=False)
    return t


async def _finish(ls: SuperQodeServer, run: Run, report: QualityReport) -> None:
    """Replace what the run covered by its final (filtered, verified) findings."""
    if report.cancelled:
        # Keep what streamed in (a cancelled run proves nothing about the rest),
        # but say so if the files changed under it.
        if report.stale:
            for uri in ls.store.uris():
                for t in ls.store.get(uri):
                    if t.session_id == run.id and not t.run_stale:
                        t.run_stale = True
                        ls.store.touch(uri)
                        ls.publisher.mark(uri)
        return
    new = []
    for n, f in enumerate(report.findings, 1):
        # A finding that already streamed in keeps its position, which edits
        # made during the run have been moving; only its data is refreshed.
        uri = ls.uri_for(run.folder, f.file) if f.file else None
        t = ls.store.by_uri.get(uri, {}).get(f.id) if uri else None
        if t is not None and t.session_id == run.id:
            t.finding = f
            t.run_stale = report.stale
        else:
            t = make_tracked(ls, run, f, run_stale=report.stale)
        if t is not None:
            new.append(t)
        if n % EVENT_SLICE == 0:
            await asyncio.sleep(0)
    uris = None
    if run.files is not None:
        uris = [u for u in (ls.uri_for(run.folder, rel) for rel in run.files) if u]
    touched = ls.store.replace_scope(run.folder, uris, new)
    run.findings = len(report.findings)
    ls.publisher.mark(*touched)
