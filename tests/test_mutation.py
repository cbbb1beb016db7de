"""mutation_tester: mutators on real source, the role on the bundled example
and on small real repositories (real pytest and coverage subprocesses)."""

from __future__ import annotations

import asyncio
import dataclasses
import json
import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from superqode_ls.config import Config
from superqode_ls.qe.roles import _mutation_cache, _mutation_runner, _scratch, get_role, mutation
from superqode_ls.qe.roles._mutators import apply_edit, find_mutants, mutated_line, select
from superqode_ls.qe.roles.mutation import MutationTester, cache_dir
from superqode_ls.workspace.paths import SessionPaths

from .conftest import write_files
from .deep_helpers import EXPECTED, SID, make_ctx, shared_pycache  # noqa: F401 (autouse fixture)
from .waiting import descendants_running, wait_for_async


def tree_state(root: Path) -> dict[str, bytes]:
    return {
        p.relative_to(root).as_posix(): p.read_bytes()
        for p in sorted(root.rglob("*"))
        if p.is_file() and ".superqode" not in p.parts and ".git" not in p.parts
    }


# -- mutators -------------------------------------------------------------

SOURCE = textwrap.dedent(
    '''\
    """Module docstring with 1 number."""


    def f(a: int, b: int = 2) -> bool:
        """Docstring."""
        if a > b and not b:  # comment with ünïcode: é
            return a + 1
        print("x",
              a)
        return a is not None or b not in [3]


    if __name__ == "__main__":
        f(1)
    '''
)


def test_mutators_cover_each_operator_kind_and_keep_lines():
    ms = find_mutants(SOURCE, "m.py")
    got = {(m.line, m.kind, m.original, m.replacement) for m in ms}
    assert (6, "compare", ">", ">=") in got
    assert (6, "boolean", "and", "or") in got
    assert (6, "boolean", "not ", "") in got
    assert (7, "arith", "+", "-") in got
    assert (7, "constant", "1", "0") in got
    assert (7, "return", "a + 1", "None") in got
    assert (10, "compare", "is not", "is") in got
    assert (10, "compare", "not in", "in") in got
    assert any(m.kind == "call" and m.line == 8 for m in ms)
    # Nothing from docstrings, annotations/defaults' annotations or the __main__ guard.
    assert not [m for m in ms if m.line in (1, 5) or m.line >= 13]
    assert not [m for m in ms if m.line == 4 and m.original in ("int", "bool")]
    for m in ms:
        new = apply_edit(SOURCE, m.edit)
        compile(new, "m.py", "exec")
        # Every mutant keeps the line count, so findings point at real lines.
        assert len(new.splitlines()) == len(SOURCE.splitlines()), m
    cmp = next(m for m in ms if m.kind == "compare" and m.line == 6 and m.replacement == ">=")
    assert mutated_line(SOURCE, cmp) == "    if a >= b and not b:  # comment with ünïcode: é"
    assert cmp.description == "`>` becomes `>=`"


OPS_SOURCE = textwrap.dedent(
    '''\
    import logging
    log = logging.getLogger(__name__)


    def g(items, lo, hi):
        total = 0
        for x in items:
            if x == 3:
                continue
            if x > hi:
                break
            total += x * 2
        if total < lo:
            raise ValueError("too small: " + str(total))
        log.info("total %s", total)
        name = "ab" "cd"
        return pick(lo, total, key=f"{hi}") if total < hi else (lo if lo < hi else hi)
    '''
)


