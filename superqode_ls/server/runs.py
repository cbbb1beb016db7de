"""Running a QE session for the editor: in the background, with the user's
unsaved buffers, progress, findings streamed as diagnostics, cancellable.

Findings are taken in as the engine emits them, through the same per-finding
filter the engine applies to its report (inline suppressions, the confidence
threshold, the baseline), so what the editor shows while a run goes is what it shows at the
end. A finished run hands its patches to its findings (``Tracked.patch``) and
lets go of the engine's session; the run registry then decides how long the run
itself is kept.

The engine (``qe.pipeline``) is imported when the first run starts, so the
server answers ``initialize`` without loading analyzers.
"""

from __future__ import annotations

import asyncio
import logging
import os
import threading
import time
from collections import Counter
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING

from lsprotocol import types

from ..models import Finding, QualityReport
from ..qe.display import agent_call_line, usage_line
from ..workspace import landlock, namespaces
from . import tracking
from .convert import model_range_to_points
from .details import fix_counts
from .errors import is_user_error, user_message
from .progress import RunProgress
from .registry import Run
from .run_report import combine, rewrite_report
from .server import SuperQodeServer
from .store import Tracked
from .watch import ensure_watcher

if TYPE_CHECKING:
    from ..config import Config

log = logging.getLogger(__name__)
EVENT_SLICE = 500


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
    ls.runs.add(run)
    if not ls.protection_reported:
        ls.protection_reported = True
        _report_protection(ls)
    run.task = ls.background(_drive(ls, run), f"QE session {run.id}")
    ensure_watcher(ls, folder)
    return run


def _report_protection(ls: SuperQodeServer) -> None:
    level = namespaces.protection_level()
    ls.log(f"SuperQode protection: {level}")
    if landlock.abi() is None:
        ls.notify_user(
            "SuperQode: this system has no kernel write barrier (Landlock); sessions are "
            "protected by the git guard only (workspace.require_barrier: true refuses to run)",
            types.MessageType.Warning)
    elif not namespaces.active():
        ls.log(f"SuperQode: no namespace sandbox ({namespaces.unavailable_reason()})")


def finding_filter(
    folder: str, overlays: dict[str, bytes], threshold: float, baseline: Counter[str] | None = None,
) -> Callable[[Finding], bool]:
    """Whether a streamed finding stays: the engine's own per-finding rules
    (inline suppression on its lines, confidence threshold), read against the
    text the run analysed (its buffers over the folder), then the baseline
    (each baselined id hides as many findings as it counts)."""
    from ..qe.noise import FileLines, filter_findings

    read_line = FileLines(folder, overlays)
    remaining = Counter(baseline or {})

    def keep(f: Finding) -> bool:
        # De-duplication and path classes need every finding: they stay the
        # report's work (path_classes={} turns that step off here).
        if not filter_findings([f], read_line=read_line, threshold=threshold,
                               path_classes={}).findings:
            return False
        if remaining[f.id] > 0:
            remaining[f.id] -= 1
            return False
        return True

    return keep


def _baseline(folder: str, cfg: Config, editor_path: Path | None = None) -> Counter[str] | None:
    """The folder's configured baseline (else the editor's, ``editor_path``);
    None when there is none or it cannot be read (the session then fails with
    the engine's own message)."""
    from ..qe import baseline as baseline_mod

    path = baseline_mod.resolve_path(Path(folder), None, cfg.qe.baseline) or editor_path
    if path is None:
        return None
    try:
        return baseline_mod.load(path)
    except Exception:  # noqa: BLE001 - reported by the session itself
        return None


async def _resolve_roles(ls: SuperQodeServer, run: Run, cfg: Config) -> tuple[list[str] | None, bool]:
    """Roles to run and whether the folder is trusted.

    Static roles never wait for the trust question: when some roles run the
    project's code and the folder is not trusted, this run goes on at once
    with the others and the question is asked alongside (``_trust_later``);
    only a run of nothing but such roles waits for the answer."""
    from ..qe.roles import role_class
    from .trust import SKIP_REASON, TRUST, ask_trust_answer, is_trusted_folder

    names = run.roles
    if names is None:
        names = list(cfg.qe.quick_roles if run.mode == "quick" else cfg.qe.deep_roles)
    needs_trust = []
    for name in names:
        try:
            if role_class(name).executes_code:
                needs_trust.append(name)
        except Exception:
            needs_trust.append(name)  # cannot tell: treat as executing code
    trusted = is_trusted_folder(ls, run.folder)
    if trusted or not needs_trust:
        return run.roles, trusted
    static = [n for n in names if n not in needs_trust]
    if static and run.folder not in ls.trust_declined:
        run.only_roles = set(static)
        run.trust_note = f"{', '.join(needs_trust)} wait(s) for the trust answer"
        run.next_roles = asyncio.get_running_loop().create_future()
        ls.background(_trust_later(ls, run, needs_trust), f"trust question for {run.id}")
        return run.roles, False
    answer = await ask_trust_answer(ls, run.folder, needs_trust)
    if answer == TRUST:
        return run.roles, True
    _say_skipped(ls, run.folder, needs_trust, SKIP_REASON[answer])
    return run.roles, False


