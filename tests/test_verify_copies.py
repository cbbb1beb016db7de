"""Fixes the optimistic round leaves are judged on merged copies of their
files, one tool re-run per round over all files, in a few rounds however many
fixes a file has (issue 17: twenty fixes to one import block were twenty
rounds)."""

from __future__ import annotations

import asyncio
import subprocess
from pathlib import Path

from superqode_ls.qe.roles._patches import split_lines
from superqode_ls.qe.roles.lint import LintTester
from superqode_ls.qe.verifier import Verifier
from superqode_ls.qe.verify_copies import beside, changes, fits, merged
from tests.test_verifier import CountingToy, ctx_for

# Four fixes on neighbouring lines: their diffs' context overlaps, so git
# cannot apply them together and the optimistic round takes one per file.
BLOCK = "a = f'a'\nb = f'b'\nc = f'c'\nd = f'd'\n"
BLOCK8 = "".join(f"v{i} = f'{i}'\n" for i in range(8))


class CountingLint(LintTester):
    def __init__(self):
        self.rechecks: list[list[str]] = []

    async def recheck(self, ctx, files):
        self.rechecks.append(sorted(files))
        return await super().recheck(ctx, files)


def _verify(root: Path, role, patches_of=None):
    ctx = ctx_for(root)

    async def go():
        out = await role.run(ctx)
        patches = patches_of(out) if patches_of else out.patches
        v = Verifier(sandbox=root, roles={role.name: role}, contexts={role.name: ctx},
                     findings_by_role={role.name: out.findings})
        return out, patches, await v.verify_many(patches)

    return asyncio.run(go())


def test_forty_ruff_fixes_on_neighbouring_lines_of_five_files_take_one_re_run(tmp_path):
    """Eight fixes on neighbouring lines per file: git applies one per file
    (their hunks' context overlaps), which was eight rounds; merged copies
    hold every other line: two copies per file, the second checked beside
    the file with its unchanged twin: one ruff run over the five files.
    (No tests can run here, so no optimistic round in the sandbox first.)"""
    (tmp_path / "pyproject.toml").write_text('[tool.ruff.lint]\nselect = ["F541"]\n')
    for i in range(5):
        (tmp_path / f"m{i}.py").write_text(BLOCK8)
    role = CountingLint()
    out, _, results = _verify(tmp_path, role)
    assert len(out.patches) == 40 and len(results) == 40
    assert all(r.level == "tool" for r in results.values()), [r.message for r in results.values()]
    files = [f"m{i}.py" for i in range(5)]
    assert role.rechecks == [sorted(n for f in files for n in (f, *beside(f, 2)))]
    assert all((tmp_path / f).read_text() == BLOCK8 for f in files)  # put back
    assert not list(tmp_path.glob("*sqcopy*"))  # the copies beside removed


def test_a_fix_that_leaves_a_new_finding_is_split_out_the_rest_pass_together(tmp_path):
    text = "".join(f"x{i} = 'PLANTED'\n" for i in range(8))
    (tmp_path / "a.py").write_text(text)
    role = CountingToy()

    def with_bad(out):
        p = next(p for p in out.patches if "x4 = 'fixed'" in p.diff)
        bad = p.model_copy(update={"id": "bad", "diff": p.diff.replace(
            "x4 = 'fixed'", "x4 = 'fixed'; z = 'PLANTED'")})
        return [q for q in out.patches if q is not p] + [bad]

    _, patches, results = _verify(tmp_path, role, with_bad)
    assert not results["bad"].verified and "new findings" in results["bad"].message
    assert all(results[p.id].level == "tool" for p in patches if p.id != "bad")
    # No tests can run here: the copies settle all (every other line in one),
    # the bad fix's new finding is on the line it writes, so it is rejected
    # with its copy's round and the others of that copy go again together.
    # One fix per round took eight rounds.
    assert "on the lines this fix writes" in results["bad"].message
    assert len(role.rechecks) <= 4, role.rechecks
    assert all("a.py" in r for r in role.rechecks)
    assert not list(tmp_path.glob("*sqcopy*"))
    assert (tmp_path / "a.py").read_text() == text


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


def test_copies_beside_keep_the_name_patterns_and_skip_special_names():
    names = beside("pkg/test_io.py", 3)
    assert names == ["pkg/test_io_sqcopy0_test_io.py", "pkg/test_io_sqcopy1_test_io.py",
                     "pkg/test_io_sqcopy2_test_io.py"]
    # ``test_*.py`` and ``*_io.py`` still match every name
    assert all(n.split("/")[1].startswith("test_") and n.endswith("_io.py") for n in names)
    assert beside("pkg/__init__.py", 2) is None and beside("conftest.py", 2) is None


