"""The report of a run made of two engine sessions (a file run's whole-tree
roles after its sparse phase; the roles the trust answer let run): one report,
one verdict, each role once, where the run's first phase wrote it; the later
phase writes no report of its own (``part_of``), so nothing else in
``.superqode/qe-artifacts`` claims the run."""

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
    """The report of a run made of two engine sessions: every finding and
    patch of both, each role once (a role the first only listed as skipped,
    waiting for the trust answer, has the second's outcome), one verdict."""
    from ..engine import reports

    return reports.combine(first, second, cfg)


def rewrite_report(run: Run, report: QualityReport, artifacts: dict[str, str]) -> None:
    """The run's Quality Report (Markdown and JSON), rewritten where the first
    phase wrote it to hold both phases: what superqode.showReport opens for
    the run's id. The second phase's logs and patch files stay beside it; it
    wrote no report."""
    from ..engine import reports

    report.artifacts = {**report.artifacts, **artifacts}
    try:
        json_path, markdown = artifacts.get("json"), artifacts.get("markdown")
        reports.write(report, json_path=Path(json_path) if json_path else None,
                      markdown=Path(markdown) if markdown else None)
        if markdown:
            run.markdown = markdown
    except OSError as e:
        log.warning("could not write the combined report of %s: %s", run.id, e)
