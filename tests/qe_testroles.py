"""Tiny roles for pipeline/verifier/CLI tests: real files, real patches.

``toy_tester`` flags every line containing ``PLANTED`` (rule TOY1) and offers a
patch replacing it with ``fixed``. ``toy_badfix`` offers a fix that introduces
a new problem (``PLANTED2``), so the verifier must reject it. ``toy_slow``
sleeps in a real subprocess until cancelled. ``toy_writer`` edits the sandbox
(``modifies_sandbox``). ``toy_crash`` raises.
"""

from __future__ import annotations

import difflib
import sys
from pathlib import Path

from superqode_ls.models import Finding, Patch, Range, Severity
from superqode_ls.qe.roles import REGISTRY
from superqode_ls.qe.roles.base import Role, RoleContext, RoleOutput, ToolFailed, reported

MARK = "PLANTED"


def _diff(rel: str, old: str, new: str) -> str:
    return "".join(
        difflib.unified_diff(
            old.splitlines(keepends=True), new.splitlines(keepends=True), f"a/{rel}", f"b/{rel}"
        )
    )


def _py_files(root: Path, files: list[str] | None) -> list[str]:
    if files is not None:
        return [f for f in files if f.endswith(".py") and (root / f).is_file()]
    rels = (p.relative_to(root) for p in root.rglob("*.py"))
    return sorted(r.as_posix() for r in rels if ".superqode" not in r.parts and ".git" not in r.parts)


class ToyTester(Role):
    name = "toy_tester"
    tool = "toy"
    description = "flags PLANTED"
    replacement = "fixed"
    severity = Severity.high
    confidence = 0.9

    def scan(self, root: Path, files: list[str] | None) -> tuple[list[Finding], list[Patch]]:
        findings: list[Finding] = []
        patches: list[Patch] = []
        for rel in _py_files(root, files):
            text = (root / rel).read_text(encoding="utf-8")
            lines = text.splitlines(keepends=True)
            for n, line in enumerate(lines, 1):
                col = line.find(MARK)
                if col < 0 or line[col:].startswith(MARK + "2"):
                    continue
                f = Finding(
                    role=self.name, tool=self.tool, rule_id="TOY1", title="planted problem",
                    message="planted problem", severity=self.severity, confidence=self.confidence,
                    category="security", file=rel,
                    range=Range(start_line=n, start_col=col + 1, end_line=n, end_col=col + 1 + len(MARK)),
                    snippet=line.rstrip("\n"),
                ).with_stable_id()
                fixed = lines[: n - 1] + [line.replace(MARK, self.replacement, 1)] + lines[n:]
                pid = f"toy-{f.id}"
                patches.append(
                    Patch(id=pid, description="replace PLANTED", diff=_diff(rel, text, "".join(fixed)),
                          files=[rel], finding_ids=[f.id], role=self.name)
                )
                findings.append(f.model_copy(update={"fix_patch_id": pid}))
        return findings, patches

    async def run(self, ctx: RoleContext) -> RoleOutput:
        findings, patches = self.scan(ctx.sandbox, ctx.files)
        return RoleOutput(findings=findings, patches=patches, tool=self.tool)

    async def recheck(self, ctx: RoleContext, files: list[str]) -> list[Finding]:
        findings, _ = self.scan(ctx.sandbox, files)
        return findings


class ToyBadFix(ToyTester):
    name = "toy_badfix"
    replacement = "PLANTED2"

    def scan(self, root, files):
        findings, patches = super().scan(root, files)
        # The "fix" leaves a problem of another kind behind.
        for rel in _py_files(root, files):
            for n, line in enumerate((root / rel).read_text().splitlines(), 1):
                if MARK + "2" in line:
                    findings.append(
                        Finding(role=self.name, tool=self.tool, rule_id="TOY2", title="left over",
                                message="left over", severity=Severity.low, file=rel,
                                range=Range(start_line=n), snippet=line).with_stable_id()
                    )
        return findings, patches


