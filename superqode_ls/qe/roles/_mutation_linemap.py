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
import json
from collections.abc import Callable
from pathlib import Path

from ...workspace.proc import ProcResult
from ._common import pytest_message
from ._mutation_cache import FileResult, MutationReport
from ._mutation_runner import LineMap, Worker
from .base import RoleContext

NO_TIME = "the project's tests did not finish within the time budget"
NO_PASS = "no test passes on the unchanged code, so no mutant can be judged"


async def trace_map(ctx: RoleContext, scratch: Path, workers: list[Worker],
                    pending: list[FileResult], report: MutationReport,
                    on_ready: Callable[[], None] = lambda: None) -> LineMap | str | None:
    """The line map from the warm workers: each starts (in parallel) and
    runs its share of the suite, by test file, once in a forked child
    that records which lines of the files under test each test ran.
    None when that cannot be done here (then the coverage run does it)."""
    rels = [fr.rel for fr in pending]
    remaining = ctx.remaining()
    limit = remaining if remaining is not None else 3600.0
    outs = [scratch / f"trace{i}.json" for i in range(len(workers))]
    first = asyncio.Event()
    starting = set(range(len(workers)))

    async def one(i: int, w: Worker) -> tuple[float | None, ProcResult | None]:
        try:
            if i:
                # The first worker compiles the copy's modules and tests into
                # the bytecode cache the others share (_scratch.share_pycache):
                # they start once it is ready, without compiling again.
                await first.wait()
                if workers[0].server is None:
                    return None, None  # the first did not start: nor would this one
            try:
                took = await w.warm_up()
            finally:
                first.set()
        finally:
            starting.discard(i)
            if not starting:
                on_ready()  # every worker is up (or failed): the rest is tracing
        if took is None:
            return None, None
        return took, await w.trace(rels, i, len(workers), outs[i], limit)

    done = await asyncio.gather(*(one(i, w) for i, w in enumerate(workers)))
    ready = [took for took, _ in done]
    runs = [run for _, run in done]
    if any(r is None for r in ready):
        report.line_map_fallback = "a warm worker did not start"
        return None
    if any(r is not None and r.timed_out for r in runs):
        return NO_TIME
    if any(r is None or r.returncode != 0 for r in runs):
        report.line_map_fallback = "a warm worker could not run its share of the tests"
        return None
    report.line_map = "warm workers"
    # The workers' start-up (pytest, imports, collection) is what a
    # fresh process pays before its tests: part of its time limit.
    return await asyncio.to_thread(read_traces, outs, max(r for r in ready if r is not None), report)

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
