"""An ACP agent (Agent Client Protocol: Claude Code, Codex, Gemini CLI,
OpenCode... through their ACP adapters) as the worker of an agent role.

SuperQode is the ACP *client*: it starts the agent's command inside the
session's confinement (the same ``proc.supervise`` every role's process goes
through, so the agent and everything it runs are under the sandbox's layers),
with the sandbox as the session's ``cwd``. Two things differ, both configured
per agent: it keeps the host's network (it talks to its model), and the
variables named in ``pass_env`` (its API key) reach it. What the protocol asks of a client is
served from the sandbox only:

- ``fs/read_text_file`` and ``fs/write_text_file``: paths inside the sandbox;
  anything else is refused (and counted, and said in the role's reason);
- ``session/request_permission``: answered by ``agent.permissions`` (the same
  policy the built-in loop uses, forwarded to the editor where it says ``ask``);
- ``session/update``: each tool call becomes a ``tool_call`` event (the CLI's
  line, the editor's ``$/progress``), message text is collected for findings.

Findings come back as a JSON list in the agent's last message (the prompt asks
for it) and go through the same ``report_finding`` checks as the built-in
loop's; the sandbox's changes become one ``propose_fix`` patch. The result is
an ``AgentResult``, judged like the built-in loop's (``ok`` only when the agent
read the code and ended by itself).
"""

from __future__ import annotations

import asyncio
import json
import os
import re
import tempfile
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ..config import AcpAgentConfig
from ..models import Usage
from ..workspace import pyast
from ..workspace.namespaces import SPEC_ENV
from ..workspace.proc import BARRIER_ENV, supervise
from .confine import Refused, read_inside, resolve_inside, write_inside
from .loop import AgentResult, StopReason
from .permissions import Permissions
from .tools import ToolBox

try:  # the agents extra; its absence is one line, not an ImportError
    with pyast.serialized():  # acp's import parses (workspace/pyast.py)
        import acp
        from acp import schema as acp_schema
except ImportError:  # pragma: no cover - exercised by installs without the extra
    acp = None  # type: ignore[assignment]
    acp_schema = None  # type: ignore[assignment]

# ACP's tool kinds, as the permission policy's tool names.
_KIND_TOOL = {"read": "read_file", "search": "search", "edit": "write_file",
              "delete": "write_file", "move": "write_file", "execute": "run_shell",
              "fetch": "run_shell", "other": "run_shell"}
_READING_KINDS = {"read", "search"}
_STOP = {"end_turn": "completed", "max_tokens": "max_tokens",
         "max_turn_requests": "max_turns", "cancelled": "cancelled"}
_FINDINGS = re.compile(r"```(?:json)?\s*(\[.*?\])\s*```", re.S)

FINDINGS_INSTRUCTIONS = """
When you are done, end your last message with the confirmed problems as a JSON
list in one ```json fenced block, each item an object with: file (relative to
the project root), start_line, severity (info|low|medium|high|critical),
confidence (0-1), title, evidence (what you saw, with the code). An empty list
when you found none. Edit files only to fix what you report; your edits become
a patch the user may apply."""


@dataclass
class _Served:
    reads: int = 0  # looks at the code: fs reads and the agent's own read/search calls
    fs_ops: int = 0  # fs/read_text_file and fs/write_text_file served
    calls: int = 0  # tool calls the agent announced
    refused: list[str] = field(default_factory=list)
    text: list[str] = field(default_factory=list)
    by_kind: dict[str, int] = field(default_factory=dict)


