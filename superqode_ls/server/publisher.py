"""Findings -> diagnostics, and pushing them (textDocument/publishDiagnostics)
or asking a pull client to pull again (workspace/diagnostic/refresh).

Publishing is coalesced: changes mark a document dirty and one flush shortly
after sends each dirty document once, so a burst of findings costs one message
per file, never blocking the event loop for long.
"""

from __future__ import annotations

import asyncio
import logging
import time
from typing import Any

from lsprotocol import types

from .base import ServerBase
from .convert import lsp_range, to_diagnostic
from .store import Tracked

log = logging.getLogger(__name__)

FLUSH_DELAY = 0.05
# Refreshes at most this often while a run streams findings (each makes a
# pull client re-pull its open documents and the workspace: unchanged ones
# cost a result id). Short, because an automatic run's roles end a few tenths
# of a second apart and the later one's findings (bandit's, after ruff's)
# waited up to a second for the next refresh in VS Code.
REFRESH_INTERVAL = 0.25
CHUNK = 100  # documents per slice of a big publish
NOW_LIMIT = 2000  # documents sent in one go when a role completes (~0.1 ms each)


def diagnostics_for(ls: ServerBase, uri: str) -> list[dict[str, Any]]:
    tracked = ls.store.visible(uri)
    if not tracked:
        return []
    lines = ls.current_lines(uri) if ls.encoding != "utf-32" else ()
    version = ls.document_version(uri)
    # Most important first (worth acting on, then severity, then line), as
    # the report lists them: an editor that shows the first of a line's
    # diagnostics shows the one that matters.
    ordered = sorted(tracked, key=lambda t: (t.finding.noise is not None,
                                             -t.finding.severity.rank, t.sl, t.sc))
    return [diagnostic_of(ls, t, lines, version) for t in ordered]


def diagnostic_of(ls: ServerBase, t: Tracked, lines, version: int | None) -> dict[str, Any]:
    rng = lsp_range(lines, t.sl, t.sc, t.el, t.ec, ls.encoding)
    return to_diagnostic(
        t.finding,
        session_id=t.session_id,
        version=version,
        rng=rng,
        uri_for=lambda rel, folder=t.folder: ls.uri_for(folder, rel),
        stale=t.run_stale,
        related_support=ls.client.related_information,
    )


class Publisher:
    def __init__(self, ls: ServerBase):
        self.ls = ls
        self.dirty: set[str] = set()
        self._handle: asyncio.TimerHandle | None = None
        self._last_refresh = 0.0
        self._refresh_pending: asyncio.TimerHandle | None = None
        self.published = 0  # documents sent (bench/diagnostics)
        self._sending: asyncio.Task | None = None

    def mark(self, *uris: str) -> None:
        self.dirty.update(uris)
        if self._handle is None:
            loop = asyncio.get_running_loop()
            self._handle = loop.call_later(FLUSH_DELAY, self.flush)

    def flush(self, now: bool = False) -> None:
        """Send what is dirty: a small batch at once, a big one in slices that
        yield to the event loop so requests are still answered meanwhile
        (``now``: everything at once, up to NOW_LIMIT documents)."""
        if self._handle is not None:
            self._handle.cancel()
            self._handle = None
        if not self.dirty:
            return
        if self.ls.client.pull_mode:
            self.dirty.clear()
            # ``now`` (a role's findings are all in): the refresh goes at once.
            # Throttled, an automatic run's second role (ruff's, a quarter
            # second after bandit's) waited out REFRESH_INTERVAL in VS Code.
            self.request_refresh(now=now)
            return
        if len(self.dirty) <= (NOW_LIMIT if now else CHUNK):
            dirty, self.dirty = self.dirty, set()
            for uri in dirty:
                self.push(uri)
            return
        if self._sending is None or self._sending.done():
            self._sending = self.ls.background(self._send_chunks(), "publish diagnostics")

    async def _send_chunks(self) -> None:
        while self.dirty:
            batch = [self.dirty.pop() for _ in range(min(CHUNK, len(self.dirty)))]
            for uri in batch:
                self.push(uri)
            await asyncio.sleep(0)

    async def drain(self) -> None:
        """Flush now and wait until everything dirty has been sent."""
        self.flush()
        while self._sending is not None and not self._sending.done():
            await asyncio.shield(self._sending)

    def push(self, uri: str) -> None:
        params: dict[str, Any] = {"uri": uri, "diagnostics": diagnostics_for(self.ls, uri)}
        version = self.ls.document_version(uri)
        if version is not None and self.ls.client.version_support:
            params["version"] = version
        # A plain dict goes straight to json.dumps (see convert.py for why).
        self.ls.protocol._send_data(
            {"jsonrpc": "2.0", "method": types.TEXT_DOCUMENT_PUBLISH_DIAGNOSTICS, "params": params}
        )
        self.published += 1

    def request_refresh(self, *, now: bool = False) -> None:
        """Ask a pull client to re-pull; throttled while a run streams findings."""
        if not (self.ls.client.pull_mode):
            return
        loop = asyncio.get_running_loop()
        wait = REFRESH_INTERVAL - (time.monotonic() - self._last_refresh)
        if now or wait <= 0:
            if self._refresh_pending is not None:
                self._refresh_pending.cancel()
                self._refresh_pending = None
            self._last_refresh = time.monotonic()
            self.ls.background(self._refresh(), "diagnostic refresh")
        elif self._refresh_pending is None:
            self._refresh_pending = loop.call_later(wait, self._delayed_refresh)

    def _delayed_refresh(self) -> None:
        self._refresh_pending = None
        self.request_refresh(now=True)

    async def _refresh(self) -> None:
        try:
            await asyncio.wait_for(self.ls.workspace_diagnostic_refresh_async(None), 10)
        except Exception as e:
            log.info("diagnostic refresh not answered: %s", e)
