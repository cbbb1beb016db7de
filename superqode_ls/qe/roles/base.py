"""What a QE role is.

A role runs inside the sandbox (``ctx.sandbox``), never in the user's project,
and returns findings (paths relative to the sandbox root, which mirrors the
project) and patches (unified diffs that apply to the project as it was at
session start). A role whose tool cannot run returns status ``skipped`` with
the reason; it never invents findings.
"""

from __future__ import annotations

import asyncio
import os
import re
import shutil
import sys
import tempfile
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, ClassVar, Literal, Protocol, TypeVar

from ...config import Config
from ...errors import EXIT_FAILED, SuperQodeError, user_line
from ...models import ChangeSet, Finding, Patch, RoleStatus, Usage, Verification
from ...runtime import Runtime
from ...workspace.artifacts import Artifacts
from ...workspace.coordinator import LockRecord
from ...workspace.proc import ProcResult, run_command
from ...workspace.pyenv import ProjectPython

Emit = Callable[..., Any]
_Out = TypeVar("_Out")


class SandboxSession(Protocol):
    """What the pipeline and the roles use of a session (``IsolatedSession``
    is the one implementation; tests may hand a smaller stand-in). Typed here
    so that nothing probes it with ``getattr``."""

    id: str
    project: Path  # the repository the sandbox was made from
    sandbox: Path
    isolation: str  # "worktree", "snapshot" or "sparse" (the requested files only)
    base_commit: str | None
    verification: Verification | None  # set when the session closes
    lock: LockRecord | None  # the coordinator's lock; None when not held

    def env(self, base: dict[str, str] | None = None) -> dict[str, str]: ...

    async def changes(self, since: str | None = None) -> ChangeSet: ...

    async def checkpoint(self) -> str: ...

    async def restore(self, snapshot_id: str) -> None: ...

    def guard_events(self) -> list[dict]: ...  # publishes the guard's refusals so far


class ToolFailed(SuperQodeError):
    """A role's tool gave no usable result (it failed or ran out of time).

    The one way a role reports that: raised where the tool's result is read,
    turned into the role's output (status ``failed``/``timeout``, the reason
    being the error's user line, the one the CLI and the editor show) by
    :func:`reported` at the role's entry points. No role builds a failed
    output by hand (tests/test_errors.py checks). ``findings``: what the tool
    reported before it stopped (a test suite cut at its time limit)."""

    exit_code = EXIT_FAILED

    def __init__(self, tool: str, reason: str, *, status: Literal["failed", "timeout"] = "failed",
                 findings: Sequence[Finding] = ()):
        super().__init__(reason)
        self.tool = tool
        self.status: Literal["failed", "timeout"] = status
        self.findings = list(findings)

    def output(self) -> RoleOutput:
        return RoleOutput(status=self.status, reason=user_line(self), tool=self.tool,
                          findings=list(self.findings))

    def noted(self, note: str) -> ToolFailed:
        """The same failure with ``note`` added to its reason."""
        return ToolFailed(self.tool, f"{self.message}; {note}", status=self.status,
                          findings=self.findings)


async def reported(work: Awaitable[_Out]) -> _Out | RoleOutput:
    """``work``'s output, or the output of the ``ToolFailed`` it raised: a
    role's entry points (run, recheck, ...) return through this, so the
    pipeline, the verifier and the reports only ever see outputs."""
    try:
        return await work
    except ToolFailed as e:
        return e.output()


def tool_path(name: str) -> str | None:
    """A tool installed in SuperQode's own environment first, then PATH."""
    local = Path(sys.executable).parent / name
    if local.exists():
        return str(local)
    return shutil.which(name)


