"""Findings and tracked findings as the server's feature tests build them."""

from __future__ import annotations

from superqode_ls.models import Finding, Range, Severity
from superqode_ls.server.store import Tracked


def finding(**kw) -> Finding:
    base = {"role": "lint_tester", "tool": "ruff", "rule_id": "F401", "title": "unused import",
            "message": "`os` imported but unused", "severity": Severity.medium, "file": "a.py",
            "range": Range(start_line=2, start_col=1, end_line=2, end_col=3)}
    base.update(kw)
    return Finding(**base).with_stable_id()


def tracked(sl, el=None, snippet=None, ec=5) -> Tracked:
    f = finding(snippet=snippet)
    return Tracked(finding=f, session_id="s", uri="file:///a.py", folder="/", sl=sl, sc=0,
                   el=sl if el is None else el, ec=ec)
