"""mutation_tester's warm workers: mutants switched in place in one process
must behave exactly as in a fresh process (module state, registries,
decorated functions), and the project's own pytest configuration and plugins
(``filterwarnings = error``, a local plugin package) must work. Real git,
real coverage and pytest subprocesses."""

from __future__ import annotations

import asyncio
import textwrap

import pytest

from superqode_ls.config import Config
from superqode_ls.qe.roles.mutation import MutationTester

from .conftest import write_files
from .deep_helpers import make_ctx, shared_pycache  # noqa: F401 (autouse fixture)

STATEFUL = {
    "state.py": textwrap.dedent(
        """\
        import functools

        LIMIT = 3
        REGISTRY = {}
        COUNTER = [0]


        def register(name, value):
            if name in REGISTRY:
                raise KeyError(name)
            REGISTRY[name] = value
            COUNTER[0] += 1
            return COUNTER[0]


        def plugin(cls):
            REGISTRY[cls.__name__] = cls
            return cls


        @plugin
        class Greeter:
            def greet(self, who):
                return "hello " + who


        @functools.lru_cache(maxsize=None)
        def square(x):
            return x * x


        def capped(n):
            return min(n, LIMIT)


        def drain(items):
            total = 0
            for item in items:
                if item < 0:
                    break
                total += item
            return total
        """
    ),
    "tests/test_state.py": textwrap.dedent(
        """\
        import pytest

        import state


        def test_starts_clean_and_registers_once():
            # Any state left behind by another mutant's run fails this first.
            assert state.COUNTER == [0]
            assert sorted(state.REGISTRY) == ["Greeter"]
            assert state.register("a", 1) == 1
            with pytest.raises(KeyError):
                state.register("a", 2)


        def test_registry_class_method():
            assert "hello" in state.REGISTRY["Greeter"]().greet("x")
            state.REGISTRY.clear()
            state.COUNTER[0] = 99


        def test_square_is_cached_and_right():
            assert state.square(3) == 9
            assert state.square(3) == 9


        def test_capped():
            assert state.capped(10) <= 3


        def test_drain():
            assert state.drain([1, 2, -1, 5]) == 3
        """
    ),
}


def _statuses(role: MutationTester, repo, config: Config | None = None) -> dict[str, str]:
    out = asyncio.run(role.run(make_ctx(repo, files=["state.py"], config=config or Config())))
    assert out.status == "ok", out.reason
    return _logged(repo)


def _logged(repo) -> dict[str, str]:
    log = next((repo / ".superqode" / "qe-artifacts" / "logs").glob("*mutation.log")).read_text()
    got = {}
    for line in log.splitlines():
        if line.startswith("  ") and ": " in line and line.strip()[0].isdigit():
            key, status = line.strip().rsplit(": ", 1)
            got[key] = status.split(" ")[0]
    return got


@pytest.mark.slow  # ten fresh pytest processes for the comparison
def test_mutants_switched_in_one_worker_never_affect_each_other(make_repo):
    repo = make_repo(STATEFUL)
    warm = MutationTester(workers=1, use_cache=False)
    got = _statuses(warm, repo)
    assert warm.report.workers == 1
    # Every mutant was switched in place in the one warm worker (module-level
    # lines run at import, during collection: no test covers them, so no
    # mutant needs a fresh process here).
    assert warm.report.fork_runs == warm.report.mutants_run == len(got) > 20, warm.report
    assert not warm.report.fallbacks
    assert got["33:18:argument:LIMIT->None"] == "killed"
    # A method of a registered class and an lru_cached function are swapped
    # too: each mutant below survives if the swap does not reach them.
    assert got["24:24:arith:+->-"] == "killed"
    assert got["29:13:arith:*->/"] == "killed"
    # Survivors are judged against clean state: `+= 1` -> `= 1` still
    # returns 1 on a fresh counter, and `break` -> `continue` is caught.
    assert got["12:15:augassign:+=->="] == "survived"
    assert got["40:12:loop:break->continue"] == "killed"

    # The same mutants (the first ten in risk order), each in a fresh process.
    cfg = Config()
    cfg.roles.mutation_max_mutants = 10
    fresh = MutationTester(workers=1, use_cache=False, fork_server=False)
    baseline = _statuses(fresh, repo, cfg)
    assert len(baseline) == 10 and fresh.report.fork_runs == 0
    assert baseline == {k: got[k] for k in baseline}