@dataclass
class RoleContext:
    session_id: str
    project: Path  # the user's project: read nothing from it that the sandbox has
    sandbox: Path
    config: Config
    mode: str
    env: dict[str, str]  # environment for processes in the sandbox (git guard active)
    artifacts: Artifacts
    files: list[str] | None = None  # restrict to these relative paths; None = whole tree
    deadline: float | None = None  # loop.time() by which the role must be done
    emit: Emit = lambda *a, **k: None  # emit(type, **data)
    trusted: bool = False
    # The session (changes(), checkpoint(), restore()) for roles that turn
    # their own edits into patches; None when a role runs on a bare folder.
    session: SandboxSession | None = None
    # The interpreter the project's code runs with (workspace/pyenv.py); the
    # pipeline finds it once per session, a role run alone finds it itself.
    python: ProjectPython | None = None
    # Which units of work (project-relative files) this run does; None: all.
    # Set by ``--shard K/N`` (qe/shard.py); roles that split their work read it.
    targets: Callable[[str], bool] | None = None
    # ``--since``: per changed file, the lines the change added or modified;
    # roles that target code (mutants, generated tests) stay inside them.
    lines: dict[str, frozenset[int]] | None = None
    # The front end's choices for the tools (priority, CPUs, who answers an
    # agent's ``ask``, the warm analyzer): ``QERequest.runtime``, handed down.
    runtime: Runtime = field(default_factory=Runtime.background)
    # In a monorepo's project (``project``/``sandbox`` narrowed to its
    # folder): the user's repository, whose session this is (its private
    # scratch folder is the one the barrier leaves writable).
    repository: Path | None = None

    @property
    def folder(self) -> str:
        """The project's folder below the repository (POSIX; "" for the
        repository itself)."""
        if self.repository is None or self.repository == self.project:
            return ""
        return self.project.relative_to(self.repository).as_posix()

    @property
    def project_tag(self) -> str:
        """The project's folder as one word for artifact names ("" for the
        repository itself): every role's logs and files name a monorepo's
        project the same way (``packages/api`` -> ``packages_api``)."""
        return re.sub(r"\W+", "_", self.folder).strip("_")

    def remaining(self) -> float | None:
        if self.deadline is None:
            return None
        return max(0.0, self.deadline - asyncio.get_running_loop().time())

    def mkdtemp(self, prefix: str) -> Path:
        """A fresh folder the role's tools may write: under the session's
        TMPDIR, the one temporary folder the kernel barrier leaves open."""
        tmp = self.env.get("TMPDIR")
        return Path(tempfile.mkdtemp(prefix=prefix, dir=tmp if tmp and os.path.isdir(tmp) else None))

    async def run(
        self,
        cmd: Sequence[str],
        *,
        cwd: Path | None = None,
        timeout: float | None = None,
        env: dict[str, str] | None = None,
        input: bytes | None = None,
        shard: str | None = None,
        below: int = 0,
        raw_stdout: bool = False,
    ) -> ProcResult:
        """``shard``: ``"k/n"`` when this is one of n processes sharing one
        check; ``below``: nice steps under the other tools (proc.spawn_tool);
        ``raw_stdout``: the output as bytes (``ProcResult.stdout_bytes``)."""
        budget = self.remaining()
        if timeout is None or (budget is not None and budget < timeout):
            timeout = budget
        extra = {"shard": shard} if shard else {}
        self.emit("tool_call", tool=Path(cmd[0]).name, argv=list(cmd)[:20], **extra)
        # Analyzers on big repositories print tens of MB of JSON; a cut would
        # make the role fail, so the cap here only guards against runaways.
        return await run_command(
            cmd, cwd or self.sandbox, env=env or self.env, timeout=timeout, input=input,
            output_cap=256_000_000, below=below, runtime=self.runtime, raw_stdout=raw_stdout,
        )


@dataclass
class RoleOutput:
    status: RoleStatus = "ok"
    reason: str | None = None
    findings: list[Finding] = field(default_factory=list)
    patches: list[Patch] = field(default_factory=list)
    tool: str | None = None
    usage: Usage | None = None  # tokens and cost a model spent (agent roles)


class Role:
    name: ClassVar[str]
    tool: ClassVar[str]
    description: ClassVar[str]
    modes: ClassVar[frozenset[str]] = frozenset({"quick", "deep"})
    # Roles that execute repository code only run in trusted folders.
    executes_code: ClassVar[bool] = False
    # Roles that edit the sandbox run alone, after the read-only roles, and the
    # pipeline restores the sandbox after them.
    modifies_sandbox: ClassVar[bool] = False
    # Rough run time, lowest first: the pipeline starts cheap roles first.
    cost: ClassVar[int] = 5
    # Its check of a file reads that file and the analyzers' configuration
    # only (no imports followed, nothing run): a run of such roles on a few
    # files may use a sparse sandbox (workspace/sparse.py).
    file_local: ClassVar[bool] = False
    # Asks the project's interpreter without running the project (types):
    # waits for it to be found, like the roles that execute code.
    uses_project_python: ClassVar[bool] = False

    def unavailable(self, config: Config | None = None) -> str | None:
        """Why this role cannot run here (with this configuration), or None."""
        return None

    def refusal(self, ctx: RoleContext) -> RoleOutput | None:
        """A ``skipped`` output when this role may not run in ``ctx`` (repository
        code in an untrusted folder, or its tool missing); None to go on. The
        pipeline checks the same before it starts a role; this keeps a role
        run on its own just as safe."""
        if self.executes_code and not ctx.trusted:
            return RoleOutput(status="skipped", reason="runs repository code: folder not trusted",
                              tool=self.tool)
        why = self.unavailable(ctx.config)
        return RoleOutput(status="skipped", reason=why, tool=self.tool) if why else None

    async def run(self, ctx: RoleContext) -> RoleOutput:
        raise NotImplementedError

    async def recheck(self, ctx: RoleContext, files: list[str]) -> list[Finding]:
        """Re-run this role's check on ``files`` (verifier). Default: full run."""
        out = await self.run(ctx)
        return [f for f in out.findings if f.file in set(files)]


class Rechecked(list):
    """A re-check's findings (``Role.recheck``) and, in ``failure``, why the
    check gave no result (it ran out of time, its tool failed): an empty
    list is then no evidence that a fix cleared anything."""

    failure: str | None = None


def rechecked(out: RoleOutput) -> list[Finding]:
    found = Rechecked(out.findings)
    if out.status in ("failed", "timeout", "error", "incomplete"):
        found.failure = out.reason or out.status
    return found


class FileCheckRole(Role):
    """A role whose run is one check over the selected files (all when
    ``ctx.files`` is None); the verifier's recheck is the same check on the
    files it names."""

    async def run(self, ctx: RoleContext) -> RoleOutput:
        return await reported(self._check(ctx, ctx.files))

    async def recheck(self, ctx: RoleContext, files: list[str]) -> list[Finding]:
        # A failed check has no findings: it says why (``Rechecked``); one
        # that says nothing the verifier tells from a cleared one by checking
        # the files without the fix.
        return rechecked(await reported(self._check(ctx, files)))

    async def _check(self, ctx: RoleContext, files: list[str] | None) -> RoleOutput:
        """One check; raises ``ToolFailed`` when the tool gives no result."""
        raise NotImplementedError
