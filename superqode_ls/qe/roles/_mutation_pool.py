"""How many mutation workers pay, and the work done while the first starts.

A worker costs a fixed start before its first mutant: a fork of the run's
warm pytest process (``_mutation_spawn``) and one run of its first file's
unmutated tests, which trusting it for that file takes. A further worker
repays that only when its share of the mutants takes longer than its start:
on a small module the whole run is seconds; that a machine has 16 cores
says nothing about whether 16 workers pay. So the count (``execution.workers``
or the CPUs) is a cap, and the role uses as many workers as the measured
costs pay for (``workers_that_pay``): a worker's measured start, and per
mutant its covering tests' traced durations plus the measured cost of one
forked run around them.

``Candidates`` finds every file's mutants and compiles them in a thread
while the first worker starts and maps lines: that work no longer waits for
the line map (on a 16-core machine it was a tenth of a small run), and it
stops as soon as the map is there, so a large project whose mutant limit
takes only a few of its candidates pays at most the map's time for it.
"""

from __future__ import annotations

import threading

from ._mutation_cache import FileResult
from ._mutation_runner import LineMap
from ._mutators import Mutant, compiles, find_mutants, function_units


def workers_that_pay(cap: int, costs: list[float], start_s: float) -> int:
    """Workers for mutants costing ``costs`` seconds each (in order), when a
    worker beyond the first takes ``start_s`` to start: the most, up to
    ``cap`` and one per mutant, whose every added worker gets at least its
    own start's worth of the mutants. The first works while the others
    start, so ``n`` workers end after about ``start_s + (W - start_s) / n``
    for ``W = sum(costs)``; each further one's start is CPU spent for a
    gain smaller than that start."""
    if cap <= 1 or len(costs) <= 1:
        return 1
    work = sum(costs)
    if start_s <= 0:
        return min(cap, len(costs))
    return max(1, min(cap, len(costs), int(work // start_s)))


def mutant_costs(items: list[tuple[FileResult, Mutant, list[str]]], linemap: LineMap,
                 per_run_s: float) -> list[float]:
    """Each planned mutant's expected seconds in a warm worker: its covering
    tests' durations and the cost of one forked run around them."""
    return [per_run_s + sum(linemap.durations.get(t, 0.0) for t in tests)
            for _, _, tests in items]


class Candidates:
    """Every mutant of each file (on any line) and whether it compiles,
    worked out in a thread (``start``) until ``stop``; what the thread did
    not reach is worked out when asked. The answers are the same either way:
    a file's mutants on some lines are its mutants on all lines, filtered."""

    def __init__(self, files: list[FileResult]):
        self._files = files
        self._found: dict[str, list[Mutant] | Exception] = {}
        self._units: dict[str, dict[int, str]] = {}
        self._compiles: dict[tuple[str, str], bool] = {}
        self._lock = threading.Lock()
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None

    def start(self) -> None:
        self._thread = threading.Thread(target=self._work, name="mutation-candidates",
                                        daemon=True)
        self._thread.start()

    def stop(self) -> None:
        """Stop the thread and wait for it (it stops between two compiles)."""
        self._stop.set()
        if self._thread is not None:
            self._thread.join()

    def _work(self) -> None:
        for fr in self._files:
            if self._stop.is_set():
                return
            found = self.found(fr)
            if isinstance(found, Exception):
                continue
            for m in found:
                if self._stop.is_set():
                    return
                self.compiles(fr, m)

    def found(self, fr: FileResult) -> list[Mutant] | Exception:
        """The file's mutants on every line, or why it has none (it does not
        parse)."""
        with self._lock:
            if fr.rel not in self._found:
                try:
                    self._found[fr.rel] = find_mutants(fr.text, fr.rel, None, validate=False)
                    self._units[fr.rel] = function_units(fr.text)
                except (SyntaxError, ValueError) as e:
                    self._found[fr.rel] = e
            return self._found[fr.rel]

    def on_lines(self, fr: FileResult, lines: set[int]) -> tuple[list[Mutant], dict[int, str]]:
        """The file's mutants starting on ``lines`` and its functions by line
        (``find_mutants(text, rel, lines)`` and ``function_units(text)``);
        raises what parsing the file raised."""
        found = self.found(fr)
        if isinstance(found, Exception):
            raise found
        return [m for m in found if m.line in lines], self._units[fr.rel]

    def compiles(self, fr: FileResult, m: Mutant) -> bool:
        key = (fr.rel, m.key)
        ok = self._compiles.get(key)
        if ok is None:
            ok = self._compiles[key] = compiles(fr.text, m)
        return ok
