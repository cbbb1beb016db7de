"""test_generator: property-based tests for public functions, offline.

hypothesis' ghostwriter writes a fuzz test per public, annotated, side-effect
free function (in a subprocess, in a scratch copy: writing the tests imports
the project). The tests run with pytest in that copy. A test that crashes the
code becomes a finding at the crashing line with the falsifying example; a test
that passes is kept under ``generated-tests/`` in the artifacts, ready to copy.
Exceptions the code raises on purpose (a ``raise`` statement) are not crashes.
"""

from __future__ import annotations

import ast
import asyncio
import contextlib
import json
import re
import shutil
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ...models import Evidence, Finding, Range, Severity
from ...workspace.extras import lacking
from ...workspace.pyast import parse as parse_python
from . import _scratch
from ._common import pytest_message
from ._pyenv import project_python, tool_paths
from ._pytest_config import isolated_cache_args
from ._pytest_plugins import CRASH_PLUGIN, collect_reason, write_plugin
from ._unit_projects import each_project, projects
from .base import Role, RoleContext, RoleOutput, ToolFailed

TOOL = "hypothesis-ghostwriter"
# A generated test that runs longer than this is taken to hang and is dropped.
PER_TEST_S = 60.0
MAX_EXAMPLES = 100
GHOSTWRITE_TIMEOUT_S = 300.0
BUDGET = "\0budget"  # _run_watched: the whole run hit the session's time budget

HYPOTHESIS_PROFILE = """\
from hypothesis import HealthCheck, settings

# Reproducible, no example database written anywhere, no flaky deadlines.
settings.register_profile(
    "superqode",
    max_examples={max_examples},
    deadline=None,
    derandomize=True,
    database=None,
    print_blob=False,
    suppress_health_check=list(HealthCheck),
)
settings.load_profile("superqode")
"""


@dataclass
class Generated:
    rel: str
    module: str
    function: str
    line: int
    source: str
    test_file: str  # name inside the scratch generated-tests dir
    outcome: str = "not run"  # passed | crashed | raised | hung | not run
    errors: list[dict[str, Any]] = field(default_factory=list)
    note: str = ""


