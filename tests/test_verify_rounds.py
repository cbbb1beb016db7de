"""Fix verification in one tool re-run per round, several fixes of one file
included (issue 17: dozens of ruff fixes in a file took one round each)."""

from __future__ import annotations

import asyncio

from superqode_ls.qe.verifier import Verifier
from tests.test_verifier import CountingToy, ctx_for

FAR = "".join(f"x{i} = {i}\n" for i in range(12))


def _verify(tmp_path, role, extra=()):
    ctx = ctx_for(tmp_path)

    async def go():
        out = await role.run(ctx)
        v = Verifier(sandbox=tmp_path, roles={role.name: role}, contexts={role.name: ctx},
                     findings_by_role={role.name: out.findings})
        return out, await v.verify_many([*out.patches, *extra(out)] if extra else out.patches)

    return asyncio.run(go())


def test_fixes_far_apart_in_one_file_are_verified_in_one_round(tmp_path):
    text = "a = 'PLANTED'\n" + FAR + "b = 'PLANTED'\n" + FAR + "c = 'PLANTED'\n"
    (tmp_path / "a.py").write_text(text)
    (tmp_path / "b.py").write_text("d = 'PLANTED'\n")
    role = CountingToy()
    out, results = _verify(tmp_path, role)
    assert len(out.patches) == 4
    assert all(r.level == "tool" for r in results.values()), [r.message for r in results.values()]
    assert role.rechecks == [["a.py", "b.py"]]  # one re-run for all four fixes
    assert (tmp_path / "a.py").read_text() == text  # put back


def test_a_fix_that_breaks_something_sends_its_file_the_careful_way(tmp_path):
    """Together, a new problem cannot be pinned on one fix -- unless it is on
    the line that fix wrote: that fix is rejected at once, the other fix of
    its file goes again alone; the other files keep the first round's verdict."""
    text = "a = 'PLANTED'\n" + FAR + "b = 'PLANTED'\n"
    (tmp_path / "a.py").write_text(text)
    (tmp_path / "b.py").write_text("d = 'PLANTED'\n")
    role = CountingToy()
    ctx = ctx_for(tmp_path)

    async def go():
        out = await role.run(ctx)
        twin = next(p for p in out.patches if "b = 'fixed'" in p.diff)
        bad = twin.model_copy(update={
            "id": "bad", "diff": twin.diff.replace("b = 'fixed'", "b = 'fixed'; z = 'PLANTED'")})
        patches = [p for p in out.patches if p is not twin] + [bad]
        v = Verifier(sandbox=tmp_path, roles={role.name: role}, contexts={role.name: ctx},
                     findings_by_role={role.name: out.findings})
        return patches, await v.verify_many(patches)

    patches, results = asyncio.run(go())
    assert [results[p.id].level for p in patches] == ["tool", "tool", None]
    assert "new findings" in results["bad"].message
    assert "on the lines this fix writes" in results["bad"].message
    # One round for all three, then a.py's good fix alone.
    assert role.rechecks == [["a.py", "b.py"], ["a.py"]]
    assert (tmp_path / "a.py").read_text() == text


def test_one_diff_offered_for_several_findings_is_checked_once(tmp_path):
    """A tool offers the same edit once per finding it clears (ruff's
    ``from __future__ import annotations`` for each FA102): one apply, one
    re-run, each finding judged."""
    (tmp_path / "a.py").write_text("a = 'PLANTED'\n")
    role = CountingToy()
    ctx = ctx_for(tmp_path)

    async def go():
        out = await role.run(ctx)
        (p,) = out.patches
        twins = [p.model_copy(update={"id": f"twin{i}"}) for i in range(3)]
        v = Verifier(sandbox=tmp_path, roles={role.name: role}, contexts={role.name: ctx},
                     findings_by_role={role.name: out.findings})
        return await v.verify_many([p, *twins])

    results = asyncio.run(go())
    assert len(results) == 4 and all(r.level == "tool" for r in results.values())
    assert role.rechecks == [["a.py"]]
    assert (tmp_path / "a.py").read_text() == "a = 'PLANTED'\n"


