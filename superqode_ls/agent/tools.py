"""The agent's tools, all confined to the sandbox root.

Each call is validated (JSON object, schema), checked for safety (paths stay
inside the sandbox, shell commands pass the git guard and the shell tripwire),
then against ``agent.permissions``, and only then executed. Every call, run or
refused, becomes one redacted ``tool_call`` event. Results and errors go back
to the model as text; nothing here raises into the loop.
"""

from __future__ import annotations

import hashlib
import json
import re
import time
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from pathlib import Path, PurePosixPath
from typing import Any

import jsonschema

from ..config import AgentConfig
from ..models import Evidence, Finding, Patch, Range, Severity
from ..runtime import Runtime
from ..workspace.guard import command_is_blocked
from ..workspace.proc import run_command
from .changes import ChangeTracker, is_noise
from .confine import (
    Refused,
    files_inside,
    kind_inside,
    read_inside,
    resolve_inside,
    shell_refusal,
    write_inside,
)
from .permissions import Permissions
from .redact import Redactor
from .tool_specs import SCHEMAS, TOOL_NAMES

MAX_READ_CHARS = 40_000
MAX_WRITE_BYTES = 1_000_000
MAX_LIST = 500
MAX_MATCHES = 200
MAX_SEARCH_FILE = 1_000_000
AGENT_TOOL = "superqode-agent"
REPRODUCER_PREFIX = "reproducer: "
_EVENT_STR_CAP = 300

@dataclass
class ToolResult:
    text: str
    outcome: str = "ok"  # ok | error | refused | denied

    @property
    def allowed(self) -> bool:
        return self.outcome in ("ok", "error")


GuardCheck = Callable[[str], str | None]


def workspace_guard_refusal(command: str, guard_config: Any = None) -> str | None:
    """The workspace git guard's verdict on a command line (None = allowed)."""
    v = command_is_blocked(command, guard_config)
    if v is None:
        return None
    return f"git guard: {v.reason}" + (f" ({v.suggestion})" if v.suggestion else "")


