"""Whether an ACP agent can run here, without loading the ACP worker: the
role listing (``superqe roles``, the editors' role pickers) asks this in a
lean install too, where the worker's own imports (the agents extra) are
missing."""

from __future__ import annotations

import importlib.util
import os
import shutil

from ..config import AcpAgentConfig
from ..workspace.extras import needs


def acp_problem(name: str, cfg: AcpAgentConfig | None) -> str | None:
    """Why the ACP agent ``name`` cannot run here, in one line, or None."""
    if importlib.util.find_spec("acp") is None:
        return needs("acp")
    if cfg is None:
        return f"agent worker {name!r} is not in agents: (superqode.yaml)"
    exe = cfg.command[0]
    if shutil.which(exe, path=cfg.env.get("PATH") or os.environ.get("PATH")) is None:
        return f"ACP agent {name}: command {exe!r} not found (install it, or fix agents.{name}.command)"
    return None
