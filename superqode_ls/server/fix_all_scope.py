"""What a workspace Fix All may touch: files named by their path in the
workspace, and before it edits a file no editor has open, the user's yes
(``window/showMessageRequest``). No answer, or any other, edits nothing."""

from __future__ import annotations

import asyncio
import logging
import os

from lsprotocol import types
from pygls.uris import from_fs_path, to_fs_path

from . import fixes
from .server import SuperQodeServer

log = logging.getLogger(__name__)
EDIT_ALL, OPEN_ONLY, CANCEL = "Edit all files", "Open files only", "Cancel"
ANSWER_TIMEOUT_S = 300.0
NAMED = 8  # files named in the question; the rest are counted


def rel(ls: SuperQodeServer, path: str) -> str:
    """``path`` relative to its workspace folder (two files of one name in
    two folders stay apart); outside every folder, as given."""
    uri = from_fs_path(path) or path
    folder = ls.folder_for_uri(uri)
    if folder is None:
        return path
    return os.path.relpath(path, folder).replace(os.sep, "/")


async def confirm(ls: SuperQodeServer, uris: list[str]) -> list[str] | None:
    """The documents a workspace Fix All goes through: all of ``uris`` when
    every file it would edit is open (or the user says "Edit all files"), the
    open ones on "Open files only", None (cancelled) otherwise."""
    closed: list[str] = []
    for uri in uris:
        if ls.open_document(uri) is not None:
            continue
        if fixes.fixable(ls, uri, verified_only=True, allow_unsafe=fixes.allows_unsafe(ls, uri),
                         shown_only=True):
            closed.append(uri)
    if not closed:
        return uris
    names = sorted(rel(ls, p) for p in (to_fs_path(u) for u in closed) if p)
    listed = ", ".join(names[:NAMED]) + (f" and {len(names) - NAMED} more" if len(names) > NAMED else "")
    params = types.ShowMessageRequestParams(
        type=types.MessageType.Warning,
        message=f"SuperQode: Fix All would also edit {len(closed)} file(s) no editor has open: "
                f"{listed}. Edit them too?",
        # The narrow answer first: eglot pre-fills the first action, so a
        # bare Enter there must not widen the edit to files no one opened.
        actions=[types.MessageActionItem(title=t) for t in (OPEN_ONLY, EDIT_ALL, CANCEL)],
    )
    try:
        answer = await asyncio.wait_for(ls.window_show_message_request_async(params), ANSWER_TIMEOUT_S)
    except Exception as e:  # noqa: BLE001 - no answer is a no
        log.info("fix-all question not answered: %s", e)
        return None
    title = getattr(answer, "title", None)
    if title == EDIT_ALL:
        return uris
    if title == OPEN_ONLY:
        return [u for u in uris if ls.open_document(u) is not None]
    return None

