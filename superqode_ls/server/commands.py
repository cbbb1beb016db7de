"""workspace/executeCommand: the ``superqode.*`` commands of the contract.

Arguments arrive as one object (``[{...}]``); bad arguments get an
InvalidParams error response, never a crash.
"""

from __future__ import annotations

import asyncio
import os
from pathlib import Path
from typing import Any, Literal

from lsprotocol import types
from pygls.exceptions import JsonRpcInvalidParams
from pygls.uris import from_fs_path, to_fs_path

from ..engine import projects, roles
from . import fix_all_scope, fixes, ignore, sessions
from .args import Args, parse
from .base import session_root
from .details import details, fix_counts
from .errors import fail
from .runs import start_run
from .server import SuperQodeServer


class RunQEArgs(Args):
    uri: str | None = None
    mode: Literal["quick", "deep"] | None = None
    roles: list[str] | None = None
    since: str | None = None  # only findings new since the merge-base with this ref
    # The agent roles' worker for this run: an ACP agent under agents:, or
    # "builtin" (the built-in loop); None: superqode.yaml's agent.worker.
    worker: str | None = None


class SessionArgs(Args):
    sessionId: str


class OptionalSessionArgs(Args):
    sessionId: str | None = None


class FixArgs(Args):
    findingId: str


class FindingArgs(Args):
    findingId: str


IgnoreArgs = FindingArgs


class FixAllArgs(Args):
    uri: str | None = None
    # Say the outcome with window/showMessage too: set by the code action's
    # command, whose result no editor shows (the editors' own commands read
    # the result and say it themselves).
    notify: bool = False


class ListRolesArgs(Args):
    uri: str | None = None  # a file or folder of the workspace: its folder's roles


class RecoverArgs(Args):
    sessionId: str
    action: Literal["resume", "recover", "revert", "view"]


def register(ls: SuperQodeServer) -> None:
    @ls.command("superqode.runQE")
    async def run_qe(ls: SuperQodeServer, *args):
        a = parse(RunQEArgs, args, "superqode.runQE")
        await ls.settings_ready()
        return start_from_args(ls, a, trigger="command")

    @ls.command("superqode.cancel")
    def cancel(ls: SuperQodeServer, *args):
        a = parse(SessionArgs, args, "superqode.cancel")
        run = ls.runs.get(a.sessionId)
        if run is None:
            if ls.runs.expired(a.sessionId):
                return {"sessionId": a.sessionId, "cancelled": False}
            raise fail(f"no running session {a.sessionId}")
        was_running = not run.finished
        run.cancel()
        return {"sessionId": run.id, "cancelled": was_running}

    @ls.command("superqode.applyFix")
    async def apply_fix(ls: SuperQodeServer, *args):
        a = parse(FixArgs, args, "superqode.applyFix")
        t = ls.store.find(a.findingId)
        if t is None:
            raise fail(f"no finding {a.findingId}")
        if t.stale:
            raise fail(f"finding {a.findingId} is stale: its code was edited since the run")
        if fixes.patch_of(ls, t) is None:
            if t.finding.fix_patch_id:
                # Its run was still going (fixes come with the run's end) or
                # the finding came from a run whose fixes were not handed over.
                raise fail(f"the fix for {a.findingId} is not available (run QE again)")
            raise fail(f"finding {a.findingId} has no fix")
        edit = fixes.fix_edit(ls, t)
        if edit is None:
            raise fail(f"the fix for {a.findingId} no longer fits the current code")
        applied = await _apply(ls, edit, f"SuperQode: fix {t.finding.rule_id}")
        if applied:
            fixes.forget_fixed(ls, [t])
        return {"applied": applied}

    @ls.command("superqode.applyAllFixes")
    async def apply_all(ls: SuperQodeServer, *args):
        a = parse(FixAllArgs, args, "superqode.applyAllFixes")
        if a.uri:
            return await apply_all_fixes(ls, [a.uri], notify=a.notify)
        return await apply_all_fixes(ls, ls.store.uris(), notify=a.notify, workspace=True)

    @ls.command("superqode.ignoreFinding")
    async def ignore_finding(ls: SuperQodeServer, *args):
        a = parse(IgnoreArgs, args, "superqode.ignoreFinding")
        t = ls.store.find(a.findingId)
        if t is None:
            raise fail(f"no finding {a.findingId}")
        # The folder's config is read and the file written off the event loop.
        path = await asyncio.to_thread(ignore.add_to_baseline, ls, t)
        ignore.forget(ls, t)
        # The finding leaves the editor at once: say where it went and how it
        # comes back, or an ignore looks like a fix.
        ls.notify_user(ignore.baseline_note(t, path))
        return {"findingId": t.id, "baseline": str(path)}

    @ls.command("superqode.showFinding")
    def show_finding(ls: SuperQodeServer, *args):
        # The default code action of a finding without a fix: says what it
        # is, changes nothing.
        a = parse(FindingArgs, args, "superqode.showFinding")
        t = ls.store.find(a.findingId)
        if t is None:
            raise fail(f"no finding {a.findingId}")
        text = details(ls, t, md=False)
        ls.window_show_message(types.ShowMessageParams(type=types.MessageType.Info, message=text))
        return {"findingId": t.id, "details": text}

    @ls.command("superqode.listSessions")
    def list_sessions(ls: SuperQodeServer, *args):
        return {"sessions": list_all(ls)}

    @ls.command("superqode.revertSession")
    async def revert(ls: SuperQodeServer, *args):
        a = parse(SessionArgs, args, "superqode.revertSession")
        run = ls.runs.get(a.sessionId)
        if run is not None:
            if run.finished:
                # Its sandbox went with its end: there is nothing to revert,
                # and the user's files were never touched by it.
                return {"sessionId": run.id, "reverted": False, "state": run.state,
                        "message": f"session {run.id} had already ended ({run.state}): "
                                   "its sandbox is gone, nothing to revert"}
            run.cancel()
            if run.task is not None:
                await asyncio.wait([run.task], timeout=60)
            return {"sessionId": run.id, "reverted": True, "state": run.state,
                    "message": f"session {run.id} cancelled; its sandbox is removed"}
        if ls.runs.expired(a.sessionId):
            # A run of this server that ended (its sandbox reverted then) and
            # was since let go by the registry: nothing to revert either.
            return {"sessionId": a.sessionId, "reverted": False, "state": "finished",
                    "message": f"session {a.sessionId} had already ended: "
                               "its sandbox is gone, nothing to revert"}
        line = await sessions.discard_session(ls, a.sessionId)
        return {"sessionId": a.sessionId, "reverted": True, "verification": line}

    @ls.command("superqode.showReport")
    async def show_report(ls: SuperQodeServer, *args):
        a = parse(OptionalSessionArgs, args, "superqode.showReport")
        path = report_path(ls, a.sessionId)
        if path is None:
            raise fail("no Quality Report yet" + (f" for {a.sessionId}" if a.sessionId else ""))
        uri = from_fs_path(path)
        if not ls.client.show_document:
            ls.notify_user(f"SuperQode: Quality Report at {path}")
            return {"uri": uri, "shown": False}
        try:
            res = await asyncio.wait_for(
                ls.window_show_document_async(types.ShowDocumentParams(uri=uri, take_focus=True)), 30
            )
            shown = bool(res and res.success)
        except Exception:
            shown = False
        return {"uri": uri, "shown": shown}

    @ls.command("superqode.listRoles")
    async def list_roles(ls: SuperQodeServer, *args):
        # The editors' role pickers: each role, whether it can run now and why not.
        from .role_list import list_roles

        a = parse(ListRolesArgs, args, "superqode.listRoles")
        await ls.settings_ready()
        return await list_roles(ls, a.uri)

    @ls.command("superqode.recover")
    async def recover(ls: SuperQodeServer, *args):
        a = parse(RecoverArgs, args, "superqode.recover")
        return await sessions.act(ls, a.sessionId, a.action)


