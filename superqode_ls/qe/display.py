"""What a person (or a pipe) sees of a session: event sinks for the EventBus.

- ``JsonlDisplay``: every event as one JSON object per line (``--jsonl``);
- ``RichDisplay``: a live progress table on a terminal;
- ``PlainDisplay``: one plain line per step when output is piped.

``summary_lines`` renders the final report the same way for both.
"""

from __future__ import annotations

import os
import re
import sys
import threading
import time
from collections import Counter
from collections.abc import Callable
from typing import TextIO

from ..models import Event, Finding, QualityReport, Usage
from .report.verdict import PENDING

_ROLE_STATUS = {
    "ok": "done",
    "failed": "failed",
    "skipped": "skipped",
    "timeout": "timed out",
    "cancelled": "cancelled",
    "error": "error",
    "ineffective": "ineffective",
    "incomplete": "incomplete",
}


# In a pipe, a "still running" line after this long without output.
PIPE_HEARTBEAT_S = 30.0


class JsonlDisplay:
    def __init__(self, stream: TextIO | None = None):
        self.stream = stream or sys.stdout
        self._lock = threading.Lock()

    def __call__(self, event: Event) -> None:
        if event.type == "role_finding":
            # Raw, for the editor's progress: the stream's ``finding`` events
            # are the report's (final severities, once each).
            return
        line = event.to_json()
        with self._lock:
            if self.stream is None:
                return
            try:
                self.stream.write(line + "\n")
                self.stream.flush()
            except BrokenPipeError:
                self._reader_gone()

    def _reader_gone(self) -> None:
        """The reader closed the pipe (``| head``): the session still runs to
        its end and reverts; further output goes nowhere instead of raising."""
        stream, self.stream = self.stream, None
        try:
            devnull = os.open(os.devnull, os.O_WRONLY)
            os.dup2(devnull, stream.fileno())
            os.close(devnull)
        except (OSError, ValueError, AttributeError):
            pass

    def close(self) -> None:
        with self._lock:
            if self.stream is None:
                return
            try:
                self.stream.flush()
            except BrokenPipeError:
                self._reader_gone()


def _role_line(data: dict) -> str:
    status = _ROLE_STATUS.get(data.get("status", ""), data.get("status", "?"))
    text = f"{status}: {data.get('findings', 0)} finding(s) in {data.get('duration_s', 0):.1f}s"
    if data.get("reason"):
        text += f" ({data['reason']})"
    return text


def _mutant_count(data: dict) -> int | None:
    """N of a mutation role's ``mutant N`` progress event, else None."""
    message = str(data.get("message", ""))
    if data.get("role") and message.startswith("mutant "):
        try:
            return int(message.split()[1])
        except (IndexError, ValueError):
            return None
    return None


