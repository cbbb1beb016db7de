"""Quality Reports for the front ends: the terminal's display and summary,
SARIF, the verdict's rules, shard merging, and writing a report again."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from ..config import Config
    from ..models import QualityReport, RoleRun, Usage

__all__ = [
    "agent_call_line", "combine", "did_not_work", "display", "fails",
    "merge", "sarif", "summary_lines", "unfinished", "usage_line", "write",
]


def __getattr__(name: str) -> Any:
    if name == "DEFAULT_NEVER_FAIL":  # the rule ids that never fail a run by default
        from ..qe.report.verdict import DEFAULT_NEVER_FAIL

        return DEFAULT_NEVER_FAIL
    raise AttributeError(name)


def display(*, jsonl: bool) -> Any:
    """The terminal's event display (JSON lines, plain or rich)."""
    from ..qe.display import make_display

    return make_display(jsonl=jsonl)


def summary_lines(report: QualityReport, *, show_noise: bool = False) -> list[str]:
    """The lines ``superqe run`` ends with."""
    from ..qe.display import summary_lines as _lines

    return _lines(report, show_noise=show_noise)


def usage_line(usage: Usage | None) -> str | None:
    """An agent run's tokens and cost in one line (None without usage)."""
    from ..qe.display import usage_line as _line

    return _line(usage)


def agent_call_line(data: dict) -> str:
    """One agent tool call (an event's data) in one line."""
    from ..qe.display import agent_call_line as _line

    return _line(data)


def did_not_work(run: RoleRun) -> bool:
    """The role was asked for and did not do its work (error, timeout, skipped)."""
    from ..qe.report.verdict import did_not_work as _dnw

    return _dnw(run)


def unfinished(run: RoleRun) -> bool:
    """The role's silence is no evidence (it keeps the verdict from ``pass``)."""
    from ..qe.report.verdict import unfinished as _unfinished

    return _unfinished(run)


def fails(findings: list, fail_on: Any, never_fail: Any) -> bool:
    """The verdict's rule: whether these findings fail the run."""
    from ..qe.report.verdict import fails as _fails

    return _fails(findings, fail_on, never_fail)


def sarif(report: QualityReport) -> dict[str, Any]:
    """The report as SARIF 2.1.0."""
    from ..qe.report import to_sarif

    return to_sarif(report)


def merge(paths: list[Path], fail_on: str) -> QualityReport:
    """One report from the shard reports at ``paths`` (all shards of one
    run, each once); UsageError/ConfigError when they do not fit together."""
    from ..qe.merge import load_reports, merge_reports
    from ..qe.report.verdict import DEFAULT_NEVER_FAIL

    return merge_reports(load_reports(paths), fail_on, DEFAULT_NEVER_FAIL)


def write(report: QualityReport, *, json_path: Path | None = None,
          markdown: Path | None = None, sarif_path: Path | None = None) -> None:
    """Write the report as JSON, Markdown and/or SARIF (each whole or not at all)."""
    import json

    from ..qe.report import render_markdown, to_sarif, write_json
    from ..workspace.artifacts import atomic_write

    if json_path is not None:
        atomic_write(json_path, write_json(report))
    if markdown is not None:
        atomic_write(markdown, render_markdown(report))
    if sarif_path is not None:
        atomic_write(sarif_path, json.dumps(to_sarif(report), indent=2) + "\n")


def combine(first: QualityReport, second: QualityReport, cfg: Config) -> QualityReport:
    """The report of a run made of two engine sessions: every finding, role
    (once, its final outcome) and patch of both, one verdict over all of them."""
    from ..qe.report.phases import combine_phases

    return combine_phases(first, second, cfg.qe.fail_on, cfg.qe.never_fail)
