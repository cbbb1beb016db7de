"""What the report files hold on a large project: the summary counts every
finding, the files list the most severe ones. A 700-file project has some
20,000 lint findings with as many fixes: written whole, each run left a 31 MB
JSON and an 18 MB Markdown file. The full list goes to SARIF (``superqe run
--sarif FILE``) and the event stream (``--jsonl``); shard reports stay whole
(``superqe merge`` combines their findings).
"""

from __future__ import annotations

from ...models import QualityReport, summarize
from ..noise import by_importance

# The JSON report lists at most this many findings (with their fixes), the
# Markdown report at most MD_MAX_FINDINGS: a few hundred KB either way.
JSON_MAX_FINDINGS = 500
MD_MAX_FINDINGS = 200


def bounded(report: QualityReport, limit: int) -> QualityReport:
    """``report`` with its ``limit`` most important findings (worth acting
    on before noise, then severity: ``noise.by_importance``), their fixes, every
    fix the verifier tried or that fixes no finding, and every suppression of
    a finding worth acting on; ``findings_total`` says how many there were. Unchanged when
    there are not more than ``limit``, or for a shard report."""
    findings = report.findings
    if len(findings) <= limit or report.shard:
        return report
    shown = by_importance(findings)[:limit]
    ids = {f.fix_patch_id for f in shown}
    # A suppression of a finding worth acting on is kept (the one way to
    # silence it); one of noise left out of the list is not: a large
    # project's 740 advisories' suppressions were 0.6 MB. Every patch file
    # stays in the artifacts folder.
    worth = {f.id for f in findings if f.noise is None}
    patches = [p for p in report.patches if p.id in ids or not p.finding_ids
               or p.verified_by is not None
               or (p.kind == "suppression" and not worth.isdisjoint(p.finding_ids))]
    kept = {p.id for p in patches}
    # One "patch:<id>" path per fix written was 2 MB of a large run's report.
    artifacts = {k: v for k, v in report.artifacts.items()
                 if not k.startswith("patch:") or k[len("patch:"):] in kept}
    return report.model_copy(update={
        "findings": shown, "patches": patches, "artifacts": artifacts,
        "summary": report.summary or summarize(findings),
        "findings_total": len(findings),
    })
