"""server/run_report.py: a run made of two engine sessions gets one report
with one verdict over both, rewritten where the first phase wrote it."""

from __future__ import annotations

import json
from datetime import UTC, datetime

from superqode_ls.config import Config
from superqode_ls.models import Patch, QualityReport, RoleRun, Severity
from superqode_ls.server.registry import Run
from superqode_ls.server.run_report import combine, rewrite_report
from tests.server.findings import finding


def report(sid: str, roles, findings=(), patches=(), **kw) -> QualityReport:
    return QualityReport(session_id=sid, project="/p", mode="quick", isolation="snapshot",
                         started_at=datetime(2026, 1, 1, tzinfo=UTC),
                         roles=[RoleRun(role=r, status="ok") for r in roles],
                         findings=list(findings), patches=list(patches), **kw)


def test_combined_report_holds_both_phases_and_one_verdict():
    p = Patch(id="p1", description="d", diff="")
    first = report("qe-1", ["lint_tester"], [finding(severity=Severity.low)], [p],
                   duration_s=1.5, suppressed=2)
    second = report("qe-2", ["unit_tester"], [finding(rule_id="B105", severity=Severity.high)],
                    [p, Patch(id="p2", description="d", diff="")], duration_s=2.0, stale=True)
    assert first.verdict == "pass" and second.verdict == "pass"  # as built: not yet computed
    whole = combine(first, second, Config())
    assert whole.session_id == "qe-1"
    assert [r.role for r in whole.roles] == ["lint_tester", "unit_tester"]
    assert [f.rule_id for f in whole.findings] == ["F401", "B105"]
    assert [q.id for q in whole.patches] == ["p1", "p2"]  # a patch of both phases once
    assert whole.duration_s == 3.5 and whole.suppressed == 2 and whole.stale
    assert whole.verdict == "fail"  # the second phase's high finding fails the whole run
    assert sum(whole.summary.values()) == 2


def test_the_report_is_rewritten_where_the_first_phase_wrote_it(tmp_path):
    run = Run(id="qe-1", folder=str(tmp_path), files=None, mode="quick", roles=None,
              trigger="command")
    whole = report("qe-1", ["lint_tester", "unit_tester"], [finding()])
    js, md = tmp_path / "report.json", tmp_path / "report.md"
    rewrite_report(run, whole, {"json": str(js), "markdown": str(md)})
    assert json.loads(js.read_text())["session_id"] == "qe-1"
    assert len(json.loads(js.read_text())["findings"]) == 1
    assert "F401" in md.read_text() and run.markdown == str(md)
    # A place that cannot be written is logged, not raised: the run still ends.
    (tmp_path / "blocked").write_text("a file where a directory should be")
    rewrite_report(run, whole, {"json": str(tmp_path / "blocked" / "r.json")})
    assert not (tmp_path / "blocked").is_dir()


def test_a_role_the_first_phase_skipped_has_the_second_phases_outcome_once():
    # A run on a folder not yet trusted: the first phase lists the role that
    # runs code as skipped (asked for by name), the trust answer runs it.
    first = report("qe-1", ["lint_tester", "unit_tester"], [finding(severity=Severity.low)])
    first.roles[1] = RoleRun(role="unit_tester", status="skipped", requested=True,
                             reason="folder not trusted")
    first.artifacts = {"json": "/a/qr-qe-1.json", "markdown": "/a/qr-qe-1.md"}
    second = report("qe-2", ["unit_tester"], artifacts={"json": "/a/qr-qe-2.json",
                                                       "log:tests": "/a/tests.log"})
    whole = combine(first, second, Config())
    assert [(r.role, r.status) for r in whole.roles] == [("lint_tester", "ok"), ("unit_tester", "ok")]
    # The skipped entry made the verdict conditional; its final "ok" does not.
    assert whole.verdict == "conditional"  # the low finding, not the skip
    whole_clean = combine(report("qe-1", []).model_copy(update={"roles": first.roles}),
                          second, Config())
    assert whole_clean.verdict == "pass"
    # The run's report files are the first's; the second's logs are kept.
    assert whole.artifacts == {"json": "/a/qr-qe-1.json", "markdown": "/a/qr-qe-1.md",
                               "log:tests": "/a/tests.log"}


def test_the_end_line_says_the_reports_verdict_also_when_stale():
    """A run whose files changed under it ended "..., stale" while its report
    said CONDITIONAL: the end line keeps the verdict and says stale beside it."""
    from superqode_ls.server.runs import _summary

    run = Run(id="qe-1", folder="/p", files=None, mode="quick", roles=None, trigger="command")
    r = report("qe-1", ["lint_tester"], [finding(severity=Severity.medium)], stale=True)
    r.verdict = "conditional"
    line = _summary(run, r)
    assert line.startswith("session qe-1: 1 finding(s), 0 verified fix(es), conditional, stale"), line
    r.stale = False
    assert _summary(run, r).endswith(", conditional"), _summary(run, r)