def test_mutators_have_mutmut_and_cosmic_ray_kinds_and_mark_equivalents():
    ms = find_mutants(OPS_SOURCE, "g.py")
    got = {(m.line, m.kind, m.original, m.replacement): m.equivalent for m in ms}
    assert (8, "compare", "==", "<=") in got and (8, "compare", "==", "!=") in got
    assert (9, "loop", "continue", "break") in got
    assert (11, "loop", "break", "continue") in got
    assert (10, "compare", ">", ">=") in got and (10, "compare", ">", "<=") in got
    assert (12, "augassign", "+=", "=") in got and (12, "augassign", "+=", "-=") in got
    assert (12, "constant", "2", "3") in got and (12, "constant", "2", "1") in got
    assert (6, "assign", "0", "None") in got
    assert (17, "argument", "lo, ", "") in got and (17, "argument", "lo", "None") in got
    assert (17, "argument", ", key=f\"{hi}\"", "") in got
    # Strings: plain literals only; never f-strings or implicit concatenations.
    assert not [k for k in got if k[1] == "string" and k[0] in (16, 17)]
    # Likely equivalent, marked: message texts, a logging call, and a
    # boundary that only picks between its own two operands.
    assert got[(14, "string", '"too small: "', '"XXtoo small: XX"')] == "the text of a message"
    assert got[(14, "argument", "total", "None")] == "the text of a message"
    assert got[(15, "call", 'log.info("total %s", total)', "None")] == "output or logging only"
    compares = sorted((m.col, m.replacement, m.equivalent)
                      for m in ms if m.line == 17 and m.kind == "compare")
    # `total < hi` chooses between other values: not marked; `lo if lo < hi
    # else hi` at `lo == hi` gives the same value either way: `<=` is marked.
    assert [(r, e) for _, r, e in compares] == [
        ("<=", ""), (">=", ""),
        ("<=", "both paths give the same value at the boundary"), (">=", "")]
    for m in ms:
        new = apply_edit(OPS_SOURCE, m.edit)
        compile(new, "g.py", "exec")
        assert len(new.splitlines()) == len(OPS_SOURCE.splitlines()), m


def test_mutators_restrict_to_lines_and_select_spreads():
    ms = find_mutants(SOURCE, "m.py", lines={7})
    assert ms and {m.line for m in ms} == {7}
    everything = find_mutants(SOURCE, "m.py")
    picked = select(everything, 3)
    assert len(picked) == 3
    assert len({m.line for m in picked}) == 3


# -- the role on the bundled example ----------------------------------------


@pytest.mark.slow  # 10-30 s: real coverage/pytest/hypothesis runs
def test_example_surviving_boundary_mutant_and_cache(example_copy):
    before = tree_state(example_copy)
    role = get_role("mutation_tester")
    ctx = make_ctx(example_copy, files=["shop/stats.py"])
    out = asyncio.run(role.run(ctx))
    assert out.status == "ok", out.reason
    want = EXPECTED["mutation_tester"][0]
    hits = [
        f for f in out.findings if f.file == want["file"] and f.range.start_line == want["line"]
    ]
    assert len(hits) == 1, [(f.file, f.range.start_line, f.title) for f in out.findings]
    f = hits[0]
    assert f.rule_id == "mutation-survived"
    assert f"`{want['from']}` becomes `{want['to']}`" in f.title
    assert f"at line {want['line']}" in f.message
    assert f.snippet == "return sum(1 for v in values if v > threshold)"
    assert f.evidence[0].snippet.strip() == "return sum(1 for v in values if v >= threshold)"
    assert f.id.startswith("mutation-survived-")
    # Mutants the tests catch are not reported (mean's `/`, clamp's `>`...).
    assert all(x.range.start_line == want["line"] for x in out.findings), out.findings
    assert role.report.statuses["killed"] >= 5
    assert role.report.mutants_run > 0
    # Every mutant went through a warm launcher (started off the event loop).
    assert role.report.fork_runs == role.report.mutants_run and not role.report.fallbacks
    # The sandbox is shared: the role never writes in it; the scratch copies are gone.
    assert tree_state(example_copy) == before
    assert not any((SessionPaths(example_copy, SID).private / "scratch").iterdir())
    artifacts = example_copy / ".superqode" / "qe-artifacts"
    diffs = list((artifacts / "evidence").glob("*mutant-shop-stats.py-L11.diff"))
    assert diffs and "+    return sum(1 for v in values if v >= threshold)" in diffs[0].read_text()
    assert "shop/stats.py" in next((artifacts / "logs").glob("*mutation.log")).read_text()

    # Same content: every result comes from the cache, no test runs at all.
    again = MutationTester()
    out2 = asyncio.run(again.run(make_ctx(example_copy, files=["shop/stats.py"])))
    assert again.report.mutants_run == 0
    assert again.report.files_cached == 1
    assert [x.id for x in out2.findings] == [x.id for x in out.findings]
    assert "from cache" in out2.reason
    assert list(cache_dir().glob("*.json"))