class TestGenerator(Role):
    name = "test_generator"
    tool = TOOL
    description = "Writes property-based tests (hypothesis) for public functions and runs them"
    modes = frozenset({"deep"})
    executes_code = True

    def unavailable(self, config=None) -> str | None:
        return lacking("hypothesis", "black")  # the ghostwriter formats with black

    async def run(self, ctx: RoleContext) -> RoleOutput:
        refused = self.refusal(ctx)
        if refused is not None:
            return refused
        subs = await projects(ctx)
        if subs is not None:  # a monorepo: each project's functions with its own interpreter
            return await each_project(ctx, subs, self._run_one, tool=TOOL,
                                      nothing="nothing to test")
        return await self._run_one(ctx)

    async def _run_one(self, ctx: RoleContext) -> RoleOutput:
        skipped: list[tuple[str, str]] = []  # (what, why)
        # Parsing every module is pure Python: off the event loop the server
        # answers requests from.
        modules = await asyncio.to_thread(self._modules, ctx, skipped)
        if not modules:
            return RoleOutput(
                status="skipped", reason="no importable Python modules to test", tool=TOOL
            )
        py = await project_python(ctx)
        # hypothesis' ghostwriter (and black) come from SuperQode's own
        # environment, lent after the project's site-packages.
        lent = await asyncio.to_thread(tool_paths, py, ("hypothesis", "black"))
        if lent is None:
            return RoleOutput(status="skipped", tool=TOOL, reason=(
                f"hypothesis and black cannot be lent to {py.shown(ctx.project)} "
                f"(another Python version than SuperQode's); set roles.python"))
        self._python, self._tools = py.python, lent
        scratch = _scratch.scratch_root(ctx.repository or ctx.project, ctx.session_id, "testgen")
        try:
            copy = await asyncio.to_thread(_scratch.copy_within, ctx.sandbox, ctx.folder,
                                           scratch / "copy")
            tools = scratch / "tools"
            gen_dir = scratch / "generated"
            gen_dir.mkdir()
            try:
                records = await self._ghostwrite(ctx, scratch, tools, copy, modules, skipped)
            except ToolFailed as e:
                return e.output()  # as ``reported`` does; the scratch goes in the finally
            generated = await asyncio.to_thread(self._write_tests, gen_dir, records, skipped)
            if generated:
                await self._run_tests(ctx, tools, gen_dir, copy, generated)
            findings, kept = await asyncio.to_thread(
                self._collect, ctx, copy, gen_dir, generated, skipped
            )
        finally:
            await asyncio.shield(asyncio.to_thread(_scratch.drop_scratch, scratch))

        crashed = sum(1 for g in generated if g.outcome == "crashed")
        reason = (
            f"{len(generated)} test(s) generated: {kept} passed and kept, {crashed} found a crash"
        )
        if skipped:
            reason += f"; skipped {len(skipped)} (see the test_generator log)"
        self._write_log(ctx, generated, skipped, reason)
        return RoleOutput(status="ok", reason=reason, findings=findings, tool=TOOL)

    _python: str = sys.executable
    _output: str = ""  # the last pytest run's output: why tests could not be collected
    _tools: list[Path] = []  # noqa: RUF012 - replaced per run, never mutated

    def _env(self, ctx: RoleContext, copy: Path, extra: list[Path] | None = None) -> dict[str, str]:
        return _scratch.python_env(
            ctx.env, copy, extra or [],
            pycache=_scratch.pycache_dir(_scratch.copy_root(copy, ctx.folder).parent),
            shadowed=[ctx.project, ctx.sandbox], tool_paths=self._tools,
        )

    # -- steps --------------------------------------------------------------

    def _modules(self, ctx: RoleContext, skipped: list[tuple[str, str]]) -> list[dict[str, str]]:
        files = [f for f in _scratch.python_files(ctx.sandbox) if _scratch.is_source_file(f)]
        if ctx.files is not None:
            wanted = set(ctx.files)
            files = [f for f in files if f in wanted]
        if ctx.targets is not None:  # --shard: this run's share of the files
            files = [f for f in files if ctx.targets(f)]
        out = []
        for rel in files:
            name = _scratch.module_name(rel)
            if name is None or rel.endswith("__main__.py"):
                skipped.append((rel, "not an importable module"))
                continue
            try:
                tree = parse_python((ctx.sandbox / rel).read_bytes())
            except (SyntaxError, ValueError):
                skipped.append((rel, "does not parse"))
                continue
            if _runs_code_at_import(tree):
                skipped.append((rel, "runs code at import (a script?)"))
                continue
            out.append({"rel": rel, "module": name})
        return out

    async def _ghostwrite(
        self,
        ctx: RoleContext,
        scratch: Path,
        tools: Path,
        copy: Path,
        modules: list[dict[str, str]],
        skipped: list[tuple[str, str]],
    ) -> list[dict[str, Any]]:
        """The ghostwriter's records (``ToolFailed`` when it wrote none)."""
        tools.mkdir(exist_ok=True)
        script = tools / "ghostwrite.py"
        shutil.copyfile(Path(__file__).with_name("_ghostwrite.py"), script)
        spec_file, out_file = scratch / "spec.json", scratch / "written.jsonl"
        spec = {
            "modules": [{**m, "path": str(copy / m["rel"]), **_lines(ctx, m["rel"])} for m in modules],
            "max_functions": ctx.config.roles.test_generator_max_functions,
        }
        spec_file.write_text(json.dumps(spec), encoding="utf-8")
        env = self._env(ctx, copy)
        res = await ctx.run(
            [self._python, str(script), str(spec_file), str(out_file)],
            cwd=copy,
            env=env,
            timeout=GHOSTWRITE_TIMEOUT_S,
        )
        records = _read_jsonl(out_file)
        if not records and not res.ok:
            tail = " | ".join((res.stdout + res.stderr).strip().splitlines()[-3:])
            why = "timed out" if res.timed_out else tail
            raise ToolFailed(TOOL, f"could not write tests: {why}")
        if res.timed_out:
            skipped.append(("(ghostwriter)", "stopped at the time limit; later modules not done"))
        return records

    def _write_tests(
        self, gen_dir: Path, records: list[dict[str, Any]], skipped: list[tuple[str, str]]
    ) -> list[Generated]:
        generated = []
        for rec in records:
            what = f"{rec['rel']}::{rec['function']}" if "function" in rec else rec["rel"]
            if "source" not in rec:
                skipped.append((what, rec.get("skipped") or "no test written"))
                continue
            name = f"test_{rec['module'].replace('.', '_')}_{rec['function']}.py"
            (gen_dir / name).write_text(rec["source"], encoding="utf-8")
            generated.append(
                Generated(
                    rec["rel"], rec["module"], rec["function"], rec["line"], rec["source"], name
                )
            )
        return generated

    async def _run_tests(
        self, ctx: RoleContext, tools: Path, gen_dir: Path, copy: Path, generated: list[Generated]
    ) -> None:
        plugin = write_plugin(tools, "superqode_crash", CRASH_PLUGIN)
        (gen_dir / "conftest.py").write_text(
            HYPOTHESIS_PROFILE.format(max_examples=MAX_EXAMPLES), encoding="utf-8"
        )
        # Own ini and rootdir: the project's pytest settings and conftest files
        # are for its tests, not for these.
        (gen_dir / "pytest.ini").write_text("[pytest]\n", encoding="utf-8")
        env = self._env(ctx, copy, [tools])
        by_file = {g.test_file: g for g in generated}
        todo = [g.test_file for g in generated]
        attempt = 0
        while todo:
            attempt += 1
            remaining = ctx.remaining()
            if remaining is not None and remaining < 5:
                for name in todo:
                    by_file[name].note = "out of time budget"
                return
            events_file = tools / f"events-{attempt}.jsonl"
            env["SUPERQODE_CRASH_OUT"] = str(events_file)
            # The generated tests' own ini (no addopts) and the caller's
            # PYTEST_ADDOPTS decide whether the cache plugin must be on.
            argv = [self._python, "-m", "pytest", "-p", plugin,
                    *isolated_cache_args(gen_dir, tools / "cache", env)]
            argv += ["-c", str(gen_dir / "pytest.ini"), "--rootdir", str(gen_dir), "-q"]
            argv += ["--no-header", "-rN", *[str(gen_dir / n) for n in todo]]
            # One file that cannot be collected must not keep the others from running.
            argv.append("--continue-on-collection-errors")
            hung = await self._run_watched(ctx, argv, copy, env, events_file)
            seen: set[str] = set()
            for ev in _read_jsonl(events_file):
                name = ev.get("nodeid", "").split("::")[0]
                g = by_file.get(name)
                if g is None:
                    continue
                seen.add(name)
                if ev["event"] == "done":
                    g.outcome = "passed" if ev["passed"] else "failed"
                    g.errors = ev.get("errors", [])
                elif ev["event"] == "error":
                    g.outcome, g.note = "not run", "setup failed: " + ev.get("text", "")[-300:]
                elif ev["event"] == "collect_error":
                    g.outcome = "not run"
                    g.note = "could not be collected: " + collect_reason(ev.get("text", ""))
            if hung == BUDGET:
                for name in todo:
                    if name not in seen or by_file[name].outcome == "not run":
                        by_file[name].note = "out of time budget"
                return
            if hung is not None and hung in by_file:
                by_file[hung].outcome = "hung"
                by_file[hung].note = f"still running after {PER_TEST_S:.0f}s"
            if hung is None:
                for name in todo:
                    if name not in seen:
                        by_file[name].note = by_file[name].note or (
                            "could not be collected: " + pytest_message(self._output)
                        )
                return
            todo = [n for n in todo if n not in seen and n != hung]

    async def _run_watched(
        self, ctx: RoleContext, argv: list[str], cwd: Path, env: dict[str, str], events: Path
    ) -> str | None:
        """Run pytest; if one test runs longer than PER_TEST_S, stop the run
        and return that test's file name so the rest can run again."""
        task = asyncio.create_task(ctx.run(argv, cwd=cwd, env=env))
        try:
            while True:
                done, _ = await asyncio.wait({task}, timeout=0.5)
                if done:
                    self._output = task.result().stdout + "\n" + task.result().stderr
                    if task.result().timed_out:
                        return BUDGET
                    return None
                last = _read_jsonl(events)[-1:] if events.exists() else []
                if last and last[0]["event"] == "start":
                    age = time.time() - events.stat().st_mtime
                    if age > PER_TEST_S:
                        task.cancel()
                        with contextlib.suppress(asyncio.CancelledError):
                            await task
                        return str(last[0]["nodeid"]).split("::")[0]
        finally:
            if not task.done():
                task.cancel()
                with contextlib.suppress(asyncio.CancelledError):
                    await task

    def _collect(
        self,
        ctx: RoleContext,
        copy: Path,
        gen_dir: Path,
        generated: list[Generated],
        skipped: list[tuple[str, str]],
    ) -> tuple[list[Finding], int]:
        findings: list[Finding] = []
        kept = 0
        for g in generated:
            what = f"{g.rel}::{g.function}"
            if g.outcome == "passed":
                header = (
                    f"# Generated by SuperQode LS (test_generator, session {ctx.session_id})\n"
                    f"# for {g.module}.{g.function}; it passed {MAX_EXAMPLES} examples on the "
                    "code as it was.\n# Copy it into your tests to keep it.\n"
                )
                ctx.artifacts.write_generated_test(_in_project(ctx, g.test_file), header + g.source)
                kept += 1
            elif g.outcome == "failed":
                crash = self._crash(copy, gen_dir, g)
                if crash is None:
                    g.outcome = "raised"
                    skipped.append((what, g.note))
                    continue
                g.outcome = "crashed"
                findings.append(self._finding(ctx, g, crash))
            else:
                skipped.append((what, f"{g.outcome}: {g.note}" if g.note else g.outcome))
        return findings, kept

    def _crash(self, copy: Path, gen_dir: Path, g: Generated) -> dict[str, Any] | None:
        """The first error that is a crash in project code, located at the
        deepest project frame; None when every error is deliberate."""
        root = copy.resolve()
        reasons = []
        for err in g.errors:
            where = None
            for filename, lineno, _ in reversed(err.get("frames", [])):
                try:
                    rel = Path(filename).resolve().relative_to(root).as_posix()
                except (ValueError, OSError):
                    continue
                where = (rel, lineno)
                break
            if where is None:
                # The call itself failed (e.g. a strategy the function rejects).
                reasons.append(f"{err['type']} outside the project's code")
                continue
            text = _line(copy / where[0], where[1])
            if text.lstrip().startswith("raise"):
                reasons.append(f"raises {err['type']} on purpose")
                continue
            return {**err, "file": where[0], "line": where[1], "text": text}
        g.note = "; ".join(reasons) or "failed without a traceback"
        return None

    def _finding(self, ctx: RoleContext, g: Generated, crash: dict[str, Any]) -> Finding:
        example = _falsifying(crash.get("notes", []), g)
        msg = crash["message"]
        exc = f"{crash['type']}: {msg}" if msg else crash["type"]
        evidence_name = _in_project(ctx, f"generated-crash-{g.module}-{g.function}.py")
        try:
            ctx.artifacts.write_evidence(evidence_name, g.source)
            reproducer = f" The failing test is saved as evidence/{ctx.session_id}-{evidence_name}."
        except OSError:
            reproducer = ""
        return Finding(
            role=self.name,
            tool=TOOL,
            rule_id="generated-test-crash",
            title=f"{g.function}() raises {crash['type']} on generated input",
            message=(
                f"A property-based test for {g.module}.{g.function} makes it raise {exc} "
                f"at line {crash['line']}. Falsifying example: {example}. "
                "Handle this input or reject it with a clear error." + reproducer
            ),
            severity=Severity.medium,
            confidence=0.8,
            category="bug",
            file=crash["file"],
            range=Range(
                start_line=crash["line"],
                start_col=len(crash["text"]) - len(crash["text"].lstrip()) + 1,
            ),
            evidence=[
                Evidence(message=f"falsifying example: {example}", snippet=example),
                Evidence(
                    message=exc, file=crash["file"], line=crash["line"], snippet=crash["text"]
                ),
            ],
            tags=["generated-test", "hypothesis"],
            snippet=crash["text"].strip(),
        ).with_stable_id()

    def _write_log(
        self,
        ctx: RoleContext,
        generated: list[Generated],
        skipped: list[tuple[str, str]],
        reason: str,
    ) -> None:
        lines = [f"test_generator: {reason}", ""]
        for g in generated:
            lines.append(f"{g.rel}::{g.function}: {g.outcome}" + (f" ({g.note})" if g.note else ""))
        if skipped:
            lines += ["", "skipped:"]
            lines += [f"  {what}: {why}" for what, why in skipped]
        with contextlib.suppress(OSError):
            ctx.artifacts.write_log(_in_project(ctx, "test-generator"), "\n".join(lines) + "\n")