def test_a_test_suite_that_cannot_start_is_tried_once(make_repo, monkeypatch):
    """pytest stopping on a broken conftest says so in every round: it is
    learnt once, beside the roles (its conftests loaded, no test imported),
    never run for the fixes, and every fix is tool-verified only with that
    reason."""
    from superqode_ls.qe.covering import CoveringTests
    from superqode_ls.qe.pipeline import QERequest, QESession
    from superqode_ls.qe.roles.unit import UnitTester

    runs, probes = [], []
    real, real_probe = CoveringTests.run, UnitTester.can_start

    async def counting(self, tests):
        out = await real(self, tests)
        runs.append((tests, out.status))
        return out

    async def probing(self, ctx, folders):
        out = await real_probe(self, ctx, folders)
        probes.append((folders, out.status))
        return out

    monkeypatch.setattr(CoveringTests, "run", counting)
    monkeypatch.setattr(UnitTester, "can_start", probing)
    repo = make_repo({
        "pyproject.toml": '[project]\nname = "d"\nversion = "0"\n\n[tool.ruff.lint]\nselect = ["F401"]\n',
        "pkg/__init__.py": "",
        # Adjacent unused imports: their fixes overlap, so they take rounds.
        "pkg/calc.py": "import os\nimport sys\nimport json\n\n\ndef add(a, b):\n    return a + b\n",
        "conftest.py": "raise RuntimeError('this conftest is broken')\n",
        "tests/__init__.py": "",
        "tests/test_calc.py": "from pkg.calc import add\n\n\ndef test_add():\n    assert add(1, 2) == 3\n",
    })
    report = asyncio.run(QESession(QERequest(repo, roles=["lint_tester"])).run())
    fixes = [p for p in report.patches if p.kind == "fix"]
    assert len(fixes) == 3, [p.description for p in fixes]
    assert all(p.label == "tool-verified only" for p in fixes), [p.verification for p in fixes]
    assert all("pytest usage or configuration error" in p.verification for p in fixes)
    assert probes == [(["tests"], "failed")]
    assert runs == []


def test_overlapping_fixes_wait_for_a_later_round_the_rest_go_together(tmp_path):
    text = "a = 'PLANTED'\nb = 'PLANTED'\n" + FAR + "c = 'PLANTED'\n"
    (tmp_path / "a.py").write_text(text)
    (tmp_path / "b.py").write_text("d = 'PLANTED'\n")
    role = CountingToy()
    out, results = _verify(tmp_path, role)
    assert len(out.patches) == 4
    assert all(r.level == "tool" for r in results.values()), [r.message for r in results.values()]
    # Lines 1 and 2 touch: line 2's fix goes in a second copy of a.py, checked
    # beside it (no tests judge it here) in the same one run as the first copy.
    assert role.rechecks == [["a.py", "a_sqcopy0_a.py", "a_sqcopy1_a.py", "b.py"]]
    assert sorted(p.name for p in tmp_path.iterdir()) == ["a.py", "b.py"]  # the copies beside are gone
    assert (tmp_path / "a.py").read_text() == text


def _probe_once(ctx):
    """One suite probe, as a session starts it beside the roles, to its verdict."""
    from superqode_ls.qe.covering import SuiteProbe
    from superqode_ls.qe.roles.unit import UnitTester

    async def go():
        p = SuiteProbe(UnitTester(), ctx)
        try:
            return await p.broken()
        finally:
            await p.close()

    return asyncio.run(go())


