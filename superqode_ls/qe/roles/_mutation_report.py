"""The mutation tester's output: a finding per line with surviving mutants
(likely equivalent ones are logged, not reported), their diffs, the log."""

from __future__ import annotations

import difflib
from collections import Counter

from ...models import Evidence, Finding, Range, Severity
from ._mutation_cache import FileResult, MutationReport
from ._mutators import KINDS, Mutant, apply_edit, find_mutants, mutated_line
from .base import RoleContext

ROLE = "mutation_tester"
TOOL = "superqode-mutation"


def findings(ctx: RoleContext, results: list[FileResult], report: MutationReport) -> list[Finding]:
    findings: list[Finding] = []
    for fr in results:
        survived = {k for k, v in fr.results.items() if v["status"] == "survived"}
        if not survived:
            continue
        by_line: dict[int, list[Mutant]] = {}
        lines = {int(k.split(":", 1)[0]) for k in survived}
        for m in find_mutants(fr.text, fr.rel, lines, validate=False):
            if m.key not in survived:
                continue
            if m.equivalent:
                report.equivalent += 1
                fr.results[m.key]["equivalent"] = m.equivalent
                continue
            by_line.setdefault(m.line, []).append(m)
        src_lines = fr.text.splitlines()
        for line, ms in sorted(by_line.items()):
            findings.append(_finding(ctx, fr, line, ms, src_lines[line - 1]))
    return findings


def _finding(
    ctx: RoleContext, fr: FileResult, line: int, ms: list[Mutant], original: str
) -> Finding:
    ms = sorted(ms, key=lambda m: (-KINDS[m.kind][1], m.col))
    first = ms[0]
    severity, confidence = KINDS[first.kind]
    info = fr.results[first.key]
    more = f" (and {len(ms) - 1} more mutant(s) on this line)" if len(ms) > 1 else ""
    covering = ", ".join(info.get("tests", [])[:3])
    extra = info.get("ntests", 0) - 3
    if extra > 0:
        covering += f" and {extra} more"
    evidence = [
        Evidence(
            message=f"mutant: {m.description}; {fr.results[m.key]['ntests']} covering test(s) still pass",
            file=fr.rel,
            line=m.line,
            snippet=mutated_line(fr.text, m),
        )
        for m in ms
    ]
    diff = "".join(
        "".join(
            difflib.unified_diff(
                fr.text.splitlines(keepends=True),
                apply_edit(fr.text, m.edit).splitlines(keepends=True),
                fromfile=f"a/{fr.rel}",
                tofile=f"b/{fr.rel}",
                n=2,
            )
        )
        for m in ms
    )
    try:
        # The repository's path: in a monorepo two projects may both have a ``core.py``.
        where = f"{ctx.folder}/{fr.rel}" if ctx.folder else fr.rel
        ctx.artifacts.write_evidence(f"mutant-{where}-L{line}.diff", diff)
    except OSError:
        pass
    return Finding(
        role=ROLE,
        tool=TOOL,
        rule_id="mutation-survived",
        title=f"Tests do not notice when {first.description}",
        message=(
            f"Tests do not notice when {first.description} at line {line}{more}: "
            f"every test covering this line still passes ({covering}). "
            "Add an assertion that tells the two versions apart."
        ),
        severity=Severity(severity),
        confidence=confidence,
        category="test-quality",
        file=fr.rel,
        range=Range(start_line=line, start_col=first.col + 1),
        evidence=evidence,
        tags=["mutation", *sorted({m.kind for m in ms})],
        snippet=original.strip(),
    ).with_stable_id()


def write_log(ctx: RoleContext, results: list[FileResult], report: MutationReport) -> None:
    lines = [
        f"mutation_tester: {report.summary()}",
        (
            f"workers: {report.workers}"
            + (f" of at most {report.workers_cap} (the rest would not repay their start: "
               f"{report.start_s:.2f}s a worker, {report.run_s:.3f}s a run beyond its tests)"
               if report.workers < report.workers_cap else "")
            + "; tests mapped to lines by "
            f"{report.line_map or 'nothing (all cached)'} in {report.coverage_s:.1f}s"
            + (f" (warm workers could not: {report.line_map_fallback})"
               if report.line_map_fallback else "") + "; "
            f"{report.mutants_run} mutant run(s) in {report.mutants_s:.1f}s "
            f"({report.mutants_per_s:.2f}/s); total {report.total_s:.1f}s"
        ),
        (
            f"mutants switched in a warm worker: {report.fork_runs}; run in a fresh "
            f"process: {report.fresh_runs}; timeouts retried: {report.retried}"
        ),
    ]
    lines += [f"  ran fresh ({n}): {why}" for why, n in report.fallbacks.most_common()]
    if report.baseline_failing:
        lines.append(
            f"tests failing on the unchanged code (not used to judge mutants): "
            f"{len(report.baseline_failing)}"
        )
        lines += [f"  {t}" for t in report.baseline_failing[:50]]
    for rel, why in sorted(report.skipped_files.items()):
        lines.append(f"skipped file {rel}: {why}")
    for why, n in sorted(report.skipped.items()):
        lines.append(f"skipped {n} mutant(s): {why}")
    for fr in results:
        counts = Counter(v["status"] for v in fr.results.values())
        state = fr.progress() + (", from cache" if fr.from_cache else "")
        lines.append(f"{fr.rel}: {dict(sorted(counts.items()))} ({state})")
        for key, v in sorted(fr.results.items()):
            eq = f" (likely equivalent: {v['equivalent']})" if v.get("equivalent") else ""
            lines.append(f"  {key}: {v['status']}{eq}")
    try:
        # One log per project of a monorepo (each project's run is its own).
        name = f"mutation-{ctx.project_tag}" if ctx.project_tag else "mutation"
        ctx.artifacts.write_log(name, "\n".join(lines) + "\n")
    except OSError:
        pass

