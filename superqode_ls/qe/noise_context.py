"""The noise filter's context step (noise.py, step 2), one file at a time:
bounded by the session's budget, and done early for the findings of a role
that finishes while others still run."""

from __future__ import annotations

import threading
import time
from collections.abc import Callable, Iterable, Iterator
from typing import Protocol

from ..models import Finding
from .context import ParsedModules, apply_context
from .conventions import apply_conventions

LineReader = Callable[[str, int], "str | None"]


class FileReader(Protocol):
    """``read_line`` with the whole text of a file too (noise.FileLines)."""

    def __call__(self, rel: str, line: int) -> str | None: ...

    def lines(self, rel: str) -> list[str] | None: ...


# The tag of a finding whose context the filter did not check (out of time).
UNFILTERED = "unfiltered"


def unfiltered(f: Finding) -> Finding:
    """``f`` tagged UNFILTERED (itself when it already is): a copy with one
    field set, the way ``model_copy`` makes it (same fields, same fields set)
    without its generic steps -- thousands are tagged when a large run's
    filter is out of time."""
    if UNFILTERED in f.tags:
        return f
    return f.quick_copy({"tags": [*f.tags, UNFILTERED]})


def in_context(
    findings: list[Finding], read_line: LineReader, stop: Callable[[], bool] | None,
    early: EarlyContext | None = None, canonical: Callable[[str], str] = str.upper,
) -> tuple[list[Finding], int]:
    """Step 2, one file at a time (each check reads its finding's file only,
    and what the checks keep -- parsed modules, a Python 2 file's first syntax
    error -- is per file: the same results as one pass, in the same order),
    so a ``stop`` ends it between files. ``early``: results checked while the
    roles ran, taken where they still hold; ``canonical`` names a rule the
    same whichever tool reports it (noise.canonical_rule). Returns (findings, how many went
    unchecked)."""
    lines = getattr(read_line, "lines", None)
    by_file: dict[str | None, list[int]] = {}
    for i, f in enumerate(findings):
        by_file.setdefault(f.file, []).append(i)
    out: list[Finding | None] = [None] * len(findings)
    unchecked = 0
    for rel, at in by_file.items():
        hits = early.taken(rel, [findings[i] for i in at], lines) if early is not None else {}
        done = {at[n]: checked for n, checked in hits.items()}
        todo = [i for i in at if i not in done] if done else at
        for i, checked in done.items():
            out[i] = checked
        if not todo:
            continue
        group = [findings[i] for i in todo]
        if stop is not None and stop():
            unchecked += len(group)
            group = [unfiltered(f) for f in group]
        else:
            # one parse of the file for both steps' checks
            modules = ParsedModules(lines) if lines is not None else None
            group = apply_context(group, read_line=read_line, lines=lines, canonical=canonical,
                                  modules=modules)
            group = apply_conventions(group, lines, modules)
        for i, f in zip(todo, group, strict=True):
            out[i] = f
    return [f for f in out if f is not None], unchecked


def until_stop(stop: Callable[[], bool] | None, findings: list[Finding],
           step: Callable[[Iterable[Finding]], list[Finding]]) -> tuple[list[Finding], int]:
    """``step`` (one finding out for each in, in order; a finding already
    marked as noise passes it unchanged, so it is not given one) over
    ``findings`` until ``stop`` says so, asked at each change of file; the
    rest go on unchecked, tagged UNFILTERED, in their places. Returns
    (findings, how many were newly tagged)."""
    at = [n for n, f in enumerate(findings) if f.noise is None]
    reached = 0

    def feed() -> Iterator[Finding]:
        nonlocal reached
        last: object = None
        for f in (findings[n] for n in at):
            if stop is not None and f.file != last:
                last = f.file
                if stop():
                    return
            reached += 1
            yield f

    done = step(feed())
    if len(done) != reached:
        raise AssertionError("a noise step must return one finding for each it is given")
    out = list(findings)
    for n, f in zip(at, done):
        out[n] = f
    late = 0
    for n in at[reached:]:
        late += UNFILTERED not in out[n].tags
        out[n] = unfiltered(out[n])
    return out, late


class EarlyContext:
    """Step 2 for the findings of roles that finished while others still run
    (``check``, in a worker thread; the pipeline's filter then takes what holds
    instead of checking it again). Each check reads its finding's file only
    and keeps nothing across findings but per-file caches, except a Python 2
    file's syntax errors (judged together, so never checked early): a result
    holds while the finding is the very one checked and its file still reads
    the same. ``stop`` (or ``stop_at``, ``time.monotonic()``) ends the
    checking between files."""

    def __init__(self, read: FileReader, *, suppressed: Callable[[Finding, LineReader], bool],
                 canonical: Callable[[str], str], stop_at: float | None = None) -> None:
        self._read = read  # noise.FileLines: each file read once
        self._suppressed = suppressed
        self._canonical = canonical
        self.stop_at = stop_at
        self._lock = threading.Lock()
        self._checked: dict[int, tuple[Finding, Finding]] = {}  # id(finding) -> (it, checked)
        self._texts: dict[str | None, list[str] | None] = {}  # the text each file was checked on
        self.stop = threading.Event()

    def check(self, findings: list[Finding]) -> None:
        by_file: dict[str | None, list[Finding]] = {}
        for f in findings:
            if f.rule_id.upper() != "INVALID-SYNTAX" and not self._suppressed(f, self._read):
                by_file.setdefault(f.file, []).append(f)
        for rel, group in by_file.items():
            if self.stop.is_set() or (self.stop_at is not None and time.monotonic() >= self.stop_at):
                return
            text = self._read.lines(rel) if rel is not None else None
            checked, _ = in_context(group, self._read, None, canonical=self._canonical)
            with self._lock:
                self._texts[rel] = text
                self._checked.update((id(f), (f, c)) for f, c in zip(group, checked, strict=True))

    def taken(self, rel: str | None, group: list[Finding],
              lines: Callable[[str], list[str] | None] | None) -> dict[int, Finding]:
        """{index in ``group``: its early result} for those that hold."""
        with self._lock:
            if rel not in self._texts:
                return {}
            if rel is not None and (lines is None or lines(rel) != self._texts[rel]):
                return {}
            out = {}
            for n, f in enumerate(group):
                hit = self._checked.get(id(f))
                if hit is not None and hit[0] is f:
                    out[n] = hit[1]
            return out
