"""server/details.py: everything said about one finding (hover and "show
details" say the same), and a run's fixes counted in the report's words."""

from __future__ import annotations

from superqode_ls.models import Evidence, Patch, Severity
from superqode_ls.server.details import details, fix_counts
from superqode_ls.server.server import SuperQodeServer
from tests.server.findings import finding, tracked


def patch(pid: str = "p1", **kw) -> Patch:
    return Patch(id=pid, description="remove the import", diff="", **kw)


def with_fix(p: Patch, **kw):
    t = tracked(1)
    t.finding = finding(fix_patch_id=p.id, **kw)
    t.patch = p
    return t


def test_details_name_rule_severity_role_tool_message_and_link():
    t = tracked(1)
    t.finding = finding(help_uri="https://docs.astral.sh/ruff/rules/unused-import",
                        severity=Severity.high)
    ls = SuperQodeServer()
    md = details(ls, t, md=True)
    assert md.startswith("**F401** (high, lint_tester/ruff): unused import: `os` imported but unused")
    assert md.endswith("[F401 rule](https://docs.astral.sh/ruff/rules/unused-import)")
    plain = details(ls, t, md=False)
    assert plain.startswith("F401 (high, lint_tester/ruff): ") and "**" not in plain
    assert plain.endswith("\n\nhttps://docs.astral.sh/ruff/rules/unused-import")
    assert "fix available" not in plain.lower()  # no fix: none is offered


def test_evidence_is_listed_unless_it_repeats_the_message():
    t = tracked(1)
    t.finding = finding(evidence=[Evidence(message="`os` imported but unused"),
                                  Evidence(message="also imported in b.py", file="b.py", line=3)])
    text = details(SuperQodeServer(), t, md=False)
    assert text.count("`os` imported but unused") == 1
    assert "\n- also imported in b.py" in text


def test_the_fix_is_described_by_how_far_it_was_verified():
    ls = SuperQodeServer()
    cases = [
        (patch(verified=True, verified_by="tests"), "Verified fix available"),
        (patch(verified_by="tool"), "Fix available, tool-verified only"),
        (patch(), "Unverified fix available."),
        (patch(kind="suppression"), "Suppression available (silences the finding; does not fix it)."),
    ]
    for p, offer in cases:
        text = details(ls, with_fix(p), md=True)
        assert text.endswith(offer) or text.split("\n\n")[-1].startswith(offer), (p.label, text)
    # A finding whose run named no fix offers none, even with a patch attached.
    t = with_fix(patch())
    t.finding = finding()
    assert "fix available" not in details(ls, t, md=True).lower()


def test_fix_counts_say_verified_only_for_tested_fixes():
    assert fix_counts([]) == "0 verified fix(es)"
    fixes = [patch("a", verified=True, verified_by="tests"), patch("b", verified_by="tool"),
             patch("c", verified_by="tool"), patch("d"),
             patch("e", kind="suppression", verified=True)]
    assert fix_counts(fixes) == "1 verified fix(es), 2 tool-verified only"
    assert fix_counts(iter(fixes[:1])) == "1 verified fix(es)"


def test_a_suppression_is_titled_by_what_it_writes():
    """"SuperQode: suppress B324 (...)" said neither what the edit writes nor
    that it is no fix; a one-line suppression says both."""
    from superqode_ls.server.code_actions import fix_title

    diff = ("--- a/s.py\n+++ b/s.py\n@@ -1 +1 @@\n-    return hashlib.sha1(string)\n"
            "+    return hashlib.sha1(string, usedforsecurity=False)\n")
    t = with_fix(patch(kind="suppression"), rule_id="B324", title="Use of weak SHA1 hash for security")
    t.patch = t.patch.model_copy(update={"diff": diff})
    assert fix_title(t, t.patch) == \
        "SuperQode (B324): add `usedforsecurity=False` (silences it, does not fix it)"
    # A patch that rewrites more than it adds keeps the general title.
    t.patch = t.patch.model_copy(update={"diff": diff.replace("-    return hashlib", "-    return other")})
    assert fix_title(t, t.patch) == "SuperQode: suppress B324 (Use of weak SHA1 hash for security)"
