"""On start, offer the interrupted sessions of this workspace:
Resume / Revert and discard / View changes (window/showMessageRequest)."""

from __future__ import annotations

import asyncio
import logging
from pathlib import Path
from typing import Any

from lsprotocol import types
from pygls.uris import from_fs_path

from .server import SuperQodeServer

log = logging.getLogger(__name__)

RESUME = "Resume"
REVERT = "Revert and discard"
VIEW = "View changes"
ACTIONS = {RESUME: "resume", REVERT: "revert", VIEW: "view"}
MAX_PROMPTS = 3


def session_root(folder: str) -> Path:
    """Sessions are kept per repository: a folder inside a git repository
    shares its repository's sessions."""
    from ..workspace.git import repo_root

    try:
        return (repo_root(Path(folder)) or Path(folder)).resolve()
    except Exception:
        return Path(folder)


def _interrupted(folders: list[str]) -> list[tuple[str, Any]]:
    from ..workspace import recovery

    out, seen = [], set()
    for folder in folders:
        for info in recovery.interrupted_sessions(session_root(folder)):
            if info.id not in seen:
                seen.add(info.id)
                out.append((folder, info))
    return out


async def offer_recovery(ls: SuperQodeServer) -> None:
    folders = ls.folder_paths()
    if not folders:
        return
    await asyncio.to_thread(_reap_quietly)
    found = await asyncio.to_thread(_interrupted, folders)
    for folder, info in found[:MAX_PROMPTS]:
        changes, (same, _line) = await asyncio.to_thread(_describe, info)
        what = f"{changes} change(s) in its sandbox" if changes is not None else "unknown changes"
        if same:
            state = "Your files are as they were when it started."
        elif same is False:
            state = "Your files changed since it started (SuperQode writes only to its sandbox)."
        else:
            state = "SuperQode wrote only to its sandbox."
        params = types.ShowMessageRequestParams(
            type=types.MessageType.Warning,
            message=(
                f"SuperQode: session {info.id} ({info.mode}) in {folder} was interrupted "
                f"({what}). {state}"
            ),
            actions=[types.MessageActionItem(title=t) for t in (RESUME, REVERT, VIEW)],
        )
        try:
            answer = await ls.window_show_message_request_async(params)
        except Exception as e:
            log.info("recovery prompt not answered: %s", e)
            continue
        title = getattr(answer, "title", None)
        if title in ACTIONS:
            try:
                result = await act(ls, info.id, ACTIONS[title])
                ls.log(f"SuperQode: {info.id}: {result.get('message', result)}")
            except Exception as e:
                ls.notify_user(f"SuperQode: {info.id}: {e}", types.MessageType.Error)


def _describe(info: Any) -> tuple[int | None, tuple[bool | None, str]]:
    from ..workspace import recovery

    return recovery.count_changes(info), recovery.verify(info)


def _reap_quietly() -> None:
    """Idle sandboxes and orphans go when a server starts (at most hourly)."""
    from ..workspace.reaper import maybe_reap

    try:
        maybe_reap()
    except Exception as e:  # noqa: BLE001 - never stop the server for this
        log.info("reaper skipped: %s", e)


def _find(session_id: str):
    from ..workspace import recovery

    return recovery.find_session(session_id)


async def discard_session(ls: SuperQodeServer, session_id: str) -> str:
    from ..workspace import recovery
    from ..workspace.errors import WorkspaceError
    from .commands import _fail

    try:
        info = await asyncio.to_thread(_find, session_id)
    except WorkspaceError as e:
        raise _fail(str(e)) from None
    if info.alive and session_id not in ls.runs:
        raise _fail(f"session {session_id} belongs to a running process (pid {info.record.pid})")
    await asyncio.to_thread(recovery.discard, info)
    # recovery.verify read the session's fingerprint before discard removed it.
    _, line = await asyncio.to_thread(recovery.verify, info)
    return line


async def act(ls: SuperQodeServer, session_id: str, action: str) -> dict[str, Any]:
    from ..workspace.errors import WorkspaceError
    from .commands import _fail

    try:
        info = await asyncio.to_thread(_find, session_id)
    except WorkspaceError as e:
        raise _fail(str(e)) from None
    if action == "revert":
        line = await discard_session(ls, session_id)
        return {"sessionId": session_id, "action": action, "message": f"discarded. {line}"}
    if action == "view":
        path = await asyncio.to_thread(_write_changes, info)
        uri = from_fs_path(str(path))
        if ls.client.show_document:
            try:
                await asyncio.wait_for(
                    ls.window_show_document_async(types.ShowDocumentParams(uri=uri, take_focus=True)),
                    30,
                )
            except Exception as e:
                log.info("showDocument failed: %s", e)
        return {"sessionId": session_id, "action": action, "uri": uri,
                "message": f"changes written to {path}"}
    # resume: keep the sandbox's changes as an artifact, drop the sandbox and run again.
    folder = None
    if info.repo:
        repo = Path(info.repo).resolve()
        folder = ls.folder_for_path(str(repo)) or next(
            (f for f in ls.folder_paths() if session_root(f) == repo), None
        )
    if folder is None:
        raise _fail(f"session {session_id} is not of this workspace")
    path = await asyncio.to_thread(_write_changes, info)
    await discard_session(ls, session_id)
    from .runs import start_run

    run = start_run(ls, folder, files=None, mode=info.mode if info.mode in ("quick", "deep") else "quick",
                    roles=None, trigger="command")
    return {"sessionId": session_id, "action": action, "newSessionId": run.id,
            "message": f"changes kept in {path}; started {run.id}"}


def _write_changes(info) -> Path:
    from ..workspace.artifacts import Artifacts
    from ..workspace.session import extract_patch

    diff = ""
    if info.record is not None:
        try:
            diff = extract_patch(info.record)
        except Exception as e:
            diff = f"# could not extract changes: {e}\n"
    repo = Path(info.repo) if info.repo else Path(info.record.repo)
    art = Artifacts(repo, info.id)
    art.prepare()
    return art.write_patch(f"{info.id}-interrupted", diff or "# no changes\n")
