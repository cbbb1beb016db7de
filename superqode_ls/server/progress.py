"""Work-done progress for a run: roles and counts, cancellable from the client."""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Callable

from lsprotocol import types

from .server import SuperQodeServer

log = logging.getLogger(__name__)


class RunProgress:
    def __init__(self, ls: SuperQodeServer, token: str, on_cancel: Callable[[], None]):
        self.ls = ls
        self.token = token
        self.on_cancel = on_cancel
        self.active = False
        self.roles_started: list[str] = []
        self.roles_done = 0
        self.findings = 0

    async def begin(self, title: str, message: str) -> None:
        if not self.ls.client.work_done_progress:
            return
        try:
            await asyncio.wait_for(self.ls.work_done_progress.create_async(self.token), 10)
        except Exception as e:  # client refused: the run still goes on, just silently
            log.info("progress not created: %s", e)
            return
        self.ls.work_done_progress.begin(
            self.token,
            types.WorkDoneProgressBegin(title=title, message=message, cancellable=True, percentage=0),
        )
        self.active = True
        fut = self.ls.work_done_progress.tokens.get(self.token)
        if fut is not None:
            # The client's window/workDoneProgress/cancel cancels this future.
            fut.add_done_callback(lambda f: f.cancelled() and self.on_cancel())

    def report(self, message: str) -> None:
        if not self.active:
            return
        total = max(len(self.roles_started), 1)
        pct = min(99, int(100 * self.roles_done / total)) if self.roles_started else 0
        self.ls.work_done_progress.report(
            self.token, types.WorkDoneProgressReport(message=message, percentage=pct)
        )

    def status(self) -> str:
        running = len(self.roles_started) - self.roles_done
        return (
            f"{self.roles_done}/{len(self.roles_started)} roles done, {running} running, "
            f"{self.findings} finding(s)"
        )

    def end(self, message: str) -> None:
        if not self.active:
            return
        self.active = False
        self.ls.work_done_progress.end(self.token, types.WorkDoneProgressEnd(message=message))
        self.ls.work_done_progress.tokens.pop(self.token, None)
