"""Live analysis: the read-only analyzers (``LIVE_ROLES``: ruff, bandit, the
secrets scan) run by themselves on the files the user looks at, on open, on
save and ``TYPE_DEBOUNCE`` after the last change, on the buffer's text, in the
same sandbox and under the same barrier as every run (``start_run``).

They run no project code, so they need no trust. They are quiet (no progress,
no end message, no report files), one run in flight per file (a newer trigger
cancels the older, and the newer starts once the older has reverted its
sandbox), at most ``MAX_PARALLEL`` at once and ``MAX_WAITING`` files waiting
(past it the oldest wait is dropped: the user has moved on), and each run's
findings replace that file's previous findings of the same roles.

The settings ``lintOnOpen``, ``lintOnSave`` and ``lintOnType`` turn each
trigger off; "Run QE" stays the way to the whole workspace and the roles that
run code.
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections import Counter, OrderedDict

from .registry import LIVE, Run
from .runs import start_run
from .server import SuperQodeServer

log = logging.getLogger(__name__)

LIVE_ROLES = ("lint_tester", "security_tester")
TYPE_DEBOUNCE = 0.5
# Save: one short delay, so an editor that saves twice quickly starts the
# file once. Open starts at once: each file opens once, and ten files opened
# together (a session restore) are ten files to analyse either way (they
# queue: MAX_PARALLEL, MAX_WAITING); the first diagnostic waits for nothing.
EVENT_DELAY = 0.05
DELAYS = {"open": 0.0, "save": EVENT_DELAY, "type": TYPE_DEBOUNCE}
# How long the automatic runs stay quiet before the warm-up's role imports
# go on (settled()): begun at the first quiet moment, right after the first
# file's findings, the import (1.2 s of CPU) held the user's next change's
# run seconds on a loaded two-core machine.
SETTLE = 3.0
MAX_PARALLEL = 2
MAX_WAITING = 8
TRIGGERS = {"open": "lintOnOpen", "save": "lintOnSave", "type": "lintOnType"}


class LiveRunner:
    """The one owner of automatic runs: debounce timers, the waiting files
    and the run in flight per file."""

    def __init__(self, ls: SuperQodeServer):
        self.ls = ls
        self.timers: dict[str, asyncio.TimerHandle] = {}
        self.waiting: OrderedDict[str, str] = OrderedDict()  # uri -> trigger
        self.running: dict[str, Run] = {}
        self.started: Counter[str] = Counter()  # runs started per uri (tests, bench)
        self.dropped = 0  # waits dropped past MAX_WAITING
        self.kept = 0  # saves that left the run in flight on the same text to finish
        self.skipped: Counter[str] = Counter()  # triggers turned off by a setting, per kind
        self.preparing = 0  # triggers due, not yet waiting or running (settings)
        self._quiet = asyncio.Event()  # nothing due, waiting or running
        self._quiet.set()
        self._quiet_since = time.monotonic()  # when it last became quiet (settled())

    def trigger(self, uri: str, kind: str) -> None:
        """A document was opened, saved or changed: analyse it after the delay
        of ``kind``; a later trigger for the same document replaces this one."""
        if not uri.startswith("file:") or self.ls.shutting_down:
            return
        if (old := self.timers.pop(uri, None)) is not None:
            old.cancel()
        delay = DELAYS[kind]
        loop = asyncio.get_running_loop()
        self.timers[uri] = loop.call_later(delay, self._due, uri, kind)
        self._update_quiet()

    def forget(self, uri: str) -> None:
        """The document was closed: nothing more to do for it."""
        if (old := self.timers.pop(uri, None)) is not None:
            old.cancel()
        self.waiting.pop(uri, None)
        if (run := self.running.get(uri)) is not None:
            run.cancel()
        self._update_quiet()

    def _due(self, uri: str, kind: str) -> None:
        self.timers.pop(uri, None)
        self.preparing += 1
        self.ls.background(self._enqueue(uri, kind), f"live analysis of {uri}")

    async def _enqueue(self, uri: str, kind: str) -> None:
        try:
            await self.ls.settings_ready()
            self._add(uri, kind)
        finally:
            self.preparing -= 1
            self._update_quiet()

    def _add(self, uri: str, kind: str) -> None:
        folder = self.ls.folder_for_uri(uri)
        if folder is None:
            return
        if not getattr(self.ls.settings_for(folder), TRIGGERS[kind]):
            self.skipped[kind] += 1
            return
        if (old := self.running.get(uri)) is not None:
            if kind == "save" and not old.cancel_requested and uri in old.versions \
                    and old.versions[uri] == self.ls.document_version(uri):
                # The run in flight (the pause in typing before the save)
                # reads the very text saved: cancelling it to read the same
                # again made the save's finding wait for a second run.
                self.kept += 1
                return
            old.cancel()  # its text is already out of date
        self.waiting[uri] = kind
        self.waiting.move_to_end(uri)
        while len(self.waiting) > MAX_WAITING:
            self.waiting.popitem(last=False)
            self.dropped += 1
        self._pump()

    def _pump(self) -> None:
        """Start waiting files while there is room; a file whose previous run
        is still winding down waits for it (one in flight per file)."""
        for uri in list(self.waiting):
            if len(self.running) >= MAX_PARALLEL or self.ls.shutting_down:
                return
            if uri in self.running:
                continue
            del self.waiting[uri]
            self._start(uri)

    def _start(self, uri: str) -> None:
        folder = self.ls.folder_for_uri(uri)
        rel = self.ls.rel_path(folder, uri) if folder is not None else None
        if folder is None or rel is None or rel.startswith("../"):
            return
        run = start_run(self.ls, folder, files=[rel], mode="quick", roles=list(LIVE_ROLES),
                        trigger=LIVE)
        self.running[uri] = run
        self.started[uri] += 1
        assert run.task is not None
        run.task.add_done_callback(lambda _t, uri=uri, run=run: self._ended(uri, run))

    def _ended(self, uri: str, run: Run) -> None:
        if self.running.get(uri) is run:
            del self.running[uri]
        self._pump()
        self._update_quiet()

    def _update_quiet(self) -> None:
        if self.timers or self.preparing or self.waiting or self.running:
            self._quiet.clear()
        elif not self._quiet.is_set():
            self._quiet_since = time.monotonic()
            self._quiet.set()

    async def quiet(self, timeout: float) -> None:
        """Return once no automatic run is due, waiting or running, or after
        ``timeout`` s."""
        try:
            await asyncio.wait_for(self._quiet.wait(), timeout)
        except TimeoutError:
            pass

    async def settled(self, timeout: float, settle: float = SETTLE) -> None:
        """Return once no automatic run has been due, waiting or running for
        ``settle`` s, or after ``timeout`` s. The user's next edit or save
        often follows a file's findings within a second or two; the server's
        warm-up waits for this, not for the first quiet moment
        (lifecycle_warm.py)."""
        deadline = time.monotonic() + timeout
        while (left := deadline - time.monotonic()) > 0:
            await self.quiet(left)
            if not self._quiet.is_set():
                continue
            rest = self._quiet_since + settle - time.monotonic()
            if rest <= 0:
                return
            await asyncio.sleep(min(rest, max(0.0, deadline - time.monotonic())))

    def status(self) -> dict:
        return {
            "started": dict(self.started),
            "skipped": dict(self.skipped),
            "timers": sorted(self.timers),
            "running": sorted(self.running),
            "waiting": list(self.waiting),
            "dropped": self.dropped,
            "kept": self.kept,
        }


def live_of(ls: SuperQodeServer) -> LiveRunner:
    """The server's one LiveRunner, made at its first use (the server class
    imports no run machinery)."""
    runner = getattr(ls, "live", None)
    if runner is None:
        runner = ls.live = LiveRunner(ls)
    return runner
