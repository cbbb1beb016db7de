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
  did nothing useful (ineffective: an agent whose model called no tool, read
  no file or repeated one call), stopped at a cap before it finished
  (incomplete; also quick mode's slow suite, not run, whose last run had
  failing tests), or was asked for by name and could not run (skipped, with
  ``requested``), or was left for the next run while the project's
  environment is still being built (``PENDING``), or skipped because the
  project's suite could not run here (a ``setup:`` reason: its environment
  did not build, its modules do not import): the change may go in, but
  someone should look;
- ``pass``: nothing but ``info`` findings (or none), every role finished or
  was left out by the mode's own choice.
"""

from __future__ import annotations

from collections.abc import Iterable

from ...models import Finding, QualityReport, RoleRun, Severity, Verdict

_UNFINISHED = {"failed", "error", "timeout", "ineffective", "incomplete"}
# A role left for the next run while the project's environment is still
# being built (qe/role_runs.py): its tests did not run, so no ``pass``.
PENDING = "setup: tests not run yet: "
# A suite the project has but that could not run here (its environment did
# not build, its modules do not import): a setup problem, never a finding and
# never ``fail``, but no ``pass`` either: no test said anything.
SETUP = "setup: "
# Could not do its job at all: with ``--fail-on-error`` the run exits 3.
_DID_NOT_WORK = {"error", "ineffective"}


def unfinished(run: RoleRun) -> bool:
    """A role whose silence is no evidence: the verdict cannot be ``pass``."""
    return run.status in _UNFINISHED or (run.status == "skipped" and (
        run.requested or (run.reason or "").startswith(SETUP)))


def did_not_work(run: RoleRun) -> bool:
    """A role that ran without doing its job, or was asked for and could not run."""
    return run.status in _DID_NOT_WORK or (run.status == "skipped" and run.requested)
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
    any_unfinished = False
    if isinstance(findings, QualityReport):
        if findings.cancelled:
            return "cancelled"
        any_unfinished = any(unfinished(r) for r in findings.roles)
        findings = findings.findings
    items = list(findings)
    if fails(items, fail_on, never_fail):
        return "fail"
    if any_unfinished or any(f.noise is None and f.severity.at_least(Severity.low) for f in items):
        return "conditional"
    return "pass"
