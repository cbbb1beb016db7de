"""server/convert.py: findings to LSP diagnostics, ranges in the negotiated position encoding."""

from __future__ import annotations

import pytest

from superqode_ls.models import Evidence, Range, Severity
from superqode_ls.server import convert
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
    assert d["source"] == "superqode" and d["code"] == "F401" and d["severity"] == 1
    assert d["codeDescription"] == {"href": "https://docs.astral.sh/ruff/rules/unused-import"}
    assert d["data"] == {"findingId": f.id, "sessionId": "qe-1", "version": 4}
    assert d["relatedInformation"][0]["location"]["uri"] == "file:///w/b.py"
    assert d["relatedInformation"][0]["location"]["range"]["start"]["line"] == 2
    assert d["message"] == "unused import: `os` imported but unused"
    stale = convert.to_diagnostic(f, session_id="x", version=None, rng={}, uri_for=str, stale=True)
    assert stale["message"].startswith("[stale")


def test_diagnostic_message_names_related_rules_and_severity_reason():
    f = finding(rule_id="B105", tool="bandit", title="Possible hardcoded password: '****'",
                message="B105 (hardcoded_password_string): Possible hardcoded password: '****'",
                related_rules=["secret-generic"], severity=Severity.medium,
                severity_reason="in tests ('tests/'): shown one level lower than high")
    assert convert.diagnostic_message(f).endswith(
        "Possible hardcoded password: '****' "
        "[also secret-generic] [medium: in tests ('tests/'): shown one level lower than high]")