def _sparse_first(ls: SuperQodeServer, run: Run, cfg: Config, roles: list[str] | None,
                  trusted: bool) -> list[str] | None:
    """A run on a few files whose roles mix file-local ones (lint, security)
    with ones that need the whole tree (tests): the file-local ones run now,
    in a sparse sandbox at the analyzers' speed, and the others follow in a
    session of their own once this one has ended (the trust split's way).
    Returns the roles this run runs."""
    from ..qe import sparse_plan

    if run.files is None or run.only_roles is not None or run.since or not trusted:
        return roles
    if not sparse_plan.allowed(Path(run.folder), run.files, run.overlays, cfg,
                               isolation=ls.settings_for(run.folder).isolation):
        return roles
    names = roles if roles is not None else list(
        cfg.qe.quick_roles if run.mode == "quick" else cfg.qe.deep_roles)
    plan = sparse_plan.split(names, cfg)
    if plan is None or not plan[0] or not plan[1]:
        return roles
    local, rest = plan
    run.only_roles = set(local)
    run.trust_note = f"{', '.join(rest)} run(s) next, in a full sandbox"
    run.next_roles = asyncio.get_running_loop().create_future()
    run.next_roles.set_result(rest)
    return local


def _say_skipped(ls: SuperQodeServer, folder: str, roles: list[str], reason: str) -> None:
    ls.log(
        f"SuperQode: {folder} is not trusted ({reason}); skipping {', '.join(roles)} "
        "(they run the project's code)",
        types.MessageType.Warning,
    )


async def _trust_later(ls: SuperQodeServer, run: Run, roles: list[str]) -> None:
    """Ask while the static roles run; on "Trust folder" the roles that run
    code are the run's next phase (after the static one: one sandbox at a time
    per folder), else they are skipped with the reason shown. Either way the
    run ends once, after the answer."""
    from .trust import SKIP_REASON, TRUST, ask_trust_answer

    answer = None
    try:
        answer = await ask_trust_answer(ls, run.folder, roles)
    finally:
        trusted = answer == TRUST
        if run.next_roles is not None and not run.next_roles.done():
            run.next_roles.set_result(roles if trusted else None)
    names = ", ".join(roles)
    if not trusted:
        run.trust_note = f"{names} skipped ({SKIP_REASON[answer]})"
        _say_skipped(ls, run.folder, roles, SKIP_REASON[answer])
        ls.notify_user(f"SuperQode: skipped {names}: the folder is not trusted "
                       f"({SKIP_REASON[answer]})", types.MessageType.Warning)
        return
    run.trust_note = f"{names} run(s) next"
    ls.log(f"SuperQode: {run.folder} trusted; session {run.id} runs {names} next")


def build_request(
    ls: SuperQodeServer, run: Run, roles: list[str] | None, trusted: bool,
    baseline: Path | None = None,
):
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
        baseline=baseline,
        # An automatic run per pause in typing writes no report files.
        save_artifacts=not run.quiet,
        runtime=ls.runtime,
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
        own_baseline = editor_baseline(run.folder, cfg)
        counts = await asyncio.to_thread(_baseline, run.folder, cfg, own_baseline)
        run.keep = finding_filter(run.folder, run.overlays, cfg.qe.confidence_threshold, counts)
        roles, trusted = await _resolve_roles(ls, run, cfg)
        roles = _sparse_first(ls, run, cfg, roles, trusted)
        run.trusted = trusted
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
        summary = _summary(run, report)
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
        run.keep = None
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
    from ..qe.pipeline import QESession

    loop = asyncio.get_running_loop()
    loop_thread = threading.get_ident()
    request = build_request(ls, run, roles, trusted, baseline)
    bus = EventBus(session_id)

    def sink(event) -> None:
        # Taken in right away (tens of microseconds a finding): the engine
        # emits a role's findings in one synchronous burst, and anything
        # deferred would wait behind its next synchronous step.
        if threading.get_ident() == loop_thread:
            _on_event(ls, run, progress, event)
        else:
            loop.call_soon_threadsafe(_on_event, ls, run, progress, event)

    bus.subscribe(sink)
    session = QESession(request, bus=bus, session_id=session_id)
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
        run.state = "done"
        return report
    from ..workspace.paths import new_session_id

    first_artifacts = dict(report.artifacts)
    first_roles = run.only_roles
    run.only_roles = set(roles)
    run.trust_note = None
    run.trusted = True
    second = await _phase(ls, run, progress, roles, True, baseline, new_session_id())
    await _finish(ls, run, second)
    run.only_roles = (first_roles or set()) | set(roles)
    whole = combine(report, second, cfg)
    run.findings = len(whole.findings)
    rewrite_report(run, whole, first_artifacts)
    return whole