# -- small repositories -----------------------------------------------------

CALC = {
    "calc.py": textwrap.dedent(
        """\
        def is_adult(age):
            return age >= 18


        def never_tested(x):
            return x * 2 > 10
        """
    ),
    "tests/test_calc.py": textwrap.dedent(
        """\
        from calc import is_adult


        def test_is_adult():
            assert is_adult(30)
            assert not is_adult(5)
        """
    ),
}


@pytest.mark.slow  # 10-30 s: real coverage/pytest/hypothesis runs
def test_only_covered_lines_are_mutated_and_edits_invalidate_cache(make_repo):
    repo = make_repo(CALC)
    role = MutationTester(workers=1)
    out = asyncio.run(role.run(make_ctx(repo)))
    assert out.status == "ok", out.reason
    lines = {(f.file, f.range.start_line) for f in out.findings}
    assert ("calc.py", 2) in lines  # `>=` -> `>`, 18 -> 19 and 18 -> 17 survive
    assert not [f for f in out.findings if f.range.start_line >= 5]  # no test covers it
    f = next(f for f in out.findings if f.range.start_line == 2)
    assert len(f.evidence) == 3 and "more mutant" in f.message
    assert "tests/test_calc.py::test_is_adult" in f.message

    # A boundary test kills the mutants: the test files' hash changed, so the
    # cache does not answer and the new result is computed.
    write_files(
        repo,
        {
            "tests/test_calc.py": CALC["tests/test_calc.py"]
            + "\n\ndef test_boundary():\n    assert is_adult(18)\n    assert not is_adult(17)\n"
        },
    )
    role2 = MutationTester(workers=1)
    out2 = asyncio.run(role2.run(make_ctx(repo)))
    assert role2.report.mutants_run > 0
    assert out2.findings == []


def test_since_lines_limit_the_mutants_to_changed_lines(make_repo):
    """``--since``: a change that touched only an untested function mutates
    nothing, where the whole file has surviving mutants on line 2."""
    repo = make_repo(CALC)
    role = MutationTester(workers=1)
    ctx = dataclasses.replace(make_ctx(repo), lines={"calc.py": frozenset({5, 6})})
    out = asyncio.run(role.run(ctx))
    assert out.findings == [] and role.report.mutants_run == 0
    assert role.report.skipped_files == {"calc.py": "the change touched no covered line"}


def test_failing_tests_do_not_judge_mutants(make_repo):
    files = dict(CALC)
    files["tests/test_calc.py"] += "\n\ndef test_broken():\n    assert is_adult(1)\n"
    repo = make_repo(files)
    role = MutationTester(workers=1)
    out = asyncio.run(role.run(make_ctx(repo)))
    assert out.status == "ok"
    assert role.report.baseline_failing == ["tests/test_calc.py::test_broken"]
    # Still judged by the passing test: the boundary mutant survives it.
    assert any(f.range.start_line == 2 for f in out.findings)


def test_budget_limit_and_skips_are_reported(make_repo, monkeypatch):
    repo = make_repo(CALC)
    cfg = Config()
    cfg.roles.mutation_max_mutants = 1
    role = MutationTester(workers=1)
    out = asyncio.run(role.run(make_ctx(repo, config=cfg)))
    assert out.status == "ok"
    assert role.report.mutants_run == 1
    assert "over the mutant limit" in out.reason

    # Fewer seconds left than a mutant may take: every mutant is skipped and
    # said so, none is guessed.
    monkeypatch.setattr(_mutation_runner, "MIN_MUTANT_TIMEOUT_S", 100_000.0)

    async def little_time_left():
        ctx = make_ctx(repo)
        ctx.deadline = asyncio.get_running_loop().time() + 900
        r = MutationTester(workers=1)
        return r, await r.run(ctx)

    r, out = asyncio.run(little_time_left())
    assert out.status == "ok", out.reason
    assert r.report.mutants_run == 0
    assert "out of time budget" in out.reason
    assert out.findings == []


