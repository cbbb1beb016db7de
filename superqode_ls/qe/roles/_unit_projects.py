"""The unit role in a monorepo: each Python project below the repository
(workspace/pyprojects: ``backend/`` with its own ``pyproject.toml``) is
tested as its developers test it — from its own folder, with its own
environment (its declarations, or the uv workspace's lock for that
member) — and the results are put back together, paths relative to the
repository again. A project whose environment cannot be made, or whose
tests need a service that is not running, is one setup line among the
others, never a finding.
"""

from __future__ import annotations

import asyncio
import re
from collections.abc import Awaitable, Callable
from dataclasses import replace

from ...models import Finding
from ...workspace.pyenv_build import resolve_python, spawn_background_build
from ._common import fingerprint
from .base import RoleContext, RoleOutput

SETUP = "setup: "
ENV_WAIT_SHARE = 1 / 3  # of a budgeted run's time left, for one project's environment


def files_in(files: list[str] | None, sub: str) -> list[str] | None:
    """``files`` (repository-relative) that lie in ``sub``, relative to it;
    None when the run is not restricted to files."""
    if files is None:
        return None
    return [f[len(sub) + 1:] or "." for f in files if f == sub or f.startswith(sub + "/")]


async def sub_context(ctx: RoleContext, sub: str, files: list[str] | None) -> RoleContext:
    """``ctx`` narrowed to the project in ``sub``: its folder as the
    sandbox (where its tests run and its paths are read from), its
    interpreter (the session's when that one is for it)."""
    py = ctx.python
    if py is None or py.folder != sub:
        py = await resolve_python(ctx.project, ctx.sandbox, ctx.config, emit=ctx.emit,
                                  runtime=ctx.runtime, sub=sub)
    return replace(ctx, project=ctx.project / sub, sandbox=ctx.sandbox / sub, files=files,
                   python=py, targets=None, lines=None)


async def each_project(ctx: RoleContext, subs: list[str],
                       run_one: Callable[[RoleContext], Awaitable[RoleOutput]]) -> RoleOutput:
    """``run_one`` on every project in ``subs``, one after the other (each
    is a whole suite: side by side they would only share the CPUs). In a
    run with a budget, a project's environment still building after a third
    of what is left goes on detached, for the next run (as the session's
    first one does), and the others are tested meanwhile."""
    parts: list[tuple[str, RoleOutput]] = []
    for sub in subs:
        files = files_in(ctx.files, sub)
        if files == []:
            continue  # nothing of this project is in the run
        left = ctx.remaining()
        try:
            sub_ctx = await asyncio.wait_for(sub_context(ctx, sub, files),
                                             None if left is None else left * ENV_WAIT_SHARE)
        except TimeoutError:
            started = await asyncio.to_thread(spawn_background_build, ctx.project,
                                              ctx.runtime.nice, sub)
            parts.append((sub, RoleOutput(status="skipped", tool="pytest", reason=(
                SETUP + "building its environment" + (" goes on in the background; the next "
                                                      "run uses it" if started else "")))))
            continue
        out = await run_one(sub_ctx)
        parts.append((sub, replace(out, findings=moved(out.findings, sub))))
    if not parts:
        return RoleOutput(status="skipped", tool="pytest", reason=(
            "no tests: the files of this run are in none of the Python projects ("
            + ", ".join(f"{s}/" for s in subs) + ")"))
    return merged(parts)


def merged(parts: list[tuple[str, RoleOutput]]) -> RoleOutput:
    """One output for the projects' outputs: every finding; the status
    "ok" when a suite ran, a failure when one failed, "skipped" only when
    all were; each reason said with its project's folder."""
    statuses = [out.status for _, out in parts]
    status = next((s for s in statuses if s in ("failed", "timeout")), None) or (
        "ok" if "ok" in statuses else statuses[0])
    said = [(sub, out.reason or out.status) for sub, out in parts]
    if status == "skipped" and all(r.startswith(SETUP) for _, r in said):
        reason = SETUP + "; ".join(f"{sub}/: {r[len(SETUP):]}" for sub, r in said)
    else:
        reason = "; ".join(f"{sub}/: {r}" for sub, r in said)
    return RoleOutput(status=status, reason=reason, tool=parts[0][1].tool,
                      findings=[f for _, out in parts for f in out.findings])


def moved(findings: list[Finding], sub: str) -> list[Finding]:
    """``findings`` made in ``sub``, their paths (files, evidence, the test
    ids in titles and messages) relative to the repository again, and
    their ids with them (the same test file in two projects is two)."""
    out = []
    for f in findings:
        def at(path: str | None) -> str | None:
            return f"{sub}/{path}" if path else path

        head, sep, tail = f.title.partition(": ")
        title = f"{head}: {sub}/{tail}" if sep and "::" in tail else f.title
        message = re.sub(r"\(raised at (?=[^)\s]+:\d+\)$)", f"(raised at {sub}/", f.message)
        out.append(f.model_copy(update={
            "id": fingerprint(f.rule_id, f.id, sub), "file": at(f.file), "title": title,
            "message": message,
            "evidence": [e.model_copy(update={"file": at(e.file)}) for e in f.evidence],
        }))
    return out
