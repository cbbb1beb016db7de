"""Verifier: patches applied in a sandbox folder, the role's real check re-run,
the folder put back byte for byte."""

from __future__ import annotations

import asyncio
from pathlib import Path

import pytest

from superqode_ls.config import Config
from superqode_ls.models import Patch
from superqode_ls.qe.fix_judge import base_id
from superqode_ls.qe.patching import git_apply, patch_files
from superqode_ls.qe.roles.base import RoleContext
from superqode_ls.qe.roles.lint import LintTester
from superqode_ls.qe.verifier import Verifier
from superqode_ls.workspace.artifacts import Artifacts
from tests import qe_testroles
from tests.conftest import run_git

DIFF = "--- a/m.py\n+++ b/m.py\n@@ -1 +1 @@\n-a = 'PLANTED'\n+a = 'fixed'\n"


def ctx_for(root: Path) -> RoleContext:
    import os

    return RoleContext(
        session_id="qe-20260101-000000-abcdef", project=root, sandbox=root, config=Config(),
        mode="quick", env=dict(os.environ), artifacts=Artifacts(root, "qe-20260101-000000-abcdef"),
    )


def test_patch_files_and_base_id():
    assert patch_files(DIFF) == ["m.py"]
    assert patch_files("not a diff") == []
    assert base_id("b105-0123456789ab-3") == "b105-0123456789ab"
    assert base_id("syntax-error-0123456789ab") == "syntax-error-0123456789ab"


def test_git_apply_plain_folder_inside_a_repository(make_repo, tmp_path):
    # A folder whose parent is a repository must not be patched "through" it.
    outer = make_repo({"README.md": "x\n"}, name="outer")
    inner = outer / "plain"
    inner.mkdir()
    (inner / "m.py").write_text("a = 'PLANTED'\n")
    ok, err = asyncio.run(git_apply(inner, DIFF))
    assert ok, err
    assert (inner / "m.py").read_text() == "a = 'fixed'\n"
    ok, err = asyncio.run(git_apply(inner, DIFF, check_only=True))
    assert not ok and "m.py" in err


def test_git_apply_in_a_repository_subfolder(make_repo):
    repo = make_repo({"sub/dir/m.py": "a = 'PLANTED'\n"})
    ok, err = asyncio.run(git_apply(repo / "sub" / "dir", DIFF))
    assert ok, err
    assert (repo / "sub/dir/m.py").read_text() == "a = 'fixed'\n"
    assert run_git(repo, "diff", "--cached", "--name-only") == ""  # index untouched


_UNUSED_OS = "import os\nimport sys\n\nprint(sys.argv)\n"


def _verify_unused_import(tmp_path, late: bool = False):
    """ruff's F401 fix of ``import os`` verified by a Verifier (its context
    past its deadline with ``late``)."""
    import dataclasses

    (tmp_path / "m.py").write_text(_UNUSED_OS)
    role = LintTester()
    if role.unavailable():
        pytest.skip(role.unavailable())
    ctx = ctx_for(tmp_path)

    async def go():
        out = await role.run(ctx)
        f401 = next(f for f in out.findings if f.rule_id == "F401")
        patch = next(p for p in out.patches if f401.id in p.finding_ids)
        told = (dataclasses.replace(ctx, deadline=asyncio.get_running_loop().time() - 1)
                if late else ctx)
        v = Verifier(sandbox=tmp_path, roles={role.name: role}, contexts={role.name: told},
                     findings_by_role={role.name: out.findings})
        return await v.verify(patch)

    return asyncio.run(go())


def test_ruff_fix_is_verified_and_folder_restored(tmp_path):
    src = _UNUSED_OS
    result = _verify_unused_import(tmp_path)
    assert result.level == "tool" and not result.verified, result.message  # no tests here
    assert (tmp_path / "m.py").read_text() == src


def test_fix_that_leaves_a_new_problem_is_rejected(tmp_path):
    (tmp_path / "m.py").write_text("a = 'PLANTED'\n")
    role = qe_testroles.ToyBadFix()
    ctx = ctx_for(tmp_path)

    async def go():
        out = await role.run(ctx)
        v = Verifier(sandbox=tmp_path, roles={role.name: role}, contexts={role.name: ctx},
                     findings_by_role={role.name: out.findings})
        return await v.verify(out.patches[0])

    result = asyncio.run(go())
    assert not result.verified and "new findings" in result.message
    assert (tmp_path / "m.py").read_text() == "a = 'PLANTED'\n"


