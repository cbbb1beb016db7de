"""Python's cycle collector paused while large, acyclic work runs.

A large project's lint output (sqlalchemy: 17,600 findings, 14,900 patches)
and the noise filter's syntax-tree parses make hundreds of thousands of
containers that stay alive and form no cycles; each full collection they set
off walked all of them and the rest of the heap (a sixth of the lint role's
parse, a third of the filter's CPU). One pause for the whole process: work
running side by side shares it, the first turns the collector off, the last
resumes it, and never where it was off before.

What the work made is then moved to the oldest generation in one step
(``gc.freeze`` then ``gc.unfreeze`` at once), not left young: left there,
the first young collections after the pause walked it all again, twice,
for nothing to collect (0.1 s of the lint role's CPU on sqlalchemy). Moved,
it is walked by the next full collection, as any long-lived object is; a
cycle among it is still collected then: nothing stays frozen.
"""

from __future__ import annotations

import gc
import threading
from collections.abc import Callable
from contextlib import ContextDecorator
from typing import Any, TypeVar

_T = TypeVar("_T")


class GcPause(ContextDecorator):
    """A context manager, and a decorator for a function run under it."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._holders = 0
        self._resume = False

    def __enter__(self) -> None:
        with self._lock:
            if self._holders == 0:
                self._resume = gc.isenabled()
                gc.disable()
            self._holders += 1

    def __exit__(self, *exc: object) -> None:
        with self._lock:
            self._holders -= 1
            if self._holders == 0 and self._resume:
                _age()
                gc.enable()

    def run(self, work: Callable[..., _T], *args: Any) -> _T:
        with self:
            return work(*args)


def _age() -> None:
    """Every tracked object to the oldest generation, the young ones
    emptied, without a collection. Not where something else froze objects
    (a pre-forking host): unfreezing would undo its freeze."""
    if gc.get_freeze_count():
        return
    gc.freeze()
    gc.unfreeze()


PAUSE = GcPause()
