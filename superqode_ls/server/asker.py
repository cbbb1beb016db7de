"""Agent tool permissions set to ``ask`` go to the user as a
``window/showMessageRequest``. A client that cannot show one, or a user who
does not answer in time, means no."""

from __future__ import annotations

import asyncio
import dataclasses
import logging

from lsprotocol import types

from .server import SuperQodeServer

log = logging.getLogger(__name__)
ALLOW, DENY = "Allow", "Deny"
ANSWER_TIMEOUT_S = 300.0


class LspAsker:
    def __init__(self, ls: SuperQodeServer, timeout: float = ANSWER_TIMEOUT_S):
        self.ls = ls
        self.timeout = timeout
        self._lock = asyncio.Lock()  # one question on screen at a time

    async def ask(self, tool: str, summary: str) -> bool:
        params = types.ShowMessageRequestParams(
            type=types.MessageType.Warning,
            message=f"SuperQode agent wants to use {tool}: {summary[:500]}",
            actions=[types.MessageActionItem(title=ALLOW), types.MessageActionItem(title=DENY)],
        )
        async with self._lock:
            try:
                answer = await asyncio.wait_for(
                    self.ls.window_show_message_request_async(params), self.timeout
                )
            except Exception as e:  # noqa: BLE001 - no answer is a no
                log.info("permission prompt not answered: %s", e)
                return False
        return getattr(answer, "title", None) == ALLOW


def register(ls: SuperQodeServer) -> None:
    async def install() -> None:
        ls.runtime = dataclasses.replace(ls.runtime, asker=LspAsker(ls))

    ls.on_initialized.append(install)
