"""Report writers: SARIF valid against the 2.1.0 schema and usable by code
scanning, the JSON QR valid against the published schema, a readable
Markdown report, and the verdict rule."""

from __future__ import annotations

import json
from datetime import UTC, datetime
from pathlib import Path

import jsonschema
import pytest

from superqode_ls.models import (
    Evidence,
    Finding,
    Patch,
    QualityReport,
    Range,
    RoleRun,
    Severity,
    Verification,
)
from superqode_ls.qe.report import (
    compute_verdict,
    qr_json_schema,
    read_json,
    render_markdown,
    to_sarif,
    write_json,
)
from superqode_ls.qe.report.schema import schema_text
from superqode_ls.qe.roles._patches import unified_diff

ROOT = Path(__file__).resolve().parents[1]
SARIF_SCHEMA = json.loads((ROOT / "tests/data/sarif-schema-2.1.0.json").read_text())
OLD = "import os\nimport yaml\n\n\ndef load(fh):\n    return yaml.load(fh)\n"
NEW = OLD.replace("yaml.load(fh)", "yaml.safe_load(fh)")
PATH = "pkg/my módulo.py"  # space and non-ASCII: must survive as a URI


def make_report(tmp_path: Path, **over) -> QualityReport:
    diff = unified_diff(PATH, OLD, NEW)
    yaml_finding = Finding(
        role="security_tester",
        tool="bandit",
        rule_id="B506",
        title="Use of unsafe yaml load",
        message="B506 (yaml_load): Use of unsafe yaml load.",
        severity=Severity.medium,
        confidence=0.9,
        category="security",
        file=PATH,
        range=Range(start_line=6, start_col=12, end_line=6, end_col=25),
        tags=["bandit", "CWE-20"],
        help_uri="https://bandit.readthedocs.io/en/latest/plugins/b506_yaml_load.html",
        snippet="    return yaml.load(fh)",
    ).with_stable_id()
    patch = Patch(
        id=f"fix-{yaml_finding.id}",
        description="Use yaml.safe_load",
        diff=diff,
        files=[PATH],
        finding_ids=[yaml_finding.id],
        role="security_tester",
        tool="bandit",
        verified=True,
        verification="bandit re-run: finding gone",
    )
    yaml_finding = yaml_finding.model_copy(update={"fix_patch_id": patch.id, "verified": True})
    findings = [
        yaml_finding,
        Finding(
            role="security_tester",
            tool="superqode-secrets",
            rule_id="secret-private-key",
            title="Private key in source",
            message="Private key in source in keys.py line 3.",
            severity=Severity.critical,
            confidence=0.95,
            category="secrets",
            file="keys.py",
            range=Range(start_line=3, start_col=1),
            snippet="-----BEGIN RSA PRIVATE KEY-----",
        ).with_stable_id(),
        Finding(
            role="lint_tester",
            tool="ruff",
            rule_id="F401",
            title="`os` imported but unused",
            message="F401 (unused-import): `os` imported but unused",
            severity=Severity.low,
            confidence=0.9,
            category="lint",
            file=PATH,
            range=Range(start_line=1, start_col=8, end_line=1, end_col=10),
            snippet="import os",
        ).with_stable_id(),
        Finding(
            role="unit_tester",
            tool="pytest",
            rule_id="test-failure",
            title="Test fails: tests/test_a.py::test_x",
            message="AssertionError: assert 5 == 10\n +  where 5 = f(50)",
            severity=Severity.high,
            confidence=0.95,
            category="tests",
            file="tests/test_a.py",
            range=Range(start_line=26, start_col=5),
            evidence=[
                Evidence(message="ZeroDivisionError raised here", file="pkg/calc.py", line=2)
            ],
            snippet="    assert f(50) == 10",
        ).with_stable_id(),
        Finding(  # nowhere to point at: kept out of SARIF, listed in Markdown
            role="unit_tester",
            tool="pytest",
            rule_id="suite-crash",
            title="The test suite crashed",
            message="segfault",
            severity=Severity.info,
        ).with_stable_id(),
    ]
    data = {
        "session_id": "qe-20260101-000000-abcdef",
        "project": str(tmp_path / "proj"),
        "mode": "quick",
        "isolation": "worktree",
        "base_commit": "0123456789abcdef0123456789abcdef01234567",
        "started_at": datetime(2026, 1, 1, tzinfo=UTC),
        "duration_s": 12.5,
        "roles": [
            RoleRun(
                role="security_tester",
                status="ok",
                tool="bandit",
                duration_s=1.5,
                findings=2,
                patches=1,
            ),
            RoleRun(role="lint_tester", status="ok", tool="ruff", duration_s=0.4, findings=1),
            RoleRun(role="type_tester", status="ok", tool="mypy", duration_s=3.0),
            RoleRun(role="unit_tester", status="ok", tool="pytest", duration_s=2.0, findings=2),
            RoleRun(
                role="mutation_tester",
                status="skipped",
                tool="mutmut",
                reason="not trusted: executes code",
            ),
        ],
        "findings": findings,
        "patches": [patch],
        "verdict": "fail",
        "verification": Verification(verified=True),
        "artifacts": {"json": "/x/qr.json"},
    }
    data.update(over)
    return QualityReport(**data)