def start_from_args(ls: SuperQodeServer, a: RunQEArgs, *, trigger: str) -> dict[str, Any]:
    unknown = roles.check_names(a.roles)  # light: names only
    if unknown:
        raise JsonRpcInvalidParams(f"superqode.runQE: {unknown}")
    if a.uri:
        if not a.uri.startswith("file:"):
            raise JsonRpcInvalidParams(f"superqode.runQE: not a file URI: {a.uri}")
        folder = ls.folder_for_uri(a.uri)
        if folder is None:
            raise fail(f"{a.uri} is outside the workspace folders")
        rel = ls.rel_path(folder, a.uri)
        files = None if rel in (None, ".", "") else [rel]
        if files and rel and Path(folder, rel).is_dir():
            files = None  # a folder URI: the whole folder
        targets = [(folder, files)]
    else:
        folders = ls.folder_paths()
        if not folders:
            raise fail("no workspace folder is open")
        targets = [(f, None) for f in folders]
    if a.worker:
        from .role_list import check_worker

        for folder, _ in targets:
            if why := check_worker(folder, a.worker):
                raise JsonRpcInvalidParams(f"superqode.runQE: {why}")
    ids = []
    for folder, files in targets:
        s = ls.settings_for(folder)
        run = start_run(ls, folder, files=files, mode=a.mode or s.mode,
                        roles=a.roles if a.roles is not None else s.roles, trigger=trigger,
                        since=a.since, worker=a.worker)
        ids.append(run.id)
    out: dict[str, Any] = {"sessionId": ids[0]}
    if len(ids) > 1:
        out["sessionIds"] = ids
    return out


FIX_ALL_PASSES = 3