class ToySlow(Role):
    name = "toy_slow"
    tool = "sleep"
    description = "sleeps in a subprocess"

    async def run(self, ctx: RoleContext) -> RoleOutput:
        ctx.emit("note", message="sleeping")
        # The role IS a slow tool: tests cancel or time it out while it sleeps.
        res = await ctx.run([sys.executable, "-c", "import time; time.sleep(60)"], timeout=120)
        if res.timed_out:  # as a real role reports its tool running out of time
            return RoleOutput(status="timeout", reason="sleep ran out of time")
        return RoleOutput(status="ok")


class ToyWriter(Role):
    name = "toy_writer"
    tool = "writer"
    description = "edits the sandbox"
    modifies_sandbox = True

    async def run(self, ctx: RoleContext) -> RoleOutput:
        for rel in _py_files(ctx.sandbox, None):
            (ctx.sandbox / rel).write_text("# clobbered by toy_writer\n")
        (ctx.sandbox / "written_by_role.txt").write_text("x\n")
        return RoleOutput(status="ok")


class ToyCrash(Role):
    name = "toy_crash"
    tool = "crash"
    description = "raises"

    async def run(self, ctx: RoleContext) -> RoleOutput:
        raise RuntimeError("toy role exploded")


class ToyUntrusted(ToyTester):
    name = "toy_exec"
    executes_code = True


TOY_ROLES = {
    "toy_tester": "tests.qe_testroles:ToyTester",
    "toy_badfix": "tests.qe_testroles:ToyBadFix",
    "toy_slow": "tests.qe_testroles:ToySlow",
    "toy_writer": "tests.qe_testroles:ToyWriter",
    "toy_crash": "tests.qe_testroles:ToyCrash",
    "toy_exec": "tests.qe_testroles:ToyUntrusted",
}


def register(monkeypatch) -> None:
    for name, target in TOY_ROLES.items():
        monkeypatch.setitem(REGISTRY, name, target)


class ToyGit(Role):
    name = "toy_git"
    tool = "git"
    description = "tries a git command the sandbox guard refuses"

    async def run(self, ctx: RoleContext) -> RoleOutput:
        res = await ctx.run(["git", "push", "origin", "HEAD"], timeout=30)
        return RoleOutput(status="ok", reason=f"git exited {res.returncode}")


TOY_ROLES["toy_git"] = "tests.qe_testroles:ToyGit"


class ToyAsker(Role):
    """Asks for a permission the way agent tools do and reports the answer."""

    name = "toy_asker"
    tool = "toy"
    description = "asks the user for permission to run a command"

    async def run(self, ctx: RoleContext) -> RoleOutput:
        from superqode_ls.agent.permissions import Permissions

        # As an agent role does: the front end's asker, from the runtime.
        allowed, _why = await Permissions({"run_shell": "ask"}, ctx.runtime.asker).check(
            "run_shell", "pytest -x tests/")
        return RoleOutput(status="ok", reason=f"permission {'granted' if allowed else 'denied'}")


TOY_ROLES["toy_asker"] = "tests.qe_testroles:ToyAsker"


class ToyBrokenTool(Role):
    """Its tool exits with an error and no result: the role reports it the
    one way every role does (``ToolFailed``, turned into its output)."""

    name = "toy_broken_tool"
    tool = "toytool"
    description = "runs a tool that fails"

    async def run(self, ctx: RoleContext) -> RoleOutput:
        return await reported(self._check(ctx))

    async def _check(self, ctx: RoleContext) -> RoleOutput:
        res = await ctx.run([sys.executable, "-c",
                             "import sys; sys.exit('toytool: cannot read its profile')"])
        raise ToolFailed(self.tool, f"toytool failed: {res.stderr.strip()}")


class ToyNice(Role):
    """Reports the nice value its tool ran at (the front end's runtime)."""

    name = "toy_nice"
    tool = "nice"
    description = "runs nice"

    async def run(self, ctx: RoleContext) -> RoleOutput:
        import os

        res = await ctx.run(["nice"])
        mine = os.getpriority(os.PRIO_PROCESS, os.getpid())
        return RoleOutput(status="ok", reason=f"tool nice +{int(res.stdout) - mine}")


TOY_ROLES["toy_broken_tool"] = "tests.qe_testroles:ToyBrokenTool"
TOY_ROLES["toy_nice"] = "tests.qe_testroles:ToyNice"
