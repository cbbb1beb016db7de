"""server/convert.py: findings to LSP diagnostics, ranges in the negotiated position encoding."""

from __future__ import annotations

import pytest

from superqode_ls.models import Evidence, Range, Severity
from superqode_ls.server import convert, fixes
from superqode_ls.server.store import Tracked
from tests.server.findings import finding


@pytest.mark.parametrize(
    "encoding,expected",
    [("utf-16", (10, 17)), ("utf-8", (13, 20)), ("utf-32", (9, 16))],
)
def test_columns_follow_the_negotiated_encoding(encoding, expected):
    # "é" is 1 UTF-16 unit / 2 UTF-8 bytes; "😀" is 2 UTF-16 units / 4 UTF-8 bytes.
    lines = ['s = "é😀"  PLANTED']
    col = lines[0].index("PLANTED")
    rng = convert.lsp_range(lines, 0, col - 1, 0, col + 6, encoding)
    assert (rng["start"]["character"], rng["end"]["character"]) == expected
    assert convert.from_client_col(lines, 0, expected[0], encoding) == col - 1


def test_model_range_is_one_based_exclusive_and_widened_when_empty():
    lines = ["import os", "x = 1"]
    assert convert.model_range_to_points(Range(start_line=1, start_col=8, end_line=1, end_col=10), lines) == (0, 7, 0, 9)
    # No end: to the end of the line; no range: the first line.
    assert convert.model_range_to_points(Range(start_line=2, start_col=1), lines) == (1, 0, 1, 5)
    assert convert.model_range_to_points(None, lines) == (0, 0, 0, 9)


def test_diagnostic_fields_follow_the_contract():
    f = finding(help_uri="https://docs.astral.sh/ruff/rules/unused-import",
                evidence=[Evidence(message="seen here", file="b.py", line=3)], severity=Severity.high)
    d = convert.to_diagnostic(f, session_id="qe-1", version=4, rng={"start": {}, "end": {}},
                              uri_for=lambda rel: f"file:///w/{rel}")
    # ruff's F401 is a Warning, as ruff's own server shows it, whatever the model rates it.
    assert d["source"] == "superqode" and d["code"] == "F401" and d["severity"] == 2
    assert d["codeDescription"] == {"href": "https://docs.astral.sh/ruff/rules/unused-import"}
    assert d["data"] == {"findingId": f.id, "sessionId": "qe-1", "version": 4}
    assert d["relatedInformation"][0]["location"]["uri"] == "file:///w/b.py"
    assert d["relatedInformation"][0]["location"]["range"]["start"]["line"] == 2
    assert d["message"] == "unused import: `os` imported but unused"
    stale = convert.to_diagnostic(f, session_id="x", version=None, rng={}, uri_for=str, stale=True)
    assert stale["message"].startswith("[stale")


@pytest.mark.parametrize(
    "kw,expected",
    [
        # ruff's lint rules: a Warning, whatever the severity model says...
        (dict(rule_id="F401", severity=Severity.low), 2),
        (dict(rule_id="E501", severity=Severity.info), 2),
        (dict(rule_id="F632", severity=Severity.high), 2),
        # ...but an undefined name, an unreadable file and a syntax error: Errors.
        (dict(rule_id="F821", severity=Severity.high), 1),
        (dict(rule_id="E902", severity=Severity.high), 1),
        (dict(rule_id="invalid-syntax", severity=Severity.high, category="syntax"), 1),
        # Noise stays a Hint, a ruff finding too.
        (dict(rule_id="F401", severity=Severity.low, noise="in tests code"), 4),
        (dict(rule_id="F821", severity=Severity.high, noise="in examples code"), 4),
        # Security keeps the model's mapping: bandit's, ruff's flake8-bandit rules,
        # and a ruff finding the model raised for another tool's rating.
        (dict(tool="bandit", rule_id="B105", severity=Severity.high), 1),
        (dict(tool="bandit", rule_id="B404", severity=Severity.info), 4),
        (dict(rule_id="S105", severity=Severity.high), 1),
        (dict(rule_id="S105", severity=Severity.medium, related_rules=["B105"]), 2),
        (dict(rule_id="E712", severity=Severity.high,
              severity_reason="high, as bandit B105 rates the same line"), 1),
        # Types keep theirs too.
        (dict(tool="mypy", rule_id="arg-type", severity=Severity.medium), 2),
        (dict(tool="mypy", rule_id="syntax", severity=Severity.high), 1),
    ],
)
def test_severity_follows_ruffs_server_for_lint_and_the_model_elsewhere(kw, expected):
    f = finding(**kw)
    assert convert.diagnostic_severity(f) == expected
    d = convert.to_diagnostic(f, session_id="s", version=None, rng={}, uri_for=str)
    assert d["severity"] == expected


def test_fix_all_takes_what_was_shown_and_leaves_the_hints():
    def t(**kw) -> Tracked:
        return Tracked(finding=finding(**kw), session_id="s", uri="file:///a.py", folder="/",
                       sl=1, sc=0, el=1, ec=5)

    # An info-level ruff rule is a Warning now: shown, so Fix All takes it.
    assert fixes.shown(t(rule_id="I001", severity=Severity.info))
    # Noise is a Hint however the model rates it: never shown, never fixed by Fix All.
    assert not fixes.shown(t(rule_id="F401", severity=Severity.medium, noise="in examples code"))
    assert not fixes.shown(t(tool="bandit", rule_id="B404", severity=Severity.info))


def test_diagnostic_message_names_related_rules_and_severity_reason():
    f = finding(rule_id="B105", tool="bandit", title="Possible hardcoded password: '****'",
                message="B105 (hardcoded_password_string): Possible hardcoded password: '****'",
                related_rules=["secret-generic"], severity=Severity.medium,
                severity_reason="in tests ('tests/'): shown one level lower than high")
    assert convert.diagnostic_message(f).endswith(
        "Possible hardcoded password: '****' "
        "[also secret-generic] [medium: in tests ('tests/'): shown one level lower than high]")