class _Client:
    """The client side SuperQode plays for one ACP agent process."""

    def __init__(self, root: Path, box: ToolBox, permissions: Permissions, emit: Any):
        self.root = root.resolve()
        self.box = box
        self.permissions = permissions
        self.emit = emit
        self.served = _Served()

    def on_connect(self, conn: Any) -> None:
        pass

    def _inside(self, path: str) -> Path:
        try:  # a check; each access walks again, no link followed out (confine.py)
            return resolve_inside(self.root, path)
        except Refused:
            self.served.refused.append(path)
            raise acp.RequestError.invalid_params(
                {"path": path, "reason": "outside the sandbox: refused"}) from None

    def _rel(self, p: Path) -> str:
        return p.relative_to(self.root).as_posix()

    def _shown(self, path: str) -> str:
        p = Path(path)
        try:
            return p.relative_to(self.root).as_posix() if p.is_absolute() else path
        except ValueError:
            return path

    async def read_text_file(self, session_id: str, path: str, line: int | None = None,
                             limit: int | None = None, **kw: Any) -> Any:
        p = self._inside(path)
        try:
            text = read_inside(self.root, self._rel(p)).decode("utf-8", "replace")
        except Refused as e:
            raise acp.RequestError.invalid_params({"path": path, "reason": str(e)}) from None
        except OSError as e:
            raise acp.RequestError.invalid_params({"path": path, "reason": e.strerror}) from None
        if line is not None or limit is not None:
            lines = text.splitlines(keepends=True)
            start = max(0, (line or 1) - 1)
            text = "".join(lines[start:start + limit] if limit else lines[start:])
        self.served.reads += 1
        self.served.fs_ops += 1
        self._event("read_file", {"path": self._rel(p)}, "ok")
        return acp_schema.ReadTextFileResponse(content=text)

    async def write_text_file(self, session_id: str, path: str, content: str, **kw: Any) -> Any:
        p = self._inside(path)
        ok, why = await self.permissions.check("write_file", f"write {self._rel(p)}")
        if not ok:
            self.served.refused.append(path)
            self._event("write_file", {"path": self._rel(p)}, "denied")
            raise acp.RequestError.invalid_params({"path": path, "reason": why})
        try:
            write_inside(self.root, self._rel(p), content.encode("utf-8"))
        except (Refused, OSError) as e:
            raise acp.RequestError.invalid_params({"path": path, "reason": str(e)}) from None
        self.served.fs_ops += 1
        self._event("write_file", {"path": self._rel(p)}, "ok")
        return acp_schema.WriteTextFileResponse()

    async def request_permission(self, session_id: str, tool_call: Any, options: list[Any],
                                 **kw: Any) -> Any:
        tool = _KIND_TOOL.get(tool_call.kind or "other", "run_shell")
        ok, _why = await self.permissions.check(tool, tool_call.title or tool)
        wanted = ("allow_once", "allow_always") if ok else ("reject_once", "reject_always")
        for kind in wanted:
            for opt in options:
                if opt.kind == kind:
                    return acp_schema.RequestPermissionResponse(
                        outcome=acp_schema.AllowedOutcome(option_id=opt.option_id,
                                                          outcome="selected"))
        return acp_schema.RequestPermissionResponse(
            outcome=acp_schema.DeniedOutcome(outcome="cancelled"))

    async def session_update(self, session_id: str, update: Any, **kw: Any) -> None:
        kind = getattr(update, "session_update", None)
        if kind == "agent_message_chunk":
            text = getattr(update.content, "text", None)
            if isinstance(text, str):
                self.served.text.append(text)
        elif kind == "tool_call":
            tk = update.kind or "other"
            self.served.calls += 1
            self.served.by_kind[tk] = self.served.by_kind.get(tk, 0) + 1
            if tk in _READING_KINDS:
                self.served.reads += 1  # the agent read the code with its own tool
            where = (update.locations or [None])[0]
            target = ({"path": self._shown(where.path)} if where is not None
                      else {"description": update.title})
            self._event(f"{tk}: {update.title}"[:80], target, "ok")

    def _event(self, tool: str, args: dict[str, Any], outcome: str) -> None:
        self.emit("tool_call", tool=tool, args=args, outcome=outcome,
                  turn=self.served.calls or 1, call_id="")


def _last_line(fh: Any) -> str:
    """The agent's own account of a failure: the last error line it wrote
    (a Node.js crash ends with a stack and its version; the cause is above)."""
    try:
        fh.seek(0)
        lines = [ln.strip() for ln in fh.read()[-8000:].decode("utf-8", "replace").splitlines()
                 if ln.strip()]
    except (OSError, ValueError):
        return ""
    errors = [ln for ln in lines if re.match(r"^(\w*Error|error|fatal|Fatal)\b", ln)]
    said = (errors or lines or [""])[-1]
    return f"; it said: {said[:200]}" if said else ""


def _usage(resp: Any) -> Usage:
    u = getattr(resp, "usage", None)
    if u is None:
        return Usage(requests=1)
    return Usage(prompt_tokens=u.input_tokens, completion_tokens=u.output_tokens, requests=1)


