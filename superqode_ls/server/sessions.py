"""Sessions on disk (this server's or an earlier process's) for the
editor: find, revert, and the one recovery of ``engine.recovery`` — the same
functions, patch name and errors as ``superqe revert``/``recover``."""

from __future__ import annotations

import asyncio
from typing import TYPE_CHECKING, Any

from lsprotocol import types
from pygls.uris import from_fs_path

from ..engine import recovery, sessions
from .errors import fail, request_error
from .server import SuperQodeServer

if TYPE_CHECKING:
    from ..engine.sessions import SessionInfo

# superqode.recover's actions, each one engine function:
#   resume  -> recovery.resume         (superqe recover ID --resume)
#   recover -> recovery.recover        (superqe recover ID)
#   revert  -> sessions.revert         (superqe revert ID)
#   view    -> recovery.save_changes, then the patch is shown
ACTIONS = ("resume", "recover", "revert", "view")


async def find(session_id: str) -> SessionInfo:
    try:
        return await asyncio.to_thread(sessions.find, session_id)
    except Exception as e:
        raise request_error(e) from None


async def discard_session(ls: SuperQodeServer, session_id: str) -> str:
    """Revert a session on disk: its sandbox removed, the project verified;
    the verification line. A session another process still runs is refused
    (one of this server's own runs may go)."""
    info = await find(session_id)
    if info.alive and session_id not in ls.runs:
        pid = info.record.pid if info.record else "?"
        raise fail(f"session {session_id} belongs to a running process (pid {pid})")
    try:
        report = await asyncio.to_thread(sessions.revert, [info], force=True)
    except Exception as e:
        raise request_error(e) from None
    if report.errors:
        raise fail(f"{session_id}: {report.errors[0][1]}")
    return next((line for _sid, _ok, line in report.verifications),
                "not verified: no fingerprint was stored for this session")


async def _show(ls: SuperQodeServer, uri: str) -> None:
    if not ls.client.show_document:
        return
    try:
        await asyncio.wait_for(
            ls.window_show_document_async(types.ShowDocumentParams(uri=uri, take_focus=True)), 30)
    except Exception as e:
        ls.log(f"SuperQode: the editor did not show {uri}: {e}")


async def act(ls: SuperQodeServer, session_id: str, action: str) -> dict[str, Any]:
    if action not in ACTIONS:
        raise fail(f"superqode.recover: unknown action {action!r} ({', '.join(ACTIONS)})")
    if action == "revert":
        line = await discard_session(ls, session_id)
        return {"sessionId": session_id, "action": action, "message": f"discarded. {line}"}
    info = await find(session_id)
    do = {"resume": recovery.resume, "recover": recovery.recover,
          "view": recovery.save_changes}[action]
    try:
        result = await asyncio.to_thread(do, info)
    except Exception as e:
        raise request_error(e) from None
    out: dict[str, Any] = {"sessionId": session_id, "action": action,
                           "patch": str(result.patch) if result.patch else None,
                           "files": result.files, "kept": result.kept}
    saved = f"changes saved to {result.patch}" if result.patch else "no changes"
    if result.patch is not None:
        out["uri"] = from_fs_path(str(result.patch))
        if action in ("view", "resume"):
            await _show(ls, out["uri"])
    if action == "resume":
        out["sandbox"] = str(info.sandbox)
        out["message"] = (f"{saved}; its sandbox is kept at {info.sandbox} "
                          f"(superqe revert {session_id} removes it)")
    elif action == "recover":
        out["verification"] = result.line
        out["message"] = f"{saved}; removed. {result.line}".rstrip()
    else:
        out["message"] = saved
    return out
