"""LLM agents: an OpenAI-compatible provider (httpx), the tool loop, tools
confined to the sandbox, and per-tool permissions. See docs/agents.md."""

from .permissions import (
    AllowAsker,
    Asker,
    DenyAsker,
    Permissions,
    TerminalAsker,
)
from .redact import Redactor

__all__ = [
    "AllowAsker",
    "Asker",
    "DenyAsker",
    "Permissions",
    "Redactor",
    "TerminalAsker",
]