async def apply_all_fixes(ls: SuperQodeServer, uris: list[str], *, notify: bool = False,
                          workspace: bool = False) -> dict[str, Any]:
    """Every verified safe fix of ``uris``, open or not: one edit per folder,
    then again for fixes that overlapped one just applied (they are read
    against the new text). The result (and a message) names the files and
    what was left out, with the reason.

    Over the ``workspace``, only what the user was shown (``fixes.shown``:
    no hints), and files no editor has open only once the user said so."""
    if workspace:
        uris = await fix_all_scope.confirm(ls, uris)
        if uris is None:
            result = {"applied": 0, "files": [], "skipped": [], "cancelled": True}
            if notify:
                ls.notify_user("SuperQode: Fix All cancelled; nothing changed.")
            return result
    applied: list = []
    files: dict[str, None] = {}
    refused: list = []
    left: list = []
    for _ in range(FIX_ALL_PASSES):
        batches, left = fixes.fix_all_batches(ls, uris, shown_only=workspace)
        if not batches:
            break
        moved = False
        for edit, tracked in batches:
            if await _apply(ls, edit, "SuperQode: apply all verified fixes"):
                fixes.forget_fixed(ls, tracked)
                applied.extend(tracked)
                files.update(dict.fromkeys(_edited_files(edit)))
                moved = True
            else:
                refused.extend(tracked)
        if not moved:
            break
    skipped = [_skip(t, "the editor refused the edit") for t in refused]
    skipped += [_skip(t, "the fix no longer fits the current code") for t in left
                if t not in refused]
    for uri in uris:
        for t in ls.store.visible(uri):
            if workspace and not fixes.shown(t):
                continue
            reason = fixes.skip_reason(ls, t, fixes.allows_unsafe(ls, uri))
            if reason is not None:
                skipped.append(_skip(t, reason))
    result = {"applied": len(applied), "files": list(files), "skipped": skipped,
              "relFiles": [fix_all_scope.rel(ls, f) for f in files],
              "counts": fix_counts(fixes.patch_of(ls, t) for t in applied
                                   if fixes.patch_of(ls, t) is not None)}
    if notify:
        ls.notify_user(f"SuperQode: {fix_all_line(result)}")
    return result


def fix_all_line(result: dict[str, Any]) -> str:
    n = result["applied"]
    text = f"applied {n} fix{'' if n == 1 else 'es'}"
    if result.get("counts"):
        text += f" ({result['counts']})"
    if result["files"]:
        text += " in " + ", ".join(result.get("relFiles") or result["files"])
    text += "."
    if result["skipped"]:
        parts = "; ".join(f"{s['rule']} in {s['file'] or '?'} ({s['reason']})"
                          for s in result["skipped"])
        text += f" Skipped {len(result['skipped'])}: {parts}."
    return text


def _skip(t, reason: str) -> dict[str, Any]:
    return {"findingId": t.id, "rule": t.finding.rule_id, "file": t.finding.file, "reason": reason}


def _edited_files(edit: types.WorkspaceEdit) -> list[str]:
    uris = [dc.text_document.uri for dc in edit.document_changes or []
            if isinstance(dc, types.TextDocumentEdit)]
    uris += list(edit.changes or {})
    return [p for p in (to_fs_path(u) for u in uris) if p]


async def _apply(ls: SuperQodeServer, edit: types.WorkspaceEdit, label: str) -> bool:
    if not ls.client.apply_edit:
        raise fail("the editor does not accept workspace/applyEdit")
    try:
        res = await asyncio.wait_for(
            ls.workspace_apply_edit_async(types.ApplyWorkspaceEditParams(edit=edit, label=label)),
            60,
        )
    except Exception as e:
        raise fail(f"the editor did not apply the edit: {e}") from None
    if not res.applied:
        ls.log(f"SuperQode: edit not applied: {res.failure_reason or 'refused'}")
    return bool(res.applied)


def list_all(ls: SuperQodeServer) -> list[dict[str, Any]]:
    # The automatic runs (live.py) are no sessions of the user's: not listed,
    # nor taken for leftovers on disk while they go.
    out = [run.describe() for run in ls.runs if not run.quiet]
    known = {run.id for run in ls.runs}
    try:
        from ..engine import sessions as on_disk

        for folder in ls.folder_paths():
            for info in on_disk.list_sessions(session_root(folder)):
                if info.id in known:
                    continue
                known.add(info.id)
                out.append({"sessionId": info.id, "folder": folder, "mode": info.mode,
                            "state": info.state, "onDisk": True})
    except Exception as e:  # listing what is on disk is best effort
        ls.log(f"SuperQode: could not scan sessions on disk: {e}")
    return out


def report_path(ls: SuperQodeServer, session_id: str | None) -> str | None:
    run = ls.runs.get(session_id)
    runs = [run] if run is not None else []
    if session_id is None:
        runs = ls.runs.finished_newest_first()
    for run in runs:
        md = run.markdown or (run.report.artifacts.get("markdown") if run.report else None)
        if md and os.path.isfile(md):
            return md
    # A session of an earlier server: look in each folder's artifacts.
    for folder in ls.folder_paths():
        qr = Path(folder, ".superqode", "qe-artifacts", "qr")
        try:  # listed without following a link the project planted
            names = projects.report_files(Path(folder), qr.relative_to(folder).parts)
        except OSError:
            continue
        cands = sorted(n for n in names if n.endswith(".md")
                       and (session_id is None or session_id in n))
        if cands:
            return str(qr / cands[-1])
    return None
