"""What the mutation tester keeps between runs and reports about one run.

A file's results are cached under a key of its content, the project modules
it imports, the tests and the mutator version. An entry is *complete* (every
mutant on a covered line has a result) or *capped* (the mutant limit chose
which ran; the same limit on the same content chooses the same ones, so a
re-run answers from the cache too); one cut short by time or cancel is
neither, and the next run does the rest.
"""

from __future__ import annotations

import json
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ...config import superqode_home
from ...workspace.artifacts import atomic_write
from . import _scratch
from ._imports import import_closure
from ._mutators import MUTATOR_VERSION, content_hash
from .base import RoleContext

# Verdicts that say something about the tests ("error": they could not run).
JUDGED = ("killed", "timeout", "survived")


def cache_dir() -> Path:
    # Not under $SUPERQODE_HOME/cache, which every session may write: a
    # session must not plant "killed" verdicts for a later session's mutants.
    return superqode_home() / "mutation-verdicts"


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
    total: int = 0  # mutants on covered lines
    capped: int | None = None  # the mutant limit that left some out
    stopped: str | None = None  # why the run did not get to all it planned

    @property
    def answered(self) -> bool:
        """Nothing left to run for this file under ``capped``'s limit."""
        return self.complete or self.capped is not None and self.stopped is None

    def progress(self) -> str:
        done = len(self.results)
        if self.complete:
            return "complete"
        why = self.stopped or (f"mutant limit {self.capped}" if self.capped else "partial")
        return f"{done} of {self.total or '?'} mutants ({why})"


@dataclass
class MutationReport:
    """What a run did, for the log, the role's reason line and bench/."""

    files: int = 0
    files_cached: int = 0
    mutants_run: int = 0
    mutants_cached: int = 0
    statuses: Counter = field(default_factory=Counter)
    equivalent: int = 0  # survivors marked likely equivalent (not reported)
    skipped: dict[str, int] = field(default_factory=dict)
    skipped_files: dict[str, str] = field(default_factory=dict)
    partial: dict[str, str] = field(default_factory=dict)  # file -> how far it got
    coverage_s: float = 0.0  # mapping tests to lines, whichever way
    line_map: str = ""  # "warm workers" or "coverage" (a separate pass of the suite)
    line_map_fallback: str | None = None  # why the warm workers did not map lines
    mutants_s: float = 0.0
    total_s: float = 0.0
    workers: int = 1
    workers_cap: int = 1  # the forced count or the CPUs: at most this many ran
    fork_runs: int = 0  # mutants switched in place in a warm worker
    fresh_runs: int = 0  # mutants run in a fresh pytest process
    fallbacks: Counter = field(default_factory=Counter)  # why a mutant ran fresh
    retried: int = 0  # timeouts run again with a longer limit
    baseline_failing: list[str] = field(default_factory=list)
    functions: int = 0  # functions with a judged mutant
    unsampled: int = 0  # files none of whose functions the mutant limit took
    population: int = 0  # mutants on covered lines of the files looked at
    # Wall seconds (and CPU seconds, where the role was given a CPU clock:
    # bench/) per phase of the run, in order: where a run's time goes.
    phases: dict[str, tuple[float, float | None]] = field(default_factory=dict)
    # Wall seconds within the line map: the warm pytest's start (python and
    # pytest's import, then the suite's collection) and the slowest trace
    # child's steps (the tracer's start, the tests, reading its lines out).
    map_split: dict[str, float] = field(default_factory=dict)
    # The measured costs the worker count rests on (_mutation_pool): a
    # worker's start and a mutant run's cost beyond its tests' time.
    start_s: float = 0.0
    run_s: float = 0.0

    def score(self) -> str | None:
        """``score 71% of 48 mutants in 6 functions (sample of 672)``: the
        share of judged mutants the tests killed, with what it rests on."""
        judged = sum(self.statuses[s] for s in JUDGED)
        if not judged:
            return None
        killed = judged - self.statuses["survived"]
        of = (f"sample of {self.population}" if self.population > judged
              else "every mutant on covered lines")
        return (f"score {100 * killed / judged:.0f}% of {judged} mutant(s) in "
                f"{self.functions} function(s) ({of})")

    @property
    def mutants_per_s(self) -> float:
        return self.mutants_run / self.mutants_s if self.mutants_s > 0 else 0.0

    def skip(self, why: str, n: int = 1) -> None:
        self.skipped[why] = self.skipped.get(why, 0) + n

    def summary(self) -> str:
        done = sum(self.statuses.values())
        parts = [f"{done} mutant(s) in {self.files} file(s)"]
        score = self.score()
        if score:
            parts.insert(0, score)
        if done:
            parts.append(", ".join(f"{n} {s}" for s, n in sorted(self.statuses.items())))
        if self.equivalent:
            parts.append(f"{self.equivalent} survivor(s) likely equivalent, not reported")
        if self.mutants_cached:
            parts.append(f"{self.mutants_cached} from cache")
        skipped = [f"{n} {why}" for why, n in sorted(self.skipped.items())]
        if self.skipped_files:
            skipped.append(
                f"{len(self.skipped_files)} file(s) without covering tests or unparsable"
            )
        if skipped:
            parts.append("skipped: " + "; ".join(skipped))
        if self.partial:
            parts.append("partial: " + "; ".join(f"{f} {p}" for f, p in sorted(self.partial.items())))
        if self.unsampled:
            parts.append(f"{self.unsampled} file(s) with no function in the sample")
        return "; ".join(parts)