@pytest.mark.slow
def test_project_with_filterwarnings_error_and_its_own_plugins(make_repo):
    repo = make_repo({
        "pytest.ini": textwrap.dedent(
            """\
            [pytest]
            filterwarnings = error
            pythonpath = support
            addopts = -p localplug
            markers = needs_answer: uses the answer fixture
            """
        ),
        "support/localplug.py": textwrap.dedent(
            """\
            import pytest


            @pytest.fixture
            def answer():
                return 42


            def pytest_collection_modifyitems(items):
                for item in items:
                    item.add_marker(pytest.mark.needs_answer)
            """
        ),
        "tests/conftest.py": textwrap.dedent(
            """\
            import pytest


            @pytest.fixture
            def offset(answer):
                return answer - 40
            """
        ),
        "calc.py": "def shift(x, by):\n    return x + by\n\n\ndef is_big(x):\n    return x > 100\n",
        "tests/test_calc.py": textwrap.dedent(
            """\
            from calc import is_big, shift


            def test_shift(offset):
                assert shift(1, offset) == 3


            def test_big():
                assert is_big(1000)
                assert not is_big(5)
            """
        ),
    })
    role = MutationTester(workers=1, use_cache=False)
    out = asyncio.run(role.run(make_ctx(repo)))
    assert out.status == "ok", out.reason
    assert role.report.fork_runs == role.report.mutants_run > 0, role.report
    assert not role.report.fallbacks, role.report.fallbacks
    # `x > 100` -> `x >= 100` is the one gap these tests leave.
    assert {(f.file, f.range.start_line) for f in out.findings} == {("calc.py", 6)}
    assert role.report.statuses["killed"] >= 4


def test_capped_run_answers_from_the_cache_and_says_how_far(make_repo):
    repo = make_repo({
        "calc.py": "def is_adult(age):\n    return age >= 18\n",
        "tests/test_calc.py": "from calc import is_adult\n\n\ndef test_it():\n"
                              "    assert is_adult(30)\n    assert not is_adult(3)\n",
    })
    cfg = Config()
    cfg.roles.mutation_max_mutants = 2
    first = MutationTester(workers=1)
    out = asyncio.run(first.run(make_ctx(repo, config=cfg)))
    assert out.status == "ok", out.reason
    assert first.report.mutants_run == 2
    assert "partial: calc.py 2 of 5 mutants (mutant limit 2)" in out.reason
    # Nothing changed: no coverage run, no mutant run, same answer.
    again = MutationTester(workers=1)
    out2 = asyncio.run(again.run(make_ctx(repo, config=cfg)))
    assert again.report.mutants_run == 0 and again.report.coverage_s == 0
    assert "2 from cache" in out2.reason and "2 of 5 mutants" in out2.reason
    # A higher limit runs only the rest.
    cfg.roles.mutation_max_mutants = 100
    third = MutationTester(workers=1)
    out3 = asyncio.run(third.run(make_ctx(repo, config=cfg)))
    assert third.report.mutants_run == 3 and "partial" not in out3.reason, out3.reason


def test_changed_lines_go_first(make_repo):
    repo = make_repo({
        "calc.py": "def a(x):\n    return x > 1\n\n\ndef b(x):\n    return x < 1\n",
        "tests/test_calc.py": "from calc import a, b\n\n\ndef test_it():\n"
                              "    assert a(5)\n    assert b(0)\n",
    })
    write_files(repo, {"calc.py": "def a(x):\n    return x > 1\n\n\ndef b(x):\n    return x < 2\n"})
    cfg = Config()
    cfg.roles.mutation_max_mutants = 1
    role = MutationTester(workers=1)
    out = asyncio.run(role.run(make_ctx(repo, config=cfg)))
    assert out.status == "ok", out.reason
    log = next((repo / ".superqode" / "qe-artifacts" / "logs").glob("*mutation.log")).read_text()
    ran = [ln.strip() for ln in log.splitlines() if ln.startswith(("  6:", "  2:"))]
    assert len(ran) == 1 and ran[0].startswith("6:"), log


