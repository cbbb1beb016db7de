"""LLM agents: an OpenAI-compatible provider (httpx), the tool loop, tools
confined to the sandbox, and per-tool permissions. See docs/agents.md."""

from .permissions import (
    AllowAsker,
    Asker,
    DenyAsker,
    Permissions,
    TerminalAsker,
    current_asker,
    set_default_asker,
    use_asker,
)
from .redact import Redactor

__all__ = [
    "AllowAsker",
    "Asker",
    "DenyAsker",
    "Permissions",
    "Redactor",
    "TerminalAsker",
    "current_asker",
    "set_default_asker",
    "use_asker",
]
