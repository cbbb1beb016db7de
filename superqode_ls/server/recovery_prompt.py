"""On start, offer the interrupted sessions of this workspace:
Resume / Revert and discard / View changes (window/showMessageRequest),
each the engine's action of the same name (``server/sessions.py``)."""

from __future__ import annotations

import asyncio
import logging
from typing import TYPE_CHECKING

from lsprotocol import types

from .base import session_root
from .errors import user_message
from .server import SuperQodeServer
from .sessions import act

if TYPE_CHECKING:
    from ..engine.sessions import SessionInfo

log = logging.getLogger(__name__)

RESUME = "Resume"
REVERT = "Revert and discard"
VIEW = "View changes"
ACTIONS = {RESUME: "resume", REVERT: "revert", VIEW: "view"}
MAX_PROMPTS = 3


def register(ls: SuperQodeServer) -> None:
    async def offer() -> None:
        ls.background(offer_recovery(ls), "recovery")

    ls.on_initialized.append(offer)


def _interrupted(folders: list[str]) -> list[tuple[str, SessionInfo]]:
    from ..engine import sessions

    out, seen = [], set()
    for folder in folders:
        for info in sessions.interrupted(session_root(folder)):
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
                ls.notify_user(f"SuperQode: {info.id}: {user_message(e)}", types.MessageType.Error)


def _describe(info: SessionInfo) -> tuple[int | None, tuple[bool | None, str]]:
    from ..engine import sessions

    return sessions.changes_of(info), sessions.verify(info)


def _reap_quietly() -> None:
    """Idle sandboxes and orphans go when a server starts (at most hourly)."""
    from ..engine.sessions import reap_if_due

    try:
        reap_if_due()
    except Exception as e:  # noqa: BLE001 - never stop the server for this
        log.info("reaper skipped: %s", e)