def test_the_mutant_limit_takes_whole_functions():
    from superqode_ls.qe.roles._mutation_cache import FileResult
    from superqode_ls.qe.roles._mutation_sample import choose as _choose
    from superqode_ls.qe.roles._mutation_sample import units as _units
    from superqode_ls.qe.roles._mutators import find_mutants, function_units

    text = textwrap.dedent(
        """\
        def small(x):
            return x > 1


        class Box:
            def big(self, a, b):
                if a > b and a < 10:
                    return a + b - 1
                return a * b + 2
        """
    )
    assert function_units(text)[2] == "small" and function_units(text)[7] == "Box.big"
    assert function_units("LIMIT = 3\n") == {}  # outside functions: the file's own unit
    fr = FileResult("m.py", text, "k")
    found = find_mutants(text, "m.py", validate=False)
    lines = {m.line: ["t::test"] for m in found}
    units = {u.name: u for u in _units(fr, found, function_units(text), lines, set(), {})}
    n_small, n_big = len(units["small"].mutants), len(units["Box.big"].mutants)
    assert n_small < n_big
    # Every mutant of each function chosen, never a few of each.
    chosen = _choose(list(units.values()), n_small + n_big, named_files=True)
    assert [(u.name, n) for u, n in chosen] == [("small", n_small), ("Box.big", n_big)]
    # A limit that one function does not fit in leaves it out whole ...
    chosen = _choose(list(units.values()), n_small + n_big - 1, named_files=True)
    assert [(u.name, n) for u, n in chosen] == [("small", n_small)]
    # ... unless it is the first: then its riskiest mutants, round-robin over lines.
    big_first = _choose([units["Box.big"], units["small"]], 3, named_files=False)
    assert len(big_first) == 1 and big_first[0][1] == 3
    # A changed function goes first.
    changed = {u.name: u for u in _units(fr, found, function_units(text), lines, {8}, {})}
    assert _choose(list(changed.values()), 1000, named_files=True)[0][0].name == "Box.big"


@pytest.mark.slow
def test_warm_workers_map_lines_without_a_separate_suite_pass(make_repo):
    """Two warm workers trace their shares of the suite (by test file) in
    forked children (both forced to: a suite this small is mapped by the
    first alone otherwise): no process is started to map lines before the
    first mutant, and the map and every verdict equal the coverage pass's."""
    files = dict(STATEFUL)
    # A second test file (so each worker has a share), with a test that
    # fails on the unchanged code (it must judge no mutant either way) and
    # lines reached through a generator and a nested function.
    files["state.py"] += textwrap.dedent(
        """

        def evens(items):
            def keep(x):
                return x % 2 == 0
            return list(x for x in items if keep(x))
        """
    )
    files["tests/test_more.py"] = textwrap.dedent(
        """\
        import state


        def test_evens():
            assert state.evens([1, 2, 3, 4]) == [2, 4]


        def test_broken():
            assert state.capped(1) == 2
        """
    )
    repo = make_repo(files)
    runs = {}
    for warm in (True, False):
        events: list[dict] = []
        role = MutationTester(workers=2, use_cache=False, map_in_workers=warm,
                              every_worker=True)
        ctx = make_ctx(repo, files=["state.py"],
                       emit=lambda kind, _seen=events, **data: _seen.append({"kind": kind, **data}))
        out = asyncio.run(role.run(ctx))
        assert out.status == "ok", out.reason
        started = [e["argv"] for e in events if e["kind"] == "tool_call"]
        runs[warm] = (role, started, _logged(repo))

    warm, started, verdicts = runs[True]
    assert warm.report.line_map == "warm workers" and warm.report.line_map_fallback is None
    # Nothing but git ran as a command: no coverage pass, no pytest process.
    assert started and all(argv[0] == "git" for argv in started), started
    assert warm.report.fork_runs == warm.report.mutants_run > 20 and warm.report.workers == 2
    cold, started_cold, cold_verdicts = runs[False]
    assert cold.report.line_map == "coverage"
    assert sum("coverage" in argv for argv in started_cold) == 1

    assert warm.linemap is not None and cold.linemap is not None
    assert warm.linemap.tests_by_line["state.py"] == cold.linemap.tests_by_line["state.py"]
    assert set(warm.linemap.durations) == set(cold.linemap.durations)
    assert warm.report.baseline_failing == cold.report.baseline_failing == [
        "tests/test_more.py::test_broken"]
    evens = [line for line, tests in warm.linemap.tests_by_line["state.py"].items()
             if tests == ["tests/test_more.py::test_evens"]]
    assert len(evens) >= 3  # the function, its generator and its nested def
    assert len(verdicts) == warm.report.mutants_run and verdicts == cold_verdicts