def editor_baseline(folder: str, cfg: Config) -> Path | None:
    """The baseline "ignore this finding" writes (``.superqode/baseline.json``)
    applies to editor runs once it exists, unless ``qe.baseline`` names another."""
    from ..qe.baseline import DEFAULT_PATH

    path = Path(folder) / DEFAULT_PATH
    return path if cfg.qe.baseline is None and path.is_file() else None


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
    state = "cancelled" if report.cancelled else ("stale" if report.stale else report.verdict)
    line = (
        f"session {run.id}: {len(report.findings)} finding(s), "
        f"{fix_counts(report.patches)}, {state}"
    )
    if run.trust_note:
        line += f"; {run.trust_note}"
    used = usage_line(report.usage)
    if used:
        line += f"; {used}"
    return line


def _on_event(ls: SuperQodeServer, run: Run, progress: RunProgress, event) -> None:
    data = event.data
    kind = event.type
    if kind == "role_finding":  # as each role finds them; the report replaces them at the end
        try:
            finding = Finding.model_validate(data.get("finding") or {})
        except Exception as e:
            log.warning("bad finding event: %s", e)
            return
        if run.keep is not None and not run.keep(finding):
            return  # suppressed inline or below the threshold: the report drops it too
        t = make_tracked(ls, run, finding)
        progress.findings += 1
        run.findings += 1
        if t is not None:
            if run.first_finding_s is None:
                run.first_finding_s = time.monotonic() - run.started
            _keep_fix(ls, t)
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
        undone = data.get("status") in ("error", "failed", "timeout", "ineffective",
                                        "incomplete") or (
            data.get("status") == "skipped" and data.get("requested"))
        if undone and data.get("reason"):
            # Why a role did nothing must reach the user, not only the report file.
            ls.log(f"SuperQode {data.get('role')} {data.get('status')}: {data.get('reason')}",
                   types.MessageType.Warning)
    elif kind == "tool_call" and str(data.get("role", "")).startswith("agent_"):
        # 25-35 s of silence while an agent works reads as a hang: each call shows.
        progress.report(f"{data.get('role')}: {agent_call_line(data)}; {progress.status()}")
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


def _keep_fix(ls: SuperQodeServer, t: Tracked) -> None:
    """A finding shown again as a run streams it in keeps the fix it had
    until the run's end hands it the new one (or none): typing, which starts
    an automatic run at every pause, must not take the quick fix away from
    under the cursor meanwhile. The fix is still checked against the current
    text when offered."""
    old = ls.store.by_uri.get(t.uri, {}).get(t.id)
    if old is None or old.patch is None or t.patch is not None or not old.finding.fix_patch_id:
        return
    t.patch = old.patch
    if not t.finding.fix_patch_id:
        t.finding = t.finding.model_copy(update={"fix_patch_id": old.finding.fix_patch_id})


async def _finish(ls: SuperQodeServer, run: Run, report: QualityReport) -> None:
    """Replace what the run covered by its final (filtered, verified) findings,
    each carrying its fix."""
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
        _hand_patches(ls, run)
        return
    new = []
    for n, f in enumerate(report.findings, 1):
        # A finding that already streamed in keeps its position, which edits
        # made during the run have been moving; only its data is refreshed.
        where = ls.uri_for(run.folder, f.file) if f.file else None
        seen = ls.store.by_uri.get(where, {}).get(f.id) if where else None
        if seen is not None and seen.session_id == run.id:
            seen.finding = f
            seen.run_stale = report.stale
            new.append(seen)
        elif (made := make_tracked(ls, run, f, run_stale=report.stale)) is not None:
            new.append(made)
        if n % EVENT_SLICE == 0:
            await asyncio.sleep(0)
    uris = None
    if run.files is not None:
        uris = [u for u in (ls.uri_for(run.folder, rel) for rel in run.files) if u]
    touched = ls.store.replace_scope(run.folder, uris, new, run.only_roles)
    run.findings = len(report.findings)
    _hand_patches(ls, run)
    ls.publisher.mark(*touched)


def _hand_patches(ls: SuperQodeServer, run: Run) -> None:
    """Each finding of the run shown now takes its patch: a quick fix then
    needs nothing from the run, which may be dropped."""
    if not run.patches:
        return
    for uri in ls.store.uris():
        for t in ls.store.get(uri):
            if t.session_id == run.id and t.finding.fix_patch_id:
                t.patch = run.patches.get(t.finding.fix_patch_id)
