"""What each role is and whether it can run with a configuration: the rows
``superqe roles`` prints and the editor's role picker shows
(``superqode.listRoles``)."""

from __future__ import annotations

from typing import Any

from ...agent.acp_check import acp_problem
from ...config import Config
from . import REGISTRY, role_class


def role_rows(config: Config) -> list[dict[str, Any]]:
    """One row per known role, by name: its tool, description, modes, the
    modes whose default roles it is in, and ``available``/``reason`` (why it
    cannot run with ``config``: a missing tool, no provider for agents...)."""
    rows = []
    for name in sorted(REGISTRY):
        row: dict[str, Any] = {"name": name, "quick": name in config.qe.quick_roles,
                               "deep": name in config.qe.deep_roles}
        try:
            cls = role_class(name)
        except (ImportError, AttributeError) as e:
            row.update(tool=None, description="", available=False, reason=f"not installed ({e})")
            rows.append(row)
            continue
        reason = cls().unavailable(config)
        row.update(
            tool=getattr(cls, "tool", None), description=getattr(cls, "description", ""),
            modes=sorted(cls.modes), executes_code=cls.executes_code,
            modifies_sandbox=cls.modifies_sandbox, available=reason is None, reason=reason,
        )
        rows.append(row)
    return rows


def acp_agents(config: Config) -> list[dict[str, Any]]:
    """The ACP agents configured under ``agents:``: which one is the agent
    roles' worker (``agent.worker``; none: the built-in loop), and why one
    cannot run here (``reason``: its command not found...)."""
    return [{"name": name, "command": list(a.command), "worker": name == config.agent.worker,
             "reason": acp_problem(name, a)}
            for name, a in config.agents.items()]
