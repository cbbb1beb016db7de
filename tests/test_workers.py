"""Forced worker counts: a 2-CPU machine runs the code paths of a 16-CPU
one (``execution.workers``, ``$SUPERQODE_WORKERS``), and every count gives
the same answers as one worker. Real pytest processes, real bandit."""

from __future__ import annotations

import asyncio
import textwrap

import pytest

from superqode_ls.config import WORKERS_ENV, Config, ConfigError, load_config
from superqode_ls.qe.roles._common import worker_count
from superqode_ls.qe.roles._mutation_cache import FileResult
from superqode_ls.qe.roles._mutation_pool import Candidates, workers_that_pay
from superqode_ls.qe.roles._mutators import compiles, find_mutants, function_units
from superqode_ls.qe.roles.mutation import MutationTester
from superqode_ls.runtime import Runtime

from .deep_helpers import make_ctx, shared_pycache  # noqa: F401 (autouse fixture)

# A project whose pytest turns warnings into errors, with test files that
# never reach the code under test: a worker whose share of the suite is only
# those collects no coverage data (coverage warns), which once broke the
# line map at 4+ workers and then crashed the role re-making its copies.
PROJECT = {
    "pytest.ini": "[pytest]\nfilterwarnings = error\n",
    "calc.py": textwrap.dedent(
        """\
        def clamp(x, low, high):
            if x < low:
                return low
            if x > high:
                return high
            return x


        def mean(xs):
            return sum(xs) / len(xs) if xs else 0.0
        """
    ),
    "tests/test_clamp.py": textwrap.dedent(
        """\
        from calc import clamp


        def test_clamp():
            assert clamp(5, 0, 10) == 5
            assert clamp(-1, 0, 10) == 0
            assert clamp(11, 0, 10) == 10
        """
    ),
    "tests/test_mean.py": textwrap.dedent(
        """\
        from calc import mean


        def test_mean():
            assert mean([1, 2, 3]) == 2
        """
    ),
    **{f"tests/test_other{i}.py": f"def test_other{i}():\n    assert {i} + 1 == {i + 1}\n"
       for i in range(5)},
}


def test_forced_workers_from_the_environment(monkeypatch, tmp_path):
    assert worker_count(Config(), Runtime()) >= 1  # the CPUs tools may use
    monkeypatch.setenv(WORKERS_ENV, "16")
    cfg = load_config(tmp_path)
    assert cfg.execution.workers == 16 and worker_count(cfg, Runtime().sparing(1)) == 16
    # The command line still beats the environment.
    assert load_config(tmp_path, {"execution": {"workers": 2}}).execution.workers == 2
    monkeypatch.setenv(WORKERS_ENV, "many")
    with pytest.raises(ConfigError, match=r"\$SUPERQODE_WORKERS: execution.workers"):
        load_config(tmp_path)
    monkeypatch.setenv(WORKERS_ENV, "0")
    with pytest.raises(ConfigError, match="greater than or equal to 1"):
        load_config(tmp_path)


def _verdicts(repo, workers: int, every: bool = True) -> tuple[MutationTester, dict[str, str]]:
    cfg = Config()
    cfg.execution.workers = workers  # forced: not this machine's CPU count
    # every: all of them run mutants, though on this small project fewer pay.
    role = MutationTester(use_cache=False, every_worker=every)
    out = asyncio.run(role.run(make_ctx(repo, config=cfg)))
    assert out.status == "ok", out.reason
    log = next((repo / ".superqode" / "qe-artifacts" / "logs").glob("*mutation.log"))
    verdicts = {}
    for line in log.read_text(encoding="utf-8").splitlines():
        if line.startswith("  ") and ": " in line:
            key, status = line.strip().split(": ", 1)
            verdicts[key] = status.split(" ")[0]
    return role, verdicts


def test_mutation_gives_the_same_verdicts_at_1_2_4_and_16_workers(make_repo):
    repo = make_repo(PROJECT)
    one, base = _verdicts(repo, 1)
    assert one.report.workers == 1 and len(base) > 10
    assert base["4:9:compare:>->>="] == "survived"  # clamp(10, 0, 10) is never asked
    assert "killed" in base.values()
    for workers in (2, 4, 16):
        role, got = _verdicts(repo, workers)
        assert role.report.line_map == "warm workers", (workers, role.report.line_map_fallback)
        # As many workers as asked, while there are mutants for them.
        assert role.report.workers == min(workers, len(base))
        assert got == base, workers
        # As a cap: the workers the measured costs pay for, the same verdicts.
        role, got = _verdicts(repo, workers, every=False)
        assert 1 <= role.report.workers <= min(workers, Runtime().cpu_count())
        assert role.report.workers_cap == workers
        assert got == base, workers


def test_only_workers_whose_share_repays_their_start_are_used():
    # Ten mutants of 0.25 s: a worker that starts in 1 s gets at least its
    # start's worth (2 workers); one that starts in 3 s does not (1).
    assert workers_that_pay(16, [0.25] * 10, 1.0) == 2
    assert workers_that_pay(16, [0.25] * 10, 3.0) == 1
    assert workers_that_pay(16, [0.25] * 10, 0.125) == 10  # never more than the mutants
    assert workers_that_pay(4, [1.0] * 100, 0.5) == 4  # nor than the cap
    assert workers_that_pay(1, [1.0] * 100, 0.0) == 1
    assert workers_that_pay(8, [1.0] * 100, 0.0) == 8  # nothing to start (fresh processes)


