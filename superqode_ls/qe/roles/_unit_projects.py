"""The code-running roles in a monorepo (unit tests, types, mutation,
generated tests): each Python project below the repository
(workspace/pyprojects: ``backend/`` with its own ``pyproject.toml``) is
checked as its developers check it — from its own folder, with its own
environment (its declarations, or the uv workspace's lock for that
member) — and the results are put back together, paths relative to the
repository again. Loose tests at the root, outside every project, run from
the root with the root's environment (``ROOT``). A project whose
environment cannot be made, or whose tests need a service that is not
running, is one setup line among the others, never a finding.
"""

from __future__ import annotations

import asyncio
import re
from collections.abc import Awaitable, Callable
from dataclasses import replace

from ...models import Finding
from ...workspace.pyenv_build import resolve_python, spawn_background_build
from ...workspace.pyprojects import python_projects
from ._common import fingerprint
from .base import RoleContext, RoleOutput

SETUP = "setup: "
ENV_WAIT_SHARE = 1 / 3  # of a budgeted run's time left, for one project's environment
ROOT = ""  # in a list of projects: the root's loose tests, outside every project


def files_in(files: list[str] | None, sub: str, subs: list[str] | tuple[str, ...] = ()
             ) -> list[str] | None:
    """``files`` (repository-relative) that lie in ``sub``, relative to it;
    None when the run is not restricted to files. For ``ROOT``: those in
    none of the projects ``subs``."""
    if files is None:
        return None
    if sub == ROOT:
        return [f for f in files if not any(f == s or f.startswith(s + "/") for s in subs if s)]
    return [f[len(sub) + 1:] or "." for f in files if f == sub or f.startswith(sub + "/")]


async def projects(ctx: RoleContext) -> list[str] | None:
    """The Python projects below the repository (workspace/pyprojects), or
    None when the repository is one (the role runs on it as it is)."""
    subs = await asyncio.to_thread(python_projects, ctx.sandbox)
    return None if subs == [ROOT] else subs


async def sub_context(ctx: RoleContext, sub: str, files: list[str] | None,
                      python: bool = True) -> RoleContext:
    """``ctx`` narrowed to the project in ``sub``: its folder as the
    sandbox (where its tests run and its paths are read from), its
    interpreter (the session's when that one is for it). ``python``
    False: none is looked for (finding one runs the project's programs:
    only in trusted folders)."""
    py = ctx.python
    if py is not None and py.folder != sub:
        py = None
    if py is None and python:
        py = await resolve_python(ctx.project, ctx.sandbox, ctx.config, emit=ctx.emit,
                                  runtime=ctx.runtime, sub=sub)
    return replace(ctx, project=ctx.project / sub, sandbox=ctx.sandbox / sub, files=files,
                   python=py, targets=None, lines=None, repository=ctx.repository or ctx.project)


async def each_project(ctx: RoleContext, subs: list[str],
                       run_one: Callable[[RoleContext], Awaitable[RoleOutput]], *,
                       tool: str = "pytest", python: bool = True,
                       root_files: list[str] | None = None,
                       nothing: str = "no tests") -> RoleOutput:
    """``run_one`` on every project in ``subs``, one after the other (each
    is a whole suite: side by side they would only share the CPUs). In a
    run with a budget, a project's environment still building after a third
    of what is left goes on detached, for the next run (as the session's
    first one does), and the others are checked meanwhile. ``ROOT`` among
    ``subs`` runs on ``root_files`` (the loose tests), when the run is not
    restricted to files in the projects. ``python``: see sub_context."""
    parts: list[tuple[str, RoleOutput]] = []
    for sub in subs:
        files = files_in(ctx.files, sub, subs)
        if sub == ROOT:
            # Any of the loose tests may cover a loose file of the run.
            files = root_files if files is None or any(f.endswith(".py") for f in files) else []
        if files == []:
            continue  # nothing of this project is in the run
        left = ctx.remaining()
        try:
            sub_ctx = await asyncio.wait_for(sub_context(ctx, sub, files, python),
                                             None if left is None else left * ENV_WAIT_SHARE)
        except TimeoutError:
            started = await asyncio.to_thread(spawn_background_build, ctx.project,
                                              ctx.runtime.nice, sub)
            parts.append((sub, RoleOutput(status="skipped", tool=tool, reason=(
                SETUP + "building its environment" + (" goes on in the background; the next "
                                                      "run uses it" if started else "")))))
            continue
        out = await run_one(sub_ctx)
        parts.append((sub, replace(out, findings=moved(out.findings, sub))))
    if not parts:
        return RoleOutput(status="skipped", tool=tool, reason=(
            f"{nothing}: the files of this run are in none of the Python projects ("
            + ", ".join(f"{s}/" for s in subs if s) + ")"))
    return merged(parts)


def merged(parts: list[tuple[str, RoleOutput]]) -> RoleOutput:
    """One output for the projects' outputs: every finding; the status
    "ok" when a suite ran, a failure when one failed, "skipped" only when
    all were; each reason said with its project's folder."""
    statuses = [out.status for _, out in parts]
    status = next((s for s in statuses if s in ("failed", "timeout")), None) or (
        "ok" if "ok" in statuses else statuses[0])
    said = [(sub or ".", out.reason or out.status) for sub, out in parts]
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
    if sub == ROOT:
        return findings
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
