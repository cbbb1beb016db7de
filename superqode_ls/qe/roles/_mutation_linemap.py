"""mutation_tester's line map: which passing tests run which lines of the
files under test, with every test's duration and outcome.

Normally the warm workers make it (``trace_map``): before any mutant each
runs its share of the suite once in a forked child that traces the files
under test, so no separate pass of the suite (and no second start-up,
import and collection of it) comes before the first mutant. Otherwise one
run of the suite under ``coverage`` with a context per test
(``read_coverage`` reads it).
"""

from __future__ import annotations

import asyncio
import contextlib
import json
from collections.abc import Awaitable, Callable
from pathlib import Path

from ...workspace.proc import ProcResult
from ._common import pytest_message
from ._mutation_cache import FileResult, MutationReport
from ._mutation_pool import workers_that_pay
from ._mutation_runner import LineMap, Worker
from .base import RoleContext

NO_TIME = "the project's tests did not finish within the time budget"
NO_PASS = "no test passes on the unchanged code, so no mutant can be judged"


async def trace_map(ctx: RoleContext, scratch: Path, first: Worker,
                    spawn: Callable[[int], Awaitable[list[Worker]]], cap: int, most: int,
                    every: bool,
                    pending: list[FileResult], report: MutationReport,
                    on_ready: Callable[[], None] = lambda: None,
                    ) -> tuple[LineMap | str | None, list[Worker]]:
    """The line map from the warm workers, and the workers that started.

    The first starts (it compiles the copy's bytecode, which later workers
    share) and traces one of ``cap`` shards of the suite (whole test files)
    in a forked child that records which lines of the files under test each
    test ran; a second starts meanwhile (where ``most``, the workers that
    may run at once, allows) (``spawn(k)`` makes ``k`` more), so
    a worker's start without the compiling is measured. The rest of the
    suite goes to as many workers as its tests' time, judged by the first
    shard's, repays that start (``every``: all ``cap``, for tests): a small
    suite is mapped by the first two whatever the count, a large one is
    split wider. None for the map when that cannot be done here (then the
    coverage run does it)."""
    rels = [fr.rel for fr in pending]
    remaining = ctx.remaining()
    limit = remaining if remaining is not None else 3600.0
    workers = [first]
    took = await first.warm_up()
    on_ready()
    if took is None:
        report.line_map_fallback = "a warm worker did not start"
        return None, workers
    shards = max(1, cap)
    rest = list(range(1, shards))
    second = asyncio.create_task(_second(spawn)) if rest and most > 1 else None
    out = scratch / "trace0.json"
    try:
        traces = [(out, await first.trace(rels, [0], shards, out, limit))]
        pair = await second if second is not None else None
    except BaseException:
        if second is not None:  # its worker, if made, is closed by the caller
            second.cancel()
            with contextlib.suppress(BaseException):
                await second
        raise
    ready = [took]
    if pair is not None and pair[1] is not None:
        workers.append(pair[0])
        report.start_s = pair[1]
    if rest and _ok(traces[0][1]):
        per_shard = await asyncio.to_thread(_rest_s, out, first.collected, len(rest))
        m = (min(cap, len(rest) + 1) if every
             else workers_that_pay(most, [per_shard] * len(rest), report.start_s or took))
        workers += await spawn(m - len(workers)) if m > len(workers) else []
        # The first, which has traced already, takes the smallest group.
        groups = [rest[i::len(workers)] for i in range(len(workers))]
        groups = groups[-1:] + groups[:-1]

        async def share(i: int, w: Worker) -> tuple[float | None, Path, ProcResult | None]:
            out = scratch / f"trace{1 + i}.json"
            started = await w.warm_up() if i else took
            if started is None or not groups[i]:
                return started, out, None
            return started, out, await w.trace(rels, groups[i], shards, out, limit)

        done = await asyncio.gather(*(share(i, w) for i, w in enumerate(workers)))
        for (started, out, run), group in zip(done, groups):
            if started is not None and group:
                ready.append(started)
                traces.append((out, run))
        # A worker that did not start leaves its shards to the first.
        orphans = [k for (started, _, _), group in zip(done, groups) for k in group
                   if started is None]
        if orphans:
            out = scratch / "trace-rest.json"
            traces.append((out, await first.trace(rels, orphans, shards, out, limit)))
        workers = [w for w, (started, _, _) in zip(workers, done) if started is not None]
    runs = [run for _, run in traces]
    if any(r is not None and r.timed_out for r in runs):
        return NO_TIME, workers
    if not all(_ok(r) for r in runs):
        report.line_map_fallback = "a warm worker could not run its share of the tests"
        return None, workers
    report.line_map = "warm workers"
    # The workers' start-up (pytest, imports, collection) is what a
    # fresh process pays before its tests: part of its time limit.
    return await asyncio.to_thread(read_traces, [o for o, _ in traces], max(ready),
                                   report), workers


def _ok(run: ProcResult | None) -> bool:
    return run is not None and run.returncode == 0


async def _second(spawn: Callable[[int], Awaitable[list[Worker]]]
                  ) -> tuple[Worker, float | None] | None:
    started = await spawn(1)
    return (started[0], await started[0].warm_up()) if started else None


def _rest_s(out: Path, collected: int, shards: int) -> float:
    """Each of the other ``shards``' expected seconds: the tests the first
    shard did not run at its tests' mean time (0 if its output cannot be
    read: then nothing argues for more workers). The first shard holds the
    biggest test file, so its count, not its total, is what carries over."""
    try:
        tests = json.loads(out.read_text(encoding="utf-8"))["tests"]
        mean = sum(float(t["duration"]) for t in tests.values()) / max(1, len(tests))
    except (OSError, ValueError, KeyError, TypeError, AttributeError):
        return 0.0
    return max(0, collected - len(tests)) * mean / max(1, shards)


def read_traces(outs: list[Path], startup: float, report: MutationReport) -> LineMap | str | None:
    tests: dict[str, dict] = {}
    try:
        for out in outs:
            tests.update(json.loads(out.read_text(encoding="utf-8"))["tests"])
    except (OSError, ValueError, KeyError, TypeError):
        report.line_map_fallback = "a warm worker's line map could not be read"
        return None
    if not any(t["passed"] for t in tests.values()):
        return NO_PASS
    report.baseline_failing = sorted(t for t, v in tests.items() if not v["passed"])
    by_line: dict[str, dict[int, list[str]]] = {}
    for nodeid in sorted(tests):
        t = tests[nodeid]
        if t["passed"]:
            for rel, lines in t["lines"].items():
                per = by_line.setdefault(rel, {})
                for line in lines:
                    per.setdefault(line, []).append(nodeid)
    durations = {t: v["duration"] for t, v in tests.items()}
    return LineMap(by_line, durations, max(0.5, startup))


def read_coverage(res: ProcResult, base: Path, data_file: Path, out_file: Path,
                  report: MutationReport) -> LineMap | str:
    try:
        info = json.loads(out_file.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return ("could not run the project's tests under coverage: "
                + pytest_message(res.stdout + "\n" + res.stderr))
    tests = info["tests"]
    passing = {t for t, v in tests.items() if v["passed"]}
    report.baseline_failing = sorted(t for t, v in tests.items() if not v["passed"])
    if not passing:
        return NO_PASS

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
