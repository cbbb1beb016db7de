"""The run registry: the one owner of the editor's QE runs.

A run holds what it needs while it goes (the user's unsaved buffers, the
engine's session) and, once finished, its report and patches for reports and
the session list. Finished runs are kept up to a count and a size; past either
bound the oldest go, except the latest run of each folder, which always stays.
The findings the editor shows carry their own fix (``Tracked.patch``), so
dropping a run never takes a quick fix with it.
"""

from __future__ import annotations

import asyncio
import os
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from typing import Any, Protocol

from ..models import Finding, Patch, QualityReport

MAX_RUNS = 10
MAX_BYTES = 32 * 2**20
# Per finding in a kept report: the model and its fields (measured: a quick
# run's 306 findings kept the server ~1 MB larger).
FINDING_BYTES = 3 * 1024
ENV_MAX_RUNS = "SUPERQODE_LS_KEEP_RUNS"
ENV_MAX_BYTES = "SUPERQODE_LS_KEEP_BYTES"
# The trigger of automatic runs (live.py): quiet, and not kept once finished
# (their findings carry their fixes; a report per keystroke is no history).
LIVE = "live"


class Cancellable(Protocol):
    def cancel(self) -> None: ...


@dataclass(eq=False)
class Run:
    id: str
    folder: str
    files: list[str] | None
    mode: str
    roles: list[str] | None
    trigger: str  # "command" | "save" | "action" | LIVE
    overlays: dict[str, bytes] = field(default_factory=dict)
    versions: dict[str, int | None] = field(default_factory=dict)  # uri -> version analysed
    since: str | None = None  # superqode.runQE {since}: only what the change introduced
    worker: str | None = None  # superqode.runQE {worker}: the agent roles' worker (role_list.py)
    state: str = "starting"  # starting | running | done | cancelled | failed
    # The engine's session while it runs (the run cancels through it); let go
    # when the run ends, since it holds every role's findings and contexts.
    session: Cancellable | None = None
    task: asyncio.Task | None = None
    # While it runs: whether a streamed finding is kept (suppressions, threshold).
    keep: Callable[[Finding], bool] | None = None
    # While it runs: a streamed finding as the report will level it (path
    # classes: a finding in tests/ or docs/ one level lower, as noise).
    shape: Callable[[Finding], Finding] | None = None
    report: QualityReport | None = None
    patches: dict[str, Patch] = field(default_factory=dict)
    findings: int = 0
    started: float = field(default_factory=time.monotonic)
    started_ns: int = field(default_factory=time.time_ns)  # wall clock, to compare mtimes
    first_finding_s: float | None = None
    error: str | None = None
    trusted: bool | None = None
    markdown: str | None = None
    cancel_requested: bool = False
    # While the editor is asked to create the progress token: a cancel then
    # waits for its answer, so a token the editor created always gets its end.
    announcing: bool = False
    # The roles whose findings this run replaces when it ends (None: all of
    # the folder's or files'): a run split by trust replaces only its part.
    only_roles: set[str] | None = None
    # What became of the roles that wait for the trust answer while this run
    # goes (said at its end): waiting, following, or skipped and why.
    trust_note: str | None = None
    # The end as the run said it (findings, fix counts, verdict): a client
    # that polls (Emacs) shows these words, not a count of its own.
    summary: str | None = None
    # The roles this run goes on with after its first engine session (the
    # whole-tree roles of a file run; those the trust answer lets run, None
    # when it says no): still one run, one progress, one end, one report.
    next_roles: asyncio.Future | None = None

    @property
    def quiet(self) -> bool:
        """An automatic run: no progress, no end message, no report files."""
        return self.trigger == LIVE

    @property
    def finished(self) -> bool:
        return self.state in ("done", "cancelled", "failed")

    def cancel(self) -> None:
        self.cancel_requested = True
        if self.session is not None:
            self.session.cancel()
        elif self.task is not None and not self.task.done() and not self.announcing:
            self.task.cancel()

    def size(self) -> int:
        """Bytes this run keeps alive, estimated from what dominates them."""
        n = sum(len(v) for v in self.overlays.values())
        n += sum(len(p.diff) + len(p.description or "") for p in self.patches.values())
        if self.report is not None:  # its patches are the ones counted above
            n += FINDING_BYTES * len(self.report.findings)
        return n

    def describe(self) -> dict[str, Any]:
        return {
            "sessionId": self.id,
            "folder": self.folder,
            "mode": self.mode,
            "files": self.files,
            "state": self.state,
            "findings": self.findings,
            "verdict": self.report.verdict if self.report else None,
            "stale": self.report.stale if self.report else False,
            "trusted": self.trusted,
            "error": self.error,
            "end": self.summary,
        }


def _env_int(name: str, default: int) -> int:
    try:
        value = int(os.environ.get(name, ""))
    except ValueError:
        return default
    return value if value >= 0 else default


class RunRegistry:
    """Runs by session id, in the order they started."""

    def __init__(self, max_runs: int | None = None, max_bytes: int | None = None):
        self.max_runs = _env_int(ENV_MAX_RUNS, MAX_RUNS) if max_runs is None else max_runs
        self.max_bytes = _env_int(ENV_MAX_BYTES, MAX_BYTES) if max_bytes is None else max_bytes
        self._runs: dict[str, Run] = {}
        self.dropped = 0  # finished runs let go of (tests, bench)
        self._expired: dict[str, None] = {}  # ids dropped, newest last (bounded)

    def add(self, run: Run) -> None:
        self._runs[run.id] = run

    def get(self, session_id: str | None) -> Run | None:
        return self._runs.get(session_id) if session_id else None

    def __contains__(self, session_id: object) -> bool:
        return session_id in self._runs

    def __iter__(self) -> Iterator[Run]:
        return iter(list(self._runs.values()))

    def __len__(self) -> int:
        return len(self._runs)

    def active(self) -> list[Run]:
        return [r for r in self._runs.values() if not r.finished]

    def finished_newest_first(self) -> list[Run]:
        return sorted((r for r in self._runs.values() if r.finished),
                      key=lambda r: r.started, reverse=True)

    def expired(self, session_id: str) -> bool:
        """Whether this session was a run of this server that has been let go."""
        return session_id in self._expired

    def bytes(self) -> int:
        return sum(r.size() for r in self._runs.values() if r.finished)

    def prune(self) -> list[Run]:
        """Drop the oldest finished runs past the bounds (count and bytes); the
        latest run of each folder and runs still going are never dropped.
        Finished automatic runs are dropped at once (and are not counted
        as "expired": no one was told their id). Returns the runs dropped."""
        for r in [r for r in self._runs.values() if r.finished and r.quiet]:
            del self._runs[r.id]
        latest: dict[str, Run] = {}
        for r in self._runs.values():
            if r.folder not in latest or r.started >= latest[r.folder].started:
                latest[r.folder] = r
        keep = {id(r) for r in latest.values()}
        candidates = sorted((r for r in self._runs.values() if r.finished and id(r) not in keep),
                            key=lambda r: r.started)
        finished = [r for r in self._runs.values() if r.finished]
        count = len(finished)
        size = sum(r.size() for r in finished)
        dropped: list[Run] = []
        for r in candidates:
            if count <= self.max_runs and size <= self.max_bytes:
                break
            count -= 1
            size -= r.size()
            dropped.append(r)
        for r in dropped:
            del self._runs[r.id]
            self._expired[r.id] = None
            self.dropped += 1
        while len(self._expired) > 10 * max(self.max_runs, 1) + 100:
            self._expired.pop(next(iter(self._expired)))
        return dropped
