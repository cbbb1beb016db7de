"""Which fixes the verifier spends its cap on: worth acting on before noise,
then the most severe; suppressions and unsafe fixes never."""

from __future__ import annotations

from superqode_ls.models import Finding, Patch, Range, Severity
from superqode_ls.qe.verify_step import choose


def _pair(n: int, severity: Severity, noise: str | None = None) -> tuple[Finding, Patch]:
    pid = f"fix-{n}"
    f = Finding(role="lint_tester", tool="ruff", rule_id="F401", title="t", message="m",
                severity=severity, confidence=1.0, category="lint", file=f"m{n}.py",
                range=Range(start_line=1, end_line=1), fix_patch_id=pid, noise=noise)
    return f, Patch(id=pid, description="d", diff="", files=[f"m{n}.py"], kind="fix")


def test_the_cap_goes_to_findings_worth_acting_on_first():
    pairs = [_pair(1, Severity.high, noise="in tests code"), _pair(2, Severity.low),
             _pair(3, Severity.medium), _pair(4, Severity.critical, noise="an advisory")]
    findings = [f for f, _ in pairs]
    patches = {p.id: p for _, p in pairs}
    todo, over = choose(patches, findings, cap=2)
    assert [p.id for p in todo] == ["fix-3", "fix-2"]
    assert [p.id for p in over] == ["fix-4", "fix-1"]