def test_sarif_is_valid_and_complete(tmp_path):
    report = make_report(tmp_path)
    sarif = to_sarif(report)
    jsonschema.Draft4Validator(SARIF_SCHEMA).validate(sarif)
    json.dumps(sarif)  # serialisable as is
    assert sarif["version"] == "2.1.0"
    runs = {r["tool"]["driver"]["name"]: r for r in sarif["runs"]}
    # one run per tool; mypy ran clean and still gets an (empty) run
    assert set(runs) == {"bandit", "superqode-secrets", "ruff", "pytest", "mypy"}
    assert runs["mypy"]["results"] == []
    assert "mutmut" not in runs  # skipped role, no findings
    results = [res for r in sarif["runs"] for res in r["results"]]
    assert len(results) == 4 and runs["pytest"]["properties"]["omittedWithoutLocation"] == 1
    by_rule = {res["ruleId"]: (res, run) for run in sarif["runs"] for res in run["results"]}

    b506, run = by_rule["B506"]
    assert run["tool"]["driver"]["rules"][b506["ruleIndex"]]["id"] == "B506"
    assert b506["level"] == "warning"
    loc = b506["locations"][0]["physicalLocation"]
    assert loc["artifactLocation"]["uri"] == "pkg/my%20m%C3%B3dulo.py"
    assert loc["region"] == {"startLine": 6, "startColumn": 12, "endLine": 6, "endColumn": 25}
    assert b506["partialFingerprints"]["superqodeFindingId/v1"] == report.findings[0].id
    assert (
        b506["properties"]["confidence"] == 0.9 and b506["properties"]["role"] == "security_tester"
    )
    rule = run["tool"]["driver"]["rules"][0]
    assert (
        rule["properties"]["security-severity"] == "5.5"
        and "security" in rule["properties"]["tags"]
    )
    assert run["columnKind"] == "unicodeCodePoints"
    assert run["originalUriBaseIds"]["%SRCROOT%"]["uri"].endswith("/proj/")

    # The fix, applied as SARIF describes it, gives the patched file.
    (change,) = b506["fixes"][0]["artifactChanges"]
    lines = OLD.split("\n")
    for rep in change["replacements"]:
        region = rep["deletedRegion"]
        start, end = region["startLine"] - 1, region["endLine"]
        lines[start:end] = rep["insertedContent"]["text"].split("\n")
    assert "\n".join(lines) == NEW

    assert by_rule["secret-private-key"][0]["level"] == "error"
    test, _ = by_rule["test-failure"]
    assert (
        test["relatedLocations"][0]["physicalLocation"]["artifactLocation"]["uri"] == "pkg/calc.py"
    )
    assert (
        runs["superqode-secrets"]["tool"]["driver"]["rules"][0]["properties"]["security-severity"]
        == "9.5"
    )


def test_sarif_paths_from_the_repository_root(tmp_path):
    repo = tmp_path / "repo"
    (repo / ".git").mkdir(parents=True)
    (repo / "examples/shop").mkdir(parents=True)
    report = make_report(tmp_path, project=str(repo / "examples/shop"))
    sarif = to_sarif(report)
    jsonschema.Draft4Validator(SARIF_SCHEMA).validate(sarif)
    run = next(r for r in sarif["runs"] if r["tool"]["driver"]["name"] == "bandit")
    assert run["originalUriBaseIds"]["%SRCROOT%"]["uri"] == repo.as_uri() + "/"
    res = run["results"][0]
    uri = res["locations"][0]["physicalLocation"]["artifactLocation"]["uri"]
    assert uri == "examples/shop/pkg/my%20m%C3%B3dulo.py"
    fix_uri = res["fixes"][0]["artifactChanges"][0]["artifactLocation"]["uri"]
    assert fix_uri == uri


def test_sarif_rule_text_is_generic_when_titles_differ(tmp_path):
    base = make_report(tmp_path)
    one = base.findings[2]
    other = one.model_copy(update={"id": "f401-other", "title": "`sys` imported but unused"})
    sarif = to_sarif(base.model_copy(update={"findings": [one, other]}))
    (run,) = [r for r in sarif["runs"] if r["tool"]["driver"]["name"] == "ruff"]
    assert run["tool"]["driver"]["rules"][0]["shortDescription"]["text"] == "ruff F401"
    assert len(run["results"]) == 2


