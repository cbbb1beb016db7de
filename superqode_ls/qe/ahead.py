"""What a session imports ahead of its use, in a thread beside the sandbox's
making: that step is mostly waiting on git processes, and the imports of
what comes after it (the roles' base and the run's roles, the noise filter,
the verification, the report's making) no longer come before it."""

from __future__ import annotations

import importlib
import logging
import sys
import threading

# The modules the pipeline imports only where it uses them (pipeline.py
# names this list AFTER_START: a language server and the warm helper import
# them ahead of a first run), in the order a session needs them.
AFTER_START = (
    "superqode_ls.workspace.namespaces", "superqode_ls.qe.stamp", "superqode_ls.qe.roles",
    "superqode_ls.workspace.session", "superqode_ls.qe.sparse_plan", "superqode_ls.qe.role_runs",
    "superqode_ls.qe.roles.base", "superqode_ls.qe.noise_context", "superqode_ls.qe.noise",
    "superqode_ls.qe.noise_cache", "superqode_ls.qe.verify_cache",
    "superqode_ls.qe.verify_step", "superqode_ls.qe.finish", "superqode_ls.qe.delta",
)
# A session's thread: all of them but ``delta`` (``--since`` only).
AHEAD = tuple(m for m in AFTER_START if m != "superqode_ls.qe.delta")

log = logging.getLogger(__name__)


def import_ahead(roles: list[str]) -> threading.Thread | None:
    """Start the thread that imports ``AHEAD`` and the modules of ``roles``;
    the session imports each where it uses it, as before (waiting for this
    thread's import of the same module, or failing there with the real
    error). None, and no thread, when all are imported already (a language
    server's prewarm, the warm helper's fork)."""
    from .roles import REGISTRY

    names = list(AHEAD) + [REGISTRY[r].partition(":")[0] for r in roles if r in REGISTRY]
    names = [m for m in dict.fromkeys(names) if m not in sys.modules]
    if not names:
        return None
    thread = threading.Thread(target=_import_all, args=(names,), name="superqode-imports",
                              daemon=True)
    thread.start()
    return thread


def _import_all(names: list[str]) -> None:
    for name in names:
        try:
            importlib.import_module(name)
        except Exception as e:  # noqa: BLE001 - said again where the module is used
            log.debug("import ahead of use: %s: %s", name, e)