def load(fr: FileResult, limit: int) -> None:
    try:
        data = json.loads((cache_dir() / f"{fr.key}.json").read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return
    if data.get("version") != MUTATOR_VERSION or not isinstance(data.get("results"), dict):
        return
    fr.results = data["results"]
    fr.complete = bool(data.get("complete"))
    fr.total = int(data.get("total") or 0)
    capped = data.get("capped")
    # A capped entry answers only for the limit it was capped at.
    fr.capped = capped if capped == limit else None
    fr.from_cache = fr.answered
    fr.skip_reason = data.get("skipped")


def save(fr: FileResult) -> None:
    # An "error" result says nothing about the tests; run it again next time.
    results = {k: v for k, v in fr.results.items() if v["status"] != "error"}
    clean = len(results) == len(fr.results)
    data = {
        "version": MUTATOR_VERSION,
        "file": fr.rel,
        "complete": fr.complete and clean,
        "capped": fr.capped if clean and fr.stopped is None else None,
        "total": fr.total,
        "skipped": fr.skip_reason,
        "results": results,
    }
    try:
        atomic_write(cache_dir() / f"{fr.key}.json", json.dumps(data, indent=1))
    except OSError:
        pass


def _utf8(raw: bytes | None) -> str | None:
    try:
        return raw.decode("utf-8") if raw is not None else None
    except UnicodeDecodeError:
        return None


def collect(ctx: RoleContext, report: MutationReport, use_cache: bool) -> list[FileResult] | str:
    """The files to mutate, each with its cache key and any cached results
    (``use_cache``); or why there is nothing to mutate."""
    files = _scratch.python_files(ctx.sandbox)
    test_files = [f for f in files if _scratch.is_test_file(f)]
    if not any(f.rsplit("/", 1)[-1] != "conftest.py" for f in test_files):
        return "no Python tests to judge mutants with"
    targets = [f for f in files if _scratch.is_source_file(f)]
    if ctx.files is not None:
        wanted = set(ctx.files)
        targets = [f for f in targets if f in wanted]
    if ctx.targets is not None:  # --shard: this run's share of the files
        targets = [f for f in targets if ctx.targets(f)]
    if not targets:
        return "no Python source files to mutate"

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
        if use_cache:
            load(fr, ctx.config.roles.mutation_max_mutants)
        results.append(fr)
    return results