def test_sarif_empty_report_is_valid(tmp_path):
    report = make_report(tmp_path, findings=[], patches=[], roles=[], project="relative/dir")
    sarif = to_sarif(report)
    jsonschema.Draft4Validator(SARIF_SCHEMA).validate(sarif)
    assert sarif["runs"] == []


def test_json_round_trip_and_schema(tmp_path):
    report = make_report(tmp_path)
    text = write_json(report)
    data = json.loads(text)
    assert data["summary"] == {"critical": 1, "high": 1, "medium": 1, "low": 1, "info": 1}
    jsonschema.Draft202012Validator(qr_json_schema()).validate(data)
    back = read_json(text)
    assert back.findings == report.findings and back.patches == report.patches
    with pytest.raises(jsonschema.ValidationError):
        jsonschema.Draft202012Validator(qr_json_schema()).validate({**data, "verdict": "maybe"})


def test_published_schema_matches_the_model():
    published = (ROOT / "docs/qr.schema.json").read_text(encoding="utf-8")
    assert published == schema_text(), "run: python -m superqode_ls.qe.report.schema"


def test_markdown_report(tmp_path):
    report = make_report(tmp_path, stale=True)
    md = render_markdown(report)
    assert md.startswith("# SuperQode quality report: FAIL\n")
    assert "**Stale:**" in md
    assert "| critical | 1 |" in md and "| **total** | **5** |" in md
    # severity groups in order, most severe first
    assert md.index("### Critical (1)") < md.index("### High (1)") < md.index("### Low (1)")
    assert "`pkg/my módulo.py:6:12`" in md and "`keys.py:3:1`" in md
    assert "Use yaml.safe_load (verified: bandit re-run: finding gone)" in md
    assert "```text\nAssertionError: assert 5 == 10\n +  where 5 = f(50)\n```" in md
    assert "```diff\ndiff --git a/pkg/my módulo.py" in md
    assert "`pkg/calc.py:2`: ZeroDivisionError raised here" in md
    assert (
        "| mutation_tester | skipped | mutmut | 0 | 0 | 0 ms | not trusted: executes code |" in md
    )
    assert "Verified: the project is exactly as before the session." in md
    assert "1 suggested fix(es), 1 verified" in md
    assert "```python\n    return yaml.load(fh)\n```" in md
    worded = report.model_copy(
        update={
            "patches": [
                report.patches[0].model_copy(update={"verification": "verified: fixes b506"})
            ]
        }
    )
    md2 = render_markdown(worded)
    assert "(verified: fixes b506)" in md2 and "verified: verified" not in md2
    fresh = render_markdown(
        make_report(tmp_path, findings=[], patches=[], verdict="pass", verification=None)
    )
    assert "No findings." in fresh and "not verified" in fresh and "Stale" not in fresh


def f(sev: str) -> Finding:
    return Finding(role="r", tool="t", rule_id="x", title="x", message="x", severity=Severity(sev))


def test_verdict_rule(tmp_path):
    assert compute_verdict([], "high") == "pass"
    assert compute_verdict([f("info")], "high") == "pass"
    assert compute_verdict([f("low")], "high") == "conditional"
    assert compute_verdict([f("medium"), f("low")], "high") == "conditional"
    assert compute_verdict([f("high")], "high") == "fail"
    assert compute_verdict([f("critical")], "high") == "fail"
    assert compute_verdict([f("high")], "critical") == "conditional"
    assert compute_verdict([f("critical")], "never") == "conditional"
    assert compute_verdict([f("info")], "info") == "fail"
    assert compute_verdict([f("medium")], Severity.medium) == "fail"
    # a whole report: a role that could not finish makes a clean run conditional
    clean = make_report(tmp_path, findings=[], patches=[])
    assert compute_verdict(clean, "high") == "pass"
    broken = clean.model_copy(update={"roles": [RoleRun(role="unit_tester", status="timeout")]})
    assert compute_verdict(broken, "high") == "conditional"
    assert compute_verdict(make_report(tmp_path), "high") == "fail"
    # a cancelled session claims neither pass nor fail, whatever it found
    stopped = make_report(tmp_path).model_copy(update={"cancelled": True})
    assert compute_verdict(stopped, "high") == "cancelled"
    assert render_markdown(stopped.model_copy(update={"verdict": "cancelled"})).startswith(
        "# SuperQode quality report: CANCELLED\n")
    # an assert (B101) outside tests never fails a run by default; other rules do
    b101 = Finding(role="r", tool="bandit", rule_id="B101", title="assert", message="x",
                   severity=Severity.low)
    assert compute_verdict([b101], "low") == "conditional"
    assert compute_verdict([b101], "low", never_fail=()) == "fail"
    assert compute_verdict([b101, f("low")], "low") == "fail"
