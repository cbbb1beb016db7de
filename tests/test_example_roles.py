"""Each role, run directly on a copy of the bundled example, finds every
problem planted for it at the right line, offers a fix that git applies for
every fixable plant (and the fix makes the problem go away), and leaves the
copy exactly as it was."""

from __future__ import annotations

import asyncio
import json
import shutil
from pathlib import Path

from superqode_ls.qe.roles import get_role
from tests.conftest import run_git
from tests.role_helpers import at, git_apply, git_apply_check, make_ctx, tree_state

ROOT = Path(__file__).resolve().parents[1]
EXPECTED = json.loads((ROOT / "tests/data/shop_expected.json").read_text())["problems"]
ROLES = ("security_tester", "lint_tester", "type_tester", "unit_tester")


async def _run_all(ctx):
    # As the pipeline runs them: in parallel, in one shared sandbox.
    outs = await asyncio.gather(*(get_role(name).run(ctx) for name in ROLES))
    return dict(zip(ROLES, outs))


def test_every_plant_found_and_fixable_ones_fixed(example_copy, tmp_path):
    before = tree_state(example_copy)
    status = run_git(example_copy, "status", "--porcelain", "--ignored")
    outs = asyncio.run(_run_all(make_ctx(example_copy)))
    assert tree_state(example_copy) == before
    assert run_git(example_copy, "status", "--porcelain", "--ignored") == status

    for name, out in outs.items():
        assert out.status == "ok", (name, out.reason)
    fixable = []
    for plant in EXPECTED:
        if plant["role"] not in ROLES:
            continue  # plants for roles another module tests
        out = outs[plant["role"]]
        hits = at(out.findings, plant["rule_id"], plant["file"], plant["line"])
        assert len(hits) == 1, (plant, [(f.rule_id, f.file, f.range) for f in out.findings])
        (finding,) = hits
        assert finding.tool == plant["tool"] and finding.id
        assert finding.severity.value == plant.get("severity", finding.severity.value), plant
        assert finding.related_rules == plant.get("related_rules", finding.related_rules), plant
        if "evidence" in plant:
            ev = plant["evidence"]
            assert any(e.file == ev["file"] and e.line == ev["line"] for e in finding.evidence)
        if plant["fixable"]:
            fixable.append((plant, finding, out))
        else:
            assert finding.fix_patch_id is None or plant["role"] == "lint_tester"

    assert {p["rule_id"] for p, _, _ in fixable} == {"B506", "B324", "F401", "F841"}
    for plant, finding, out in fixable:
        (patch,) = [p for p in out.patches if p.id == finding.fix_patch_id]
        check = git_apply_check(example_copy, patch.diff)
        assert check.returncode == 0, check.stderr
        # Verified the way the verifier does it: apply in a scratch copy,
        # re-check the file, the problem is gone.
        scratch = tmp_path / f"scratch-{finding.id}"
        shutil.copytree(example_copy, scratch)
        git_apply(scratch, patch.diff)
        role = get_role(plant["role"])
        again = asyncio.run(role.recheck(make_ctx(scratch), [plant["file"]]))
        assert not [f for f in again if f.id == finding.id], plant
        assert not at(again, plant["rule_id"], plant["file"], plant["line"])


def test_only_planted_problems_above_info(example_copy):
    """No surprise findings: anything above info that is not planted would be
    noise in the README's main demo."""
    outs = asyncio.run(_run_all(make_ctx(example_copy)))
    planted = {(p["rule_id"], p["file"], p["line"]) for p in EXPECTED}
    extra = [
        (f.rule_id, f.file, f.range.start_line if f.range else None)
        for out in outs.values()
        for f in out.findings
        if f.severity.value != "info"
        and (f.rule_id, f.file, f.range and f.range.start_line) not in planted
    ]
    assert extra == []
