"""Watching the user's tree: debounced batches of file events.

A watchdog observer reports every change under the repository; events whose
repo-relative path matches an ignore pattern (gitignore syntax: ``.git/``,
``.superqode/``, ``node_modules/``...) are dropped, the rest are coalesced per
path and delivered as one batch once the tree has been quiet for ``debounce``
seconds (or ``max_delay`` after the first event when it never quiets down).

Each change bumps the repository's epoch (``Coordinator.bump_epoch``) so a
session can tell its result is stale: as the event arrives, at most once per
``_BUMP_GAP`` (a burst owes one more bump at the gap's end). Not again when
the batch is delivered: a session started after a save, inside the debounce
window, snapshotted the saved file, and a bump at delivery called its result
stale although no change came after its start.

Two ways to consume: ``Watcher(repo, on_change=callback)`` calls back from the
watcher's thread; ``async for batch in watcher.batches()`` yields batches on
the running event loop.
"""

from __future__ import annotations

import asyncio
import logging
import os
import threading
import time
import warnings
from collections.abc import AsyncIterator, Callable, Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Literal

import pathspec
from watchdog.events import (
    DirCreatedEvent,
    DirDeletedEvent,
    DirMovedEvent,
    FileCreatedEvent,
    FileDeletedEvent,
    FileModifiedEvent,
    FileMovedEvent,
    FileSystemEvent,
    FileSystemEventHandler,
)
from watchdog.observers import Observer

from .coordinator import Coordinator

# A folder removed and made again at the same path (a session's
# .git/worktrees/qe-* entry) gets the same inotify watch back; watchdog warns
# on stderr that it replaces its own callback, which is what should happen.
warnings.filterwarnings("ignore", message="Callback with id .* already exists for watch",
                        category=RuntimeWarning, module=r"watchdog\.observers\..*")

log = logging.getLogger(__name__)
# The epoch is a file under a lock: a checkout's thousands of events bump it
# at most this often, and a session starting within the gap after a bump
# still sees the owed bump of an event that came after it.
_BUMP_GAP = 0.02

EventKind = Literal["created", "modified", "deleted", "moved"]

DEFAULT_IGNORE: tuple[str, ...] = (
    ".git/",
    ".superqode/",
    "node_modules/",
    "__pycache__/",
    "*.pyc",
    ".venv/",
    "venv/",
    ".mypy_cache/",
    ".pytest_cache/",
    ".ruff_cache/",
    ".tox/",
    ".hypothesis/",
    # Editor scratch files: saving writes the real file too, which is reported.
    "*.swp",
    "*.swx",
    "*~",
    ".#*",
)


@dataclass(frozen=True)
class FileEvent:
    kind: EventKind
    path: str  # repo-relative POSIX path (destination for moves)
    is_directory: bool = False
    src_path: str | None = None  # moves only


@dataclass
class ChangeBatch:
    events: list[FileEvent]
    epoch: int | None = None  # epoch after this batch was counted
    started: float = field(default_factory=time.time)

    @property
    def paths(self) -> list[str]:
        return [e.path for e in self.events]


def _coalesce(old: FileEvent | None, new: FileEvent) -> FileEvent | None:
    """Net effect of two events on the same path (None: nothing happened)."""
    if old is None or new.kind == "moved" or old.kind == "moved":
        return new
    pair = (old.kind, new.kind)
    if pair == ("created", "modified"):
        return old
    if pair == ("created", "deleted"):
        return None  # appeared and vanished inside one window
    if pair == ("deleted", "created"):
        return FileEvent("modified", new.path, new.is_directory)
    return new


class _Handler(FileSystemEventHandler):
    def __init__(self, watcher: Watcher):
        self.watcher = watcher

    def on_any_event(self, event: FileSystemEvent) -> None:
        try:
            self.watcher._on_raw(event)
        except Exception:  # never let one odd event kill the observer thread
            log.exception("watcher: failed to handle %r", event)


_KINDS: dict[type, EventKind] = {
    FileCreatedEvent: "created",
    DirCreatedEvent: "created",
    FileModifiedEvent: "modified",
    FileDeletedEvent: "deleted",
    DirDeletedEvent: "deleted",
    FileMovedEvent: "moved",
    DirMovedEvent: "moved",
}