def test_candidates_found_ahead_are_the_mutants_on_the_covered_lines():
    text = PROJECT["calc.py"]
    fr = FileResult("calc.py", text, "k")
    ahead = Candidates([fr])
    ahead.start()
    ahead.stop()  # wherever the thread got to, the rest is worked out when asked
    for lines in ({2, 3}, {10}, set(range(1, 11)), set()):
        found, names = ahead.on_lines(fr, lines)
        assert found == find_mutants(text, "calc.py", lines, validate=False)
        assert names == function_units(text)
        assert [ahead.compiles(fr, m) for m in found] == [compiles(text, m) for m in found]
    broken = FileResult("bad.py", "def f(:\n", "k")
    with pytest.raises(SyntaxError):
        Candidates([broken]).on_lines(broken, {1})


def test_a_capped_whole_project_run_samples_whole_functions(make_repo):
    """clamp has 7 mutants, mean 5: a limit of 7 takes one of them whole,
    never a few of each, and the score says what it rests on."""
    repo = make_repo(PROJECT)
    cfg = Config()
    cfg.execution.workers = 1
    cfg.roles.mutation_max_mutants = 7
    role = MutationTester(use_cache=False)
    out = asyncio.run(role.run(make_ctx(repo, config=cfg)))
    assert out.status == "ok", out.reason
    log = next((repo / ".superqode" / "qe-artifacts" / "logs").glob("*mutation.log")).read_text()
    lines = {int(ln.strip().split(":", 1)[0]) for ln in log.splitlines()
             if ln.startswith("  ") and ": " in ln}
    assert lines <= set(range(1, 7)) or lines == {10}, log  # clamp's lines, or mean's
    ran = role.report.mutants_run
    assert ran in (7, 5) and role.report.functions == 1
    killed = role.report.statuses["killed"] + role.report.statuses["timeout"]
    assert out.reason.startswith(
        f"score {100 * killed / ran:.0f}% of {ran} mutant(s) in 1 function(s) (sample of 12)")


class _Item:
    def __init__(self, nodeid: str):
        self.nodeid = nodeid


@pytest.mark.parametrize("files, n", [(7, 16), (7, 4), (30, 16), (1, 2)])
def test_trace_shards_split_the_suite_once_at_any_count(files, n):
    """The line map's shards (whole test files, or runs of items when the
    files are fewer): each item in exactly one shard, and a group of shards
    (what one worker traces) is their union in collection order."""
    from superqode_ls.qe.roles._forktrace import shard as _shard

    items = [_Item(f"tests/test_{f}.py::test_{i}") for f in range(files) for i in range(f % 3 + 1)]
    shards = [_shard(items, k, n) for k in range(n)]
    assert sorted(id(i) for s in shards for i in s) == sorted(id(i) for i in items)
    group = list(range(1, n, 2))
    assert _shard(items, group, n) == [i for i in items if any(i in shards[k] for k in group)]
    assert _shard(items, list(range(n)), n) == items


def test_a_workers_first_fresh_run_waits_for_every_command_job():
    """The workers' fresh-process commands are made in threads beside the
    forks' start (mutation._workers); each job rewrites the copies' shared
    sitecustomize, so a fresh run waits until every job is done, not only
    the one that made its own command: a process started meanwhile could
    read that file half written."""

    async def main() -> None:
        role = MutationTester()
        loop = asyncio.get_running_loop()
        mine, later = loop.create_future(), loop.create_future()
        role._fresh_jobs = [mine, later]
        got = asyncio.ensure_future(role._fresh_made(mine, 1))
        mine.set_result([({}, ["a"]), ({"X": "1"}, ["b"])])
        for _ in range(5):
            await asyncio.sleep(0)
        assert not got.done()
        later.set_result([])
        assert await got == ({"X": "1"}, ["b"])

    asyncio.run(main())


def test_a_mutant_folding_lines_keeps_every_function_below_on_its_line():
    """The warm worker matches functions by (name, first line): a mutant that
    folds a two-line call into ``None`` shifted every function below it, was
    taken for "the mutant adds a function" and ran in a fresh process. With
    explicit line joins in its place the code below keeps its lines, and the
    mutated code does the same as the plain edit's."""
    from superqode_ls.qe.roles._mutation_runner import same_lines
    from superqode_ls.qe.roles._mutators import apply_edit, find_mutants

    text = textwrap.dedent('''\
        def check(kwargs):
            if kwargs:
                raise TypeError("unexpected {}"
                                " keyword".format(sorted(kwargs)))  # why
            return 1


        def after(x):
            return x + 1
        ''')
    folding = [m for m in find_mutants(text, "m.py", validate=False)
               if m.edit.end_line > m.edit.line and "\n" not in m.edit.text]
    assert folding, "no mutant folds lines here"

    def firsts(code):
        return sorted((c.co_name, c.co_firstlineno) for c in code.co_consts if hasattr(c, "co_name"))

    for m in folding:
        plain, kept = apply_edit(text, m.edit), same_lines(text, m.edit)
        assert len(plain.splitlines()) < len(text.splitlines())
        assert firsts(compile(kept, "m.py", "exec")) == firsts(compile(text, "m.py", "exec"))
        ran = [{}, {}]
        for source, ns in zip((plain, kept), ran, strict=True):
            exec(compile(source, "m.py", "exec"), ns)  # noqa: S102 - the test's own module
        for kwargs in ({}, {"a": 1}):
            got = []
            for ns in ran:
                try:
                    got.append(("ok", ns["check"](dict(kwargs)), ns["after"](1)))
                except Exception as e:  # noqa: BLE001 - compared, not hidden
                    got.append(("raised", type(e).__name__))
            assert got[0] == got[1]
