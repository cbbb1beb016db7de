"""The report of a run made of two engine sessions (a file run's whole-tree
roles after its sparse phase; the roles the trust answer let run): one report,
one verdict, where the run's first phase wrote it."""

from __future__ import annotations

import logging
from pathlib import Path
from typing import TYPE_CHECKING

from ..models import QualityReport
from .registry import Run

if TYPE_CHECKING:
    from ..config import Config

log = logging.getLogger(__name__)


def combine(first: QualityReport, second: QualityReport, cfg: Config) -> QualityReport:
    """The report of a run made of two engine sessions on disjoint roles:
    every finding, role and patch of both, one verdict over all of them."""
    from ..models import summarize
    from ..qe.report import compute_verdict

    findings = [*first.findings, *second.findings]
    whole = first.model_copy(update={
        "findings": findings,
        "roles": [*first.roles, *second.roles],
        "patches": [*first.patches, *(p for p in second.patches
                                      if p.id not in {q.id for q in first.patches})],
        "summary": summarize(findings),
        "suppressed": first.suppressed + second.suppressed,
        "baseline_filtered": first.baseline_filtered + second.baseline_filtered,
        "stale": first.stale or second.stale,
        "cancelled": first.cancelled or second.cancelled,
        "timed_out": first.timed_out or second.timed_out,
        "finished_at": second.finished_at or first.finished_at,
        "duration_s": first.duration_s + second.duration_s,
        "verification": second.verification or first.verification,
    })
    whole.verdict = compute_verdict(whole, cfg.qe.fail_on, cfg.qe.never_fail)
    return whole


def rewrite_report(run: Run, report: QualityReport, artifacts: dict[str, str]) -> None:
    """The run's Quality Report (Markdown and JSON), rewritten where the first
    phase wrote it to hold both phases: what superqode.showReport opens for
    the run's id. The second phase's own files stay beside it."""
    from ..qe.report import render_markdown, write_json
    from ..workspace.artifacts import atomic_write

    report.artifacts = {**report.artifacts, **artifacts}
    try:
        if artifacts.get("json"):
            atomic_write(Path(artifacts["json"]), write_json(report))
        if artifacts.get("markdown"):
            atomic_write(Path(artifacts["markdown"]), render_markdown(report))
            run.markdown = artifacts["markdown"]
    except OSError as e:
        log.warning("could not write the combined report of %s: %s", run.id, e)
