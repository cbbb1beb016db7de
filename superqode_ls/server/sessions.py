"""Sessions on disk (this server's or an earlier process's): find, discard,
resume, write out their changes. Used by the session commands and by the
recovery prompt at start."""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import TYPE_CHECKING, Any

from lsprotocol import types
from pygls.uris import from_fs_path

from .base import session_root
from .errors import fail, request_error
from .runs import start_run
from .server import SuperQodeServer

if TYPE_CHECKING:
    from ..workspace.recovery import SessionInfo


async def find(session_id: str) -> SessionInfo:
    # The recovery module (and what it loads) only when a session is asked about.
    from ..workspace import recovery

    try:
        return await asyncio.to_thread(recovery.find_session, session_id)
    except Exception as e:
        raise request_error(e) from None


async def discard_session(ls: SuperQodeServer, session_id: str) -> str:
    from ..workspace import recovery

    info = await find(session_id)
    if info.alive and session_id not in ls.runs:
        raise fail(f"session {session_id} belongs to a running process (pid {info.record.pid if info.record else '?'})")
    try:
        await asyncio.to_thread(recovery.discard, info)
        # recovery.verify read the session's fingerprint before discard removed it.
        _, line = await asyncio.to_thread(recovery.verify, info)
    except Exception as e:
        raise request_error(e) from None
    return line


async def act(ls: SuperQodeServer, session_id: str, action: str) -> dict[str, Any]:
    info = await find(session_id)
    if action == "revert":
        line = await discard_session(ls, session_id)
        return {"sessionId": session_id, "action": action, "message": f"discarded. {line}"}
    if action == "view":
        path = await asyncio.to_thread(write_changes, info)
        uri = from_fs_path(str(path))
        if ls.client.show_document:
            try:
                await asyncio.wait_for(
                    ls.window_show_document_async(types.ShowDocumentParams(uri=uri, take_focus=True)),
                    30,
                )
            except Exception as e:
                ls.log(f"SuperQode: the editor did not show {path}: {e}")
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
        raise fail(f"session {session_id} is not of this workspace")
    path = await asyncio.to_thread(write_changes, info)
    await discard_session(ls, session_id)
    run = start_run(ls, folder, files=None, mode=info.mode if info.mode in ("quick", "deep") else "quick",
                    roles=None, trigger="command")
    return {"sessionId": session_id, "action": action, "newSessionId": run.id,
            "message": f"changes kept in {path}; started {run.id}"}


def write_changes(info: SessionInfo) -> Path:
    from ..workspace.artifacts import Artifacts
    from ..workspace.session import extract_patch

    diff = ""
    if info.record is not None:
        try:
            diff = extract_patch(info.record)
        except Exception as e:
            diff = f"# could not extract changes: {e}\n"
    repo = Path(info.repo or (info.record.repo if info.record else ""))
    art = Artifacts(repo, info.id)
    art.prepare()
    return art.write_patch(f"{info.id}-interrupted", diff or "# no changes\n")
