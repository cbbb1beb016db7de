"""Work-done progress for a run: roles and counts, cancellable from the client."""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Callable

from lsprotocol import types

from .server import SuperQodeServer

log = logging.getLogger(__name__)
# Counts change with every finding and every mutant: one report per change
# would be thousands of notifications an editor has to parse and redraw.
COUNT_INTERVAL_S = 0.1


class RunProgress:
    def __init__(self, ls: SuperQodeServer, token: str, on_cancel: Callable[[], None]):
        self.ls = ls
        self.token = token
        self.on_cancel = on_cancel
        self.active = False
        self.began = False  # the client showed a progress for this run
        self.ended = False
        # The run's roles as far as known, in order -> "waiting", "running"
        # or "done". Every role a run will run is counted from the moment it
        # is known (the session's plan, the roles a trust answer or a full
        # sandbox adds later): the count never goes back nor changes its
        # total while a role joins ("3/3 roles done" then "3/4" read as a
        # run that ended and started again).
        self.roles: dict[str, str] = {}
        self.findings = 0
        # The run's streamed findings as its report will count them (all of
        # its phases: engine.runs.problem_counter), made at the first one.
        self.count: Callable[[object], int] | None = None
        self._last_sent = 0.0
        self._pending: str | None = None
        self._timer: asyncio.TimerHandle | None = None

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
        self.began = True
        fut = self.ls.work_done_progress.tokens.get(self.token)
        if fut is not None:
            # The client's window/workDoneProgress/cancel cancels this future.
            fut.add_done_callback(lambda f: f.cancelled() and self.on_cancel())

    def expect(self, names) -> None:
        """Roles the run will run (a phase's plan, a later phase's roles)."""
        for name in names or ():
            self.roles.setdefault(str(name), "waiting")

    def role_started(self, name: str) -> None:
        if self.roles.get(name) != "done":
            self.roles[name] = "running"

    def role_done(self, name: str) -> None:
        self.roles[name] = "done"

    def role_left(self, name: str) -> None:
        """A role this phase leaves to a later one: counted, not done."""
        if self.roles.get(name) != "done":
            self.roles[name] = "waiting"

    def none_left(self) -> None:
        """No later phase after all (the trust answer said no): the roles
        left to it are over (skipped; the end message says why)."""
        for name, state in self.roles.items():
            if state == "waiting":
                self.roles[name] = "done"

    @property
    def roles_done(self) -> int:
        return sum(1 for state in self.roles.values() if state == "done")

    def report(self, message: str, *, now: bool = True) -> None:
        """Send ``message``; with ``now=False`` (a count went up) at most one
        report per COUNT_INTERVAL_S goes out, the latest one, never dropped."""
        if not self.active:
            return
        loop = asyncio.get_running_loop()
        if now or loop.time() - self._last_sent >= COUNT_INTERVAL_S:
            self._send(message)
            return
        self._pending = message
        if self._timer is None:
            self._timer = loop.call_at(self._last_sent + COUNT_INTERVAL_S, self._send_pending)

    def _send_pending(self) -> None:
        self._timer = None
        if self._pending is not None and self.active:
            self._send(self._pending)

    def _send(self, message: str) -> None:
        if self._timer is not None:
            self._timer.cancel()
            self._timer = None
        self._pending = None
        self._last_sent = asyncio.get_running_loop().time()
        total = max(len(self.roles), 1)
        pct = min(99, int(100 * self.roles_done / total)) if self.roles else 0
        self.ls.work_done_progress.report(
            self.token, types.WorkDoneProgressReport(message=message, percentage=pct)
        )

    def status(self) -> str:
        running = sum(1 for state in self.roles.values() if state == "running")
        return (
            f"{self.roles_done}/{len(self.roles)} roles done, {running} running, "
            f"{self.findings} finding(s)"
        )

    def end(self, message: str, *, tell: bool = True) -> None:
        """End the progress with ``message``; a client that took no progress
        (Emacs' eglot announces none) gets it as ``window/showMessage`` instead
        (``tell``), so every editor shows the end of a session."""
        if self._timer is not None:
            self._timer.cancel()
            self._timer = None
        self._pending = None
        if not self.active:
            if tell and not self.began and not self.ended:
                self.ls.notify_user(f"SuperQode: {message}")
            self.ended = True
            return
        self.ended = True
        self.active = False
        self.ls.work_done_progress.end(self.token, types.WorkDoneProgressEnd(message=message))
        self.ls.work_done_progress.tokens.pop(self.token, None)
