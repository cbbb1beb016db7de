"""The event stream: the same objects feed ``--jsonl``, the terminal display
and the language server's progress.

Event types: session_start, role_start, tool_call, role_finding, role_complete,
finding, session_complete, workspace.snapshot, workspace.reverted, git.blocked,
progress, log.

``role_finding``: a finding as a role reported it, for progress (the editor
shows it while the run goes): its severity is the tool's, before noise
filtering. ``finding``: the report's findings, once each, after every
adjustment, most important first, just before ``session_complete``: what the
JSON, SARIF and Markdown reports list.
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable
from typing import Any

from .models import Event

EventSink = Callable[[Event], None]
log = logging.getLogger(__name__)


class EventBus:
    """Fan-out of events to sinks; a failing sink is logged, never fatal."""

    def __init__(self, session_id: str | None = None):
        self.session_id = session_id
        self._sinks: list[EventSink] = []
        self._lock = threading.Lock()

    def subscribe(self, sink: EventSink) -> Callable[[], None]:
        with self._lock:
            self._sinks.append(sink)

        def unsubscribe() -> None:
            with self._lock:
                if sink in self._sinks:
                    self._sinks.remove(sink)

        return unsubscribe

    def emit(self, type: str, **data: Any) -> Event:
        # Made, not validated: the fields are a name, an id and a fresh dict
        # of keywords, and a new process's first validation of an Event (its
        # validator's build) came before ``session_start`` reached anyone.
        event = Event.model_construct(type=type, session_id=self.session_id, data=data)
        self.publish(event)
        return event

    def publish(self, event: Event) -> None:
        with self._lock:
            sinks = list(self._sinks)
        for sink in sinks:
            try:
                sink(event)
            except Exception:  # a broken display must not break a session
                log.exception("event sink failed for %s", event.type)
