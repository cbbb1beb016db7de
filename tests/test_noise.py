"""Noise filter: inline suppressions, confidence threshold, cross-tool
de-duplication and baselines."""

from __future__ import annotations

from collections import Counter

import pytest

from superqode_ls.config import ConfigError
from superqode_ls.models import Finding, Range, Severity
from superqode_ls.qe import baseline
from superqode_ls.qe.noise import (
    FileLines,
    canonical_rule,
    deduplicate,
    filter_findings,
    suppressed_by,
)


def mk(rule="B105", tool="bandit", line=1, file="a.py", category="security", conf=0.9,
       sev=Severity.medium, snippet=None, **kw) -> Finding:
    return Finding(
        role=kw.pop("role", "security_tester"), tool=tool, rule_id=rule, title=f"{rule} title",
        message="m", severity=sev, confidence=conf, category=category, file=file,
        range=Range(start_line=line, end_line=kw.pop("end_line", line), end_col=kw.pop("end_col", None)),
        snippet=snippet or f"{rule} line {line}", **kw,
    ).with_stable_id()


@pytest.mark.parametrize(
    ("line", "finding", "expected"),
    [
        ("x = 1  # noqa", mk("F401", "ruff", category="lint"), "noqa"),
        ("x = 1  # noqa: F401", mk("F401", "ruff", category="lint"), "noqa"),
        ("x = 1  # noqa:E501,F401 because", mk("F401", "ruff", category="lint"), "noqa"),
        ("x = 1  # noqa: E501", mk("F401", "ruff", category="lint"), None),
        ("pw = 'x'  # noqa: S105", mk("B105"), "noqa"),  # ruff's name for bandit's rule
        ("pw = 'x'  # nosec", mk("B105"), "nosec"),
        ("pw = 'x'  # nosec B105", mk("S105", "ruff"), "nosec"),
        ("pw = 'x'  # nosec B101", mk("B105"), None),
        ("pw = 'x'  # nosec - reviewed", mk("B105"), "nosec"),
        ("x = 1  # nosec", mk("F401", "ruff", category="lint"), None),  # nosec is for security
        ("x = 1  # superqode: ignore", mk("F401", "ruff", category="lint"), "superqode: ignore"),
        ("x = 1  # superqode: ignore[F401]", mk("F401", "ruff", category="lint"), "superqode: ignore"),
        ("x = 1  # superqode: ignore[E501]", mk("F401", "ruff", category="lint"), None),
        ("s = '# noqa'", mk("F401", "ruff", category="lint"), "noqa"),  # like ruff: text match
        ("x = 1", mk("F401", "ruff", category="lint"), None),
        # detect-secrets' and gitleaks' opt-outs: for the password rules and
        # the secrets scan only, never for an injection on the same line
        ('"SECRET_KEY": "test_key",  # pragma: allowlist secret', mk("B105"), "allowlist secret"),
        ("pw = 'x'  # gitleaks:allow", mk("S105", "ruff"), "allowlist secret"),
        ("k = 'AKIA...'  # pragma: allowlist secret", mk("secret-aws-key", "superqode-secrets",
                                                          category="secrets"), "allowlist secret"),
        ("cur.execute(q % v)  # pragma: allowlist secret", mk("B608"), None),
        ("import os  # pragma: allowlist secret", mk("F401", "ruff", category="lint"), None),
        # ruff's own comment, by code or (ruff's preview) by rule name: pipx
        # silences S310 this way, and bandit's B310 is the same check
        ("urlopen(url)  # ruff:ignore[suspicious-url-open-usage]  # http(s) only", mk("B310"),
         "ruff: ignore"),
        ("urlopen(url)  # ruff: ignore[S310]", mk("B310"), "ruff: ignore"),
        ("import os  # ruff: ignore[F401, E501]", mk("F401", "ruff", category="lint"),
         "ruff: ignore"),
        ("urlopen(url)  # ruff:ignore[print]", mk("B310"), None),  # another rule: stays
        ("urlopen(url)  # ruff: ignore", mk("B310"), None),  # no rule named: ruff reads none
        ("eval(x)  # ruff:ignore[suspicious-url-open-usage]", mk("B307"), None),
    ],
)
def test_suppressed_by(line, finding, expected):
    assert suppressed_by(line, finding) == expected


def test_canonical_rule():
    assert canonical_rule("S105") == canonical_rule("B105") == "B105"
    assert canonical_rule("f401") == "F401"
    assert canonical_rule("S1") == "S1"
    assert canonical_rule("name-defined") == canonical_rule("F821")  # mypy and ruff
    assert canonical_rule("syntax") == canonical_rule("syntax-error") == canonical_rule("E999")


