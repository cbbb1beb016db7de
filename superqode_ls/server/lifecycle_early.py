"""What the server starts at its first line, before it imports the protocol.

The warm bandit is a process of its own (``qe/roles/_bandit_warm.py``):
loading bandit there takes a few tenths of a second of CPU. Begun at
``initialize`` it loaded beside the first file's run, on the same two CPUs;
begun here it loads on the other CPU while this process imports lsprotocol
and pygls (the larger part of the server's start, about 0.6 s of CPU), and
is up before the first file is opened. It is the same handle as at
``initialize`` (``lifecycle_warm.WarmUp.start_bandit`` takes it over), made
the same way, with the same barrier: it serves only runs whose session's
Landlock rules its child applies, and is stopped by the server at exit.
"""

from __future__ import annotations

import dataclasses
import logging
from collections.abc import Callable

from ..engine.runtime import warm_analyzer
from ..runtime import Runtime
from .live_runtime import live_runtime
from .warm_handle import Handle, LateAnalyzer

log = logging.getLogger(__name__)


def _bandit_maker(runtime: Runtime) -> Callable[[], Handle | None]:
    """What makes and begins the warm bandit for the server whose runtime is
    ``runtime`` (run in ``LateAnalyzer``'s thread): its runs at the automatic
    runs' priority (live_runtime.py)."""
    tools = dataclasses.replace(live_runtime(runtime), analyzer=None)

    def make() -> Handle | None:
        starting = warm_analyzer(tools)
        if starting is not None:  # None: no bandit, the security role says so itself
            starting.begin()
        return starting

    return make


def begin_warm_bandit(runtime: Runtime, *, now: bool = False) -> Runtime:
    """``runtime`` with the warm bandit begun: its handle is made in a thread
    (what stands for it, the ``LateAnalyzer``, serves at once), or with
    ``now`` here, before this returns. At the server's first line it is made
    here: made in a thread beside the protocol's imports, the two took turns
    on the interpreter's lock every half millisecond (the server's switch
    interval), which cost more CPU than the handle's own imports."""
    if runtime.analyzer is not None:
        return runtime
    make = _bandit_maker(runtime)
    if now:
        try:
            handle = make()
        except Exception as e:  # noqa: BLE001 - no handle: the command runs, as without one
            log.info("warm bandit not made: %s", e)
            handle = None
        late = LateAnalyzer(lambda: handle)
    else:
        late = LateAnalyzer(make)
    late.begin()
    return dataclasses.replace(runtime, analyzer=late)
