"""The verdict of a quality report.

- ``cancelled``: the session was stopped (Ctrl-C, SIGTERM, the editor's
  cancel) before it finished: its findings are partial, so no pass or fail is
  claimed (the CLI exits 130);
- ``fail``: at least one finding worth acting on: at or above the
  ``fail_on`` severity after every adjustment (``fail_on="never"`` never
  fails), not noise (``Finding.noise``: test code, low confidence, a value
  that is no secret...), and not a rule in ``never_fail`` (``qe.never_fail``,
  by default bandit's B101 ``assert``);
- ``conditional``: otherwise, at least one finding at ``low`` or above that
  is not noise, or a
  role that should have run could not finish (failed, error, timeout) or
  did nothing useful (ineffective: an agent whose model called no tool): the
  change may go in, but someone should look;
- ``pass``: nothing but ``info`` findings (or none), every role finished or
  was deliberately skipped.
"""

from __future__ import annotations

from collections.abc import Iterable

from ...models import Finding, QualityReport, Severity, Verdict

_UNFINISHED = {"failed", "error", "timeout", "ineffective"}
DEFAULT_NEVER_FAIL = ("B101",)


def fails(
    findings: Iterable[Finding],
    fail_on: str | Severity = "high",
    never_fail: Iterable[str] = DEFAULT_NEVER_FAIL,
) -> bool:
    """Whether any finding is at or above ``fail_on`` and may fail a run."""
    if str(getattr(fail_on, "value", fail_on)) == "never":
        return False
    threshold = Severity(fail_on)
    exempt = {r.upper() for r in never_fail}
    return any(worth_acting_on(f, threshold, exempt) for f in findings)


def worth_acting_on(f: Finding, fail_on: Severity = Severity.high,
                    never_fail: Iterable[str] = DEFAULT_NEVER_FAIL) -> bool:
    """A finding that fails a run: severe enough, not noise, not exempt."""
    exempt = {r.upper() for r in never_fail}
    return (f.noise is None and f.severity.at_least(fail_on)
            and f.rule_id.upper() not in exempt)


def compute_verdict(
    findings: Iterable[Finding] | QualityReport,
    fail_on: str | Severity = "high",
    never_fail: Iterable[str] = DEFAULT_NEVER_FAIL,
) -> Verdict:
    """Verdict for ``findings`` (or a whole report, which also counts roles
    that did not finish and a cancel)."""
    unfinished = False
    if isinstance(findings, QualityReport):
        if findings.cancelled:
            return "cancelled"
        unfinished = any(r.status in _UNFINISHED for r in findings.roles)
        findings = findings.findings
    items = list(findings)
    if fails(items, fail_on, never_fail):
        return "fail"
    if unfinished or any(f.noise is None and f.severity.at_least(Severity.low) for f in items):
        return "conditional"
    return "pass"
