"""Failed tests run once more: one that passes the second time is flaky.

A test that fails only sometimes (a timing-dependent ResourceWarning turned
error, a race) is still a problem, but not the one a plain failure reports:
the developer should read "failed once, passed on a re-run". unit_tester
re-runs exactly the failed node ids once, in the same sandbox, environment
and command, when there are few of them and the role's deadline leaves time.
A test that passes then keeps its finding (same id), labelled flaky at low
severity, never dropped; one that fails again, or a re-run that does not say
clearly that it passed (timed out, usage error, not collected, skipped), leaves
the finding as it was: the label is only ever given on proof.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import Any

from ...models import Finding, Severity
from ...workspace.proc import ProcResult
from .base import RoleContext, RoleOutput

# unit_tester's _invoke: (ctx, targets, timeout, extra) -> (result, records).
Invoke = Callable[
    [RoleContext, list[str], float | None, list[str] | None],
    Awaitable[tuple[ProcResult, list[dict[str, Any]]]],
]

MAX_RERUN = 10  # more failures than this is a broken suite, not a flaky test
# Besides the tests' own time, a re-run starts pytest, loads conftests and
# collects the test files: a fixed allowance for that.
MARGIN_S = 15.0
# Left to the role after the re-run's timeout, to build its output.
RESERVE_S = 5.0
_RULES = ("test-failure", "test-error")
FLAKY_NOTE = "failed once, passed on a re-run"


def candidates(
    records: list[dict[str, Any]], findings: list[Finding]
) -> dict[str, float]:
    """Node id -> the seconds its failing phases took, for each failure worth a
    re-run: a test's own failure (not a collection error) that is not already
    the environment's (info). Empty when records and findings do not pair up."""
    tests = [r for r in records if r.get("kind") != "summary"]
    if len(tests) != len(findings):
        return {}
    out: dict[str, float] = {}
    for rec, f in zip(tests, findings):
        nodeid = str(rec.get("nodeid") or "")
        if rec.get("kind") != "test" or not nodeid or f.rule_id not in _RULES or f.noise:
            continue
        try:
            took = max(0.0, float(rec.get("duration") or 0.0))
        except (TypeError, ValueError):
            took = 0.0
        out[nodeid] = out.get(nodeid, 0.0) + took
    return out


def plan(
    failed: dict[str, float], remaining: float | None, suite_s: float
) -> tuple[float | None, str | None]:
    """(timeout for the re-run, None) or (None, why there is none)."""
    if len(failed) > MAX_RERUN:
        return None, f"{len(failed)} failed tests not re-run (more than {MAX_RERUN})"
    needed = 2 * sum(failed.values()) + MARGIN_S
    if remaining is not None and remaining - RESERVE_S < needed:
        return None, (f"{len(failed)} failed test(s) not re-run: the deadline leaves "
                      f"{remaining:.0f} s, a re-run needs about {needed:.0f} s")
    # A few tests of the suite take no longer than the whole suite did,
    # whatever the allowance says.
    timeout = max(needed, suite_s)
    if remaining is not None:
        timeout = min(timeout, remaining - RESERVE_S)
    return timeout, None


def passed_again(
    nodeids: list[str], records: list[dict[str, Any]], timed_out: bool
) -> set[str] | None:
    """The node ids that passed on the re-run, or None when the re-run does
    not prove it: every one collected, none skipped, pytest's exit 0 or 1."""
    summary = next((r for r in reversed(records) if r.get("kind") == "summary"), None)
    if timed_out or summary is None or summary.get("exitstatus") not in (0, 1):
        return None
    if summary.get("collected") != len(nodeids) or summary.get("skipped", 0):
        return None
    failed = {str(r.get("nodeid")) for r in records if r.get("kind") != "summary"}
    passed = [n for n in nodeids if n not in failed]
    # Call-phase passes: every test not failing must be among them.
    if summary.get("passed", 0) < len(passed):
        return None
    return set(passed)


def label_flaky(findings: list[Finding], records: list[dict[str, Any]],
                flaky: set[str]) -> list[Finding]:
    """The findings with those of ``flaky`` node ids labelled flaky (same id)."""
    tests = [r for r in records if r.get("kind") != "summary"]
    if len(tests) != len(findings):
        return findings  # cannot pair them: nothing labelled, nothing lost
    out = []
    for rec, f in zip(tests, findings):
        nodeid = str(rec.get("nodeid") or "")
        if nodeid in flaky and f.rule_id in _RULES and not f.noise:
            f = f.model_copy(update={
                "title": f"Flaky test: {nodeid}",
                "message": f"flaky: {FLAKY_NOTE}; first failure: {f.message}",
                "severity": Severity.low,
                "severity_reason": f"low: flaky, {FLAKY_NOTE}",
                "tags": [*f.tags, "flaky"],
            })
        out.append(f)
    return out


async def rerun_failed(
    invoke: Invoke, ctx: RoleContext, out: RoleOutput, trace: dict[str, Any], suite_s: float
) -> None:
    """Re-run the failed tests of ``out`` once, with the first run's extra
    arguments (``trace``): those passing then are labelled flaky in ``out``;
    how many were re-run goes into its reason (the role's log line)."""
    records = trace.get("records") or []
    failed = candidates(records, out.findings)
    if not failed:
        return
    timeout, note = plan(failed, ctx.remaining(), suite_s)
    if timeout is not None:
        summary = next((r for r in records if r.get("kind") == "summary"), {})
        extra = [*trace.get("extra", []),
                 *(["-p", "no:randomly"] if summary.get("randomly") else [])]
        nodeids = list(failed)
        res, again = await invoke(ctx, nodeids, timeout, extra)
        flaky = passed_again(nodeids, again, res.timed_out)
        if flaky is None:
            note = (f"{len(nodeids)} failed test(s) re-run, inconclusive "
                    "(findings kept as they were)")
        else:
            out.findings = label_flaky(out.findings, records, flaky)
            note = f"{len(nodeids)} failed test(s) re-run: {len(flaky)} flaky ({FLAKY_NOTE})"
    out.reason = f"{out.reason}; {note}" if out.reason else note
