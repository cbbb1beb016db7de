"""The QE roles as the front ends see them: names, the mode's defaults,
which run the project's code, and whether each can run here."""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from ..config import Config


def known() -> list[str]:
    """Every role name (no analyzer is loaded)."""
    from ..qe.roles import REGISTRY

    return sorted(REGISTRY)


def check_names(names: list[str] | None) -> str | None:
    """Why ``names`` cannot be run (an unknown role), or None."""
    from ..qe.roles import REGISTRY

    for name in names or []:
        if name not in REGISTRY:
            return f"unknown role {name!r} (known: {', '.join(sorted(REGISTRY))})"
    return None


def defaults(cfg: Config, mode: str) -> list[str]:
    """The roles a run of ``mode`` takes when none are named."""
    return list(cfg.qe.quick_roles if mode == "quick" else cfg.qe.deep_roles)


def running_code(names: list[str]) -> list[str]:
    """Those of ``names`` that run the project's code (trust needed); a role
    that cannot be loaded counts as one (fail closed)."""
    from ..qe.roles import role_class

    out = []
    for name in names:
        try:
            if role_class(name).executes_code:
                out.append(name)
        except Exception:
            out.append(name)  # cannot tell: treat as executing code
    return out


def rows(cfg: Config) -> list[dict[str, Any]]:
    """One row per role for ``superqe roles`` and the editor's role picker:
    tool, description, modes, default in quick/deep, whether it runs code or
    edits the sandbox, available here and why not."""
    from ..qe.roles.listing import role_rows

    return role_rows(cfg)


def acp_agents(cfg: Config) -> list[dict[str, Any]]:
    """The ACP agents configured under ``agents:``, which one is the agent
    roles' worker, and why one cannot run here."""
    from ..qe.roles.listing import acp_agents as _agents

    return _agents(cfg)


def prewarm_live(names: list[str]) -> None:
    """Import what a file run of ``names`` needs (the pipeline, those roles,
    the folder watcher) and probe the sandbox, in a worker thread as soon as
    the editor connects: the first file opened then waits for none of it on
    the event loop. The rest waits for ``prewarm``."""
    import importlib
    import logging

    from ..qe.roles import role_class
    from ..workspace import namespaces

    namespaces.backend()
    for module in ("superqode_ls.qe.pipeline", "superqode_ls.workspace.watcher"):
        importlib.import_module(module)
    for name in names:
        try:
            role_class(name)
        except Exception as e:  # noqa: BLE001 - the run says why it cannot load it
            logging.getLogger(__name__).info("prewarm: %s: %s", name, e)


def prewarm(between: Callable[[], bool] | None = None) -> None:
    """Import the pipeline, the reports, the sandbox and every role (in a
    worker thread, once the editor is up): the first run then does not
    stall on imports. A role that cannot be imported says so when run.
    ``between`` is called before each module (it may wait: the editor's
    file runs go first); False stops the import there."""
    import importlib
    import logging

    from ..qe.roles import REGISTRY
    from ..workspace import namespaces

    # The namespace sandbox's probe starts bwrap once per process: here,
    # rather than on the event loop when the first file is opened.
    namespaces.backend()
    modules = ["superqode_ls.qe.pipeline", "superqode_ls.qe.report.json_report",
               "superqode_ls.qe.report.markdown", "superqode_ls.qe.report.sarif",
               "superqode_ls.qe.verifier", "superqode_ls.workspace.watcher"]
    for module in modules:
        if between is not None and not between():
            return
        imported = importlib.import_module(module)
        # What the pipeline imports only once a session has started.
        modules += getattr(imported, "AFTER_START", ())
    for target in REGISTRY.values():
        if between is not None and not between():
            return
        try:
            importlib.import_module(target.partition(":")[0])
        except ImportError as e:
            logging.getLogger(__name__).info("prewarm: %s: %s", target, e)
