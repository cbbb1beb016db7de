"""Per-tool permissions: ``allow``, ``ask`` or ``deny`` (``agent.permissions``).

``ask`` goes to whoever is watching: the front end puts its ``Asker`` in the
``Runtime`` it hands down (the language server one that sends
``window/showMessageRequest``, the CLI one that prompts on the terminal) and
the agent role passes it here. Without one (CI, ``--jsonl``, scripts) the
answer is no.
"""

from __future__ import annotations

import asyncio
import sys
from collections.abc import Mapping
from typing import Any, Literal

from ..runtime import Asker

Decision = Literal["allow", "ask", "deny"]


class DenyAsker:
    """Non-interactive runs: nobody to ask, so nothing that needs asking runs."""

    async def ask(self, tool: str, summary: str) -> bool:
        return False


class AllowAsker:
    """For tests and explicit ``--yes`` style front ends."""

    async def ask(self, tool: str, summary: str) -> bool:
        return True


class TerminalAsker:
    """Asks on a terminal: ``Allow run_shell: <summary>? [y/N]``.

    Prompts are serialized (parallel agents must not interleave questions);
    reading happens in a thread so the event loop keeps running. Anything but
    y/yes, and end of input, is a no.
    """

    def __init__(self, stdin: Any = None, stdout: Any = None):
        self.stdin = stdin or sys.stdin
        self.stdout = stdout or sys.stderr
        self._lock = asyncio.Lock()

    @staticmethod
    def available() -> bool:
        return sys.stdin.isatty() and sys.stderr.isatty()

    async def ask(self, tool: str, summary: str) -> bool:
        async with self._lock:
            self.stdout.write(f"superqe: allow {tool}: {summary}? [y/N] ")
            self.stdout.flush()
            line = await asyncio.to_thread(self.stdin.readline)
            return line.strip().lower() in ("y", "yes")


class Permissions:
    def __init__(self, policy: Mapping[str, str], asker: Asker | None = None):
        from ..config import AgentConfig

        # A superqode.yaml that names one tool replaces the whole mapping when
        # layers merge; the other tools keep their defaults.
        self.policy = {**AgentConfig().permissions, **policy}
        # Nobody to ask (no asker in the runtime) fails closed: no.
        self.asker: Asker = asker or DenyAsker()

    def decision(self, tool: str) -> Decision:
        # A tool the configuration does not mention is asked about, not run.
        value = self.policy.get(tool, "ask")
        return value if value in ("allow", "ask", "deny") else "ask"  # type: ignore[return-value]

    async def check(self, tool: str, summary: str) -> tuple[bool, str]:
        """(allowed, why) for one call."""
        d = self.decision(tool)
        if d == "allow":
            return True, "allowed by policy"
        if d == "deny":
            return False, f"{tool} is denied by agent.permissions"
        try:
            ok = bool(await self.asker.ask(tool, summary))
        except Exception as e:  # noqa: BLE001 - a broken prompt is a no, never a crash
            return False, f"could not ask the user ({type(e).__name__}); denied"
        return (True, "allowed by the user") if ok else (False, "denied by the user")
