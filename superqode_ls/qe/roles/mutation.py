"""mutation_tester: break the code on purpose and see whether the tests notice.

1. Which tests cover which line: the workers (step 3) start first, and each
   runs its share of the suite (whole test files) once in a forked child that
   traces the lines of the files under test per test; no separate pass of
   the suite. The first traces one share, a second starts meanwhile, and the
   rest is split over as many workers as its tests' time repays their start
   (``_mutation_linemap``). A custom test command, no fork server, or a
   worker that cannot do it (it did not start, its child broke) takes one
   run of the project's tests under ``coverage`` with one coverage context
   per test instead. Meanwhile a thread finds and compiles every candidate
   mutant (``_mutation_pool.Candidates``).
2. Mutants (``_mutators``, ``_mutation_ops``) only on covered lines of the
   code under test (``ctx.files`` when a quick/save run passes the changed
   files), each file's in order of risk: changed lines first, then lines no
   asserting test covers, then the rest, round-robin over lines.
3. The worker count (forced, or the CPUs) is a cap: a worker is added only
   where its share of the mutants repays its measured start
   (``_mutation_pool.workers_that_pay``), and never beyond the CPUs.
   Each worker has its own scratch copy (the copies share their bytecode)
   and one warm pytest process of the project (``_forkserver``) that has
   collected the tests and imported the code once; a mutant is a forked child with the mutated
   functions' code swapped in place (``_mutation_runner``), under a time
   limit derived from those tests' durations.
4. A mutant the tests survive is a finding at its line, unless it is marked
   likely equivalent; results are cached per file (``_mutation_cache``), so a
   re-run of unchanged files costs no test run at all.
"""

from __future__ import annotations

import asyncio
import re
import shutil
import time
from collections import deque
from collections.abc import Awaitable, Callable
from pathlib import Path

from ...workspace.extras import lacking
from ...workspace.proc import ProcResult
from ...workspace.pyenv import ProjectPython
from . import _mutation_cache as _cache
from . import _scratch
from ._common import worker_count
from ._imports import import_closure
from ._mutation_cache import (  # noqa: F401
    FileResult,
    MutationReport,
    cache_dir,
    cache_key,
)
from ._mutation_linemap import NO_TIME, read_coverage, trace_map
from ._mutation_pool import Candidates, mutant_costs, workers_that_pay
from ._mutation_report import TOOL, findings, write_log
from ._mutation_runner import SERVER_PLUGIN, LineMap, Worker
from ._mutation_sample import Unit, asserting_tests, choose, sample, units
from ._mutators import Mutant, content_hash
from ._pyenv import project_python, pytest_argv, tool_paths
from ._pytest_plugins import LINEMAP_PLUGIN, write_plugin
from .base import Role, RoleContext, RoleOutput, ToolFailed, reported

_HUNK = re.compile(r"^@@ -\S+ \+(\d+)(?:,(\d+))? @@")

Item = tuple[FileResult, Mutant, list[str]]


def _rc(path: Path) -> str:
    return str(path).replace("$", "$$")


def _utf8(raw: bytes | None) -> str | None:
    try:
        return raw.decode("utf-8") if raw is not None else None
    except UnicodeDecodeError:
        return None


