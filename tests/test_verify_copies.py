"""Fixes the optimistic round leaves are judged on copies of their files, all
files at once, in a few rounds however many fixes a file has (issue 17:
twenty fixes to one import block were twenty rounds)."""

from __future__ import annotations

import asyncio
import subprocess
import tempfile
from pathlib import Path

from superqode_ls.qe import verifier as verifier_mod
from superqode_ls.qe.roles.lint import LintTester
from superqode_ls.qe.verifier import Verifier
from superqode_ls.qe.verify_alone import changes, fits, merged, split_lines
from tests.test_verifier import CountingToy, ctx_for

# Four fixes on neighbouring lines: their diffs' context overlaps, so git
# cannot apply them together and the optimistic round takes one per file.
BLOCK = "a = f'a'\nb = f'b'\nc = f'c'\nd = f'd'\n"


class CountingLint(LintTester):
    def __init__(self):
        self.rechecks: list[list[str]] = []
        self.copies: list[str] = []

    async def recheck(self, ctx, files):
        self.rechecks.append(sorted(files))
        return await super().recheck(ctx, files)

    async def recheck_text(self, ctx, rel, text):
        self.copies.append(rel)
        return await super().recheck_text(ctx, rel, text)


class CopyToy(CountingToy):
    """The toy check, also on a text as if it were the file."""

    def __init__(self):
        super().__init__()
        self.copies: list[str] = []

    async def recheck_text(self, ctx, rel, text):
        self.copies.append(rel)
        with tempfile.TemporaryDirectory() as d:
            (Path(d) / rel).parent.mkdir(parents=True, exist_ok=True)
            (Path(d) / rel).write_text(text)
            findings, _ = self.scan(Path(d), [rel])
        return findings


def _count_rounds(monkeypatch) -> list[int]:
    rounds: list[int] = []
    real = verifier_mod.check_texts

    async def counting(role, ctx, copies, out_of_time):
        rounds.append(len(copies))
        return await real(role, ctx, copies, out_of_time)

    monkeypatch.setattr(verifier_mod, "check_texts", counting)
    return rounds


def _verify(root: Path, role, patches_of=None):
    ctx = ctx_for(root)

    async def go():
        out = await role.run(ctx)
        patches = patches_of(out) if patches_of else out.patches
        v = Verifier(sandbox=root, roles={role.name: role}, contexts={role.name: ctx},
                     findings_by_role={role.name: out.findings})
        return out, patches, await v.verify_many(patches)

    return asyncio.run(go())


def test_forty_ruff_fixes_across_ten_files_take_two_tool_rounds(tmp_path, monkeypatch):
    (tmp_path / "pyproject.toml").write_text('[tool.ruff.lint]\nselect = ["F541"]\n')
    for i in range(10):
        (tmp_path / f"m{i}.py").write_text(BLOCK)
    rounds = _count_rounds(monkeypatch)
    role = CountingLint()
    out, _, results = _verify(tmp_path, role)
    assert len(out.patches) == 40 and len(results) == 40
    assert all(r.level == "tool" for r in results.values()), [r.message for r in results.values()]
    # One re-run in the sandbox for all ten files (a fix each), then one round
    # of copies: lines two and four of a file in one, line three in another.
    assert role.rechecks == [[f"m{i}.py" for i in range(10)]]
    assert rounds == [20] and len(role.copies) == 20
    assert all((tmp_path / f"m{i}.py").read_text() == BLOCK for i in range(10))  # never written


def test_a_fix_that_leaves_a_new_finding_is_split_out_the_rest_pass_together(tmp_path, monkeypatch):
    text = "".join(f"x{i} = 'PLANTED'\n" for i in range(6))
    (tmp_path / "a.py").write_text(text)
    rounds = _count_rounds(monkeypatch)
    role = CopyToy()

    def with_bad(out):
        p = next(p for p in out.patches if "x3 = 'fixed'" in p.diff)
        bad = p.model_copy(update={"id": "bad", "diff": p.diff.replace(
            "x3 = 'fixed'", "x3 = 'fixed'; z = 'PLANTED'")})
        return [q for q in out.patches if q is not p] + [bad]

    _, patches, results = _verify(tmp_path, role, with_bad)
    assert not results["bad"].verified and "new findings" in results["bad"].message
    assert all(results[p.id].level == "tool" for p in patches if p.id != "bad")
    # The copies of round one (lines two, four, six / three, five) fail where
    # the bad fix is; round two: the fix nearest the new finding alone, the
    # others of its copy together.
    assert len(rounds) == 2 and rounds[1] == 2
    assert (tmp_path / "a.py").read_text() == text


def test_a_role_without_text_checks_keeps_the_careful_rounds(tmp_path):
    (tmp_path / "a.py").write_text("a = 'PLANTED'\nb = 'PLANTED'\n")
    role = CountingToy()
    _, _, results = _verify(tmp_path, role)
    assert all(r.level == "tool" for r in results.values())
    assert role.rechecks == [["a.py"], ["a.py"]]


def test_merged_copy_equals_git_applying_the_diffs_one_after_another(tmp_path):
    (tmp_path / "pyproject.toml").write_text('[tool.ruff.lint]\nselect = ["F541"]\n')
    text = "x = 1\n" + BLOCK + "\n\ny = f'y'\n"
    (tmp_path / "m.py").write_text(text)
    out = asyncio.run(LintTester().run(ctx_for(tmp_path)))
    lines = split_lines(text)
    parts = [changes(lines, p.diff) for p in out.patches]
    assert all(parts)
    # Lines two and four of the block and the last line fit in one copy.
    chosen = [parts[1], parts[3], parts[4]]
    assert fits(parts[1], parts[3]) and not fits(parts[1], parts[2])
    copy = merged(lines, chosen)
    subprocess.run(["git", "init", "-q"], cwd=tmp_path, check=True)
    for i in (1, 3, 4):
        (tmp_path / "p.diff").write_text(out.patches[i].diff)
        subprocess.run(["git", "apply", "-C1", "p.diff"], cwd=tmp_path, check=True)
    assert copy == (tmp_path / "m.py").read_text()
    assert "b = 'b'" in copy and "c = f'c'" in copy and "y = 'y'" in copy


def test_a_diff_whose_context_is_not_in_the_file_is_not_copied():
    diff = "--- a/m.py\n+++ b/m.py\n@@ -1,2 +1,2 @@\n one\n-two\n+2\n"
    assert changes(split_lines("one\ntwo\n"), diff) is not None
    assert changes(split_lines("one\nthree\n"), diff) is None
    assert changes(split_lines("uno\ntwo\n"), diff) is None
    assert changes(split_lines("one\ntwo"), diff + "\\ No newline at end of file\n") is None
