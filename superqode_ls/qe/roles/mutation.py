"""mutation_tester: break the code on purpose and see whether the tests notice.

1. Which tests cover which line: one run of the project's tests under
   ``coverage`` in a scratch copy, with one coverage context per test.
2. Mutants (``_mutators``) only on covered lines of the code under test
   (``ctx.files`` when a quick/save run passes the changed files).
3. Each mutant runs in a worker's own scratch copy with only the tests that
   cover its line, under a time limit derived from those tests' durations;
   workers run in parallel, one per core.
4. A mutant the tests survive is a finding at its line; results are cached by
   (file content, the project modules it imports directly or transitively,
   test files content, mutator version) so a re-run of an unchanged file
   costs no test run at all.
"""

from __future__ import annotations

import asyncio
import contextlib
import difflib
import itertools
import json
import os
import shutil
import signal
import sys
import time
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ...config import superqode_home
from ...models import Evidence, Finding, Range, RoleStatus, Severity
from ...workspace.artifacts import atomic_write
from ...workspace.proc import PipedTool, ProcResult, start_piped
from . import _scratch
from ._common import pytest_message
from ._imports import import_closure
from ._mutators import (
    KINDS,
    MUTATOR_VERSION,
    Mutant,
    apply_edit,
    compiles,
    content_hash,
    find_mutants,
    mutated_line,
    select,
)
from ._pyenv import project_python, tool_paths
from ._pytest_plugins import LINEMAP_PLUGIN, write_plugin
from .base import Role, RoleContext, RoleOutput

TOOL = "superqode-mutation"
# Statuses: killed (a test failed), timeout (counted as killed: the mutant
# hung the tests), survived, error (tests could not run at all).
KILLED = ("killed", "timeout")
# Per-mutant test runs never get less than this (interpreter + pytest start).
MIN_MUTANT_TIMEOUT_S = 10.0
MAX_NODE_IDS = 200
NO_TIME = "the project's tests did not finish within the time budget"


def _rc(path: Path) -> str:
    return str(path).replace("$", "$$")


def _utf8(raw: bytes | None) -> str | None:
    try:
        return raw.decode("utf-8") if raw is not None else None
    except UnicodeDecodeError:
        return None


def cache_dir() -> Path:
    return superqode_home() / "cache" / "mutation"


def cache_key(rel: str, file_hash: str, tests_hash: str, deps: str = "") -> str:
    return content_hash(
        f"{MUTATOR_VERSION}\0{rel}\0{file_hash}\0{tests_hash}\0{deps}".encode("utf-8", "surrogateescape")
    )


@dataclass
class FileResult:
    rel: str
    text: str
    key: str
    results: dict[str, dict[str, Any]] = field(default_factory=dict)
    complete: bool = False
    from_cache: bool = False
    skip_reason: str | None = None


@dataclass
class MutationReport:
    """What a run did, for the log, the role's reason line and bench/."""

    files: int = 0
    files_cached: int = 0
    mutants_run: int = 0
    mutants_cached: int = 0
    statuses: Counter = field(default_factory=Counter)
    skipped: dict[str, int] = field(default_factory=dict)
    skipped_files: dict[str, str] = field(default_factory=dict)
    coverage_s: float = 0.0
    mutants_s: float = 0.0
    total_s: float = 0.0
    workers: int = 1
    fork_runs: int = 0
    fork_fallbacks: int = 0
    baseline_failing: list[str] = field(default_factory=list)

    @property
    def mutants_per_s(self) -> float:
        return self.mutants_run / self.mutants_s if self.mutants_s > 0 else 0.0

    def skip(self, why: str, n: int = 1) -> None:
        self.skipped[why] = self.skipped.get(why, 0) + n

    def summary(self) -> str:
        done = sum(self.statuses.values())
        parts = [f"{done} mutant(s) in {self.files} file(s)"]
        if done:
            parts.append(", ".join(f"{n} {s}" for s, n in sorted(self.statuses.items())))
        if self.mutants_cached:
            parts.append(f"{self.mutants_cached} from cache")
        skipped = [f"{n} {why}" for why, n in sorted(self.skipped.items())]
        if self.skipped_files:
            skipped.append(
                f"{len(self.skipped_files)} file(s) without covering tests or unparsable"
            )
        if skipped:
            parts.append("skipped: " + "; ".join(skipped))
        return "; ".join(parts)


