"""``SuperQodeServer``: the state the features share, typed, and nothing else.

It imports no feature. ``setup.py`` lists the features and registers each; a
feature reaches another only through this state (the run registry, the
publisher, the hooks), never by calling the other's functions.
"""

from __future__ import annotations

import asyncio
from collections import OrderedDict
from collections.abc import Awaitable, Callable
from typing import TYPE_CHECKING

from lsprotocol import types

from ..runtime import Runtime
from .base import ServerBase
from .publisher import Publisher
from .registry import RunRegistry

if TYPE_CHECKING:
    from ..engine.projects import Watcher

# Fix-all edits kept for the documents last asked about (editors ask for code
# actions at every cursor move).
FIX_ALL_CACHE_MAX = 32

Hook = Callable[[], Awaitable[None]]


class SuperQodeServer(ServerBase):
    def __init__(self) -> None:
        super().__init__()
        self.runs = RunRegistry()
        self.publisher = Publisher(self)
        # folder -> its watcher; None when the folder cannot be watched.
        self.watchers: dict[str, Watcher | None] = {}
        self.save_timers: dict[str, asyncio.TimerHandle] = {}  # folder -> pending runOnSave
        # uri -> its lines at the last change seen: the text before the next
        # one, so findings follow what changed (tracking.follow).
        self.doc_lines: dict[str, list[str]] = {}
        self.trust_declined: set[str] = set()  # asked once per server lifetime
        # folder -> the trust question still open (runs meanwhile share its answer)
        self.trust_questions: dict[str, asyncio.Task] = {}
        self.protection_reported = False  # said once, at the first session
        # uri -> ((uri, version, result id), the edit): bounded, oldest out first.
        self.fix_all_cache: OrderedDict[str, tuple[tuple, types.WorkspaceEdit | None]] = OrderedDict()
        # Run once the client is up (``initialized``), in registration order.
        self.on_initialized: list[Hook] = []
        # The automatic runs' owner (live.LiveRunner), made at first use.
        self.live = None
        # What every run this server starts is handed (runtime.py): made by
        # __main__ from the environment, its asker and warm analyzer put in
        # as they come up.
        self.runtime = Runtime()

    def cache_fix_all(self, uri: str, key: tuple, edit: types.WorkspaceEdit | None) -> None:
        self.fix_all_cache[uri] = (key, edit)
        self.fix_all_cache.move_to_end(uri)
        while len(self.fix_all_cache) > FIX_ALL_CACHE_MAX:
            self.fix_all_cache.popitem(last=False)
