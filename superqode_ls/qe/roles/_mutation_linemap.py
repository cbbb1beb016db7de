"""mutation_tester's line map: which passing tests run which lines of the
files under test, with every test's duration and outcome.

Normally the warm workers make it (``trace_map``): before any mutant each
runs its share of the suite once in a forked child that traces the files
under test, so no separate pass of the suite (and no second start-up,
import and collection of it) comes before the first mutant; the workers
are forks of one pytest process (``_mutation_spawn``), so the suite is
split over all of them from the start. Otherwise one
run of the suite under ``coverage`` with a context per test
(``read_coverage`` reads it).
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import Callable
from pathlib import Path

from ...workspace.proc import ProcResult
from ...workspace.pyenv import ProjectPython
from ._common import pytest_message
from ._mutation_cache import FileResult, MutationReport
from ._mutation_runner import PLAIN, LineMap, Worker
from ._pyenv import pytest_argv
from ._pytest_config import isolated_cache_args
from ._pytest_plugins import LINEMAP_PLUGIN, write_plugin
from .base import RoleContext

EnvFor = Callable[[Path, list[Path]], dict[str, str]]

NO_TIME = "the project's tests did not finish within the time budget"
NO_PASS = "no test passes on the unchanged code, so no mutant can be judged"


async def trace_map(scratch: Path, workers: list[Worker], startup: float, timeout: float,
                    pending: list[FileResult], report: MutationReport) -> LineMap | str | None:
    """The line map from the warm workers: each runs its share (whole test
    files) of the suite once in a forked child that records which lines of
    the files under test each test ran, all at once. ``startup``: the first
    warm server's start (pytest, imports, collection), which a fresh
    process pays before its tests. None when that cannot be done here
    (then the coverage run does it)."""
    rels = [fr.rel for fr in pending]
    outs = [scratch / f"trace{i}.json" for i in range(len(workers))]
    runs = await asyncio.gather(*(
        w.trace(rels, [i], len(workers), out, timeout)
        for i, (w, out) in enumerate(zip(workers, outs))))
    if any(r is not None and r.timed_out for r in runs):
        return NO_TIME
    if not runs or not all(r is not None and r.returncode == 0 for r in runs):
        report.line_map_fallback = "a warm worker could not run its share of the tests"
        return None
    report.line_map = "warm workers"
    return await asyncio.to_thread(read_traces, outs, startup, report)


def read_traces(outs: list[Path], startup: float, report: MutationReport) -> LineMap | str | None:
    tests: dict[str, dict] = {}
    try:
        for out in outs:
            got = json.loads(out.read_text(encoding="utf-8"))
            tests.update(got["tests"])
            _split(got.get("times"), report)
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


def _split(times: dict | None, report: MutationReport) -> None:
    """The slowest trace child's steps (bench/: where the map's time goes)."""
    if not isinstance(times, dict):
        return
    steps = (("trace: tracer start", "started", "tests"), ("trace: tests", "tests", "ran"),
             ("trace: lines out", "ran", "written"))
    for name, a, b in steps:
        if isinstance(times.get(a), float) and isinstance(times.get(b), float):
            report.map_split[name] = max(report.map_split.get(name, 0.0), times[b] - times[a])


def _rc(path: Path) -> str:
    return str(path).replace("$", "$$")


async def coverage_map(ctx: RoleContext, py: ProjectPython, scratch: Path, base: Path,
                       env_for: EnvFor, report: MutationReport) -> LineMap | str:
    """One run of the project's pytest (its plugins, never SuperQode's) under
    coverage in ``base``, one coverage context per test; ``env_for(copy,
    extra sys.path)`` is a copy's environment."""
    data_file = scratch / "coverage.data"
    out_file = scratch / "linemap.json"

    def prepare() -> tuple[str, dict[str, str]]:
        plugin_dir = scratch / "plugins"
        plugin = write_plugin(plugin_dir, "superqode_linemap", LINEMAP_PLUGIN)
        (scratch / "coveragerc").write_text(
            # coverage expands $VAR in its config: a literal $ is written $$.
            f"[run]\ndata_file = {_rc(data_file)}\nsource = {_rc(base)}\nbranch = false\n",
            encoding="utf-8",
        )
        env = env_for(base, [plugin_dir])
        env["SUPERQODE_LINEMAP_OUT"] = str(out_file)
        return plugin, env

    plugin, env = await asyncio.to_thread(prepare)
    argv = pytest_argv(py, None, env, base)
    cmd = [argv[0], "-m", "coverage", "run", f"--rcfile={scratch / 'coveragerc'}", "-m",
           "pytest", *argv[3:], "-p", plugin,
           *isolated_cache_args(base, scratch / "cache-map", env), "-q", "--no-header", *PLAIN]
    res = await ctx.run(cmd, cwd=base, env=env)
    if res.timed_out:
        return NO_TIME
    # Reading coverage's SQLite data is a few hundred syscalls: off the loop.
    return await asyncio.to_thread(read_coverage, res, base, data_file, out_file, report)


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