@dataclass
class LineMap:
    tests_by_line: dict[str, dict[int, list[str]]]  # rel -> line -> passing node ids
    durations: dict[str, float]
    startup_s: float


class ForkRunner:
    """One warm pytest launcher (``_forkserver``) per worker copy.

    ``run`` returns None whenever the launcher cannot answer (not ready,
    died, protocol broken); the caller then runs a fresh process instead.
    """

    def __init__(self, proc: PipedTool):
        self.proc = proc
        self.ok = True

    @classmethod
    async def start(
        cls, script: Path, cwd: Path, env: dict[str, str], python: str = sys.executable
    ) -> ForkRunner | None:
        proc = await start_piped([python, str(script)], cwd, env)
        runner = cls(proc)
        try:
            hello = await runner._read(120)
        except BaseException:
            await asyncio.shield(runner.close())
            raise
        if not hello or not hello.get("ready"):
            await runner.close()
            return None
        return runner

    async def _read(self, timeout: float) -> dict[str, Any] | None:
        assert self.proc.stdout is not None
        try:
            line = await asyncio.wait_for(self.proc.stdout.readline(), timeout)
            return json.loads(line) if line else None
        except (TimeoutError, ValueError):
            return None

    async def run(self, args: list[str], timeout: float) -> ProcResult | None:
        if not self.ok or self.proc.returncode is not None:
            return None
        assert self.proc.stdin is not None
        try:
            self.proc.stdin.write((json.dumps({"args": args, "timeout": timeout}) + "\n").encode())
            await self.proc.stdin.drain()
        except (ConnectionError, RuntimeError):
            self.ok = False
            return None
        reply = await self._read(timeout + 30)
        if reply is None or "rc" not in reply:
            self.ok = False
            await self.close()
            return None
        return ProcResult(
            returncode=int(reply["rc"]),
            stdout="",
            stderr="",
            duration_s=float(reply["duration"]),
            timed_out=bool(reply["timed_out"]),
        )

    async def close(self) -> None:
        self.ok = False
        if self.proc.returncode is None:
            with contextlib.suppress(ProcessLookupError, PermissionError):
                os.killpg(self.proc.pid, signal.SIGKILL)
        await self.proc.wait()


