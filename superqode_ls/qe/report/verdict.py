"""The verdict of a quality report.

- ``fail``: at least one finding at or above the ``fail_on`` severity
  (``fail_on="never"`` never fails);
- ``conditional``: otherwise, at least one finding at ``low`` or above, or a
  role that should have run could not finish (failed, error, timeout): the
  change may go in, but someone should look;
- ``pass``: nothing but ``info`` findings (or none), every role finished or
  was deliberately skipped.
"""

from __future__ import annotations

from collections.abc import Iterable

from ...models import Finding, QualityReport, Severity, Verdict

_UNFINISHED = {"failed", "error", "timeout"}


def compute_verdict(
    findings: Iterable[Finding] | QualityReport, fail_on: str | Severity = "high"
) -> Verdict:
    """Verdict for ``findings`` (or a whole report, which also counts roles
    that did not finish)."""
    unfinished = False
    if isinstance(findings, QualityReport):
        unfinished = any(r.status in _UNFINISHED for r in findings.roles)
        findings = findings.findings
    items = list(findings)
    threshold = None if str(getattr(fail_on, "value", fail_on)) == "never" else Severity(fail_on)
    if threshold is not None and any(f.severity.at_least(threshold) for f in items):
        return "fail"
    if unfinished or any(f.severity.at_least(Severity.low) for f in items):
        return "conditional"
    return "pass"
