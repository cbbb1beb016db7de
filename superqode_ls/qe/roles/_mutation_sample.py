"""mutation_tester's sample: which mutants run when not all can.

A mutation score means something only for the code it was measured on, so
the unit of choice is a whole function (``_mutators.function_units``), and a
chosen function is judged on all its mutants: the riskiest functions first
(changed lines, then lines no asserting test covers), the files the caller
named in reading order, a whole project in a stable spread over it.
"""

from __future__ import annotations

import ast
import hashlib
import re
from dataclasses import dataclass
from pathlib import Path

from ...workspace.pyast import parse as parse_python
from ._mutation_cache import JUDGED, FileResult, MutationReport
from ._mutation_pool import Candidates
from ._mutation_runner import LineMap
from ._mutators import MODULE_UNIT, Mutant, function_units
from .base import RoleContext

Item = tuple[FileResult, Mutant, list[str]]  # a mutant to run, with the tests that cover its line

_ASSERTS = re.compile(r"assert|raises|warns|fail|expect|check|verify", re.IGNORECASE)
_HUNK = re.compile(r"^@@ -\S+ \+(\d+)(?:,(\d+))? @@")


def changed_lines(diff: str) -> dict[str, set[int]]:
    """The lines ``git diff -U0`` output adds or changes, per file: the
    riskiest lines, whose mutants run first."""
    out: dict[str, set[int]] = {}
    current: set[int] | None = None
    for line in diff.splitlines():
        if line.startswith("+++ "):
            path = line[4:]
            current = out.setdefault(path[2:], set()) if path.startswith("b/") else None
        elif current is not None and (m := _HUNK.match(line)):
            start, count = int(m.group(1)), int(m.group(2) or 1)
            current.update(range(start, start + count))
    return out


@dataclass
class Unit:
    """One function of one file (or the file's code outside functions) and
    its mutants, riskiest first."""

    fr: FileResult
    name: str
    mutants: list[Mutant]
    lines: dict[int, list[str]]
    rank: int  # 0 changed, 1 covered by no asserting test, 2 the rest


def _rank(m: Mutant, lines: dict[int, list[str]], changed: set[int],
          asserting: dict[str, bool]) -> int:
    if m.line in changed:
        return 0
    return 1 if not any(asserting.get(t, True) for t in lines[m.line]) else 2


def units(fr: FileResult, found: list[Mutant], names: dict[int, str],
           lines: dict[int, list[str]], changed: set[int],
           asserting: dict[str, bool]) -> list[Unit]:
    """``found`` grouped by function; within one, changed lines first, then
    lines no asserting test covers, then the rest, round-robin over lines (a
    function too big for the limit keeps every line's first mutant before
    any line's second)."""
    by_name: dict[str, list[tuple[tuple[int, int, int, int], Mutant]]] = {}
    depth: dict[int, int] = {}
    for m in found:
        d = depth[m.line] = depth.get(m.line, -1) + 1
        rank = _rank(m, lines, changed, asserting)
        by_name.setdefault(names.get(m.line, MODULE_UNIT), []).append(
            ((rank, d, m.line, m.col), m))
    return [Unit(fr, name, [m for _, m in sorted(keyed, key=lambda km: km[0])], lines,
                 min(k[0] for k, _ in keyed))
            for name, keyed in by_name.items()]


def _spread(u: Unit) -> str:
    # A stable order that is no order of the code: a sample over the whole
    # project, the same one on the next run (which the cache then answers).
    return hashlib.sha256(f"{u.fr.rel}\0{u.name}".encode("utf-8", "surrogateescape")).hexdigest()


def choose(units: list[Unit], limit: int, named_files: bool) -> list[tuple[Unit, int]]:
    """Whole functions, the riskiest first, while they fit in ``limit``
    mutants: (function, how many of its mutants). A function is judged on
    all its mutants, so a score says how well the functions sampled are
    tested; only the first, alone bigger than the limit, is cut. Functions
    of files the caller named (the editor's file, ``--since``) go in
    reading order; of a whole project, in a stable spread over it."""
    def order(u: Unit) -> tuple:
        where = (u.fr.rel, min(m.line for m in u.mutants)) if named_files else (_spread(u),)
        return (u.rank, *where)

    chosen: list[tuple[Unit, int]] = []
    left = limit
    for u in sorted(units, key=order):
        if left <= 0:
            break
        n = len(u.mutants)
        if n <= left or not chosen:
            chosen.append((u, min(n, left)))
            left -= min(n, left)
    return chosen


def asserting_tests(root: Path, linemap: LineMap) -> dict[str, bool]:
    """Test node id -> whether its function asserts anything (a test that only
    calls the code covers lines without checking them)."""
    files = {t.split("::")[0] for t in linemap.durations}
    names: dict[tuple[str, str], bool] = {}
    for rel in files:
        try:
            tree = parse_python((root / rel).read_text(encoding="utf-8"))
        except (OSError, SyntaxError, ValueError, UnicodeDecodeError):
            continue
        for node in ast.walk(tree):
            if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
                names[(rel, node.name)] = any(
                    isinstance(sub, ast.Assert)
                    or isinstance(sub, ast.Call) and _ASSERTS.search(ast.unparse(sub.func))
                    for sub in ast.walk(node)
                )
    out = {}
    for t in linemap.durations:
        func = t.split("::")[-1].split("[")[0]
        out[t] = names.get((t.split("::")[0], func), True)
    return out


def sample(results: list[FileResult], report: MutationReport) -> None:
    """What the score rests on: the functions with a judged mutant, and the
    mutants on covered lines the sample was drawn from."""
    functions: set[tuple[str, str]] = set()
    for fr in results:
        report.population += fr.total
        judged = [int(k.split(":", 1)[0]) for k, v in fr.results.items()
                  if v["status"] in JUDGED]
        if not judged:
            continue
        try:
            names = function_units(fr.text)
        except (SyntaxError, ValueError):
            names = {}
        functions.update((fr.rel, names.get(line, MODULE_UNIT)) for line in judged)
    report.functions = len(functions)


def plan(ctx: RoleContext, pending: list[FileResult], linemap: LineMap,
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