class MutationTester(Role):
    name = "mutation_tester"
    tool = TOOL
    description = "Mutates covered code in scratch copies and reports mutants the tests miss"
    modes = frozenset({"deep"})
    executes_code = True

    def __init__(
        self, workers: int | None = None, use_cache: bool = True, fork_server: bool = True
    ):
        self.workers = workers
        self.use_cache = use_cache
        self.fork_server = fork_server
        self.report = MutationReport()
        self._stamps = itertools.count(1)
        self._python = sys.executable
        self._tools: list[Path] = []

    def unavailable(self, config=None) -> str | None:
        try:
            import coverage  # noqa: F401
        except ImportError:
            return "the coverage package is not installed"
        return None

    def _collect(self, ctx: RoleContext, report: MutationReport) -> list[FileResult] | RoleOutput:
        """The files to mutate, each with its cache key and any cached results."""
        files = _scratch.python_files(ctx.sandbox)
        test_files = [f for f in files if _scratch.is_test_file(f)]
        if not any(f.rsplit("/", 1)[-1] != "conftest.py" for f in test_files):
            return RoleOutput(
                status="skipped", reason="no Python tests to judge mutants with", tool=TOOL
            )
        targets = [f for f in files if _scratch.is_source_file(f)]
        if ctx.files is not None:
            wanted = set(ctx.files)
            targets = [f for f in targets if f in wanted]
        if ctx.targets is not None:  # --shard: this run's share of the files
            targets = [f for f in targets if ctx.targets(f)]
        if not targets:
            return RoleOutput(
                status="skipped", reason="no Python source files to mutate", tool=TOOL
            )

        tests_hash = _scratch.tests_fingerprint(ctx.sandbox, files)
        # Every source file is read once: for its imports and for its hash.
        raws: dict[str, bytes | None] = {}
        wanted_targets = set(targets)
        for rel in files:
            if not _scratch.is_test_file(rel):
                try:
                    raws[rel] = (ctx.sandbox / rel).read_bytes()
                except OSError:
                    if rel in wanted_targets:
                        raise
                    raws[rel] = None
        texts = {rel: _utf8(raw) for rel, raw in raws.items()}
        reaches = import_closure(texts)

        def file_hash(rel: str) -> str:
            raw = raws.get(rel)
            return content_hash(raw) if raw is not None else "-"

        results: list[FileResult] = []
        for rel in targets:
            text = texts[rel]
            if text is None:
                report.skipped_files[rel] = "not UTF-8"
                continue
            # What the file imports is part of what its mutants run against.
            deps = "".join(f"{d}\0{file_hash(d)}\0" for d in sorted(reaches.get(rel, ())))
            fr = FileResult(rel, text, cache_key(rel, file_hash(rel), tests_hash, deps))
            if self.use_cache:
                self._load_cache(fr)
            results.append(fr)
        return results

    async def run(self, ctx: RoleContext) -> RoleOutput:
        self.report = report = MutationReport()
        started = time.monotonic()
        refused = self.refusal(ctx)
        if refused is not None:
            return refused
        # Walking, reading and hashing the project is file work: off the loop.
        collected = await asyncio.to_thread(self._collect, ctx, report)
        if isinstance(collected, RoleOutput):
            return collected
        results = collected
        report.files = len(results)
        for r in results:
            if r.from_cache:
                report.files_cached += 1
                report.mutants_cached += len(r.results)
                if r.skip_reason:
                    report.skipped_files[r.rel] = r.skip_reason

        scratch: Path | None = None
        try:
            pending = [r for r in results if not r.complete]
            if pending:
                scratch = _scratch.scratch_root(ctx.project, ctx.session_id, "mutation")
                status = await self._mutate(ctx, scratch, pending, report)
                if status is not None:
                    return status
        finally:
            if self.use_cache:
                for r in results:
                    if not r.from_cache or not r.complete:
                        self._save_cache(r)
            if scratch is not None:
                await asyncio.to_thread(_scratch.drop_scratch, scratch)
            report.total_s = time.monotonic() - started

        for r in results:
            for res in r.results.values():
                report.statuses[res["status"]] += 1
        findings = await asyncio.to_thread(self._findings, ctx, results)
        await asyncio.to_thread(self._write_log, ctx, results, report)
        return RoleOutput(status="ok", reason=report.summary(), findings=findings, tool=TOOL)

    # -- the work -----------------------------------------------------------

    async def _interpreter(self, ctx: RoleContext) -> str | None:
        """Use the project's interpreter; why not, when it cannot measure coverage."""
        py = await project_python(ctx)
        self._python = py.python
        if py.own or py.has_coverage:
            self._tools = []
            return None
        lent = await asyncio.to_thread(tool_paths, py, ("coverage",))
        if lent is None:
            return (f"coverage is not installed in {py.shown(ctx.project)} (needed to map "
                    "tests to lines); install it there")
        self._tools = lent
        return None

    async def _mutate(
        self, ctx: RoleContext, scratch: Path, pending: list[FileResult], report: MutationReport
    ) -> RoleOutput | None:
        why = await self._interpreter(ctx)
        if why is not None:
            return RoleOutput(status="skipped", reason=why, tool=TOOL)
        base = await asyncio.to_thread(_scratch.copy_tree, ctx.sandbox, scratch / "w0")
        started = time.monotonic()
        linemap = await self._line_map(ctx, scratch, base)
        report.coverage_s = time.monotonic() - started
        if isinstance(linemap, str):
            status: RoleStatus = (
                "timeout" if linemap == NO_TIME
                else "failed" if linemap.startswith("could not run") else "skipped"
            )
            return RoleOutput(status=status, reason=linemap, tool=TOOL)

        # Parsing, mutating and compiling every candidate is pure Python work:
        # done in a thread so an editor's requests are not queued behind it.
        queue, left_out = await asyncio.to_thread(self._plan, ctx, pending, linemap, report)
        if not queue:
            return None
        planned: dict[int, tuple[FileResult, list[str]]] = {}
        for fr, m, _ in queue:
            planned.setdefault(id(fr), (fr, []))[1].append(m.key)

        n_workers = max(1, min(self.workers or os.cpu_count() or 1, len(queue)))
        report.workers = n_workers
        copies = [base] + [
            await asyncio.to_thread(_scratch.copy_tree, base, scratch / f"w{i}")
            for i in range(1, n_workers)
        ]
        cmd = _scratch.pytest_command(ctx.config.roles.unit_test_command, self._python)
        factor = ctx.config.roles.mutation_timeout_factor
        queue.reverse()  # pop() from the end keeps file order
        started = time.monotonic()

        server = scratch / "plugins" / "superqode_forkserver.py"
        await asyncio.to_thread(shutil.copyfile, Path(__file__).with_name("_forkserver.py"), server)
        use_server = self.fork_server and not ctx.config.roles.unit_test_command

        async def worker(copy: Path) -> None:
            env = self._env(ctx, copy)
            runner: ForkRunner | None = None
            tried_runner = not use_server
            try:
                while queue:
                    fr, m, tests = queue.pop()
                    expected = linemap.startup_s + sum(linemap.durations.get(t, 0.0) for t in tests)
                    timeout = max(MIN_MUTANT_TIMEOUT_S, factor * expected)
                    remaining = ctx.remaining()
                    if remaining is not None and remaining < timeout:
                        fr.complete = False
                        report.skip("out of time budget")
                        continue
                    if not tried_runner:
                        tried_runner = True
                        runner = await self._start_runner(server, copy, env, tests, timeout)
                        if runner is None:
                            report.fork_fallbacks += 1
                    fr.results[m.key] = await self._run_mutant(
                        ctx, copy, env, cmd, fr, m, tests, timeout, runner
                    )
                    report.fork_runs += runner is not None and runner.ok
                    report.mutants_run += 1
                    ctx.emit("progress", role=self.name, message=f"mutant {report.mutants_run}")
            finally:
                if runner is not None:
                    await runner.close()

        async with asyncio.TaskGroup() as tg:
            for copy in copies:
                tg.create_task(worker(copy))
        report.mutants_s = time.monotonic() - started
        for key, (fr, keys) in planned.items():
            fr.complete = key not in left_out and all(k in fr.results for k in keys)
        return None

    def _plan(
        self, ctx: RoleContext, pending: list[FileResult], linemap: LineMap, report: MutationReport
    ) -> tuple[list[tuple[FileResult, Mutant, list[str]]], set[int]]:
        mutants: list[tuple[FileResult, Mutant, list[str]]] = []
        for fr in pending:
            fr.complete = False  # set again only once every mutant of it has a result
            lines = linemap.tests_by_line.get(fr.rel, {})
            if not lines:
                report.skipped_files[fr.rel] = fr.skip_reason = "no passing test covers it"
                fr.complete = True
                continue
            try:
                found = find_mutants(fr.text, fr.rel, set(lines), validate=False)
            except (SyntaxError, ValueError):
                report.skipped_files[fr.rel] = fr.skip_reason = "does not parse"
                fr.complete = True
                continue
            todo = [m for m in found if m.key not in fr.results]
            report.mutants_cached += len(found) - len(todo)
            mutants.extend((fr, m, lines[m.line]) for m in todo)
            if not todo:
                fr.complete = True

        limit = ctx.config.roles.mutation_max_mutants
        chosen_ids = {id(m) for m in select([m for _, m, _ in mutants], limit)}
        queue = [item for item in mutants if id(item[1]) in chosen_ids]
        queue = [item for item in queue if compiles(item[0].text, item[1])]
        left_out = {id(item[0]) for item in mutants if id(item[1]) not in chosen_ids}
        if len(mutants) > len(chosen_ids):
            report.skip("over the mutant limit", len(mutants) - len(chosen_ids))
        return queue, left_out

    async def _line_map(self, ctx: RoleContext, scratch: Path, base: Path) -> LineMap | str:
        data_file = scratch / "coverage.data"
        out_file = scratch / "linemap.json"
        plugin, env = await asyncio.to_thread(self._prepare_line_map, ctx, scratch, base, data_file, out_file)
        rc = scratch / "coveragerc"
        cmd = [self._python, "-m", "coverage", "run", f"--rcfile={rc}", "-m", "pytest"]
        cmd += ["-p", plugin, "-p", "no:cacheprovider", "-q", "--no-header"]
        res = await ctx.run(cmd, cwd=base, env=env)
        if res.timed_out:
            return NO_TIME
        # Reading coverage's SQLite data is a few hundred syscalls: off the loop.
        return await asyncio.to_thread(self._read_line_map, res, base, data_file, out_file)

    def _env(self, ctx: RoleContext, copy: Path, extra: list[Path] | None = None) -> dict[str, str]:
        """A copy's environment: its sources ahead of the user's project and
        the sandbox (editable installs), SuperQode's coverage lent if needed."""
        return _scratch.python_env(
            ctx.env, copy, extra or [], pycache=_scratch.pycache_dir(),
            shadowed=[ctx.project, ctx.sandbox], tool_paths=self._tools,
        )

    def _prepare_line_map(
        self, ctx: RoleContext, scratch: Path, base: Path, data_file: Path, out_file: Path
    ) -> tuple[str, dict[str, str]]:
        plugin_dir = scratch / "plugins"
        plugin = write_plugin(plugin_dir, "superqode_linemap", LINEMAP_PLUGIN)
        (scratch / "coveragerc").write_text(
            # coverage expands $VAR in its config: a literal $ is written $$.
            f"[run]\ndata_file = {_rc(data_file)}\nsource = {_rc(base)}\nbranch = false\n",
            encoding="utf-8",
        )
        env = self._env(ctx, base, [plugin_dir])
        env["SUPERQODE_LINEMAP_OUT"] = str(out_file)
        return plugin, env

    def _read_line_map(self, res: ProcResult, base: Path, data_file: Path, out_file: Path) -> LineMap | str:
        try:
            info = json.loads(out_file.read_text(encoding="utf-8"))
        except (OSError, ValueError):
            return ("could not run the project's tests under coverage: "
                    + pytest_message(res.stdout + "\n" + res.stderr))
        tests = info["tests"]
        passing = {t for t, v in tests.items() if v["passed"]}
        self.report.baseline_failing = sorted(t for t, v in tests.items() if not v["passed"])
        if not passing:
            return "no test passes on the unchanged code, so no mutant can be judged"

        import coverage

        data = coverage.CoverageData(basename=str(data_file))
        data.read()
        by_line: dict[str, dict[int, list[str]]] = {}
        real_base = base.resolve()
        for measured in data.measured_files():
            try:
                rel = Path(measured).resolve().relative_to(real_base).as_posix()
            except ValueError:
                continue
            lines: dict[int, list[str]] = {}
            for line, contexts in data.contexts_by_lineno(measured).items():
                good = sorted(c for c in contexts if c in passing)
                if good:
                    lines[line] = good
            if lines:
                by_line[rel] = lines
        durations = {t: v["duration"] for t, v in tests.items()}
        startup = max(0.5, res.duration_s - sum(durations.values()))
        return LineMap(by_line, durations, startup)

    async def _run_mutant(
        self,
        ctx: RoleContext,
        copy: Path,
        env: dict[str, str],
        cmd: list[str],
        fr: FileResult,
        m: Mutant,
        tests: list[str],
        timeout: float,
        runner: ForkRunner | None = None,
    ) -> dict[str, Any]:
        target = copy / fr.rel
        args = self._pytest_args(tests)
        await asyncio.to_thread(self._write, target, apply_edit(fr.text, m.edit))
        try:
            res = await runner.run(args, timeout) if runner is not None else None
            if res is None:
                res = await ctx.run([*cmd, *args], cwd=copy, env=env, timeout=timeout)
        finally:
            await asyncio.shield(asyncio.to_thread(self._write, target, fr.text))
        if res.timed_out:
            status = "timeout"
        elif res.returncode == 0:
            status = "survived"
        elif res.returncode in (1, 2):  # tests failed / collection broke on the mutant
            status = "killed"
        else:  # 3 internal error, 4 usage error, 5 no tests collected
            status = "error"
        return {
            "status": status,
            "tests": tests[:5],
            "ntests": len(tests),
            "duration": round(res.duration_s, 3),
        }

    async def _start_runner(
        self, server: Path, copy: Path, env: dict[str, str], tests: list[str], timeout: float
    ) -> ForkRunner | None:
        runner = await ForkRunner.start(server, copy, env, self._python)
        if runner is None:
            return None
        # The warm launcher must agree with a fresh process on the unmutated
        # code (these tests passed under coverage), or it is not used at all.
        res = await runner.run(self._pytest_args(tests), timeout)
        if res is None or not res.ok:
            await runner.close()
            return None
        return runner

    @staticmethod
    def _pytest_args(tests: list[str]) -> list[str]:
        selectors = (
            tests if len(tests) <= MAX_NODE_IDS else sorted({t.split("::")[0] for t in tests})
        )
        # -W: the warm launcher imports plugins before pytest can mark them for
        # assertion rewriting; that warning must not fail a `-W error` project.
        return [
            "-x",
            "-q",
            "--no-header",
            "-p",
            "no:cacheprovider",
            "-W",
            "ignore::pytest.PytestAssertRewriteWarning",
            *selectors,
        ]

    def _write(self, target: Path, text: str) -> None:
        # Bytecode is cached (see _scratch.python_env) and a .pyc is trusted
        # while the source's mtime (whole seconds) and size match: two mutants
        # of equal size written within one second would share a stale .pyc.
        # A distinct mtime per write rules that out.
        target.write_text(text, encoding="utf-8")
        stamp = 1_000_000_000 + next(self._stamps)
        os.utime(target, (stamp, stamp))

    # -- results ------------------------------------------------------------

    def _findings(self, ctx: RoleContext, results: list[FileResult]) -> list[Finding]:
        findings: list[Finding] = []
        for fr in results:
            survived = {k for k, v in fr.results.items() if v["status"] == "survived"}
            if not survived:
                continue
            by_line: dict[int, list[Mutant]] = {}
            lines = {int(k.split(":", 1)[0]) for k in survived}
            for m in find_mutants(fr.text, fr.rel, lines, validate=False):
                if m.key in survived:
                    by_line.setdefault(m.line, []).append(m)
            src_lines = fr.text.splitlines()
            for line, ms in sorted(by_line.items()):
                findings.append(self._finding(ctx, fr, line, ms, src_lines[line - 1]))
        return findings

    def _finding(
        self, ctx: RoleContext, fr: FileResult, line: int, ms: list[Mutant], original: str
    ) -> Finding:
        ms = sorted(ms, key=lambda m: (-KINDS[m.kind][1], m.col))
        first = ms[0]
        severity, confidence = KINDS[first.kind]
        info = fr.results[first.key]
        more = f" (and {len(ms) - 1} more mutant(s) on this line)" if len(ms) > 1 else ""
        covering = ", ".join(info.get("tests", [])[:3])
        extra = info.get("ntests", 0) - 3
        if extra > 0:
            covering += f" and {extra} more"
        evidence = [
            Evidence(
                message=f"mutant: {m.description}; {fr.results[m.key]['ntests']} covering test(s) still pass",
                file=fr.rel,
                line=m.line,
                snippet=mutated_line(fr.text, m),
            )
            for m in ms
        ]
        diff = "".join(
            "".join(
                difflib.unified_diff(
                    fr.text.splitlines(keepends=True),
                    apply_edit(fr.text, m.edit).splitlines(keepends=True),
                    fromfile=f"a/{fr.rel}",
                    tofile=f"b/{fr.rel}",
                    n=2,
                )
            )
            for m in ms
        )
        try:
            ctx.artifacts.write_evidence(f"mutant-{fr.rel}-L{line}.diff", diff)
        except OSError:
            pass
        return Finding(
            role=self.name,
            tool=TOOL,
            rule_id="mutation-survived",
            title=f"Tests do not notice when {first.description}",
            message=(
                f"Tests do not notice when {first.description} at line {line}{more}: "
                f"every test covering this line still passes ({covering}). "
                "Add an assertion that tells the two versions apart."
            ),
            severity=Severity(severity),
            confidence=confidence,
            category="test-quality",
            file=fr.rel,
            range=Range(start_line=line, start_col=first.col + 1),
            evidence=evidence,
            tags=["mutation", *sorted({m.kind for m in ms})],
            snippet=original.strip(),
        ).with_stable_id()

    def _write_log(
        self, ctx: RoleContext, results: list[FileResult], report: MutationReport
    ) -> None:
        lines = [
            f"mutation_tester: {report.summary()}",
            (
                f"workers: {report.workers}; coverage run {report.coverage_s:.1f}s; "
                f"{report.mutants_run} mutant run(s) in {report.mutants_s:.1f}s "
                f"({report.mutants_per_s:.2f}/s); total {report.total_s:.1f}s"
            ),
            (
                f"warm launcher runs: {report.fork_runs}; workers that fell back to "
                f"fresh processes: {report.fork_fallbacks}"
            ),
        ]
        if report.baseline_failing:
            lines.append(
                f"tests failing on the unchanged code (not used to judge mutants): "
                f"{len(report.baseline_failing)}"
            )
            lines += [f"  {t}" for t in report.baseline_failing[:50]]
        for rel, why in sorted(report.skipped_files.items()):
            lines.append(f"skipped file {rel}: {why}")
        for why, n in sorted(report.skipped.items()):
            lines.append(f"skipped {n} mutant(s): {why}")
        for fr in results:
            counts = Counter(v["status"] for v in fr.results.values())
            state = "cached" if fr.from_cache else ("complete" if fr.complete else "partial")
            lines.append(f"{fr.rel}: {dict(sorted(counts.items()))} ({state})")
            for key, v in sorted(fr.results.items()):
                lines.append(f"  {key}: {v['status']}")
        try:
            ctx.artifacts.write_log("mutation", "\n".join(lines) + "\n")
        except OSError:
            pass

    # -- cache --------------------------------------------------------------

    def _load_cache(self, fr: FileResult) -> None:
        path = cache_dir() / f"{fr.key}.json"
        try:
            data = json.loads(path.read_text(encoding="utf-8"))
        except (OSError, ValueError):
            return
        if data.get("version") != MUTATOR_VERSION or not isinstance(data.get("results"), dict):
            return
        fr.results = data["results"]
        fr.complete = bool(data.get("complete"))
        fr.from_cache = fr.complete
        fr.skip_reason = data.get("skipped")

    def _save_cache(self, fr: FileResult) -> None:
        # An "error" result says nothing about the tests; run it again next time.
        results = {k: v for k, v in fr.results.items() if v["status"] != "error"}
        complete = fr.complete and len(results) == len(fr.results)
        data = {
            "version": MUTATOR_VERSION,
            "file": fr.rel,
            "complete": complete,
            "skipped": fr.skip_reason,
            "results": results,
        }
        try:
            atomic_write(cache_dir() / f"{fr.key}.json", json.dumps(data, indent=1))
        except OSError:
            pass
