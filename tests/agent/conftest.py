"""Helpers for the agent tests: a scripted provider, configs, role contexts."""

from __future__ import annotations

import json
import os
import shutil
import sys
from pathlib import Path
from typing import Any

import pytest

from superqode_ls.config import Config
from superqode_ls.models import Event
from superqode_ls.qe.roles.base import RoleContext
from superqode_ls.workspace.artifacts import Artifacts

from .scripted_server import ScriptedServer

HERE = Path(__file__).parent
VENV_BIN = str(Path(sys.executable).parent)


def conversation(name: str) -> list[dict[str, Any]]:
    return json.loads((HERE / "conversations" / f"{name}.json").read_text(encoding="utf-8"))


def provider_entry(server: ScriptedServer | str, name: str = "primary", **extra: Any) -> dict:
    base = server.base_url if isinstance(server, ScriptedServer) else server
    entry = {
        "name": name,
        "base_url": base,
        "model": "scripted-model",
        "timeout": 5,
        "max_retries": 2,
        "retry_backoff_s": 0.01,
    }
    entry.update(extra)
    return entry


def agent_config(providers: list[dict], **agent: Any) -> Config:
    perms = agent.pop("permissions", {})
    cfg = Config.model_validate({"providers": providers, "agent": agent})
    cfg.agent.permissions = {**cfg.agent.permissions, **perms}
    return cfg


def sandbox_env() -> dict[str, str]:
    # The project's tests need this interpreter's pytest on PATH.
    env = dict(os.environ)
    env["PATH"] = VENV_BIN + os.pathsep + env.get("PATH", "")
    env["PYTHONDONTWRITEBYTECODE"] = "1"
    # Plugin autoload (lsp, hypothesis, xdist...) costs seconds per run and the
    # scripted projects use none of it.
    env["PYTEST_DISABLE_PLUGIN_AUTOLOAD"] = "1"
    return env


class EventLog:
    def __init__(self) -> None:
        self.events: list[Event] = []

    def emit(self, type: str, **data: Any) -> None:
        self.events.append(Event(type=type, data=data))

    def of(self, type: str) -> list[dict[str, Any]]:
        return [e.data for e in self.events if e.type == type]

    def dump(self) -> str:
        return "\n".join(e.to_json() for e in self.events)


def make_ctx(
    project: Path,
    sandbox: Path,
    config: Config,
    events: EventLog,
    *,
    session: Any = None,
    env: dict[str, str] | None = None,
    session_id: str = "qe-20261121-170000-abcdef",
) -> RoleContext:
    return RoleContext(
        session_id=session_id,
        project=project,
        sandbox=sandbox,
        config=config,
        mode="deep",
        env=env or sandbox_env(),
        artifacts=Artifacts(project, session_id).prepare(),
        emit=events.emit,
        trusted=True,
        session=session,
    )


def copy_sandbox(project: Path, dst: Path) -> Path:
    """A plain directory copy standing in for a sandbox (no session)."""
    shutil.copytree(
        project, dst, symlinks=True, ignore=shutil.ignore_patterns(".git", ".superqode")
    )
    return dst


@pytest.fixture
def events() -> EventLog:
    return EventLog()


@pytest.fixture
def scripted():
    """scripted(steps, **kw) -> a started ScriptedServer, closed at teardown."""
    servers: list[ScriptedServer] = []

    def start(steps: list[dict[str, Any]], **kw: Any) -> ScriptedServer:
        s = ScriptedServer(steps, **kw).__enter__()
        servers.append(s)
        return s

    yield start
    for s in servers:
        s.close()


@pytest.fixture
def closed_port() -> int:
    """A port on 127.0.0.1 nothing listens on (connection refused)."""
    import socket

    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]