def test_the_suite_probe_loads_conftests_and_imports_no_test(tmp_path):
    """The probe beside the roles says why pytest cannot start, or None; it
    loads the test folders' conftests and imports no test module."""
    import dataclasses

    from superqode_ls.qe.covering import test_folders

    assert test_folders(["tests/a/test_x.py", "tests/test_y.py", "lib/test_z.py"]) == ["lib", "tests"]
    assert test_folders(["test_top.py", "tests/test_y.py"]) == ["."]
    (tmp_path / "tests").mkdir()
    (tmp_path / "tests" / "test_a.py").write_text(
        "open('imported', 'w').close()\n\n\ndef test_a():\n    assert True\n")
    ctx = dataclasses.replace(ctx_for(tmp_path), trusted=True)

    assert _probe_once(ctx) is None
    assert not (tmp_path / "imported").exists()  # no test module was imported
    (tmp_path / "tests" / "conftest.py").write_text("raise RuntimeError('broken conftest')\n")
    why = _probe_once(ctx)
    assert why is not None and why.startswith("pytest usage or configuration error"), why
    assert not (tmp_path / "imported").exists()
    # A conftest importing a package the environment lacks: a setup problem, also "cannot start".
    (tmp_path / "tests" / "conftest.py").write_text("import not_a_module_anywhere\n")
    why = _probe_once(ctx)
    assert why is not None and why.startswith("setup:") and "not_a_module_anywhere" in why, why


def test_the_suite_probe_verdict_is_kept_until_what_decides_it_changes(tmp_path, monkeypatch):
    """A second probe of the same suite, interpreter and packages asks pytest
    nothing; a changed conftest, config or installed package asks again."""
    import dataclasses

    from superqode_ls.qe import probe_cache
    from superqode_ls.qe.roles.unit import UnitTester

    (tmp_path / "tests").mkdir()
    (tmp_path / "tests" / "test_a.py").write_text("def test_a():\n    assert True\n")
    ctx = dataclasses.replace(ctx_for(tmp_path), trusted=True)
    starts = []
    real = UnitTester.can_start

    async def counting(self, ctx, folders):
        starts.append(folders)
        return await real(self, ctx, folders)

    monkeypatch.setattr(UnitTester, "can_start", counting)

    assert _probe_once(ctx) is None and len(starts) == 1
    assert _probe_once(ctx) is None and len(starts) == 1  # kept
    (tmp_path / "tests" / "conftest.py").write_text("raise RuntimeError('broken conftest')\n")
    why = _probe_once(ctx)
    assert len(starts) == 2 and why is not None and why.startswith("pytest usage")
    assert _probe_once(ctx) == why and len(starts) == 2  # "cannot start" is kept too
    (tmp_path / "tests" / "conftest.py").unlink()
    assert _probe_once(ctx) is None and len(starts) == 2  # the first verdict again
    assert len(list(probe_cache.cache_dir().glob("*.json"))) == 2

    # The key itself: the interpreter's packages and pytest's configuration.
    env = tmp_path / "env"
    site = env / "lib" / "python3.11" / "site-packages"
    site.mkdir(parents=True)
    (env / "bin").mkdir()
    python = env / "bin" / "python"
    python.write_text("")

    def key():
        return probe_cache.key(tmp_path, ["tests"], str(python), str(env), [])

    first = key()
    assert first is not None and key() == first
    (tmp_path / "tests" / "test_b.py").write_text("def test_b():\n    pass\n")
    assert key() == first  # a test module is not what decides whether pytest starts
    (tmp_path / "pytest.ini").write_text("[pytest]\naddopts = -x\n")
    second = key()
    assert second != first
    import os

    st = site.stat()
    (site / "newly_installed.pth").write_text("")
    os.utime(site, ns=(st.st_atime_ns, st.st_mtime_ns + 1_000_000))
    assert key() not in (first, second)
    assert probe_cache.key(tmp_path, ["tests"], str(python), str(tmp_path / "nowhere"), []) is None


def test_work_below_the_tools_runs_in_a_lowered_cpu_group(tmp_path):
    from pathlib import Path

    from superqode_ls.runtime import Runtime
    from superqode_ls.workspace.proc import run_command

    if not Path("/proc/self/autogroup").exists():
        import pytest

        pytest.skip("this kernel has no autogroup scheduling")
    # (read after a moment: the group is lowered once the process has started)
    read = ["sh", "-c", "sleep 0.3; cat /proc/self/autogroup"]
    plain = asyncio.run(run_command(read, tmp_path))
    below = asyncio.run(run_command(read, tmp_path, below=10))
    base = max(0, Runtime.background().nice)
    assert plain.stdout.split()[-1] == str(base), plain.stdout
    assert below.stdout.split()[-1] == str(min(19, base + 10)), below.stdout