def _eight_fixes_and(tmp_path, config: str, mode: int | None = None, head: str = ""):
    (tmp_path / "pyproject.toml").write_text(config)
    (tmp_path / "m.py").write_text(head + BLOCK8)
    if mode is not None:
        (tmp_path / "m.py").chmod(mode)
    role = CountingLint()
    _, _, results = _verify(tmp_path, role)
    assert len(results) == 8 and all(r.level == "tool" for r in results.values()), results
    assert (tmp_path / "m.py").read_text() == head + BLOCK8
    assert not [n for n in tmp_path.glob("*sqcopy*") if not n.is_symlink()]
    return role


def test_a_name_that_changes_the_tools_verdict_keeps_the_files_rounds(tmp_path):
    """A per-file ignore for m.py does not match the copies beside it: their
    unchanged twin reports the F401 that m.py does not, so m.py's copies go
    in rounds at its own path, as before."""
    role = _eight_fixes_and(tmp_path, '[tool.ruff.lint]\nselect = ["F541", "F401"]\n'
                            '[tool.ruff.lint.per-file-ignores]\n"m.py" = ["F401"]\n', head="import os\n")
    assert len(role.rechecks) == 2
    assert role.rechecks[1] == ["m.py"]


def test_copies_beside_keep_the_files_mode(tmp_path):
    """An executable file without a shebang (ruff's EXE002): the copies beside
    it are executable too, so the twin agrees and one run settles all."""
    role = _eight_fixes_and(tmp_path, '[tool.ruff.lint]\nselect = ["F541", "EXE002"]\n', mode=0o755)
    assert len(role.rechecks) == 1


def test_a_link_where_a_copy_would_go_is_never_written_through(tmp_path):
    """Red team: the project plants a dangling link under the name of a copy
    beside m.py, pointing out of the sandbox. The copy is not written there
    (the file keeps its rounds at its own path) and the target stays absent."""
    outside = tmp_path / "outside.py"
    project = tmp_path / "p"
    project.mkdir()
    (project / "m_sqcopy1_m.py").symlink_to(outside)
    role = _eight_fixes_and(project, '[tool.ruff.lint]\nselect = ["F541"]\n')
    assert not outside.exists()
    assert all(r == ["m.py"] for r in role.rechecks) and len(role.rechecks) == 2


def test_a_copy_that_clears_the_whole_file_is_trusted_when_its_twin_reported(tmp_path):
    """One fix rewrites both planted lines (clearing its neighbour's finding
    too): its copy's answer is empty, which alone may be a failed check. The
    unchanged twin in the same run reported the file's findings, so the check
    ran: both fixes settle in that one run, as a round of their own would."""
    text = "a = 'PLANTED'\nb = 'PLANTED'\n"
    (tmp_path / "a.py").write_text(text)
    role = CountingToy()

    def greedy(out):
        p = next(p for p in out.patches if "b = 'fixed'" in p.diff)
        both = p.model_copy(update={"id": "both", "diff": (
            "--- a/a.py\n+++ b/a.py\n@@ -1,2 +1,2 @@\n-a = 'PLANTED'\n-b = 'PLANTED'\n"
            "+a = 'fixed'\n+b = 'fixed'\n")})
        return [q for q in out.patches if q is not p] + [both]

    _, patches, results = _verify(tmp_path, role, greedy)
    assert all(results[p.id].level == "tool" for p in patches), [r.message for r in results.values()]
    assert len(role.rechecks) == 1, role.rechecks
    assert (tmp_path / "a.py").read_text() == text and not list(tmp_path.glob("*sqcopy*"))


class _Covering:
    """Tests import a.py only."""

    async def for_files(self, files):
        return ["tests/test_a.py"] if "a.py" in files else []


def test_no_test_at_all_for_these_files_when_none_imports_them():
    from superqode_ls.qe.fix_tests import FixTests

    ft = FixTests(roles={}, contexts={}, findings_by_role={}, tests=None, covering=_Covering(),
                  no_tests_reason="", probe=None, session=None, time_left=lambda: None)

    async def go():
        return (await ft.none_at_all(), await ft.none_at_all(["b.py", "c.py"]),
                await ft.none_at_all(["b.py", "a.py"]))

    assert asyncio.run(go()) == (False, True, False)


def test_copies_beside_give_same_line_findings_the_ids_they_have_in_the_file(tmp_path):
    """Two F541 on every line: each finding's id is anchored on its line as
    the other's fix leaves it (``_lint_parse._crowded``), which the finding
    alone cannot give again; the copies beside get the ids the file's own
    findings have, so their twin agrees and one ruff run settles all."""
    (tmp_path / "pyproject.toml").write_text('[tool.ruff.lint]\nselect = ["F541"]\n')
    text = "".join(f"v{i} = (f'{i}', f'x{i}')\n" for i in range(4))
    (tmp_path / "m.py").write_text(text)
    role = CountingLint()
    out, _, results = _verify(tmp_path, role)
    assert len(out.patches) == 8 and len(results) == 8
    assert all(r.level == "tool" for r in results.values()), [r.message for r in results.values()]
    assert len(role.rechecks) == 1 and role.rechecks[0][0] == "m.py"
    assert (tmp_path / "m.py").read_text() == text