class MutationTester(Role):
    name = "mutation_tester"
    tool = TOOL
    description = "Mutates covered code in scratch copies and reports mutants the tests miss"
    modes = frozenset({"deep"})
    executes_code = True

    def __init__(
        self, workers: int | None = None, use_cache: bool = True, fork_server: bool = True,
        map_in_workers: bool = True, every_worker: bool = False,
    ):
        self.workers = workers
        # True: all ``workers`` run mutants whether they pay or not (tests:
        # each count's code path); else the count is a cap (_count).
        self.every_worker = every_worker
        # False: a separate coverage pass maps lines (the path a custom test
        # command or a worker that cannot trace takes; a baseline in bench/).
        self.map_in_workers = map_in_workers
        self.use_cache = use_cache
        self.fork_server = fork_server
        self.report = MutationReport()
        self._py: ProjectPython | None = None
        self._tools: list[Path] = []
        self.linemap: LineMap | None = None  # the last run's (tests, bench)
        # CPU seconds of the run so far (bench/: the whole process tree),
        # read at each phase's end; None: phases get wall time only.
        self.cpu_clock: Callable[[], float] | None = None
        self._phase = (0.0, None)
        self._copies = 0  # scratch copies handed to workers in this run
        self._pool: list[Worker] = []  # every worker made in this run: closed at its end

    def _mark(self, name: str) -> None:
        """End phase ``name`` now (its time adds to earlier spells of it)."""
        now = (time.monotonic(), self.cpu_clock() if self.cpu_clock else None)
        wall, cpu = self.report.phases.get(name, (0.0, None))
        wall += now[0] - self._phase[0]
        if now[1] is not None and self._phase[1] is not None:
            cpu = (cpu or 0.0) + now[1] - self._phase[1]
        self.report.phases[name] = (wall, cpu)
        self._phase = now

    def unavailable(self, config=None) -> str | None:
        return lacking("coverage")

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
                _cache.load(fr, ctx.config.roles.mutation_max_mutants)
            results.append(fr)
        return results

    async def run(self, ctx: RoleContext) -> RoleOutput:
        self.report = report = MutationReport()
        started = time.monotonic()
        self._phase = (started, self.cpu_clock() if self.cpu_clock else None)
        refused = self.refusal(ctx)
        if refused is not None:
            return refused
        # Walking, reading and hashing the project is file work: off the loop.
        collected = await asyncio.to_thread(self._collect, ctx, report)
        if isinstance(collected, RoleOutput):
            return collected
        results = collected
        self._mark("collect")
        report.files = len(results)
        for r in results:
            if r.from_cache:
                report.files_cached += 1
                report.mutants_cached += len(r.results)
                if r.skip_reason:
                    report.skipped_files[r.rel] = r.skip_reason

        scratch: Path | None = None
        try:
            pending = [r for r in results if not r.from_cache]
            if pending:
                scratch = _scratch.scratch_root(ctx.project, ctx.session_id, "mutation")
                status = await reported(self._mutate(ctx, scratch, pending, report))
                if status is not None:
                    return status
        finally:
            if self.use_cache:
                for r in results:
                    if not r.from_cache:
                        _cache.save(r)
            if scratch is not None:
                await asyncio.to_thread(_scratch.drop_scratch, scratch)
            self._mark("close")
            report.total_s = time.monotonic() - started

        for r in results:
            for res in r.results.values():
                report.statuses[res["status"]] += 1
            if not r.complete and not r.skip_reason:
                if r.capped is not None and not r.results:
                    report.unsampled += 1  # no function of it in the sample
                else:
                    report.partial[r.rel] = r.progress()
        await asyncio.to_thread(sample, results, report)
        found = await asyncio.to_thread(findings, ctx, results, report)
        await asyncio.to_thread(write_log, ctx, results, report)
        self._mark("report")
        return RoleOutput(status="ok", reason=report.summary(), findings=found, tool=TOOL)

    # -- the work -----------------------------------------------------------

    async def _mutate(
        self, ctx: RoleContext, scratch: Path, pending: list[FileResult], report: MutationReport
    ) -> RoleOutput | None:
        why = await self._interpreter(ctx)
        if why is not None:
            return RoleOutput(status="skipped", reason=why, tool=TOOL)
        self._mark("interpreter")
        base = await asyncio.to_thread(_scratch.copy_tree, ctx.sandbox, scratch / "w0")
        self._copies, self._pool = 0, []
        self._mark("copy")
        workers: list[Worker] = []
        planned: dict[str, list[Item]] = {}
        # The forced count or the CPUs: a cap. How many workers run is what
        # the measured costs pay for (_mutation_pool.workers_that_pay).
        cap = report.workers_cap = max(1, self.workers or worker_count(ctx.config, ctx.runtime))
        # More workers than CPUs never pay (a forced count above them only
        # splits the work, for tests: every_worker).
        most = cap if self.every_worker else max(1, min(cap, ctx.runtime.cpu_count()))
        # Every file's mutants are found and compiled while the first worker
        # starts and maps lines, not after.
        candidates = Candidates(pending)
        candidates.start()
        try:
            started = time.monotonic()
            linemap: LineMap | str | None = None
            if (self.fork_server and self.map_in_workers
                    and not ctx.config.roles.unit_test_command):
                # The warm workers map lines themselves (each traces its
                # share of the suite in a forked child), then run mutants: no
                # separate coverage pass, no second start-up and collection;
                # the suite is split only as wide as its tests' time repays
                # the workers' starts, whatever the count.
                first = await self._workers(ctx, scratch, base, pending, report, 1)

                def spawn(k: int) -> Awaitable[list[Worker]]:
                    return self._workers(ctx, scratch, base, pending, report, k)

                linemap, workers = await trace_map(
                    ctx, scratch, first[0], spawn, cap, most, self.every_worker, pending, report,
                    lambda: self._mark("starts"))
                self._mark("trace")
                if linemap is None:
                    await _close(workers)
                    workers = []
            if linemap is None:
                report.line_map = "coverage"
                linemap = await self._line_map(ctx, scratch, base)
            report.coverage_s = time.monotonic() - started
            if isinstance(linemap, str):
                if linemap == NO_TIME or linemap.startswith("could not run"):
                    raise ToolFailed(TOOL, linemap,
                                     status="timeout" if linemap == NO_TIME else "failed")
                return RoleOutput(status="skipped", reason=linemap, tool=TOOL)
            self.linemap = linemap

            changed = await self._changed_lines(ctx, [fr.rel for fr in pending])
            await asyncio.to_thread(candidates.stop)
            # Parsing, mutating and compiling every candidate is pure Python work:
            # done in a thread so an editor's requests are not queued behind it.
            items = await asyncio.to_thread(self._plan, ctx, pending, linemap, changed, report,
                                            candidates)
            self._mark("plan")
            for item in items:
                planned.setdefault(item[0].rel, []).append(item)
            # Function by function: what a time budget cuts short is whole
            # functions at the end, never a bit of each.
            queue = deque(items)
            if queue:
                if not workers:
                    workers = await self._workers(ctx, scratch, base, pending, report, 1, queue)
                for w in workers:
                    w.linemap = linemap
                n = await self._count(workers, most, items, linemap, report)
                if self.every_worker:
                    await _close(workers[n:])
                    workers = workers[:n]
                # Workers the map started are kept: their start is paid.
                n = max(n, len(workers))
                workers += await self._workers(ctx, scratch, base, pending, report,
                                               n - len(workers), queue)
                report.workers = n
                for w in workers:
                    w.linemap = linemap
                self._mark("more workers")
                await self._drain(ctx, workers, queue, report)
                self._mark("mutants")
        finally:
            await asyncio.to_thread(candidates.stop)
            await _close(self._pool)
        for fr, items in ((fr, planned.get(fr.rel, [])) for fr in pending):
            if fr.skip_reason:
                continue
            done = all(m.key in fr.results for _, m, _ in items)
            if not done and fr.stopped is None:
                fr.stopped = "cut short"
            fr.complete = done and fr.capped is None
        return None

    async def _drain(self, ctx: RoleContext, workers: list[Worker], queue: deque[Item],
                     report: MutationReport) -> None:
        budget = ctx.config.roles.mutation_time_budget_s
        started = time.monotonic()

        async def drain(w: Worker) -> None:
            try:
                while queue:
                    fr, m, tests = queue[0]
                    remaining = ctx.remaining()
                    over = time.monotonic() - started > budget
                    if over or (remaining is not None and remaining < w.limit(tests)):
                        queue.popleft()
                        fr.stopped = "out of time budget"
                        report.skip("out of time budget")
                        continue
                    queue.popleft()
                    fr.results[m.key] = await w.run(fr, m, tests)
                    report.mutants_run += 1
                    ctx.emit("progress", role=self.name, message=f"mutant {report.mutants_run}")
            finally:
                await asyncio.shield(w.close())

        async with asyncio.TaskGroup() as tg:
            for w in workers:
                tg.create_task(drain(w))
        report.mutants_s = time.monotonic() - started

    async def _count(self, workers: list[Worker], cap: int, items: list[Item],
                     linemap: LineMap, report: MutationReport) -> int:
        """How many workers the mutants pay for, up to ``cap``: from a
        worker's measured start (one after the first, which also compiled
        the bytecode, where one started) and one measured forked run of the
        first file's unmutated tests (which the first worker does before
        that file's mutants anyway); without a warm worker, a fresh process
        per mutant and no start."""
        if cap <= 1 or len(items) <= 1:
            return 1
        if self.every_worker:
            return min(cap, len(items))
        fr, _, tests = items[0]
        per_run = await workers[0].per_run_s(fr, tests)
        later = [w.start_s for w in workers[1:] if w.start_s is not None]
        start_s = min(later) if later else workers[0].start_s or 0.0
        if per_run is None:  # fresh processes: each mutant pays a start, no worker does
            per_run, start_s = linemap.startup_s, 0.0
        report.run_s, report.start_s = per_run, start_s
        return workers_that_pay(cap, mutant_costs(items, linemap, per_run), start_s)

    async def _workers(self, ctx: RoleContext, scratch: Path, base: Path,
                       pending: list[FileResult], report: MutationReport, count: int,
                       queue: deque[Item] | None = None) -> list[Worker]:
        """``count`` more workers, one scratch copy each (the run's first
        works in ``base``). With a ``queue`` their servers collect only its
        tests' files, and start on first use; without one they collect the
        whole suite (to map it)."""
        # Each copy is used by one worker only (a worker that did not start
        # keeps its number); made side by side (the loop's bounded thread pool).
        which = range(self._copies, self._copies + max(0, count))
        self._copies = which.stop
        if not which:
            return []
        copies = list(await asyncio.gather(*(
            asyncio.to_thread(_scratch.reuse_or_copy, base, scratch / f"w{i}") if i else
            asyncio.sleep(0, base) for i in which
        )))
        await asyncio.to_thread(_scratch.share_pycache, [base, *copies])
        plugin = scratch / "plugins" / f"{SERVER_PLUGIN}.py"
        if not plugin.is_file():
            await asyncio.to_thread(plugin.parent.mkdir, exist_ok=True)
            await asyncio.to_thread(shutil.copyfile, Path(__file__).with_name("_forkserver.py"),
                                    plugin)
        modules = {fr.rel: _scratch.module_name(fr.rel) for fr in pending}
        test_files = None if queue is None else sorted(
            {t.split("::")[0] for _, _, tests in queue for t in tests})
        made = [self._worker(ctx, scratch, copy, report, modules, test_files) for copy in copies]
        self._pool += made
        return made

    def _worker(self, ctx: RoleContext, scratch: Path, copy: Path, report: MutationReport,
                modules: dict[str, str | None], test_files: list[str] | None) -> Worker:
        env = self._env(ctx, copy)
        assert self._py is not None
        fresh = pytest_argv(self._py, ctx.config.roles.unit_test_command, env, copy)
        server_cmd = None
        server_env = self._env(ctx, copy, [scratch / "plugins"])
        if self.fork_server and not ctx.config.roles.unit_test_command:
            server_cmd = pytest_argv(self._py, None, server_env, copy)
            server_cmd += ["-p", SERVER_PLUGIN, "-p", "no:cacheprovider", "-q", "--no-header",
                           *(test_files or [])]
        remaining = ctx.remaining()
        start_timeout = (60.0 + 2 * report.coverage_s if test_files is not None
                         else min(remaining, 600.0) if remaining is not None else 600.0)
        return Worker(ctx, copy, env, fresh, server_cmd, server_env, start_timeout, None,
                      report, modules)

    def _plan(self, ctx: RoleContext, pending: list[FileResult], linemap: LineMap,
              changed: dict[str, set[int]], report: MutationReport,
              candidates: Candidates) -> list[Item]:
        """The mutants to run, whole functions at a time (``_choose``); what
        is cached is not run again."""
        asserting = asserting_tests(ctx.sandbox, linemap)
        all_units: list[Unit] = []
        for fr in pending:
            fr.complete, fr.capped, fr.stopped = False, None, None
            lines = linemap.tests_by_line.get(fr.rel, {})
            if not lines:
                report.skipped_files[fr.rel] = fr.skip_reason = "no passing test covers it"
                fr.complete = True
                continue
            wanted = set(lines)
            if ctx.lines is not None:  # --since: only the lines the change touched
                wanted &= ctx.lines.get(fr.rel, frozenset())
                if not wanted:
                    report.skipped_files[fr.rel] = fr.skip_reason = "the change touched no covered line"
                    fr.complete = True
                    continue
            try:
                found, names = candidates.on_lines(fr, wanted)
            except (SyntaxError, ValueError):
                report.skipped_files[fr.rel] = fr.skip_reason = "does not parse"
                fr.complete = True
                continue
            fr.total = len(found)
            all_units += units(fr, found, names, lines, changed.get(fr.rel, set()), asserting)

        limit = ctx.config.roles.mutation_max_mutants
        chosen = choose(all_units, limit, named_files=ctx.files is not None)
        taken: dict[str, int] = {}
        for u, n in chosen:
            taken[u.fr.rel] = taken.get(u.fr.rel, 0) + n
        left_out = sum(len(u.mutants) for u in all_units) - sum(taken.values())
        if left_out:
            report.skip("over the mutant limit (functions not sampled)", left_out)
        for fr in {u.fr.rel: u.fr for u in all_units}.values():
            if taken.get(fr.rel, 0) < fr.total:
                fr.capped = limit
        items: list[Item] = []
        for u, n in chosen:
            todo = [m for m in u.mutants[:n] if m.key not in u.fr.results]
            report.mutants_cached += n - len(todo)
            items += [(u.fr, m, u.lines[m.line]) for m in todo if candidates.compiles(u.fr, m)]
        return items

    async def _changed_lines(self, ctx: RoleContext, rels: list[str]) -> dict[str, set[int]]:
        """Lines the working tree changed against HEAD (git), per file."""
        try:
            res = await ctx.run(["git", "diff", "-U0", "--no-color", "--no-ext-diff", "HEAD",
                                 "--", *rels], cwd=ctx.sandbox, timeout=30)
        except OSError:
            return {}
        return _parse_diff(res) if res.returncode == 0 else {}

    async def _interpreter(self, ctx: RoleContext) -> str | None:
        """Use the project's interpreter; why not, when it cannot measure coverage."""
        py = await project_python(ctx)
        self._py = py
        if py.own or py.has_coverage:
            self._tools = []
            return None
        lent = await asyncio.to_thread(tool_paths, py, ("coverage",))
        if lent is None:
            return (f"coverage is not installed in {py.shown(ctx.project)} (needed to map "
                    "tests to lines); install it there")
        self._tools = lent
        return None

    async def _line_map(self, ctx: RoleContext, scratch: Path, base: Path) -> LineMap | str:
        data_file = scratch / "coverage.data"
        out_file = scratch / "linemap.json"
        plugin, env = await asyncio.to_thread(self._prepare_line_map, ctx, scratch, base, data_file, out_file)
        rc = scratch / "coveragerc"
        assert self._py is not None
        # The project's pytest (its plugins, never SuperQode's), under coverage.
        argv = pytest_argv(self._py, None, env, base)
        cmd = [argv[0], "-m", "coverage", "run", f"--rcfile={rc}", "-m", "pytest", *argv[3:]]
        cmd += ["-p", plugin, "-p", "no:cacheprovider", "-q", "--no-header"]
        res = await ctx.run(cmd, cwd=base, env=env)
        if res.timed_out:
            return NO_TIME
        # Reading coverage's SQLite data is a few hundred syscalls: off the loop.
        return await asyncio.to_thread(read_coverage, res, base, data_file, out_file, self.report)

    def _env(self, ctx: RoleContext, copy: Path, extra: list[Path] | None = None) -> dict[str, str]:
        """A copy's environment: its sources ahead of the user's project and
        the sandbox (editable installs), SuperQode's coverage lent if needed."""
        return _scratch.python_env(
            ctx.env, copy, extra or [], pycache=_scratch.pycache_dir(copy.parent),
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

async def _close(workers: list[Worker]) -> None:
    await asyncio.shield(asyncio.gather(*(w.close() for w in workers)))


def _parse_diff(res: ProcResult) -> dict[str, set[int]]:
    out: dict[str, set[int]] = {}
    current: set[int] | None = None
    for line in res.stdout.splitlines():
        if line.startswith("+++ "):
            path = line[4:]
            current = out.setdefault(path[2:], set()) if path.startswith("b/") else None
        elif current is not None and (m := _HUNK.match(line)):
            start, count = int(m.group(1)), int(m.group(2) or 1)
            current.update(range(start, start + count))
    return out
