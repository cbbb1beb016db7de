"""``superqode.listRoles``: the roles a Run QE can run in a folder, for the
editors' role pickers (VS Code's "Run QE with roles…", Neovim's
``:SuperQodeRun`` completion, Emacs' ``superqode-run-roles``).

Each role says whether it can run now and, if not, why, in the words the
run itself would use: its tool missing, no provider or ACP agent for the
agent roles (read with the editor's ``superqode.provider`` over
superqode.yaml, as the run reads it), or the folder not trusted for roles
that run the project's code. The ACP agents configured under ``agents:``
are listed with the one that is the agent roles' worker.
"""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

from ..config import ConfigError, load_config
from ..engine import roles as engine_roles
from .errors import fail
from .server import SuperQodeServer
from .trust import is_trusted_folder

UNTRUSTED = "runs the project's code: the folder is not trusted yet (Run QE asks first)"
# superqode.runQE {worker}: the built-in loop over the providers, whatever
# agent.worker says (any other value names an ACP agent under agents:).
BUILTIN = "builtin"


def agent_overrides(provider: str | None, worker: str | None = None,
                    folder: str | None = None) -> dict[str, Any]:
    """What the editor sets over superqode.yaml for the agent roles: its
    ``superqode.provider`` setting and a run's ``worker`` (runQE) of
    ``folder``'s ACP agents."""
    out: dict[str, Any] = {}
    agent: dict[str, Any] = {}
    if provider:
        agent["provider"] = provider
    if worker == BUILTIN:
        agent["worker"] = None
    elif worker:
        agent["worker"] = worker
        # Each configuration layer is checked alone, and a worker must be
        # one of its layer's agents: the agent's own entry comes along.
        try:
            agents = load_config(Path(folder)).agents if folder else {}
        except ConfigError:
            agents = {}  # the run reports the configuration's error itself
        if worker in agents:
            out["agents"] = {worker: agents[worker].model_dump()}
    if agent:
        out["agent"] = agent
    return out


def check_worker(folder: str, worker: str | None) -> str | None:
    """Why ``worker`` cannot be a run's worker in ``folder`` (not one of its
    ACP agents), or None. A superqode.yaml that does not load is the run's
    to report, as ever."""
    if not worker or worker == BUILTIN:
        return None
    try:
        agents = load_config(Path(folder)).agents
    except ConfigError:
        return None
    if worker in agents:
        return None
    known = ", ".join([BUILTIN, *agents])
    return f"worker {worker!r} is not an ACP agent under agents: in superqode.yaml (known: {known})"


async def list_roles(ls: SuperQodeServer, uri: str | None) -> dict[str, Any]:
    folder = ls.folder_for_uri(uri) if uri else next(iter(ls.folder_paths()), None)
    if folder is None:
        raise fail(f"{uri} is outside the workspace folders" if uri else "no workspace folder is open")
    settings = ls.settings_for(folder)
    # The editor's provider over superqode.yaml, as build_request gives it to the run.
    overrides = agent_overrides(settings.provider) or None
    try:
        cfg, rows, agents = await asyncio.to_thread(_read, folder, overrides)
    except ConfigError as e:
        raise fail(str(e).splitlines()[0]) from None
    trusted = await asyncio.to_thread(is_trusted_folder, ls, folder)
    default = settings.roles if settings.roles is not None else list(
        cfg.qe.quick_roles if settings.mode == "quick" else cfg.qe.deep_roles)
    roles = []
    for r in rows:
        why = r.get("reason")
        if why is None and r.get("executes_code") and not trusted:
            why = UNTRUSTED
        roles.append({
            "name": r["name"],
            "description": r.get("description") or "",
            "tool": r.get("tool"),
            "modes": r.get("modes", []),
            "executesCode": bool(r.get("executes_code")),
            "agent": r.get("tool") == "superqode-agent",
            "default": r["name"] in default,
            "canRun": why is None,
            "reason": why,
        })
    return {"folder": folder, "mode": settings.mode, "trusted": trusted, "roles": roles,
            "agents": agents, "worker": cfg.agent.worker, "provider": cfg.agent.provider}


def _read(folder: str, overrides: dict | None):
    # The roles' modules are imported here, off the event loop, on the first listing only.
    cfg = load_config(Path(folder), overrides, overrides_source="editor setting superqode.provider")
    return cfg, engine_roles.rows(cfg), engine_roles.acp_agents(cfg)