@dataclass
class ToolBox:
    root: Path
    role: str
    config: AgentConfig
    env: dict[str, str]
    permissions: Permissions
    redactor: Redactor
    tracker: ChangeTracker
    emit: Callable[..., Any] = lambda *a, **k: None
    guard: GuardCheck = workspace_guard_refusal
    category: str = "quality"
    remaining: Callable[[], float | None] = lambda: None
    runtime: Runtime | None = None  # the front end's priority and CPUs for run_shell
    findings: list[Finding] = field(default_factory=list)
    patches: list[Patch] = field(default_factory=list)
    calls: int = 0
    # Files the agent created (tests, mostly): a finding's reproducer may need
    # them when the verifier re-runs it on a restored sandbox.
    created: dict[str, str] = field(default_factory=dict)
    reproducer_files: dict[str, dict[str, str]] = field(default_factory=dict)

    def __post_init__(self) -> None:
        self.root = Path(self.root).resolve()
        self._handlers: dict[str, Callable[[dict[str, Any]], Awaitable[str]]] = {
            "read_file": self._read_file,
            "list_files": self._list_files,
            "search": self._search,
            "write_file": self._write_file,
            "edit_file": self._edit_file,
            "run_shell": self._run_shell,
            "report_finding": self._report_finding,
            "propose_fix": self._propose_fix,
        }

    # -- dispatch -----------------------------------------------------------

    async def call(
        self, name: str, raw_args: str, *, turn: int = 0, call_id: str = ""
    ) -> ToolResult:
        self.calls += 1
        start = time.monotonic()
        args: Any = None
        reason = ""
        try:
            args = self._parse(name, raw_args)
            summary = self._summary(name, args)
            self._precheck(name, args)
            allowed, reason = await self.permissions.check(name, summary)
            if not allowed:
                result = ToolResult(f"denied: {reason}", "denied")
            else:
                result = ToolResult(await self._handlers[name](args))
        except Refused as e:
            reason = str(e)
            result = ToolResult(f"refused: {e}", "refused")
        except _ToolError as e:
            result = ToolResult(f"error: {e}", "error")
        except Exception as e:  # noqa: BLE001 - a tool bug must not end the session
            result = ToolResult(f"error: {type(e).__name__}: {e}", "error")
        result.text = self.redactor.text(result.text)
        # The caller's emit adds the role name (RoleContext.emit does).
        self.emit(
            "tool_call",
            tool=self.redactor.text(_cap(name, 80)),
            call_id=call_id,
            turn=turn,
            args=self._event_args(args if args is not None else raw_args),
            allowed=result.allowed,
            outcome=result.outcome,
            reason=self.redactor.text(reason) if result.outcome in ("refused", "denied") else None,
            result=_cap(result.text, _EVENT_STR_CAP),
            duration_s=round(time.monotonic() - start, 4),
        )
        return result

    def _parse(self, name: str, raw: str) -> dict[str, Any]:
        if name not in self._handlers:
            raise _ToolError(f"unknown tool {name!r} (available: {', '.join(TOOL_NAMES)})")
        try:
            args = json.loads(raw) if raw and raw.strip() else {}
        except json.JSONDecodeError as e:
            raise _ToolError(f"arguments for {name} are not valid JSON ({e.msg})") from None
        if not isinstance(args, dict):
            raise _ToolError(f"arguments for {name} must be a JSON object")
        spec = SCHEMAS[name]
        schema = {
            "type": "object",
            "properties": spec["properties"],
            "required": spec["required"],
            "additionalProperties": False,
        }
        try:
            jsonschema.validate(args, schema)
        except jsonschema.ValidationError as e:
            where = "/".join(str(p) for p in e.absolute_path)
            raise _ToolError(
                f"invalid arguments for {name}: {where + ': ' if where else ''}{e.message}"
            ) from None
        return args

    def _precheck(self, name: str, args: dict[str, Any]) -> None:
        """Safety before permission: nobody is asked about ``rm -rf /``."""
        if name in ("read_file", "list_files", "search"):
            resolve_inside(self.root, args.get("path") or ".")
        elif name in ("write_file", "edit_file"):
            resolve_inside(self.root, args["path"], for_write=True)
        elif name == "report_finding":
            resolve_inside(self.root, args["file"])
        elif name == "propose_fix":
            for f in args.get("files") or []:
                resolve_inside(self.root, f)
        elif name == "run_shell":
            cmd = args["command"]
            try:
                why = self.guard(cmd)
            except Exception as e:  # noqa: BLE001 - what the guard cannot read does not run
                why = f"git guard could not check the command ({type(e).__name__})"
            why = why or shell_refusal(cmd, self.root)
            if why:
                raise Refused(why)

    def _summary(self, name: str, args: dict[str, Any]) -> str:
        if name == "run_shell":
            return self.redactor.text(f"run in the sandbox: {args.get('command', '')}")
        if name in ("write_file", "edit_file"):
            return f"{name} {args.get('path')} (sandbox copy)"
        if name == "propose_fix":
            return f"propose a patch: {args.get('description', '')}"
        return f"{name} {args.get('path') or args.get('file') or args.get('pattern') or ''}".strip()

    def _event_args(self, args: Any) -> Any:
        def shorten(v: Any) -> Any:
            if isinstance(v, str):
                return _cap(v, _EVENT_STR_CAP)
            if isinstance(v, dict):
                return {k: shorten(x) for k, x in v.items()}
            if isinstance(v, list):
                return [shorten(x) for x in v[:20]]
            return v

        return shorten(self.redactor(args))

    # -- read-only tools ----------------------------------------------------

    # Every access below walks from the root with no link followed out of it
    # (agent/confine.py): the session's processes change the tree meanwhile.
    async def _read_file(self, a: dict[str, Any]) -> str:
        text = _text(self.root, a["path"])
        lines = text.splitlines()
        start = a.get("start_line", 1)
        end = min(a.get("end_line", len(lines)), len(lines))
        if lines and start > len(lines):
            raise _ToolError(f"{a['path']}: has {len(lines)} lines")
        out = "\n".join(f"{i:>5}  {lines[i - 1]}" for i in range(start, end + 1))
        if len(out) > MAX_READ_CHARS:
            out = out[:MAX_READ_CHARS] + "\n[... truncated; read a line range]"
        return out or "(empty file)"

    async def _list_files(self, a: dict[str, Any]) -> str:
        where = a.get("path") or "."
        if kind_inside(self.root, where) != "d":
            raise _ToolError(f"{a.get('path')}: not a directory")
        out = []
        for rel in sorted(files_inside(self.root, where, prune=is_noise), key=PurePosixPath):
            if is_noise(rel):
                continue
            out.append(rel)
            if len(out) >= MAX_LIST:
                out.append(f"[... more than {MAX_LIST} files; list a subdirectory]")
                break
        return "\n".join(out) or "(no files)"

    async def _search(self, a: dict[str, Any]) -> str:
        try:
            rx = re.compile(a["pattern"])
        except re.error as e:
            raise _ToolError(f"invalid regular expression: {e}") from None
        where = a.get("path") or "."
        if kind_inside(self.root, where) == "f":
            files = [_rel(self.root, where)]
        else:
            base = _rel(self.root, where)
            glob = a.get("glob") or "*"
            files = sorted((f for f in files_inside(self.root, where, prune=is_noise)
                            if PurePosixPath(f).relative_to(base if base != "." else "").match(glob)),
                           key=PurePosixPath)
        hits: list[str] = []
        for rel in files:
            if is_noise(rel):
                continue
            try:
                text = _text(self.root, rel, MAX_SEARCH_FILE)
            except (_ToolError, Refused):
                continue
            for n, line in enumerate(text.splitlines(), 1):
                if rx.search(line):
                    hits.append(f"{rel}:{n}: {line[:300]}")
                    if len(hits) >= MAX_MATCHES:
                        hits.append(f"[... more than {MAX_MATCHES} matches; narrow the search]")
                        return "\n".join(hits)
        return "\n".join(hits) or "(no matches)"

    # -- editing tools ------------------------------------------------------

    async def _write_file(self, a: dict[str, Any]) -> str:
        data = a["content"].encode("utf-8")
        if len(data) > MAX_WRITE_BYTES:
            raise _ToolError(f"content is larger than {MAX_WRITE_BYTES} bytes")
        existed, rel = _write(self.root, a["path"], data)
        if not existed or rel in self.created:
            self.created[rel] = a["content"]
        return f"{'overwrote' if existed else 'created'} {rel} ({len(data)} bytes)"

    async def _edit_file(self, a: dict[str, Any]) -> str:
        text = _text(self.root, a["path"])
        old = a["old_text"]
        if not old:
            raise _ToolError("old_text is empty")
        count = text.count(old)
        if count == 0:
            raise _ToolError(
                f"old_text not found in {a['path']}; read the file and copy the exact text"
            )
        if count > 1:
            raise _ToolError(
                f"old_text occurs {count} times in {a['path']}; include more surrounding lines so it is unique"
            )
        new = text.replace(old, a["new_text"], 1)
        _, rel = _write(self.root, a["path"], new.encode("utf-8"))
        if rel in self.created:
            self.created[rel] = new
        return f"edited {rel}"

    async def _run_shell(self, a: dict[str, Any]) -> str:
        timeout = min(
            float(a.get("timeout") or self.config.shell_timeout_s), self.config.shell_timeout_s
        )
        left = self.remaining()
        if left is not None:
            timeout = min(timeout, max(left, 0.1))
        res = await run_command(
            ["/bin/sh", "-c", a["command"]],
            self.root,
            env=self.env,
            timeout=timeout,
            output_cap=self.config.shell_output_cap,
            runtime=self.runtime,
        )
        cap = self.config.shell_output_cap
        parts = [
            f"exit code: {res.returncode}"
            + (f" (timed out after {timeout:g}s)" if res.timed_out else "")
        ]
        if res.stdout:
            parts.append("stdout:\n" + _tail(res.stdout, cap // 2))
        if res.stderr:
            parts.append("stderr:\n" + _tail(res.stderr, cap // 2))
        if res.truncated:
            parts.append(f"[output capped at {cap} bytes]")
        return "\n".join(parts)

    # -- results ------------------------------------------------------------

    async def _report_finding(self, a: dict[str, Any]) -> str:
        try:
            lines = _text(self.root, a["file"]).splitlines()
        except _ToolError as e:
            raise _ToolError(f"{e}; findings must point at real code") from None
        start = a["start_line"]
        end = a.get("end_line", start)
        if start > len(lines) or end < start or end > len(lines):
            raise _ToolError(
                f"{a['file']} has {len(lines)} lines; lines {start}-{end} do not exist"
            )
        rel = _rel(self.root, a["file"])
        snippet = "\n".join(lines[start - 1 : end])
        ev = a["evidence"]
        evidence = [
            Evidence(message=m, file=rel, line=start) for m in ([ev] if isinstance(ev, str) else ev)
        ]
        if a.get("reproducer"):
            evidence.append(Evidence(message=REPRODUCER_PREFIX + a["reproducer"]))
        finding = Finding(
            role=self.role,
            tool=AGENT_TOOL,
            rule_id=a.get("rule_id") or f"{self.role}.finding",
            title=a["title"],
            message=a.get("message") or a["title"],
            severity=Severity(a["severity"]),
            confidence=a["confidence"],
            category=a.get("category") or self.category,
            file=rel,
            range=Range(start_line=start, end_line=end),
            evidence=evidence,
            snippet=snippet,
            tags=["agent"],
        ).with_stable_id()
        finding = Finding.model_validate(self.redactor(finding.model_dump(mode="json")))
        if any(f.id == finding.id for f in self.findings):
            return json.dumps({"finding_id": finding.id, "note": "already reported"})
        self.findings.append(finding)
        if a.get("reproducer"):
            self.reproducer_files[finding.id] = dict(self.created)
        return json.dumps({"finding_id": finding.id})

    async def _propose_fix(self, a: dict[str, Any]) -> str:
        known = {f.id for f in self.findings}
        ids = list(a.get("finding_ids") or [])
        unknown = [i for i in ids if i not in known]
        if unknown:
            raise _ToolError(f"unknown finding ids {unknown}; use the ids report_finding returned")
        diff, files = await self.tracker.diff(a.get("files"))
        if not diff:
            raise _ToolError(
                "no edits to propose (the sandbox matches the project for those files)"
            )
        diff = self.redactor.text(diff)
        pid = f"{self.role}-{hashlib.sha256(diff.encode('utf-8', 'surrogateescape')).hexdigest()[:12]}"
        patch = Patch(
            id=pid,
            description=a["description"],
            diff=diff,
            files=files,
            finding_ids=ids,
            role=self.role,
            tool=AGENT_TOOL,
        )
        patch = Patch.model_validate(self.redactor(patch.model_dump(mode="json")))
        self.patches = [p for p in self.patches if p.id != pid] + [patch]
        for i, f in enumerate(self.findings):
            if f.id in ids:
                self.findings[i] = f.model_copy(update={"fix_patch_id": pid})
        return json.dumps({"patch_id": pid, "files": files})


class _ToolError(Exception):
    pass


def _text(root: Path, rel: str, limit: int | None = None) -> str:
    try:
        data = read_inside(root, rel, limit)
    except (FileNotFoundError, NotADirectoryError, IsADirectoryError):
        raise _ToolError(f"{rel}: no such file") from None
    except ValueError as e:
        raise _ToolError(str(e)) from None
    if b"\x00" in data[:8192]:
        raise _ToolError(f"{PurePosixPath(rel).name}: binary file")
    return data.decode("utf-8", "replace")


def _rel(root: Path, rel: str) -> str:
    """Where ``rel`` leads, relative to ``root`` (links inside followed)."""
    return resolve_inside(root, rel).relative_to(root).as_posix() or "."


def _write(root: Path, rel: str, data: bytes) -> tuple[bool, str]:
    try:
        return write_inside(root, rel, data)
    except IsADirectoryError:
        raise _ToolError(f"{rel}: is a directory") from None


def _cap(s: str, n: int) -> str:
    return s if len(s) <= n else s[:n] + f"...[+{len(s) - n} chars]"


def _tail(s: str, n: int) -> str:
    # The end of test output carries the verdict; keep it.
    return s if len(s) <= n else f"[... {len(s) - n} chars cut]\n" + s[-n:]