class Watcher:
    def __init__(
        self,
        repo: Path,
        on_change: Callable[[ChangeBatch], None] | None = None,
        *,
        debounce: float = 0.2,
        max_delay: float | None = None,
        ignore: Iterable[str] | None = None,
        extra_ignore: Iterable[str] = (),
        bump_epoch: bool = True,
        coordinator: Coordinator | None = None,
    ):
        self.repo = Path(os.path.realpath(repo))
        self._callbacks: list[Callable[[ChangeBatch], None]] = [on_change] if on_change else []
        self.debounce = debounce
        self.max_delay = max_delay if max_delay is not None else max(2.0, debounce * 10)
        patterns = list(DEFAULT_IGNORE if ignore is None else ignore) + list(extra_ignore)
        self.spec = pathspec.GitIgnoreSpec.from_lines(patterns)
        self.coordinator = coordinator or (Coordinator(self.repo) if bump_epoch else None)
        self._pending: dict[str, FileEvent] = {}
        self._first_at: float | None = None
        self._last_at = 0.0
        self._bumped_at = float("-inf")
        self._bump_owed = False
        self._cond = threading.Condition()
        self._stopping = False
        self._observer: Observer | None = None  # type: ignore[valid-type]
        self._flusher: threading.Thread | None = None

    # -- lifecycle -------------------------------------------------------
    def start(self) -> Watcher:
        if self._observer is not None:
            return self
        self._stopping = False
        observer = Observer()
        observer.schedule(_Handler(self), str(self.repo), recursive=True)
        observer.daemon = True
        observer.start()
        self._observer = observer
        self._flusher = threading.Thread(target=self._flush_loop, name="superqode-watch",
                                         daemon=True)
        self._flusher.start()
        return self

    def stop(self) -> None:
        """Stop watching; events already seen are delivered first."""
        observer, self._observer = self._observer, None
        if observer is not None:
            observer.stop()
            observer.join(5)
        with self._cond:
            self._stopping = True
            self._cond.notify_all()
        if self._flusher is not None:
            self._flusher.join(5)
            self._flusher = None

    def __enter__(self) -> Watcher:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()

    def subscribe(self, callback: Callable[[ChangeBatch], None]) -> Callable[[], None]:
        self._callbacks.append(callback)
        return lambda: self._callbacks.remove(callback) if callback in self._callbacks else None

    # -- events ----------------------------------------------------------
    def relative(self, path: str | bytes) -> str | None:
        p = os.fsdecode(path)
        try:
            rel = Path(p).relative_to(self.repo)
        except ValueError:
            try:
                rel = Path(os.path.realpath(p)).relative_to(self.repo)
            except ValueError:
                return None
        text = rel.as_posix()
        return None if text in ("", ".") else text

    def ignored(self, rel: str, is_directory: bool = False) -> bool:
        return self.spec.match_file(rel + "/" if is_directory else rel)

    def _on_raw(self, event: FileSystemEvent) -> None:
        kind = _KINDS.get(type(event))
        if kind is None:  # opened/closed, and directory mtime changes: noise
            return
        is_dir = bool(event.is_directory)
        rel = self.relative(event.src_path)
        if kind == "moved":
            dest = self.relative(getattr(event, "dest_path", b"") or "")
            src_ok = rel is not None and not self.ignored(rel, is_dir)
            dest_ok = dest is not None and not self.ignored(dest, is_dir)
            if src_ok and dest_ok:
                self._add(FileEvent("moved", dest, is_dir, src_path=rel))  # type: ignore[arg-type]
            elif src_ok:  # moved out of sight: gone as far as we are concerned
                self._add(FileEvent("deleted", rel, is_dir))  # type: ignore[arg-type]
            elif dest_ok:  # e.g. an editor's temp file renamed over the real one
                self._add(FileEvent("modified", dest, is_dir))  # type: ignore[arg-type]
            return
        if rel is None or self.ignored(rel, is_dir):
            return
        self._add(FileEvent(kind, rel, is_dir))

    def _add(self, ev: FileEvent) -> None:
        with self._cond:
            now = time.monotonic()
            if self._first_at is None:
                self._first_at = now
            self._last_at = now
            merged = _coalesce(self._pending.pop(ev.path, None), ev)
            if merged is not None:
                self._pending[ev.path] = merged
            bump = now - self._bumped_at >= _BUMP_GAP
            if bump:
                self._bumped_at = now
            else:
                self._bump_owed = True  # the flush loop pays it at the gap's end
            self._cond.notify_all()
        if bump:
            self._bump()

    def _bump(self, *, read_only: bool = False) -> int | None:
        """Bump the epoch (or, ``read_only``, read it); None without one."""
        if self.coordinator is None:
            return None
        try:
            return self.coordinator.epoch() if read_only else self.coordinator.bump_epoch()
        except OSError:
            log.exception("watcher: cannot %s the epoch", "read" if read_only else "bump")
            return None

    def _flush_loop(self) -> None:
        while True:
            with self._cond:
                while self._first_at is None and not self._stopping:
                    self._cond.wait()
                first = self._first_at
                if first is None:  # stopping with nothing pending
                    return
                now = time.monotonic()
                owed_at = self._bumped_at + _BUMP_GAP if self._bump_owed else None
                if owed_at is not None and now >= owed_at:
                    self._bump_owed = False
                    self._bumped_at = now
                else:
                    due = min(self._last_at + self.debounce, first + self.max_delay)
                    if owed_at is not None:
                        due = min(due, owed_at)
                    if now < due and not self._stopping:
                        self._cond.wait(due - now)
                        continue
                    owed_at = None
                    events = list(self._pending.values())
                    self._pending.clear()
                    self._first_at = None
                    owed, self._bump_owed = self._bump_owed, False
            if owed_at is not None:  # an owed bump, the batch still open
                self._bump()
                continue
            epoch = self._bump(read_only=not owed)
            if events:
                batch = ChangeBatch(events=events, epoch=epoch)
                for cb in list(self._callbacks):
                    try:
                        cb(batch)
                    except Exception:
                        log.exception("watcher callback failed")

    # -- async -----------------------------------------------------------
    def __aiter__(self) -> AsyncIterator[ChangeBatch]:
        return self.batches()

    async def batches(self) -> AsyncIterator[ChangeBatch]:
        """``async for batch in watcher.batches()``; starts the watcher if
        needed and stops it when the loop is left."""
        loop = asyncio.get_running_loop()
        queue: asyncio.Queue[ChangeBatch] = asyncio.Queue()

        def deliver(batch: ChangeBatch) -> None:
            try:
                loop.call_soon_threadsafe(queue.put_nowait, batch)
            except RuntimeError:  # loop closed while a batch was in flight
                pass

        unsubscribe = self.subscribe(deliver)
        started_here = self._observer is None
        if started_here:
            await asyncio.to_thread(self.start)
        try:
            while True:
                yield await queue.get()
        finally:
            unsubscribe()
            if started_here:
                await asyncio.to_thread(self.stop)
