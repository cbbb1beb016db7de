"""The QR as SARIF 2.1.0 (``superqe run --sarif FILE``), shaped for GitHub
code scanning: one run per tool, rules with help and ``security-severity``,
results with regions, ``partialFingerprints`` from the finding's stable id,
related locations for evidence and ``fixes`` from the patches.

Columns are Unicode code points (``columnKind``), as in the models.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any
from urllib.parse import quote

from unidiff import PatchSet
from unidiff.errors import UnidiffParseError

from ... import __version__
from ...models import Finding, Patch, QualityReport, Severity

SARIF_SCHEMA = "https://json.schemastore.org/sarif-2.1.0.json"
FINGERPRINT_KEY = "superqodeFindingId/v1"

_LEVEL = {
    Severity.critical: "error",
    Severity.high: "error",
    Severity.medium: "warning",
    Severity.low: "note",
    Severity.info: "note",
}
# GitHub ranks security alerts by this CVSS-like score.
_SECURITY_SEVERITY = {
    Severity.critical: "9.5",
    Severity.high: "8.0",
    Severity.medium: "5.5",
    Severity.low: "3.0",
    Severity.info: "1.0",
}
_SECURITY_CATEGORIES = {"security", "secrets"}
_TOOL_URIS = {
    "bandit": "https://bandit.readthedocs.io/",
    "ruff": "https://docs.astral.sh/ruff/",
    "mypy": "https://mypy.readthedocs.io/",
    "pytest": "https://docs.pytest.org/",
}


def _uri(path: str, prefix: str = "") -> str:
    return quote(prefix + Path(path).as_posix(), safe="/")


def _source_root(project: Path) -> Path | None:
    """The git work tree holding ``project`` (code scanning wants paths from
    the repository root), else the project itself."""
    if not project.is_absolute():
        return None
    for candidate in (project, *project.parents):
        if (candidate / ".git").exists():
            return candidate
    return project


def _precision(confidence: float) -> str:
    if confidence >= 0.9:
        return "very-high"
    if confidence >= 0.7:
        return "high"
    if confidence >= 0.5:
        return "medium"
    return "low"


def _region(f: Finding) -> dict[str, int]:
    if f.range is None:
        return {"startLine": 1}
    r = f.range
    region = {"startLine": r.start_line, "startColumn": r.start_col}
    end_line = r.end_line if r.end_line is not None else r.start_line
    if end_line > r.start_line or (r.end_col is not None and r.end_col > r.start_col):
        region["endLine"] = end_line
        if r.end_col is not None and (end_line > r.start_line or r.end_col > r.start_col):
            region["endColumn"] = r.end_col
    return region


def _location(path: str, region: dict[str, int], prefix: str = "") -> dict[str, Any]:
    return {
        "physicalLocation": {
            "artifactLocation": {"uri": _uri(path, prefix), "uriBaseId": "%SRCROOT%"},
            "region": region,
        }
    }


def _fix(patch: Patch, prefix: str = "") -> dict[str, Any] | None:
    try:
        parsed = PatchSet(patch.diff)
    except (UnidiffParseError, ValueError):
        return None
    changes = []
    for pf in parsed:
        path = pf.path
        replacements = []
        for hunk in pf:
            inserted = "".join(line.value for line in hunk if not line.is_removed)
            if hunk.source_length:
                # A whole-line region excludes the last line's newline.
                deleted = {
                    "startLine": hunk.source_start,
                    "endLine": hunk.source_start + hunk.source_length - 1,
                }
                inserted = inserted.removesuffix("\n")
            else:
                line = hunk.source_start + 1
                deleted = {"startLine": line, "startColumn": 1, "endLine": line, "endColumn": 1}
            replacements.append({"deletedRegion": deleted, "insertedContent": {"text": inserted}})
        if replacements:
            changes.append(
                {
                    "artifactLocation": {"uri": _uri(path, prefix), "uriBaseId": "%SRCROOT%"},
                    "replacements": replacements,
                }
            )
    if not changes:
        return None
    return {"description": {"text": patch.description}, "artifactChanges": changes}


def _rule(f: Finding, same_title: bool) -> dict[str, Any]:
    tags = sorted(set(f.tags) | {f.category})
    props: dict[str, Any] = {"tags": tags, "precision": _precision(f.confidence)}
    if f.category in _SECURITY_CATEGORIES:
        props["tags"] = sorted(set(tags) | {"security"})
        props["security-severity"] = _SECURITY_SEVERITY[f.severity]
    rule: dict[str, Any] = {
        "id": f.rule_id,
        "name": f.rule_id,
        # Per-finding titles (mypy's messages...) do not describe the rule.
        "shortDescription": {"text": f.title if same_title else f"{f.tool} {f.rule_id}"},
        "fullDescription": {
            "text": (f.message.split("\n")[0] or f.title) if same_title else f"{f.tool} {f.rule_id}"
        },
        "defaultConfiguration": {"level": _LEVEL[f.severity]},
        "properties": props,
    }
    if f.help_uri:
        rule["helpUri"] = f.help_uri
        rule["help"] = {"text": f"{f.title}. See {f.help_uri}"}
    return rule


def _result(
    f: Finding, rule_index: int, patches: dict[str, Patch], prefix: str = ""
) -> dict[str, Any] | None:
    if f.file:
        locations = [_location(f.file, _region(f), prefix)]
    else:
        anchor = next((e for e in f.evidence if e.file), None)
        if anchor is None:
            return None  # GitHub needs a location; such findings stay in the JSON/Markdown
        locations = [_location(anchor.file or "", {"startLine": anchor.line or 1}, prefix)]
    result: dict[str, Any] = {
        "ruleId": f.rule_id,
        "ruleIndex": rule_index,
        # Noise stays in the log (a click away), at the lowest level.
        "level": "note" if f.noise else _LEVEL[f.severity],
        "message": {"text": f.message or f.title},
        "locations": locations,
        "partialFingerprints": {FINGERPRINT_KEY: f.id},
        "properties": {
            "severity": f.severity.value,
            "confidence": f.confidence,
            "role": f.role,
            "category": f.category,
            "verified": f.verified,
            "findingId": f.id,
            "tags": list(f.tags),
        },
    }
    if f.related_rules:
        result["properties"]["relatedRuleIds"] = list(f.related_rules)
    if f.severity_reason:
        result["properties"]["severityReason"] = f.severity_reason
    if f.noise:
        result["properties"]["noise"] = f.noise
    related = []
    for i, e in enumerate(f.evidence, start=1):
        if not e.file:
            continue
        loc = _location(e.file, {"startLine": max(1, e.line or 1)}, prefix)
        loc["id"] = i
        loc["message"] = {"text": e.message[:1000]}
        related.append(loc)
    if related:
        result["relatedLocations"] = related
    if f.fix_patch_id and f.fix_patch_id in patches:
        fix = _fix(patches[f.fix_patch_id], prefix)
        if fix is not None:
            result["fixes"] = [fix]
            result["properties"]["fixPatchId"] = f.fix_patch_id
            result["properties"]["fixVerified"] = patches[f.fix_patch_id].verified
    return result


def to_sarif(report: QualityReport, source_root: Path | None = None) -> dict[str, Any]:
    """SARIF 2.1.0 log for ``report`` (a dict ready for ``json.dump``).

    URIs are relative to ``source_root``: by default the git work tree that
    holds the project, so a project in a sub-folder of a repository still
    maps onto the repository's files in code scanning."""
    patches = {p.id: p for p in report.patches}
    tools: dict[str, list[Finding]] = {}
    for r in report.roles:
        if r.tool and r.status == "ok":
            tools.setdefault(r.tool, [])  # an empty run closes fixed alerts
    for f in report.findings:
        tools.setdefault(f.tool, []).append(f)
    base: dict[str, Any] = {}
    project = Path(report.project)
    root = source_root or _source_root(project)
    prefix = ""
    if root is not None and project.is_absolute():
        try:
            sub = project.relative_to(root).as_posix()
        except ValueError:
            sub = "."
        prefix = "" if sub == "." else sub + "/"
        base = {"%SRCROOT%": {"uri": root.as_uri().rstrip("/") + "/"}}
    runs = []
    for tool, findings in tools.items():
        rules: list[dict[str, Any]] = []
        index: dict[str, int] = {}
        results = []
        omitted = 0
        titles: dict[str, set[str]] = {}
        for f in findings:
            titles.setdefault(f.rule_id, set()).add(f.title)
        for f in findings:
            if f.rule_id not in index:
                index[f.rule_id] = len(rules)
                rules.append(_rule(f, len(titles[f.rule_id]) == 1))
            res = _result(f, index[f.rule_id], patches, prefix)
            if res is None:
                omitted += 1
            else:
                results.append(res)
        roles = [r for r in report.roles if r.tool == tool]
        driver: dict[str, Any] = {
            "name": tool,
            "fullName": f"{tool} (run by SuperQode LS {__version__})",
            "rules": rules,
        }
        if tool in _TOOL_URIS:
            driver["informationUri"] = _TOOL_URIS[tool]
        run: dict[str, Any] = {
            "tool": {"driver": driver},
            "columnKind": "unicodeCodePoints",
            "results": results,
            "properties": {
                "sessionId": report.session_id,
                "mode": report.mode,
                "roles": sorted({f.role for f in findings} | {r.role for r in roles}),
                "omittedWithoutLocation": omitted,
            },
        }
        if report.since is not None:  # only what the change introduced: say against what
            run["properties"]["since"] = {"ref": report.since.ref,
                                          "mergeBase": report.since.merge_base}
        if base:
            run["originalUriBaseIds"] = base
        if roles:
            run["invocations"] = [_invocation(r) for r in roles]
        runs.append(run)
    return {"$schema": SARIF_SCHEMA, "version": "2.1.0", "runs": runs}


def _invocation(r: Any) -> dict[str, Any]:
    inv: dict[str, Any] = {
        "executionSuccessful": r.status == "ok",
        "properties": {"role": r.role, "status": r.status, "durationSeconds": r.duration_s},
    }
    if r.reason:
        inv["toolExecutionNotifications"] = [
            {"level": "note" if r.status == "skipped" else "error", "message": {"text": r.reason}}
        ]
    return inv