def test_filter_reads_real_files_and_multiline_ranges(tmp_path):
    (tmp_path / "a.py").write_text(
        "import os  # noqa\nq = f(\n    1,\n)  # superqode: ignore\nx = 2\n"
    )
    findings = [
        mk("F401", "ruff", 1, category="lint"),
        mk("C1", "ruff", 2, category="lint", end_line=4),  # suppressed on its last line
        mk("X1", "ruff", 5, category="lint"),
        mk("X2", "ruff", 5, category="lint", conf=0.5),  # below the threshold
        mk("X3", "ruff", 5, category="lint", file="missing.py"),
    ]
    res = filter_findings(findings, read_line=FileLines(tmp_path), threshold=0.7)
    assert [f.rule_id for f in res.findings] == ["X1", "X3"]
    assert (res.suppressed, res.below_threshold) == (2, 1)


def test_overlay_text_wins_over_disk(tmp_path):
    (tmp_path / "a.py").write_text("x = 1\n")
    lines = FileLines(tmp_path, {"a.py": b"x = 1  # noqa\n"})
    res = filter_findings([mk("F401", "ruff", 1, category="lint")], read_line=lines)
    assert res.findings == [] and res.suppressed == 1


def test_threshold_is_configurable(tmp_path):
    # Below the threshold: kept, marked as noise (one click away), not hidden.
    f = mk(conf=0.6)
    [low] = filter_findings([f], read_line=FileLines(tmp_path), threshold=0.7).findings
    assert low.id == f.id and low.noise == "low confidence (0.60 < 0.7)"
    assert filter_findings([f], read_line=FileLines(tmp_path), threshold=0.5).findings == [f]


def test_same_problem_from_two_tools_is_kept_once():
    bandit = mk("B105", "bandit", 3, sev=Severity.low, conf=0.8)
    ruff = mk("S105", "ruff", 3, role="lint_tester", sev=Severity.medium, fix_patch_id="p1")
    other_line = mk("B105", "bandit", 9)
    other_rule = mk("B106", "bandit", 3)
    out, dropped = deduplicate([bandit, ruff, other_line, other_rule])
    assert dropped == 1 and len(out) == 3
    kept = out[0]
    assert kept.tool == "ruff" and kept.fix_patch_id == "p1"  # the one with a fix wins
    assert "also:bandit:B105" in kept.tags


def test_dedup_moves_the_fix_to_the_kept_finding():
    strong = mk("B105", "bandit", 3, sev=Severity.high)
    weak_with_fix = mk("S105", "ruff", 3, sev=Severity.low, conf=0.75, fix_patch_id="p9")
    out, _ = deduplicate([strong, weak_with_fix])
    assert len(out) == 1 and out[0].fix_patch_id == "p9"


def test_baseline_roundtrip_counts_duplicates(tmp_path):
    a1 = mk("B105", line=1, snippet="pw = 'x'")
    a2 = a1.model_copy(update={"id": a1.id + "-2", "range": Range(start_line=7)})
    path = baseline.save(tmp_path / "b.json", [a1])
    counts = baseline.load(path)
    assert counts == Counter({a1.id: 1})
    res = filter_findings([a1, a2], read_line=lambda f, n: None, baseline=counts)
    assert res.baseline_filtered == 1 and res.findings == [a2]
    # The id ignores the line: the same problem moved down still matches.
    moved = a1.model_copy(update={"range": Range(start_line=40)})
    assert filter_findings([moved], read_line=lambda f, n: None, baseline=counts).findings == []


@pytest.mark.parametrize(
    ("content", "message"),
    [
        (None, "not found"),
        ("{not json", "not valid JSON"),
        ("[]", "'findings' list"),
        ('{"findings": [{"x": 1}]}', "has no 'id'"),
    ],
)
def test_bad_baseline_files(tmp_path, content, message):
    path = tmp_path / "b.json"
    if content is not None:
        path.write_text(content)
    with pytest.raises(ConfigError, match=message):
        baseline.load(path)


def test_baseline_path_resolution(tmp_path):
    assert baseline.resolve_path(tmp_path, None, None) is None
    assert baseline.resolve_path(tmp_path, None, "b.json") == tmp_path / "b.json"
    assert baseline.resolve_path(tmp_path, tmp_path / "x" / "c.json", "b.json") == tmp_path / "x" / "c.json"
