"""Running mutants: one worker per scratch copy, a fork of the run's warm
pytest process (``_forkserver``, loaded into the project's own pytest
command; ``_mutation_spawn``), and a fresh pytest process in its copy for
what it cannot switch in place.

Time limits come from the covering tests' measured durations: a multiple of
them plus a small floor (and pytest's start-up for a fresh process). A
mutant that hits its limit runs once more with ``RETRY_FACTOR`` times the
limit before it counts as a hang: a loaded machine must not turn slow tests
into killed mutants.
"""

from __future__ import annotations

import asyncio
import itertools
import os
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Protocol

from ...workspace.proc import ProcResult
from ._mutation_cache import FileResult, MutationReport
from ._mutators import Edit, Mutant, apply_edit
from .base import RoleContext

SERVER_PLUGIN = "superqode_forkserver"
# What our own pytest commands add (never a configured one): a mutant's
# verdict is pass or fail, which pytest's assertion rewriting does not
# change; rewriting only makes failure messages. Compiling every test file
# through it was most of the warm pytest's start (toolz: 1.6-2.0 s of CPU
# collecting with it, 0.5-0.6 s without).
PLAIN = ["--assert=plain"]
# Floor of a mutant's time limit (seconds), on top of factor x its tests' time.
MIN_MUTANT_TIMEOUT_S = 1.0
RETRY_FACTOR = 4.0
MAX_NODE_IDS = 200


@dataclass
class LineMap:
    tests_by_line: dict[str, dict[int, list[str]]]  # rel -> line -> passing node ids
    durations: dict[str, float]
    startup_s: float


def time_limit(linemap: LineMap, tests: list[str], factor: float, fresh: bool,
               overhead: float = 0.0) -> float:
    """``overhead``: a forked run's measured cost beyond its tests' time (the
    fork, its copy-on-write faults, its exit): small on a quiet machine,
    seconds when many workers share few CPUs, where a limit without it
    would take slow tests for a hang."""
    expected = sum(linemap.durations.get(t, 0.0) for t in tests)
    if fresh:
        expected += linemap.startup_s
    return MIN_MUTANT_TIMEOUT_S + factor * (expected + overhead)


class Server(Protocol):
    """A warm worker's server: a forked ``_mutation_spawn.Channel``. ``run``
    returns a ProcResult, a reason (str) when the mutant must run fresh, or
    None when the server broke (then it is closed and not used again)."""

    ok: bool
    items: int

    async def run(self, request: dict[str, Any], timeout: float) -> ProcResult | str | None: ...

    async def close(self) -> None: ...


def status_of(res: ProcResult, warm: bool) -> str:
    """killed (a test failed), timeout (counted as killed: the mutant hung the
    tests), survived, error (the tests could not run at all)."""
    if res.timed_out:
        return "timeout"
    if res.returncode == 0:
        return "survived"
    if warm:
        # 1 a test failed, 2 pytest.exit or an interrupt from the mutant,
        # < 0 the mutant crashed the interpreter; 3 is the harness itself.
        return "error" if res.returncode == 3 else "killed"
    # 1 tests failed, 2 collection broke on the mutant; 3-5 pytest errors.
    return "killed" if res.returncode in (1, 2) else "error"


def same_lines(text: str, edit: Edit) -> str:
    """``text`` with ``edit`` applied, every line below it where it was: an
    edit that folds a span of lines into fewer (a call written over two lines
    replaced by ``None``) is followed by as many explicit line joins (a
    backslash at a line's end: the same code). Functions below it keep their
    first line numbers, which is how the warm worker matches them, so it
    switches the one mutated function in place instead of a fresh process
    running the mutant (on 16 cores such a run, 0.6-0.8 s, was the last
    worker's tail after the others had finished). What does not compile this
    way is run fresh, from the plain edit, as before."""
    mutated = apply_edit(text, edit)
    fewer = (edit.end_line - edit.line) - edit.text.count("\n")
    if fewer <= 0:
        return mutated
    lines = text.splitlines(keepends=True)
    head = "".join(lines[: edit.line - 1]) + lines[edit.line - 1][: edit.col]
    return head + edit.text + " \\\n" * fewer + mutated[len(head) + len(edit.text):]


def pytest_args(tests: list[str]) -> list[str]:
    selectors = tests if len(tests) <= MAX_NODE_IDS else sorted({t.split("::")[0] for t in tests})
    # (the cache plugin's switch is the worker's fresh_cmd's: the project's)
    return ["-x", "-q", "--no-header", *selectors]