def test_skips_without_trust_or_tests(make_repo):
    repo = make_repo({"calc.py": CALC["calc.py"]})
    out = asyncio.run(MutationTester().run(make_ctx(repo)))
    assert out.status == "skipped" and "no Python tests" in out.reason
    out = asyncio.run(MutationTester().run(make_ctx(repo, trusted=False)))
    assert out.status == "skipped" and "trusted" in out.reason
    # Tests that all fail on the unchanged code cannot judge any mutant.
    write_files(repo, {"tests/test_calc.py": "def test_no():\n    assert False\n"})
    out = asyncio.run(MutationTester().run(make_ctx(repo)))
    assert out.status == "skipped" and "no test passes" in out.reason
    assert out.findings == []


def test_cancel_kills_test_processes_and_cleans_scratch(make_repo):
    files = {
        "slow.py": "def f(x):\n    return x > 1\n",
        "tests/test_slow.py": (
            "import time\nfrom slow import f\n\n\ndef test_f():\n"
            "    time.sleep(30)\n    assert f(5)\n"  # a slow test: running when the cancel comes
        ),
    }
    repo = make_repo(files)

    async def go():
        task = asyncio.create_task(MutationTester(workers=1).run(make_ctx(repo)))
        # The warm pytest starts through SuperQode's launcher script, the
        # fresh-process fallback as ``-m pytest``.
        await wait_for_async(lambda: descendants_running("superqode_launch") or descendants_running("-m pytest")
                             or task.done(), 120, "the project's tests to run")
        assert not task.done(), "the run ended before its tests ran: nothing was cancelled"
        task.cancel()
        with pytest.raises(asyncio.CancelledError):
            await task

    asyncio.run(go())
    scratch = SessionPaths(repo, SID).private / "scratch"
    assert not any(scratch.iterdir())
    # conftest's no_leftover_processes fixture fails the test if pytest survived.


def test_hanging_mutant_is_stopped_and_counts_as_killed(make_repo, monkeypatch):
    repo = make_repo(
        {
            "loop.py": "def countdown(n):\n    while n > 0:\n        n -= 1\n    return n\n",
            "tests/test_loop.py": (
                "from loop import countdown\n\n\ndef test_countdown():\n"
                "    assert countdown(3) == 0\n    assert countdown(-2) == -2\n"
            ),
        }
    )
    monkeypatch.setattr(_mutation_runner, "MIN_MUTANT_TIMEOUT_S", 4.0)
    cfg = Config()
    cfg.roles.mutation_timeout_factor = 0.01
    role = MutationTester(workers=1)
    out = asyncio.run(role.run(make_ctx(repo, config=cfg)))
    assert out.status == "ok", out.reason
    # `n -= 1` -> `n -= 0` never ends: the warm launcher kills it at the limit.
    results = json.loads(next(cache_dir().glob("*.json")).read_text())["results"]
    assert results["3:13:constant:1->0"]["status"] == "timeout"
    # A mutant that hits its limit runs once more with a longer one before it
    # counts as a hang (a loaded machine must not turn slow into killed).
    assert role.report.retried >= 1
    assert out.findings == []


def test_cancel_during_mutant_runs_ends_the_warm_launchers(make_repo):
    import psutil

    files = {
        "slow.py": "def f(x):\n    return x > 1\n",
        "tests/test_slow.py": (
            "import time\nfrom slow import f\n\n\ndef test_f():\n"
            "    time.sleep(3)\n    assert f(5)\n"  # slow enough to be cancelled mid-run
        ),
    }
    repo = make_repo(files)

    def launchers() -> list[psutil.Process]:
        out = []
        for p in psutil.Process().children(recursive=True):
            try:
                if any("superqode_forkserver" in a for a in p.cmdline()):
                    out.append(p)
            except psutil.Error:
                continue
        return out

    async def go():
        task = asyncio.create_task(MutationTester(workers=1).run(make_ctx(repo)))
        await wait_for_async(lambda: launchers() or task.done(), 60, "the mutant phase to start")
        assert launchers(), "the mutant phase never started"
        task.cancel()
        with pytest.raises(asyncio.CancelledError):
            await task

    asyncio.run(go())
    assert launchers() == []
    assert not any((SessionPaths(repo, SID).private / "scratch").iterdir())


