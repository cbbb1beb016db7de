"""The priority of an automatic run's tools (live.py) and of bandit's warm
process that serves them.

The editor's runs keep their tools ``BACKGROUND_NICE`` steps below the
server, in a lowered scheduler group, on all CPUs but one (runtime.py): a
whole-workspace run must not slow the editor. An automatic run is one file,
a fraction of a second of CPU, with the user waiting for its squiggles (as
ruff's server lints in the editor's own process). In the lowered group it
got almost no CPU while anything else ran: at load 8 on two CPUs the first
file's bandit finding came 7-10 s after the open, 1.5-2.5 s without the
lowering. So its tools run at the server's own priority; they still keep off
the CPU spared for the editor and the server, and a ``SUPERQODE_NICE`` the
user set is kept.
"""

from __future__ import annotations

import dataclasses
import os

from ..runtime import NICE_ENV, Runtime

LIVE_NICE = 0


def live_runtime(runtime: Runtime) -> Runtime:
    """``runtime`` as an automatic run's tools get it."""
    if NICE_ENV in os.environ:  # the user's choice decides, as everywhere
        return runtime
    return dataclasses.replace(runtime, nice=min(runtime.nice, LIVE_NICE))
