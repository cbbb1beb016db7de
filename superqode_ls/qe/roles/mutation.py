"""mutation_tester: break the code on purpose and see whether the tests notice.

1. Which tests cover which line: the project's pytest starts once (the
   zygote, ``_mutation_spawn``: the suite imported and collected) and the
   workers (step 3) are its forks; each runs its share of the suite (whole
   test files) once in a forked child that traces the lines of the files
   under test per test, all at once; no separate pass of the suite
   (``_mutation_linemap``). A custom test command, no fork server, or a
   worker that cannot do it (it did not start, its child broke) takes one
   run of the project's tests under ``coverage`` with one coverage context
   per test instead. Meanwhile a thread finds and compiles every candidate
   mutant (``_mutation_pool.Candidates``).
2. Mutants (``_mutators``, ``_mutation_ops``) only on covered lines of the
   code under test (``ctx.files`` when a quick/save run passes the changed
   files), each file's in order of risk: changed lines first, then lines no
   asserting test covers, then the rest, round-robin over lines.
3. The worker count (forced, or the CPUs) is a cap: a worker runs mutants
   only where its share of them repays its measured start (its fork and
   first unmutated run; ``_mutation_pool.workers_that_pay``), and never
   beyond the CPUs. Each worker has its own scratch copy (its working
   directory and where a fresh run writes a mutant); a mutant is a forked
   child of it with the mutated functions' code swapped in place
   (``_forkserver``, ``_mutation_runner``), under a time limit derived from
   those tests' durations.
4. A mutant the tests survive is a finding at its line, unless it is marked
   likely equivalent; results are cached per file (``_mutation_cache``), so a
   re-run of unchanged files costs no test run at all.
"""

from __future__ import annotations

import asyncio
import functools
import shutil
import time
from collections import deque
from collections.abc import Callable
from pathlib import Path

from ...workspace.extras import lacking
from ...workspace.pyenv import ProjectPython
from . import _mutation_cache as _cache
from . import _scratch
from ._common import worker_count
from ._mutation_cache import (  # noqa: F401
    FileResult,
    MutationReport,
    cache_dir,
    cache_key,
)
from ._mutation_linemap import NO_TIME, coverage_map, trace_map
from ._mutation_pool import Candidates, mutant_costs, workers_that_pay
from ._mutation_report import TOOL, findings, write_log
from ._mutation_runner import PLAIN, SERVER_PLUGIN, LineMap, Worker
from ._mutation_sample import Item, changed_lines, plan, sample
from ._mutation_spawn import Zygote
from ._pyenv import project_python, pytest_argv, tool_paths
from ._pytest_config import isolated_cache_args
from ._unit_projects import each_project, projects
from .base import Role, RoleContext, RoleOutput, ToolFailed, reported