def test_patch_that_does_not_apply_or_fixes_nothing(tmp_path):
    (tmp_path / "m.py").write_text("a = 'something else'\n")
    role = qe_testroles.ToyTester()
    ctx = ctx_for(tmp_path)
    v = Verifier(sandbox=tmp_path, roles={role.name: role}, contexts={role.name: ctx},
                 findings_by_role={role.name: []})
    stale = Patch(id="p", description="d", diff=DIFF, role=role.name, finding_ids=["toy1-0123456789ab"])
    result = asyncio.run(v.verify(stale))
    assert not result.verified and "does not apply" in result.message
    (tmp_path / "m.py").write_text("a = 'PLANTED'\n")
    result = asyncio.run(v.verify(stale))
    assert not result.verified and "not reproduced" in result.message
    assert (tmp_path / "m.py").read_text() == "a = 'PLANTED'\n"
    orphan = stale.model_copy(update={"role": "nobody"})
    assert "did not run" in asyncio.run(v.verify(orphan)).message


class CountingToy(qe_testroles.ToyTester):
    name = "toy_tester"

    def __init__(self):
        self.rechecks: list[list[str]] = []

    async def recheck(self, ctx, files):
        self.rechecks.append(sorted(files))
        return await super().recheck(ctx, files)


def test_verify_many_batches_patches_on_different_files(tmp_path):
    (tmp_path / "a.py").write_text("a = 'PLANTED'\nb = 'PLANTED'\n")
    (tmp_path / "b.py").write_text("c = 'PLANTED'\n")
    (tmp_path / "c.py").write_text("d = 'PLANTED'\n")
    role = CountingToy()
    ctx = ctx_for(tmp_path)

    async def go():
        out = await role.run(ctx)
        # m.py does not exist: round one's combined apply fails and falls
        # back to one patch at a time.
        broken = out.patches[0].model_copy(update={"id": "broken", "diff": DIFF, "files": ["m.py"]})
        v = Verifier(sandbox=tmp_path, roles={role.name: role}, contexts={role.name: ctx},
                     findings_by_role={role.name: out.findings})
        seen = []
        results = await v.verify_many([*out.patches, broken], seen.append)
        return out, results, seen

    out, results, seen = asyncio.run(go())
    assert len(out.patches) == 4 and len(seen) == 5
    assert all(results[p.id].level == "tool" for p in out.patches), [r.message for r in results.values()]
    assert not results["broken"].verified
    # a.py has two fixes that touch: two copies, the second beside it (with
    # its unchanged twin), all in one re-run with the three files (not m.py:
    # the broken patch never applied).
    assert role.rechecks == [["a.py", "a_sqcopy0_a.py", "a_sqcopy1_a.py", "b.py", "c.py"]]
    assert (tmp_path / "a.py").read_text() == "a = 'PLANTED'\nb = 'PLANTED'\n"
    assert (tmp_path / "b.py").read_text() == "c = 'PLANTED'\n"


def test_recheck_that_reports_nothing_is_not_trusted(tmp_path):
    (tmp_path / "a.py").write_text("a = 'PLANTED'\nb = 'PLANTED'\n")
    role = qe_testroles.ToyTester()
    ctx = ctx_for(tmp_path)

    class Broken(qe_testroles.ToyTester):
        async def recheck(self, ctx, files):
            return []  # as a role whose tool crashed would

    async def go():
        out = await role.run(ctx)
        broken = Broken()
        v = Verifier(sandbox=tmp_path, roles={role.name: broken}, contexts={role.name: ctx},
                     findings_by_role={role.name: out.findings})
        return await v.verify(out.patches[0])

    result = asyncio.run(go())
    assert not result.verified and "gave no result (it reported nothing" in result.message


def test_fix_that_clears_the_whole_file_is_verified(tmp_path):
    (tmp_path / "a.py").write_text("a = 'PLANTED'\nb = 'PLANTED'\n")
    role = qe_testroles.ToyTester()
    ctx = ctx_for(tmp_path)
    both = "--- a/a.py\n+++ b/a.py\n@@ -1,2 +1,2 @@\n-a = 'PLANTED'\n-b = 'PLANTED'\n+a = 'x'\n+b = 'y'\n"

    async def go():
        out = await role.run(ctx)
        patch = out.patches[0].model_copy(update={"diff": both})
        v = Verifier(sandbox=tmp_path, roles={role.name: role}, contexts={role.name: ctx},
                     findings_by_role={role.name: out.findings})
        return await v.verify(patch)

    result = asyncio.run(go())
    assert result.level == "tool", result.message
    assert (tmp_path / "a.py").read_text() == "a = 'PLANTED'\nb = 'PLANTED'\n"


def test_a_recheck_that_ran_out_of_time_says_so_and_verifies_nothing(tmp_path):
    """sqlalchemy's "re-running lint_tester reported nothing": the re-check
    of the fixed file ran out of the session's time. An empty answer for
    want of time is no evidence: the fix is not verified and the line says
    why (once read as "the fix cleared it": verified)."""
    src = _UNUSED_OS
    result = _verify_unused_import(tmp_path, late=True)
    assert not result.verified and result.level != "tool", (result.level, result.message)
    assert result.message == ("not verified: re-running lint_tester gave no result "
                              "(ruff ran out of time)"), result.message
    assert (tmp_path / "m.py").read_text() == src
