"""Helpers for the role tests: a RoleContext over a folder, running a role,
snapshotting a tree to prove a read-only role left it alone."""

from __future__ import annotations

import asyncio
import hashlib
import os
import subprocess
import time
from pathlib import Path

from superqode_ls.config import Config
from superqode_ls.models import Finding, Range, Severity
from superqode_ls.qe.roles.base import Role, RoleContext, RoleOutput
from superqode_ls.workspace.artifacts import Artifacts

SESSION = "qe-20260101-000000-abcdef"


def make_ctx(
    sandbox: Path,
    project: Path | None = None,
    *,
    files: list[str] | None = None,
    config: Config | None = None,
    deadline_in: float | None = None,
    mode: str = "deep",
) -> RoleContext:
    """A context whose sandbox is ``sandbox``; artifacts go to ``project``
    (a separate folder by default so the sandbox stays untouched)."""
    project = project or sandbox.parent / f"{sandbox.name}-project"
    project.mkdir(exist_ok=True)
    deadline = None
    if deadline_in is not None:
        # the event loop's clock (BaseEventLoop.time) is time.monotonic
        deadline = time.monotonic() + deadline_in
    return RoleContext(
        session_id=SESSION,
        project=project,
        sandbox=sandbox,
        config=config or Config(),
        mode=mode,
        env=os.environ.copy(),
        artifacts=Artifacts(project, SESSION),
        files=files,
        deadline=deadline,
    )


def run_role(role: Role, ctx: RoleContext) -> RoleOutput:
    return asyncio.run(role.run(ctx))


def tree_state(root: Path) -> dict[str, str]:
    """Every file and directory under root (including .git) with a content hash."""
    state: dict[str, str] = {}
    for dirpath, dirnames, filenames in os.walk(root):
        for d in dirnames:
            state[os.path.relpath(os.path.join(dirpath, d), root) + "/"] = "dir"
        for name in filenames:
            p = Path(dirpath) / name
            rel = os.path.relpath(p, root)
            if p.is_symlink():
                state[rel] = "link:" + os.readlink(p)
            else:
                state[rel] = hashlib.sha256(p.read_bytes()).hexdigest()
    return state


def git_apply_check(repo: Path, diff: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        ["git", "apply", "--check", "-"],
        input=diff,
        text=True,
        cwd=repo,
        capture_output=True,
        check=False,
    )


def git_apply(repo: Path, diff: str) -> None:
    proc = subprocess.run(
        ["git", "apply", "-"], input=diff, text=True, cwd=repo, capture_output=True, check=False
    )
    assert proc.returncode == 0, proc.stderr


def at(findings, rule_id: str, file: str, line: int):
    """Findings with ``rule_id`` starting on ``file``:``line``."""
    return [
        f
        for f in findings
        if f.rule_id == rule_id and f.file == file and f.range and f.range.start_line == line
    ]


def lint_finding(rule, file, line, **kw) -> Finding:
    """A finding of ``rule`` at ``file``:``line`` as the lint role reports
    one (ruff, medium, confidence 0.9); ``kw`` sets any other field."""
    base = {"id": f"{rule}-{file}-{line}", "role": "lint_tester", "tool": "ruff",
            "rule_id": rule, "title": rule, "message": rule, "severity": Severity.medium,
            "confidence": 0.9, "category": "lint", "file": file,
            "range": Range(start_line=line, start_col=1)}
    return Finding(**(base | kw))