class PlainDisplay:
    """Plain lines, no cursor tricks: safe for pipes, logs and CI.

    A pipe must never look hung: besides a line per role start and end, each
    role's first call of each tool is a line ("[unit_tester] running pytest"),
    the mutation role's counter one line per ``mutant_every`` mutants, and
    with ``heartbeat_s`` a "still running" line when nothing was printed for
    that long (a test suite that runs for minutes).
    """

    def __init__(
        self,
        stream: TextIO | None = None,
        mutant_every: int = 25,
        heartbeat_s: float | None = None,
        *,
        background: bool = True,
        clock: Callable[[], float] = time.monotonic,
    ):
        self.stream = stream or sys.stderr
        self._lock = threading.Lock()
        self.mutant_every = max(1, mutant_every)
        self._tools_seen: set[tuple[str, str]] = set()
        self.heartbeat_s = heartbeat_s
        self._clock = clock
        self._last = clock()
        self._running: dict[str, float] = {}  # what is under way -> since when
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None
        if heartbeat_s and background:
            self._thread = threading.Thread(target=self._beat, name="superqe-heartbeat",
                                            daemon=True)
            self._thread.start()

    def _write(self, text: str) -> None:
        with self._lock:
            self.stream.write(text + "\n")
            self.stream.flush()
            self._last = self._clock()

    def _beat(self) -> None:
        while not self._stop.wait(1.0):
            self.tick()

    def tick(self) -> None:
        """Print "still running: ..." when nothing was printed for
        ``heartbeat_s`` while something is under way."""
        now = self._clock()
        if not self.heartbeat_s or not self._running or now - self._last < self.heartbeat_s:
            return
        running = dict(self._running)  # a copy: events change it from another thread
        busy = ", ".join(f"{what} ({_age(now - since)})" for what, since in running.items())
        try:
            self._write(f"still running: {busy}")
        except (OSError, ValueError):
            self._stop.set()  # the reader is gone; the session goes on without us

    def __call__(self, event: Event) -> None:
        d = event.data
        t = event.type
        if t == "session_start":
            roles = ", ".join(d.get("roles") or [])
            self._write(f"session {event.session_id}: {d.get('mode')} mode, roles: {roles}")
        elif t == "workspace.snapshot":
            self._write(f"sandbox ready ({d.get('isolation')}, {d.get('seconds', 0):.1f}s)")
        elif t == "role_start":
            self._running[str(d.get("role"))] = self._clock()
            self._write(f"[{d.get('role')}] started")
        elif t == "role_complete":
            self._running.pop(str(d.get("role")), None)
            self._write(f"[{d.get('role')}] {_role_line(d)}")
        elif t == "tool_call" and str(d.get("role", "")).startswith("agent_"):
            # An agent's work is its calls: each one, with what it looked at.
            self._write(f"[{d['role']}] {agent_call_line(d)}")
        elif t == "log" and d.get("level") == "warning" and str(d.get("role", "")).startswith(
                "agent_"):
            # A retry, a fallback, a server that cannot stream tool calls: why an agent waits.
            self._write(f"[{d['role']}] warning: {d.get('message')}")
        elif t == "tool_call" and d.get("role"):
            key = (str(d["role"]), str(d.get("tool")))
            if key not in self._tools_seen:  # a role may call its tool per file or mutant
                self._tools_seen.add(key)
                self._write(f"[{d['role']}] running {d.get('tool')}")
        elif t == "progress" and _mutant_count(d) is not None:
            n = _mutant_count(d) or 0
            if n % self.mutant_every == 0:
                total = f" of {d['total']}" if d.get("total") else ""
                self._write(f"[{d['role']}] {n}{total} mutants run")
        elif t == "progress" and d.get("role") and d.get("message"):
            self._write(f"[{d['role']}] {d['message']}")
        elif t == "progress" and (
            str(d.get("message", "")).startswith("fixes verified")
            or (str(d.get("message", "")).startswith("verifying") and not d.get("done"))
        ):
            if str(d.get("message")).startswith("verifying"):
                self._running["verifying fixes"] = self._clock()
            else:
                self._running.pop("verifying fixes", None)
            self._write(str(d.get("message")))
        elif t == "progress" and str(d.get("message", "")).startswith("noise filter stopped"):
            self._write(str(d.get("message")))  # the budget cut the filter short: said once
        elif t == "git.blocked":
            self._write(f"blocked git command in the sandbox: {d.get('command') or d.get('argv')}")
        elif t == "workspace.reverted":
            self._write("sandbox removed; " + _reverted(d, "PROJECT DIFFERS FROM BEFORE"))

    def close(self) -> None:
        self._stop.set()
        if self._thread is not None:
            self._thread.join(timeout=5)


def _age(seconds: float) -> str:
    seconds = int(seconds)
    return f"{seconds // 60}m {seconds % 60:02d}s" if seconds >= 60 else f"{seconds}s"