async def run_acp(name: str, cfg: AcpAgentConfig, *, root: Path, env: dict[str, str],
                  system: str, task: str, box: ToolBox, permissions: Permissions, emit: Any,
                  cancel: asyncio.Event, budget_s: float) -> AgentResult:
    """One prompt turn of the ACP agent ``name`` on the sandbox ``root``."""
    client = _Client(root, box, permissions, emit)
    agent_env = {**env, **{k: os.environ[k] for k in cfg.pass_env if k in os.environ},
                 **cfg.env}
    if SPEC_ENV in agent_env:
        spec = json.loads(agent_env[SPEC_ENV])
        spec["network"] = cfg.network
        agent_env[SPEC_ENV] = json.dumps(spec)
    if BARRIER_ENV in agent_env and cfg.writable:
        own = [str(Path(p).expanduser()) for p in cfg.writable]
        allow = json.loads(agent_env[BARRIER_ENV]) + [p for p in own if Path(p).is_dir()]
        agent_env[BARRIER_ENV] = json.dumps(allow)
    argv = supervise(list(cfg.command), agent_env)
    stop: StopReason = "completed"
    error: str | None = None
    usage = Usage()
    # The agent's own stderr: read for the last line of a failure, never left
    # to fill a pipe nobody reads.
    errlog = tempfile.TemporaryFile()
    try:
        async with asyncio.timeout(budget_s):
            async with acp.spawn_agent_process(client, argv[0], *argv[1:], env=agent_env,
                                               cwd=str(root),
                                               transport_kwargs={"stderr": errlog.fileno()}
                                               ) as (conn, proc):
                caps = acp_schema.ClientCapabilities(
                    fs=acp_schema.FileSystemCapabilities(read_text_file=True,
                                                         write_text_file=True),
                    terminal=False)
                await conn.initialize(protocol_version=acp.PROTOCOL_VERSION,
                                      client_capabilities=caps)
                session = await conn.new_session(cwd=str(root), mcp_servers=[])
                prompt = asyncio.ensure_future(conn.prompt(
                    session_id=session.session_id,
                    prompt=[acp.text_block(f"{system}\n\n{task}\n{FINDINGS_INSTRUCTIONS}")]))
                stopper = asyncio.ensure_future(cancel.wait())
                done, _ = await asyncio.wait({prompt, stopper},
                                             return_when=asyncio.FIRST_COMPLETED)
                if prompt not in done:
                    await conn.cancel(session_id=session.session_id)
                    stop = "cancelled"
                    prompt.cancel()
                else:
                    stopper.cancel()
                    resp = prompt.result()
                    usage = _usage(resp)
                    stop = _STOP.get(resp.stop_reason, "completed")  # type: ignore[assignment]
                    if resp.stop_reason == "refusal":
                        error = f"ACP agent {name} refused the task"
                        stop = "provider_error"
    except TimeoutError:
        stop = "timeout"
    except acp.RequestError as e:
        data = getattr(e, "data", None)
        detail = data.get("details") if isinstance(data, dict) else data
        error = (f"ACP agent {name}: {e}" + (f" ({detail})" if detail else "")
                 + _last_line(errlog) + "; is it installed and logged in (its API key or login)?")
        stop = "provider_error"
    except (OSError, EOFError, ConnectionError) as e:
        error = f"ACP agent {name}: {type(e).__name__}: {e}".splitlines()[0] + _last_line(errlog)
        stop = "provider_error"
    finally:
        errlog.close()
    text = "".join(client.served.text)
    await _collect(box, text)
    diff, _files = await box.tracker.diff(None)
    if diff:  # the agent's edits, by fs/write_text_file or its own tools
        await box.call("propose_fix", json.dumps({
            "description": f"changes by {name}", "finding_ids": [f.id for f in box.findings]}))
    served = client.served
    result = AgentResult(
        stop_reason=stop, turns=1, findings=list(box.findings), patches=list(box.patches),
        usage=usage, usage_by_provider={name: usage}, summary=text[-2000:], error=error,
        tool_calls=served.calls + served.fs_ops, reads=served.reads,
        calls_by_tool=dict(served.by_kind), acp_agent=name,
    )
    if served.refused:
        result.warnings.append(
            f"refused {len(served.refused)} request(s) outside the sandbox or by policy "
            f"({', '.join(sorted(set(served.refused))[:3])})")
    return result


async def _collect(box: ToolBox, text: str) -> None:
    """The findings of the JSON list in the agent's answer, through the same
    checks ``report_finding`` makes (real file, real lines)."""
    blocks = _FINDINGS.findall(text)
    if not blocks:
        return
    try:
        items = json.loads(blocks[-1])
    except ValueError:
        return
    for item in items if isinstance(items, list) else []:
        if isinstance(item, dict):
            item.setdefault("confidence", 0.8)
            await box.call("report_finding", json.dumps(item))