class Worker:
    """One scratch copy: its warm server (started on first use) and the
    fresh-process path for what the server cannot switch."""

    _stamps = itertools.count(1)

    def __init__(self, ctx: RoleContext, copy: Path,
                 fresh: Callable[[], Awaitable[tuple[dict[str, str], list[str]]]],
                 report: MutationReport, modules: dict[str, str | None]):
        self.ctx, self.copy = ctx, copy
        # The fresh-process path's (environment, pytest command): made beside
        # the warm start (a forked worker seldom needs it), awaited on first use.
        self._fresh = fresh
        self.linemap: LineMap | None = None
        self.report, self.modules = report, modules
        self.factor = ctx.config.roles.mutation_timeout_factor
        self.server: Server | None = None  # its warm server (``attach``); None: fresh only
        self.trusted: dict[str, bool] = {}  # file -> the server passed its unmutated tests
        self.start_s: float | None = None  # its warm server's start, once started
        self.run_s: float | None = None  # a forked run's cost beyond its tests' time

    @property
    def known(self) -> LineMap:
        # Set before any mutant runs (the warm path maps lines in the workers).
        assert self.linemap is not None
        return self.linemap

    def limit(self, tests: list[str]) -> float:
        """The time a mutant may take on the path it will most likely run."""
        if self.server is None:
            return time_limit(self.known, tests, self.factor, True)
        return time_limit(self.known, tests, self.factor, False, self.run_s or 0.0)

    async def close(self) -> None:
        if self.server is not None:
            await self.server.close()

    def attach(self, server: Server | None) -> None:
        """A warm server started for it (a forked worker: ``start_s``, its
        fork's measured start, read from it)."""
        self.server = server
        self.start_s = getattr(server, "start_s", None)

    async def per_run_s(self, fr: FileResult, tests: list[str]) -> float | None:
        """What one forked run costs here beyond its tests' own time: from
        the run of ``fr``'s unmutated tests that trusting the server for it
        takes (done once, before its first mutant, in any case); None
        without a warm server for it."""
        if await self._server_for(fr, tests) is None:
            return None
        return self.run_s

    async def trace(self, rels: list[str], which: list[int], shards: int, out: Path,
                    timeout: float) -> ProcResult | None:
        """Run shards ``which`` of ``shards`` of the collected tests once in a
        forked child, writing to ``out`` which lines of ``rels`` each test
        ran; None when the server cannot."""
        if self.server is None or not self.server.ok:
            return None
        res = await self.server.run(
            {"trace": rels, "shard": [which, shards], "out": str(out)}, timeout)
        return res if isinstance(res, ProcResult) else None

    async def _server_for(self, fr: FileResult, tests: list[str]) -> Server | None:
        if self.server is None or not self.server.ok:
            return None
        if fr.rel not in self.trusted:
            # The warm worker must agree with a fresh process on the unmutated
            # code (these tests passed under coverage), or it is not used for it.
            # It judges the worker, not a mutant: the time a fresh process
            # would get, so that workers starting together on a loaded
            # machine are not taken for broken ones.
            limit = time_limit(self.known, tests, self.factor, True)
            res = await self.server.run(self._request(fr, None, tests), limit)
            self.trusted[fr.rel] = isinstance(res, ProcResult) and res.ok
            if isinstance(res, ProcResult) and self.run_s is None:
                expected = sum(self.known.durations.get(t, 0.0) for t in tests)
                self.run_s = max(0.0, res.duration_s - expected)
            if not self.trusted[fr.rel]:
                self.report.fallbacks["the unmutated tests did not pass in the warm worker"] += 1
        return self.server if self.trusted[fr.rel] else None

    def _request(self, fr: FileResult, source: str | None, tests: list[str]) -> dict[str, Any]:
        return {"file": fr.rel, "module": self.modules.get(fr.rel), "source": source,
                "tests": tests}

    async def run(self, fr: FileResult, m: Mutant, tests: list[str]) -> dict[str, Any]:
        res, warm = await self._once(fr, m, tests, 1.0)
        if res.timed_out:
            self.report.retried += 1
            res, warm = await self._once(fr, m, tests, RETRY_FACTOR)
        return {
            "status": status_of(res, warm),
            "tests": tests[:5],
            "ntests": len(tests),
            "duration": round(res.duration_s, 3),
        }

    async def _once(self, fr: FileResult, m: Mutant, tests: list[str],
                    stretch: float) -> tuple[ProcResult, bool]:
        mutated = apply_edit(fr.text, m.edit)
        server = await self._server_for(fr, tests)
        if server is not None:
            limit = stretch * time_limit(self.known, tests, self.factor, False,
                                         self.run_s or 0.0)
            res = await server.run(self._request(fr, same_lines(fr.text, m.edit), tests), limit)
            if isinstance(res, ProcResult):
                self.report.fork_runs += stretch == 1.0
                return res, True
            self.report.fallbacks[res or "the warm worker stopped answering"] += 1
        self.report.fresh_runs += stretch == 1.0
        limit = stretch * time_limit(self.known, tests, self.factor, True)
        target = self.copy / fr.rel
        env, cmd = await self._fresh()
        await asyncio.to_thread(self._write, target, mutated)
        try:
            res = await self.ctx.run([*cmd, *pytest_args(tests)], cwd=self.copy,
                                     env=env, timeout=limit)
        finally:
            await asyncio.shield(asyncio.to_thread(self._write, target, fr.text))
        return res, False

    def _write(self, target: Path, text: str) -> None:
        # Bytecode is cached (see _scratch.python_env) and a .pyc is trusted
        # while the source's mtime (whole seconds) and size match: two mutants
        # of equal size written within one second would share a stale .pyc.
        # A distinct mtime per write rules that out.
        target.write_text(text, encoding="utf-8")
        stamp = 1_000_000_000 + next(self._stamps)
        os.utime(target, (stamp, stamp))
