"""Files changed on disk outside the editor (a checkout, a formatter, another
tool): findings in files that are not open are checked again against the new
text, moved with their flagged line or dropped. Uses the engine's watcher
(which also bumps the repository's epoch that sessions use to tell they are
stale); started for a folder when its first session starts."""

from __future__ import annotations

import asyncio
import logging
import os

from . import tracking
from .base import session_root
from .server import SuperQodeServer

log = logging.getLogger(__name__)


def ensure_watcher(ls: SuperQodeServer, folder: str) -> None:
    if folder in ls.watchers or ls.shutting_down:
        return
    from ..engine.projects import watch

    loop = asyncio.get_running_loop()
    root = session_root(folder)

    def on_change(batch) -> None:  # watcher thread
        paths = [os.path.join(root, p) for p in batch.paths]
        loop.call_soon_threadsafe(changed_on_disk, ls, paths)

    try:
        ls.watchers[folder] = watch(root, on_change)
    except Exception as e:  # e.g. out of inotify watches: findings just follow less
        ls.watchers[folder] = None
        ls.log(f"SuperQode: not watching {folder} for changes: {e}")


def changed_on_disk(ls: SuperQodeServer, paths: list[str]) -> None:
    for path in paths:
        folder = ls.folder_for_path(path)
        if folder is None:
            continue
        rel = os.path.relpath(os.path.realpath(path), folder).replace(os.sep, "/")
        uri = ls.uri_for(folder, rel)
        if uri is None or ls.open_document(uri) is not None:
            continue  # open buffers follow the editor's own changes
        tracked = ls.store.get(uri)
        if not tracked:
            continue
        ls.forget_disk_lines(uri)
        lines = ls.disk_lines(uri)
        strict = not lines  # deleted or unreadable: nothing can still match
        if tracking.reanchor(tracked, lines, strict=strict) or strict:
            if strict:
                for t in tracked:
                    t.stale = True
            ls.store.touch(uri)
            ls.publisher.mark(uri)


async def stop_watcher(ls: SuperQodeServer, folder: str) -> None:
    w = ls.watchers.pop(folder, None)
    if w is not None:
        await asyncio.to_thread(w.stop)


async def stop_watchers(ls: SuperQodeServer) -> None:
    watchers = [w for w in ls.watchers.values() if w is not None]
    ls.watchers.clear()
    for w in watchers:
        try:
            await asyncio.to_thread(w.stop)
        except Exception:
            log.exception("stopping a watcher failed")