LAUNCHER = "superqode_launch"  # _mutation_launch, as the zygote's script
TRACER = "superqode_forktrace"  # _forktrace, which _forkserver imports by this name


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
        self._zygote: Zygote | None = None  # the run's warm pytest, its workers' parent
        # Threads making workers' fresh-process commands (_workers): awaited at the run's end.
        self._fresh_jobs: list[asyncio.Future[list[tuple[dict[str, str], list[str]]]]] = []
        self._zygote_s = 0.0  # its start: pytest, imports, collection

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

    async def run(self, ctx: RoleContext) -> RoleOutput:
        subs = None if ctx.config.roles.unit_test_command else await projects(ctx)
        if subs is not None:  # a monorepo: each project's code against its own tests
            refused = self.refusal(ctx)
            return refused or await each_project(ctx, subs, self._run_one, tool=TOOL,
                                                 nothing="nothing to mutate")
        return await self._run_one(ctx)

    async def _run_one(self, ctx: RoleContext) -> RoleOutput:
        self.report = report = MutationReport()
        started = time.monotonic()
        self._phase = (started, self.cpu_clock() if self.cpu_clock else None)
        refused = self.refusal(ctx)
        if refused is not None:
            return refused
        # Walking, reading and hashing the project is file work: off the loop.
        collected = await asyncio.to_thread(_cache.collect, ctx, report, self.use_cache)
        if isinstance(collected, str):
            return RoleOutput(status="skipped", reason=collected, tool=TOOL)
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
                scratch = _scratch.scratch_root(ctx.repository or ctx.project, ctx.session_id, "mutation")
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
        self._folder = ctx.folder  # (a monorepo's project: copied with what is above it)
        base = await asyncio.to_thread(_scratch.copy_within, ctx.sandbox, ctx.folder, scratch / "w0")
        self._copies, self._pool, self._zygote, self._fresh_jobs = 1, [], None, []
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
            if self.fork_server and not ctx.config.roles.unit_test_command:
                # One pytest start for the whole run: the workers are its
                # forks (_mutation_spawn); their copies are made meanwhile.
                # Its command first: made while the copies' threads held the
                # GIL, it started 0.4 s late on 16 cores.
                cmd, env = await asyncio.to_thread(self._zygote_cmd, ctx, scratch, base)
                copies = asyncio.create_task(self._copies_for(base, scratch, most))
                try:
                    self._zygote = await self._start_zygote(ctx, base, cmd, env, report)
                finally:
                    await copies
                self._mark("starts")
                if self._zygote is not None and self.map_in_workers:
                    # Each traces its share of the suite at once: no separate
                    # coverage pass, no second start-up and collection.
                    workers = await self._workers(ctx, base, pending, report, most, trace=True)
                    remaining = ctx.remaining()
                    if workers:
                        linemap = await trace_map(
                            scratch, workers, self._zygote_s, remaining or 3600.0, pending, report)
                    else:
                        report.line_map_fallback = "a warm worker did not start"
                    self._mark("trace")
                    if linemap is None:
                        await _close(workers)
                        workers = []
                elif self._zygote is None:
                    report.line_map_fallback = "a warm worker did not start"
            if linemap is None:
                report.line_map = "coverage"
                await asyncio.gather(*self._fresh_jobs, return_exceptions=True)  # (_fresh_made)
                assert self._py is not None
                linemap = await coverage_map(ctx, self._py, scratch, base,
                                             lambda c, x: self._env(ctx, c, x), report)
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
            items = await asyncio.to_thread(plan, ctx, pending, linemap, changed, report,
                                            candidates)
            self._mark("plan")
            for item in items:
                planned.setdefault(item[0].rel, []).append(item)
            # Function by function: what a time budget cuts short is whole
            # functions at the end, never a bit of each.
            queue = deque(items)
            if queue:
                if not workers:
                    workers = await self._workers(ctx, base, pending, report, 1)
                for w in workers:
                    w.linemap = linemap
                n = await self._count(workers, most, items, linemap, report)
                await _close(workers[n:])
                workers = workers[:n]
                workers += await self._workers(ctx, base, pending, report, n - len(workers))
                report.workers = len(workers)
                for w in workers:
                    w.linemap = linemap
                self._mark("more workers")
                await self._drain(ctx, workers, queue, report)
                self._mark("mutants")
        finally:
            await asyncio.to_thread(candidates.stop)
            await _close(self._pool)
            # (their threads write into the scratch dir, removed after this)
            await asyncio.gather(*self._fresh_jobs, return_exceptions=True)
            if self._zygote is not None:
                await asyncio.shield(self._zygote.close())
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
        """How many workers the mutants pay for, up to ``cap``: a forked
        worker's measured start (its fork, and its first run of a file's
        unmutated tests, which trusting it for that file takes) against the
        mutants' expected costs, from one measured forked run of the first
        file's unmutated tests (which the first worker does before that
        file's mutants anyway); without a warm worker, a fresh process per
        mutant and no start."""
        if self.every_worker:
            return min(cap, len(items))
        if cap <= 1 or len(items) <= 1:
            return 1
        fr, _, tests = items[0]
        per_run = await workers[0].per_run_s(fr, tests)
        if per_run is None:  # fresh processes: each mutant pays a start, no worker does
            per_run, start_s = linemap.startup_s, 0.0
        else:
            forks = [w.start_s for w in workers if w.start_s is not None]
            start_s = min(forks, default=0.0) + mutant_costs(items[:1], linemap, per_run)[0]
        report.run_s, report.start_s = per_run, start_s
        return workers_that_pay(cap, mutant_costs(items, linemap, per_run), start_s)

    _folder = ""  # the project's folder below the repository (RoleContext.folder)

    async def _copies_for(self, base: Path, scratch: Path, count: int) -> None:
        """Scratch copies w1.. for ``count`` more workers, side by side (the
        loop's bounded thread pool), sharing the first's bytecode."""
        made = list(await asyncio.gather(*(
            asyncio.to_thread(_scratch.reuse_or_copy, base, scratch / f"w{i}", self._folder)
            for i in range(1, 1 + max(0, count)))))
        await asyncio.to_thread(_scratch.share_pycache, [base, *made], self._folder)

    def _zygote_cmd(self, ctx: RoleContext, scratch: Path, base: Path
                    ) -> tuple[list[str], dict[str, str]]:
        """The warm pytest's command and environment (its plugins written)."""
        plugins = scratch / "plugins"
        plugins.mkdir(exist_ok=True)
        for name, own in ((SERVER_PLUGIN, "_forkserver.py"), (TRACER, "_forktrace.py"),
                          (LAUNCHER, "_mutation_launch.py")):
            shutil.copyfile(Path(__file__).with_name(own), plugins / f"{name}.py")
        env = self._env(ctx, base, [plugins])
        assert self._py is not None
        cmd = pytest_argv(self._py, None, env, base)
        if cmd[1:3] == ["-m", "pytest"]:
            # Reads the installed bytecode in place (_mutation_launch).
            cmd[1:3] = [str(plugins / f"{LAUNCHER}.py")]
        cmd += ["-p", SERVER_PLUGIN, *isolated_cache_args(base, scratch / "cache-w0", env), "-q",
                "--no-header", *PLAIN]
        return cmd, env

    async def _start_zygote(self, ctx: RoleContext, base: Path, cmd: list[str],
                            env: dict[str, str], report: MutationReport) -> Zygote | None:
        """The run's one warm pytest process (the whole suite collected), in
        the first copy; None when it did not start."""
        remaining = ctx.remaining()
        started = time.monotonic()
        zygote = await Zygote.start(cmd, base, env, min(remaining or 600.0, 600.0),
                                    ctx.runtime)
        self._zygote_s = time.monotonic() - started
        if zygote is None:
            report.fallbacks["the warm worker did not start"] += 1
        else:
            report.map_split.update(zygote.split)
        return zygote

    async def _workers(self, ctx: RoleContext, base: Path, pending: list[FileResult],
                       report: MutationReport, count: int, trace: bool = False) -> list[Worker]:
        """``count`` more workers, one scratch copy each (w1, w2, ...):
        forks of the zygote where it runs (those that did not start are left
        out), else fresh processes only. ``base`` (w0) is never written: the
        zygote and every worker import the code under test from it, also
        modules a test imports late, so a mutated file written there for a
        fresh run would reach them all."""
        which = range(self._copies, self._copies + max(0, count))
        self._copies = which.stop
        if not which:
            return []
        scratch = _scratch.copy_root(base, self._folder).parent
        await self._copies_for(base, scratch, which.stop - 1)
        copies = [scratch / f"w{i}" / self._folder if self._folder else scratch / f"w{i}"
                  for i in which]
        modules = {fr.rel: _scratch.module_name(fr.rel) for fr in pending}
        # Their fresh-process commands are made in one thread beside the
        # forks' start and line map, not before them: reading the project's
        # pytest configuration and looking up its plugins once per copy was
        # most of the wait between the warm pytest's start and the line map
        # on 16 cores. Every fresh run waits for them all, so no process
        # starts while the copies' shared sitecustomize is being written.
        fresh = asyncio.ensure_future(asyncio.to_thread(
            lambda: [self._fresh(ctx, copy, scratch / f"cache-w{i}")
                     for i, copy in zip(which, copies, strict=True)]))
        self._fresh_jobs.append(fresh)
        made = [Worker(ctx, copy, functools.partial(self._fresh_made, fresh, k), report, modules)
                for k, copy in enumerate(copies)]
        self._pool += made
        if self._zygote is None:
            return made
        channels = await self._zygote.spawn(copies, 60.0, trace=trace)
        for w, channel in zip(made, channels):
            w.attach(channel)
        if None in channels:
            report.fallbacks["the warm worker did not start"] += channels.count(None)
        return [w for w, channel in zip(made, channels) if channel is not None]

    async def _fresh_made(self, job: asyncio.Future[list[tuple[dict[str, str], list[str]]]],
                          k: int) -> tuple[dict[str, str], list[str]]:
        """The ``k``-th command of ``job``, once every such job is done: they
        rewrite the copies' shared sitecustomize, which a process starting
        meanwhile could read half written."""
        await asyncio.gather(*(asyncio.shield(j) for j in self._fresh_jobs),
                             return_exceptions=True)
        return job.result()[k]

    def _fresh(self, ctx: RoleContext, copy: Path, cache: Path) -> tuple[dict[str, str], list[str]]:
        """A worker's fresh-process environment and pytest command (made on
        its first fresh run: ``Worker``)."""
        assert self._py is not None
        env = self._env(ctx, copy)
        # pytest_argv sets the plugin environment in ``env`` as it goes.
        cmd = pytest_argv(self._py, ctx.config.roles.unit_test_command, env, copy)
        cmd += isolated_cache_args(copy, cache, env)
        if not ctx.config.roles.unit_test_command:
            cmd += PLAIN
        return env, cmd

    async def _changed_lines(self, ctx: RoleContext, rels: list[str]) -> dict[str, set[int]]:
        """Lines the working tree changed against HEAD (git), per file."""
        try:
            res = await ctx.run(["git", "diff", "-U0", "--no-color", "--no-ext-diff", "HEAD",
                                 "--", *rels], cwd=ctx.sandbox, timeout=30)
        except OSError:
            return {}
        return changed_lines(res.stdout) if res.returncode == 0 else {}

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

    def _env(self, ctx: RoleContext, copy: Path, extra: list[Path] | None = None) -> dict[str, str]:
        """A copy's environment: its sources ahead of the user's project and
        the sandbox (editable installs), SuperQode's coverage lent if needed."""
        return _scratch.python_env(
            ctx.env, copy, extra or [],
            pycache=_scratch.pycache_dir(_scratch.copy_root(copy, self._folder).parent),
            shadowed=[ctx.project, ctx.sandbox], tool_paths=self._tools,
        )


async def _close(workers: list[Worker]) -> None:
    await asyncio.shield(asyncio.gather(*(w.close() for w in workers)))
