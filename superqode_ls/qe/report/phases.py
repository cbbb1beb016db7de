"""One report for a run made of two sessions on the same tree (an editor
run's static roles, then the roles the trust answer let run or that need
the whole tree): what the user started is one run, so it gets one report,
one verdict, and each role once."""

from __future__ import annotations

from collections.abc import Iterable

from ...models import QualityReport, Usage, summarize
from .verdict import compute_verdict

# The second session's own report files: the merged report replaces them.
_OWN_REPORT = ("json", "markdown")


def combine_phases(first: QualityReport, second: QualityReport, fail_on: str,
                   never_fail: Iterable[str]) -> QualityReport:
    """Every finding and patch of both sessions under the first's id, and one
    verdict over all of them. A role the first session only listed (skipped:
    the folder was not trusted yet) and the second ran is the second's: its
    final outcome, in the first's place, never both."""
    later = {r.role: r for r in second.roles}
    roles = [later.pop(r.role, r) for r in first.roles]
    roles += [r for r in second.roles if r.role in later]
    findings = [*first.findings, *second.findings]
    known = {p.id for p in first.patches}
    artifacts = {k: v for k, v in second.artifacts.items() if k not in _OWN_REPORT}
    whole = first.model_copy(update={
        "findings": findings,
        "roles": roles,
        "patches": [*first.patches, *(p for p in second.patches if p.id not in known)],
        "summary": summarize(findings),
        "suppressed": first.suppressed + second.suppressed,
        "baseline_filtered": first.baseline_filtered + second.baseline_filtered,
        "stale": first.stale or second.stale,
        "cancelled": first.cancelled or second.cancelled,
        "timed_out": first.timed_out or second.timed_out,
        "finished_at": second.finished_at or first.finished_at,
        "duration_s": first.duration_s + second.duration_s,
        "verification": second.verification or first.verification,
        # The project's interpreter is the code-running roles' (the second's).
        "interpreter": second.interpreter or first.interpreter,
        "usage": _usage(first.usage, second.usage),
        "artifacts": {**artifacts, **first.artifacts},
    })
    whole.verdict = compute_verdict(whole, fail_on, never_fail)
    return whole


def _usage(a: Usage | None, b: Usage | None) -> Usage | None:
    """Both sessions' agent tokens and cost, added."""
    if a is None or b is None:
        return a or b
    return Usage(prompt_tokens=a.prompt_tokens + b.prompt_tokens,
                 completion_tokens=a.completion_tokens + b.completion_tokens,
                 cost_usd=a.cost_usd + b.cost_usd, requests=a.requests + b.requests)
