"""What a run's engine events do in the editor: each finding placed on the
current text of its document as it streams in (``on_event``), the progress
line, and at the end the run's final findings in place of what it covered,
each with its fix (``finish``)."""

from __future__ import annotations

import asyncio
import logging
import time

from lsprotocol import types

from ..engine import reports, runs
from ..models import Finding, QualityReport
from . import tracking
from .convert import model_range_to_points
from .progress import RunProgress
from .registry import Run
from .server import SuperQodeServer
from .store import Tracked

log = logging.getLogger(__name__)
EVENT_SLICE = 500


def on_event(ls: SuperQodeServer, run: Run, progress: RunProgress, event) -> None:
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
        if run.shape is not None:
            # At the level the report gives it: 41 errors in tests/ flashed
            # in Problems on flask, to become hints at the run's end.
            finding = run.shape(finding)
        t = make_tracked(ls, run, finding)
        # Counted as the report will count it (one problem two tools report
        # is one finding): the progress, the end and the report say one number.
        if progress.count is None:
            progress.count = runs.problem_counter()
        progress.findings = run.findings = progress.count(finding)
        if t is not None:
            if run.first_finding_s is None:
                run.first_finding_s = time.monotonic() - run.started
            _keep_fix(ls, t)
            ls.store.add(t)
            ls.publisher.mark(t.uri)
        progress.report(progress.status(), now=False)
    elif kind == "session_start":
        progress.expect(data.get("roles") or [])
    elif kind == "role_start":
        progress.role_started(str(data.get("role")))
        progress.report(f"{data.get('role')} started; {progress.status()}")
    elif kind == "role_complete":
        # A role this phase leaves to the next (the trust answer's) is not
        # undone: the run's end says what became of it.
        later = run.next_roles is not None and run.only_roles is not None \
            and data.get("role") not in run.only_roles
        if later:
            progress.role_left(str(data.get("role")))
        else:
            progress.role_done(str(data.get("role")))
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
        if undone and data.get("reason") and not later:
            # Why a role did nothing must reach the user, not only the report file.
            ls.log(f"SuperQode {data.get('role')} {data.get('status')}: {data.get('reason')}",
                   types.MessageType.Warning)
    elif kind == "tool_call" and str(data.get("role", "")).startswith("agent_"):
        # 25-35 s of silence while an agent works reads as a hang: each call shows.
        progress.report(f"{data.get('role')}: {reports.agent_call_line(data)}; {progress.status()}")
    elif kind == "log" and data.get("level") == "warning" and str(data.get("role", "")).startswith(
            "agent_"):
        # Why an agent waits (a retry, a fallback, no streamed tool calls), as it happens.
        ls.log(f"SuperQode {data.get('role')}: {data.get('message')}", types.MessageType.Warning)
        progress.report(f"{data.get('role')}: {data.get('message')}; {progress.status()}")
    elif kind == "progress":
        msg = data.get("message")
        if msg and str(msg).startswith("environment: tests:"):
            # The interpreter the project's code runs with: shown at once and
            # kept in the log (a coalesced progress line may be replaced).
            ls.log(f"SuperQode {msg}")
            progress.report(f"{msg}; {progress.status()}")
        elif msg and str(msg).endswith(" roles done"):
            # The engine's role count ("1/2 roles done") is the status's own
            # first words: said once (Neovim showed "1/2 roles done; 1/2 roles done, ...").
            progress.report(progress.status(), now=False)
        elif msg:
            progress.report(f"{msg}; {progress.status()}", now=False)
    elif kind == "session_complete":
        # A later phase writes no report of its own: the run's stays.
        run.markdown = data.get("markdown") or run.markdown


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


async def finish(ls: SuperQodeServer, run: Run, report: QualityReport) -> None:
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
    # An automatic run analysed the buffer at a known version (edits since are
    # re-anchored by version): the save that started it moves the repository's
    # epoch under it, which says nothing about the text it read.
    stale = report.stale and not run.quiet
    new = []
    for n, f in enumerate(report.findings, 1):
        # A finding that already streamed in keeps its position, which edits
        # made during the run have been moving; only its data is refreshed.
        where = ls.uri_for(run.folder, f.file) if f.file else None
        seen = ls.store.by_uri.get(where, {}).get(f.id) if where else None
        if seen is not None and seen.session_id == run.id:
            seen.finding = f
            seen.run_stale = stale
            new.append(seen)
        elif (made := make_tracked(ls, run, f, run_stale=stale)) is not None:
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
