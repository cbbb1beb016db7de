"""``superqe merge``: shard reports (``--shard K/N``) combined into one.

Every shard ran the analyzers, so their findings are in each report; the
split roles' findings are in one report each. A finding id is kept as many
times as the report with the most copies of it has (two identical flagged
lines are two findings with one id), which gives the unsharded run's
findings. A missing, repeated or foreign shard is refused: a merge that
silently lacked a shard would pass a change whose problems were in it.
"""

from __future__ import annotations

from collections import Counter
from pathlib import Path

from ..config import ConfigError
from ..models import Finding, Patch, QualityReport, RoleRun, Verification, summarize, utcnow
from .noise import by_importance
from .report import compute_verdict, read_json

_STATUS_ORDER = ("error", "timeout", "cancelled", "failed", "ineffective", "incomplete", "ok",
                 "skipped")


def load_reports(paths: list[Path]) -> list[QualityReport]:
    out = []
    for p in paths:
        try:
            out.append(read_json(Path(p).read_text(encoding="utf-8")))
        except OSError as e:
            raise ConfigError(f"{p}: cannot read ({e.strerror or e})") from None
        except ValueError as e:
            first = str(e).splitlines()[0]
            raise ConfigError(f"{p}: not a SuperQode JSON report ({first})") from None
    return out


def check_shards(reports: list[QualityReport]) -> None:
    """One report per shard 1..N of one N, all at the same commit and mode."""
    if not reports:
        raise ConfigError("merge: no reports given")
    names = [r.session_id for r in reports if r.shard is None]
    if names:
        raise ConfigError(f"merge: not a shard report (run with --shard K/N): {', '.join(names)}")
    shards = [r.shard for r in reports if r.shard is not None]
    ns = {int(s.split("/")[1]) for s in shards}
    if len(ns) != 1:
        raise ConfigError(f"merge: shards of different splits: {', '.join(sorted(shards))}")
    n = ns.pop()
    ks = Counter(int(s.split("/")[0]) for s in shards)
    repeated = sorted(k for k, c in ks.items() if c > 1)
    missing = sorted(set(range(1, n + 1)) - set(ks))
    if repeated:
        raise ConfigError(f"merge: shard(s) given twice: {', '.join(f'{k}/{n}' for k in repeated)}")
    if missing:
        raise ConfigError(f"merge: shard(s) missing: {', '.join(f'{k}/{n}' for k in missing)}")
    for what in ("base_commit", "mode"):
        values = {getattr(r, what) for r in reports}
        if len(values) != 1:
            raise ConfigError(f"merge: the shards differ in {what}: {', '.join(map(str, values))}")


def merge_reports(reports: list[QualityReport], fail_on: str = "high",
                  never_fail=()) -> QualityReport:
    check_shards(reports)
    findings = _findings(reports)
    patches: dict[str, Patch] = {}
    for r in reports:
        for p in r.patches:
            patches.setdefault(p.id, p)
    used = {f.fix_patch_id for f in findings if f.fix_patch_id}
    first = min(reports, key=lambda r: r.started_at)
    merged = QualityReport(
        session_id=f"merged-{first.session_id}",
        project=first.project,
        mode=first.mode,
        isolation=first.isolation,
        base_commit=first.base_commit,
        started_at=first.started_at,
        finished_at=max((r.finished_at for r in reports if r.finished_at), default=utcnow()),
        # The CI jobs ran side by side: the longest is what the merge waited for.
        duration_s=max(r.duration_s for r in reports),
        roles=_roles(reports, Counter(f.role for f in findings)),
        findings=findings,
        patches=[p for p in patches.values() if p.id in used or not p.finding_ids],
        summary=summarize(findings),
        suppressed=max(r.suppressed for r in reports),
        baseline_filtered=max(r.baseline_filtered for r in reports),
        stale=any(r.stale for r in reports),
        cancelled=any(r.cancelled for r in reports),
        timed_out=any(r.timed_out for r in reports),
        verification=_verification(reports),
        protection=first.protection,
        interpreter=first.interpreter,
        since=first.since,
        merged_from=[r.session_id for r in sorted(reports, key=_k)],
    )
    merged.verdict = compute_verdict(merged, fail_on, never_fail)
    return merged


def _k(r: QualityReport) -> int:
    return int((r.shard or "0/0").split("/")[0])


def _findings(reports: list[QualityReport]) -> list[Finding]:
    """Per id, the copies of the report that has most of them."""
    best: dict[str, list[Finding]] = {}
    for r in sorted(reports, key=_k):
        groups: dict[str, list[Finding]] = {}
        for f in r.findings:
            groups.setdefault(f.id, []).append(f)
        for fid, fs in groups.items():
            if len(fs) > len(best.get(fid, [])):
                best[fid] = fs
    return by_importance(f for fs in best.values() for f in fs)


def _roles(reports: list[QualityReport], counts: Counter[str]) -> list[RoleRun]:
    """One row per role: the worst status any shard had, the summed time."""
    rows: dict[str, list[RoleRun]] = {}
    for r in sorted(reports, key=_k):
        for run in r.roles:
            rows.setdefault(run.role, []).append(run)
    out = []
    for name, runs in rows.items():
        worst = min(runs, key=lambda x: _STATUS_ORDER.index(x.status))
        reasons = [f"shard {k}: {x.reason}" for k, x in enumerate(runs, 1) if x.reason]
        out.append(worst.model_copy(update={
            "duration_s": round(sum(x.duration_s for x in runs), 3),
            "findings": counts.get(name, 0), "patches": sum(x.patches for x in runs),
            "reason": "; ".join(reasons) if len({x.reason for x in runs}) > 1 else worst.reason,
        }))
    return out


def _verification(reports: list[QualityReport]) -> Verification | None:
    vs = [r.verification for r in reports if r.verification is not None]
    if not vs:
        return None
    return Verification(
        verified=all(v.verified for v in vs) and len(vs) == len(reports),
        differences=[d for v in vs for d in v.differences],
        outside_changes=list(dict.fromkeys(d for v in vs for d in v.outside_changes)),
        barrier_abi=vs[0].barrier_abi,
    )