def test_import_closure_resolves_plain_src_and_relative_imports(tmp_path):
    from superqode_ls.qe.roles._imports import import_closure

    write_files(tmp_path, {
        "app/__init__.py": "",
        "app/core.py": "from .util import helper\nfrom . import consts\n",
        "app/util.py": "import app.deep.leaf\n",
        "app/consts.py": "X = 1\n",
        "app/deep/__init__.py": "",
        "app/deep/leaf.py": "from ..consts import X\n",
        "src/lib2/__init__.py": "from lib2.mod import f\n",
        "src/lib2/mod.py": "import os\ndef f():\n    return os.sep\n",
        "alone.py": "import lib2\nimport not_in_project\n",
        "broken.py": "def (:\n",
    })
    files = sorted(p.relative_to(tmp_path).as_posix() for p in tmp_path.rglob("*.py"))
    c = import_closure({f: (tmp_path / f).read_text(encoding="utf-8") for f in files})
    assert c["app/core.py"] == {"app/__init__.py", "app/util.py", "app/consts.py",
                                "app/deep/__init__.py", "app/deep/leaf.py"}
    assert c["app/deep/leaf.py"] == {"app/__init__.py", "app/consts.py"}
    assert c["alone.py"] == {"src/lib2/__init__.py", "src/lib2/mod.py"}
    assert c["app/consts.py"] == set() and c["broken.py"] == set()


def test_cache_key_follows_the_modules_a_file_imports(make_repo):
    repo = make_repo({
        "calc.py": "from limits import ADULT\n\n\ndef is_adult(age):\n    return age >= ADULT\n",
        "limits.py": "ADULT = 18\n",
        "other.py": "Y = 1\n",
        "tests/test_calc.py": "from calc import is_adult\n\n\ndef test_it():\n    assert is_adult(30)\n",
    })

    def key() -> str:
        results = _mutation_cache.collect(make_ctx(repo, files=["calc.py"]),
                                          mutation.MutationReport(), use_cache=False)
        (fr,) = results
        return fr.key

    first = key()
    write_files(repo, {"other.py": "Y = 2\n"})  # not imported by calc.py
    assert key() == first
    write_files(repo, {"limits.py": "ADULT = 30\n"})  # what calc.py computes with
    assert key() != first


def test_copies_share_bytecode_and_a_mutant_never_reuses_another_versions(tmp_path):
    """share_pycache: a module compiled in one copy is not compiled again in
    the other; a mutant written with the runner's distinct mtime (same size
    as the original) is compiled afresh, never served from the shared .pyc."""
    src = tmp_path / "src"
    src.mkdir()
    (src / "mod.py").write_text("VALUE = 1\n")
    copies = [_scratch.copy_tree(src, tmp_path / "scratch" / f"w{i}") for i in range(2)]
    _scratch.share_pycache(copies)
    prefix = _scratch.pycache_dir(tmp_path / "scratch")
    env = dict(os.environ, PYTHONPYCACHEPREFIX=str(prefix))
    env.pop("PYTHONDONTWRITEBYTECODE", None)

    def value(copy, flags=()):
        return subprocess.run([sys.executable, *flags, "-c", "import mod; print(mod.VALUE)"],
                              cwd=copy, env=env, capture_output=True, text=True, check=True)

    assert value(copies[0]).stdout == "1\n"
    mirrors = [prefix / os.path.realpath(c).lstrip("/") for c in copies]
    assert mirrors[1].is_symlink() and mirrors[1].resolve() == mirrors[0].resolve()
    compiled = list(mirrors[0].glob("mod.*.pyc"))
    assert len(compiled) == 1
    # The second copy finds it: importing with -v says where the code came from.
    assert f"matches {copies[1] / 'mod.py'}" in value(copies[1], ["-v"]).stderr
    before = compiled[0].read_bytes()

    (copies[1] / "mod.py").write_text("VALUE = 2\n")  # same size, another version
    os.utime(copies[1] / "mod.py", (1_000_000_001, 1_000_000_001))
    assert value(copies[1]).stdout == "2\n"
    assert compiled[0].read_bytes() != before
    assert value(copies[0]).stdout == "1\n"
    _scratch.drop_scratch(tmp_path / "scratch")
    assert not mirrors[0].exists()