class RichDisplay:
    """A live table of roles on a terminal (rich), cleared at the end."""

    def __init__(self, stream: TextIO | None = None):
        from rich.console import Console
        from rich.progress import Progress, SpinnerColumn, TextColumn, TimeElapsedColumn

        self.console = Console(file=stream or sys.stderr)
        self.progress = Progress(
            SpinnerColumn(),
            TextColumn("{task.description}"),
            TimeElapsedColumn(),
            console=self.console,
            transient=False,
        )
        self._tasks: dict[str, int] = {}
        self._lock = threading.Lock()
        self._verify: int | None = None
        self.progress.start()

    def _task(self, name: str, description: str) -> int:
        if name not in self._tasks:
            self._tasks[name] = self.progress.add_task(description, total=1)
        return self._tasks[name]

    def __call__(self, event: Event) -> None:
        d = event.data
        t = event.type
        with self._lock:
            if t == "session_start":
                self.console.print(
                    f"[bold]superqe[/] {event.session_id}: {d.get('mode')} mode on {d.get('project')}"
                )
                self._task("_sandbox", "preparing sandbox")
            elif t == "workspace.snapshot":
                tid = self._task("_sandbox", "")
                self.progress.update(
                    tid, description=f"sandbox ready ({d.get('isolation')})", completed=1
                )
            elif t == "role_start":
                self._task(d["role"], f"{d['role']}: running")
            elif t == "progress" and _mutant_count(d) is not None:
                tid = self._task(d["role"], "")
                self.progress.update(tid, description=f"{d['role']}: running, {d['message']}")
            elif t == "role_complete":
                tid = self._task(d["role"], "")
                self.progress.update(tid, description=f"{d['role']}: {_role_line(d)}", completed=1)
            elif t == "progress" and str(d.get("message", "")).startswith(("verifying", "fixes verified")):
                if self._verify is None:
                    self._verify = self.progress.add_task("verifying fixes", total=d.get("total") or 1)
                self.progress.update(
                    self._verify, description=str(d.get("message")), completed=d.get("done", 0)
                )
            elif t == "workspace.reverted":
                self.progress.add_task(
                    "sandbox removed; " + _reverted(d, "[red]PROJECT DIFFERS[/]"),
                    total=1, completed=1,
                )

    def close(self) -> None:
        self.progress.stop()


def make_display(*, jsonl: bool, stream: TextIO | None = None):
    """The right sink for where output goes."""
    if jsonl:
        return JsonlDisplay(sys.stdout)
    stream = stream or sys.stderr
    if stream.isatty():
        return RichDisplay(stream)
    return PlainDisplay(stream, heartbeat_s=PIPE_HEARTBEAT_S)


def _where(f: Finding) -> str:
    if not f.file:
        return "-"
    if f.range is None:
        return f.file
    return f"{f.file}:{f.range.start_line}:{f.range.start_col}"


def finding_line(f: Finding, patches: dict | None = None) -> str:
    """``patches`` (id -> Patch) lets the line say what the fix is: verified,
    tool-verified only, not verified, or a suppression."""
    fix = ""
    if f.fix_patch_id:
        p = (patches or {}).get(f.fix_patch_id)
        label = p.label if p is not None else ("verified" if f.verified else "")
        fix = f" [fix {f.fix_patch_id}{', ' + label if label else ''}]"
    rule = f.rule_id + "".join(f"+{r}" for r in f.related_rules)
    where = next((t[5:] for t in f.tags if t.startswith("path:")), None)
    note = f" [in {where}: one level lower]" if where else ""
    if f.noise:
        note = f" [noise: {f.noise}]"
    return f"{_where(f)}: {f.severity.value} {rule} {f.title} ({f.role}/{f.tool}){fix}{note}"


def agent_call_line(d: dict) -> str:
    """``turn 3: read_file shop/storage.py`` (plus the outcome when not ok)."""
    args = d.get("args")
    target = ""
    if isinstance(args, dict):
        for key in ("path", "pattern", "query", "command", "file", "description"):
            if isinstance(args.get(key), str) and args[key]:
                target = " " + " ".join(args[key].split())
                break
    if len(target) > 61:
        target = target[:58] + "..."
    outcome = d.get("outcome")
    tail = f" ({outcome})" if outcome and outcome != "ok" else ""
    return f"turn {d.get('turn')}: {d.get('tool')}{target}{tail}"


def usage_line(usage: Usage | None) -> str | None:
    """``model: 12,345 tokens (11,000 prompt, 1,345 completion) in 14 requests, $0.0123``."""
    if usage is None or not (usage.prompt_tokens or usage.completion_tokens):
        return None
    total = usage.prompt_tokens + usage.completion_tokens
    line = (f"model: {total:,} tokens ({usage.prompt_tokens:,} prompt, "
            f"{usage.completion_tokens:,} completion) in {usage.requests} request(s)")
    return line + (f", ${usage.cost_usd:.4f}" if usage.cost_usd else "")


def noise_line(findings: list[Finding], shown: bool = False) -> str | None:
    """``N more (noise): 4 in tests code, 2 low confidence ...``: what the
    list left out (or, ``shown``, put last), by reason."""
    reasons = Counter(_noise_kind(f.noise) for f in findings if f.noise)
    if not reasons:
        return None
    n = sum(reasons.values())
    why = ", ".join(f"{c} {_ADVISORIES if r == _ADVISORY and c > 1 else r}"
                    for r, c in reasons.most_common())
    # The JSON report keeps the most important 500 on a large project
    # (report/bounded.py): SARIF and the event stream carry every one.
    where = (
        "listed above" if shown
        else "--show-noise lists them; --sarif FILE and --jsonl carry every finding")
    return f"{n} more (noise): {why} ({where})"


