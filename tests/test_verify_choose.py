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


def test_over_the_cap_counts_only_the_fixes_that_may_be_verified():
    from superqode_ls.qe.verify_step import over_the_cap

    pairs = [_pair(n, Severity.low) for n in range(3)]
    findings = [f for f, _ in pairs]
    patches = [p for _, p in pairs]
    assert over_the_cap(patches, findings, cap=2) and not over_the_cap(patches, findings, cap=3)
    # an unsafe fix and a suppression are never verified: not counted
    findings[0] = findings[0].model_copy(update={"tags": ["fix:unsafe"]})
    patches[1] = patches[1].model_copy(update={"kind": "suppression"})
    assert not over_the_cap(patches, findings, cap=1)


def test_with_no_time_left_the_step_labels_the_fixes_and_prepares_nothing(monkeypatch, tmp_path):
    """Past its deadline nothing can be verified: the fixes say so, over the
    cap or out of time, and no tests are looked for, no verifier made."""
    import asyncio

    from superqode_ls.qe import verify_step

    def refused(*a, **k):
        raise AssertionError("prepared a verification that cannot run")

    monkeypatch.setattr(verify_step, "covering_tests", refused)
    monkeypatch.setattr(verify_step, "Verifier", refused)
    pairs = [_pair(n, Severity.medium) for n in range(3)]
    patches = {p.id: p for _, p in pairs}

    class Session:
        isolation = "full"

    async def go():
        await verify_step.verify(
            patches=patches, findings=[f for f, _ in pairs], roles={}, contexts={}, found={},
            session=Session(), root=tmp_path, deadline=asyncio.get_running_loop().time() - 1,
            cap=2, full_suite=False, trusted=True, emit=lambda *a, **k: None)

    asyncio.run(go())
    said = sorted(p.verification for p in patches.values())
    assert said[:2] == [verify_step.NO_TIME] * 2 and said[2].startswith(verify_step.OVER_CAP)
    assert not any(p.verified for p in patches.values())


def _step(patches, findings, root, cap):
    import asyncio

    from superqode_ls.qe import verify_step

    class Session:
        isolation = "full"

    async def go():
        await verify_step.verify(
            patches=patches, findings=findings, roles={}, contexts={}, found={},
            session=Session(), root=root, deadline=asyncio.get_running_loop().time() - 1,
            cap=cap, full_suite=False, trusted=True, emit=lambda *a, **k: None)

    asyncio.run(go())


def test_only_the_fixes_the_cap_reaches_are_read_for_never_verifiable(monkeypatch, tmp_path):
    """The re-export check parses each fixed module with its fix applied:
    read for every fix of a large project (14,000) it took minutes of a quick
    run; fixes past the cap are never tried, so they are not read."""
    from superqode_ls.qe import verify_step

    read: list[str] = []

    def drops(root, rel, diff, reads):
        read.append(rel)
        return None

    monkeypatch.setattr(verify_step, "drops_export", drops)
    pairs = [_pair(n, Severity.medium) for n in range(50)]
    patches = {p.id: p for _, p in pairs}
    _step(patches, [f for f, _ in pairs], tmp_path, cap=3)
    assert len(read) == 3
    over = [p for p in patches.values() if (p.verification or "").startswith(verify_step.OVER_CAP)]
    assert len(over) == 47 and not any(p.verified for p in patches.values())


def test_a_never_verifiable_fix_the_cap_reaches_keeps_its_label_and_the_next_takes_its_place(
        monkeypatch, tmp_path):
    """The real twin: a fix that removes an exported name is labelled so and
    never chosen, and the cap goes on to the next fix."""
    from superqode_ls.qe import verify_step

    def drops(root, rel, diff, reads):
        return "m1 is listed in __all__" if rel == "m1.py" else None

    monkeypatch.setattr(verify_step, "drops_export", drops)
    pairs = [_pair(n, Severity.medium) for n in range(5)]
    patches = {p.id: p for _, p in pairs}
    never: dict[str, str] = {}
    todo, over = choose(patches, [f for f, _ in pairs], cap=2, root=tmp_path, never=never)
    assert [p.id for p in todo] == ["fix-0", "fix-2"] and list(never) == ["fix-1"]
    assert [p.id for p in over] == ["fix-3", "fix-4"]
    _step(patches, [f for f, _ in pairs], tmp_path, cap=2)
    assert patches["fix-1"].verification.startswith(verify_step.REEXPORT)
    assert "__all__" in patches["fix-1"].verification and not patches["fix-1"].verified