def _in_project(ctx: RoleContext, name: str) -> str:
    """An artifact's name that tells a monorepo's projects apart (each
    project's run writes its own; ``app.utils`` may be in two of them):
    ``test_x.py`` -> ``test_api_x.py``, ``log`` -> ``log-api``."""
    tag = ctx.project_tag
    if not tag:
        return name
    for prefix in ("test_", "generated-crash-"):
        if name.startswith(prefix):
            return f"{prefix}{tag}_{name[len(prefix):]}"
    return f"{name}-{tag}"


def _runs_code_at_import(tree: ast.Module) -> bool:
    for node in tree.body:
        if isinstance(node, ast.Expr) and isinstance(node.value, ast.Call):
            return True
        if isinstance(node, (ast.For, ast.While, ast.With, ast.AsyncWith)):
            return True
    return False


def _lines(ctx: RoleContext, rel: str) -> dict[str, list[int]]:
    """``--since``: the ghostwriter writes tests only for functions the change touched."""
    if ctx.lines is None:
        return {}
    return {"lines": sorted(ctx.lines.get(rel, ()))}


def _read_jsonl(path: Path) -> list[dict[str, Any]]:
    out: list[dict[str, Any]] = []
    try:
        text = path.read_text(encoding="utf-8")
    except OSError:
        return out
    for line in text.splitlines():
        try:
            out.append(json.loads(line))
        except ValueError:
            continue  # a line cut off by a kill
    return out


def _line(path: Path, lineno: int) -> str:
    try:
        return path.read_text(encoding="utf-8").splitlines()[lineno - 1]
    except (OSError, IndexError, UnicodeDecodeError):
        return ""


def _falsifying(notes: list[str], g: Generated) -> str:
    """``Falsifying example: test_fuzz_mean(values=[])`` -> ``mean(values=[])``
    (newer hypothesis says ``Failing test case:``)."""
    for note in notes:
        if note.startswith(("Falsifying example", "Failing test case")):
            body = note.split(":", 1)[1].strip()
            body = re.sub(r"^test_fuzz_\w+\(", f"{g.function}(", body)
            body = re.sub(r",\s*\)\s*$", ")", " ".join(body.split()))
            return body.replace("( ", "(")
    return "(not reported)"