# The default view's advisories (reasons ``advisory: ...``) and the context
# step's (``an advisory (bandit asks for a check...)``) count as one kind.
_ADVISORY, _ADVISORIES = "advisory", "advisories"


# A reason's lead clause, as the count line names it: the whole reason (a
# rule's proof can run to a paragraph) is the finding's own, --show-noise.
_LEAD_MAX = 60


def _noise_kind(reason: str | None) -> str:
    first = (reason or "").split("; ")[0]
    if first.startswith(("advisory:", "an advisory (")):
        return _ADVISORY
    if first.startswith("low confidence"):
        return "low confidence"
    lead = re.split(r": | \(", first, maxsplit=1)[0].strip() or first
    return lead if len(lead) <= _LEAD_MAX else lead[:_LEAD_MAX - 1].rstrip(" ,") + "…"


def summary_lines(report: QualityReport, show_noise: bool = False) -> list[str]:
    """Most important first (the report's order): what is worth acting on,
    then (``show_noise``) the noise, else a count of it by reason."""
    # Here, not at the top: the display is made before a run's session
    # starts, and the noise modules are the session's to import after that.
    from .noise import by_importance

    findings = by_importance(report.findings)
    if not show_noise:
        findings = [f for f in findings if f.noise is None]
    patches = {p.id: p for p in report.patches}
    lines = [finding_line(f, patches) for f in findings]
    counts = ", ".join(f"{k} {v}" for k, v in report.summary.items() if v and k != "noise")
    lines.append("")
    state = ""
    if report.cancelled:
        state = " (partial results)"  # the verdict itself says cancelled
    elif report.timed_out:
        state = " (timed out: partial results)"
    worth = sum(1 for f in report.findings if f.noise is None)
    lines.append(f"verdict: {report.verdict}{state}; {worth} finding(s)"
                 + (f" ({counts})" if counts else ""))
    more = noise_line(report.findings, shown=show_noise)
    if more:
        lines.append(more)
    hidden = []
    if report.suppressed:
        hidden.append(f"{report.suppressed} suppressed inline")
    if report.baseline_filtered:
        hidden.append(f"{report.baseline_filtered} in the baseline")
    if hidden:
        lines.append("hidden: " + "; ".join(hidden))
    verified = sum(1 for p in report.patches if p.verified)
    if report.patches:
        lines.append(f"fixes: {len(report.patches)} suggested, {verified} verified "
                     "(superqe suggestions list)")
    used = usage_line(report.usage)
    if used:
        lines.append(used)
    for r in report.roles:
        if r.status == "skipped" and (r.reason or "").startswith(PENDING):
            # Not a role that failed or chose not to run: a first run's
            # tests waiting for their environment, said as such, once.
            lines.append(r.reason.removeprefix("setup: "))
        elif r.status not in ("ok",):
            lines.append(f"role {r.role}: {r.status}" + (f" ({r.reason})" if r.reason else ""))
        elif note := _setup_note(r.reason):
            # Tests that failed for where they ran: one line per run, by
            # cause, never findings (qe/roles/unit.py's line).
            lines.append(f"setup ({r.role}): {note}")
    if report.stale:
        lines.append("stale: files changed while the session ran; re-run for current results")
    if report.verification is not None:
        lines.append(report.verification.line)
    if report.artifacts.get("json"):
        lines.append(f"report: {report.artifacts['json']}")
    return lines


def _setup_note(reason: str | None) -> str | None:
    """The environment's failures a finished role's line counts, by cause."""
    parts = [p for p in (reason or "").split("; ") if _ENVIRONMENT_S.match(p)]
    return "; ".join(parts) or None


_ENVIRONMENT_S = re.compile(r"\d+ failure\(s\) the environment's: ")


def _reverted(d: dict, differs: str) -> str:
    if not d.get("verified"):
        return differs
    outside = d.get("outside_changes") or []
    if outside:
        return f"project verified; {len(outside)} change(s) made outside the session, kept"
    return "project verified unchanged"
