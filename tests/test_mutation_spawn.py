"""mutation_tester's workers as forks of one warm pytest process: each
request reaches the worker it names and each reply comes back to its
caller while several run at once, a worker works in its own directory, a
closed worker answers nothing, and closing the zygote leaves no process.
A real pytest process with the real plugin."""

from __future__ import annotations

import asyncio
import json
import os
import shutil
import sys
from pathlib import Path

import pytest

from superqode_ls.qe.roles import _forkserver, _forktrace
from superqode_ls.qe.roles._mutation_runner import SERVER_PLUGIN
from superqode_ls.qe.roles._mutation_spawn import Zygote
from superqode_ls.qe.roles.mutation import TRACER

from .conftest import write_files

CALC = "def double(x):\n    return x * 2\n"
TESTS = {
    "calc.py": CALC,
    "tests/test_calc.py": (
        "from calc import double\n\n\n"
        "def test_double():\n    assert double(2) == 4\n\n\n"
        "def test_writes_here():\n    open('here.txt', 'w').write('x')\n"
    ),
}
DOUBLE = "tests/test_calc.py::test_double"


async def _zygote(tmp_path: Path) -> tuple[Zygote, Path]:
    project = tmp_path / "w0"
    write_files(project, TESTS)
    plugins = tmp_path / "plugins"
    plugins.mkdir()
    shutil.copyfile(_forkserver.__file__, plugins / f"{SERVER_PLUGIN}.py")
    shutil.copyfile(_forktrace.__file__, plugins / f"{TRACER}.py")
    env = {**os.environ, "PYTHONPATH": f"{plugins}{os.pathsep}{project}",
           "PYTHONDONTWRITEBYTECODE": "1"}
    cmd = [sys.executable, "-m", "pytest", "-p", SERVER_PLUGIN, "-p", "no:cacheprovider",
           "-q", "--no-header", "-c", os.devnull, "--rootdir", str(project)]
    zygote = await Zygote.start(cmd, project, env, 120.0)
    assert zygote is not None and zygote.items == 2
    return zygote, project


def _request(source: str | None, tests: list[str]) -> dict:
    return {"file": "calc.py", "module": "calc", "source": source, "tests": tests}


def test_forked_workers_answer_their_own_requests_in_their_own_directories(tmp_path):
    async def main() -> None:
        zygote, project = await _zygote(tmp_path)
        try:
            dirs = [tmp_path / f"w{i}" for i in (1, 2, 3)]
            for d in dirs:
                d.mkdir()
            channels = await zygote.spawn(dirs, 60.0)
            assert all(c is not None and c.items == 2 for c in channels)
            a, b, c = channels
            killing = CALC.replace("x * 2", "x * 3")
            # Different answers from workers running side by side: each reply
            # must reach the request it answers.
            for _ in range(4):
                got = await asyncio.gather(
                    a.run(_request(None, [DOUBLE]), 30.0),
                    b.run(_request(killing, [DOUBLE]), 30.0),
                    c.run(_request(None, [DOUBLE]), 30.0),
                )
                assert [r.returncode for r in got] == [0, 1, 0]
            # A worker's tests write in its own directory, not the zygote's.
            res = await c.run(_request(None, ["tests/test_calc.py::test_writes_here"]), 30.0)
            assert res.returncode == 0
            assert (dirs[2] / "here.txt").is_file() and not (project / "here.txt").exists()
            assert not (dirs[0] / "here.txt").exists()
            await b.close()
            assert await b.run(_request(None, [DOUBLE]), 30.0) is None
            assert (await a.run(_request(None, [DOUBLE]), 30.0)).returncode == 0
            # One more, later: forked from the same collected session.
            (late,) = await zygote.spawn([dirs[1]], 60.0)
            assert late is not None
            assert (await late.run(_request(killing, [DOUBLE]), 30.0)).returncode == 1
        finally:
            pgid = zygote.proc.pid
            await zygote.close()
        with pytest.raises(ProcessLookupError):
            os.killpg(pgid, 0)  # the zygote, its workers and their children are gone

    asyncio.run(main())


def _children(pid: int) -> list[int]:
    out = []
    for task in Path(f"/proc/{pid}/task").iterdir():
        out += [int(p) for p in (task / "children").read_text().split()]
    return out


def _has_coverage(pid: int) -> bool:
    # coverage.py's C tracer is a shared object: mapped once it is imported.
    return "coverage/tracer" in Path(f"/proc/{pid}/maps").read_text()


def test_workers_spawned_to_trace_have_coverage_imported_once_before_the_fork(tmp_path):
    """A spawn for the line map imports coverage.py in the first process, so
    every forked worker (and each trace child it forks) has it without
    importing it again; a spawn for mutants only does not import it."""
    pytest.importorskip("coverage.tracer")

    async def main() -> None:
        zygote, _ = await _zygote(tmp_path)
        try:
            (plain,) = await zygote.spawn([tmp_path], 60.0)
            assert plain is not None
            assert not any(_has_coverage(p) for p in [zygote.proc.pid, *_children(zygote.proc.pid)])
            tracing = await zygote.spawn([tmp_path, tmp_path], 60.0, trace=True)
            assert all(c is not None for c in tracing)
            workers = _children(zygote.proc.pid)
            assert len(workers) == 3
            assert _has_coverage(zygote.proc.pid)
            assert sum(_has_coverage(p) for p in workers) == 2  # the two forked after it
            # The line map from the forked worker (the trace half of the plugin).
            out = tmp_path / "t.json"
            res = await tracing[0].run({"trace": ["calc.py"], "shard": [[0], 1], "out": str(out)},
                                       60.0)
            assert res is not None and not isinstance(res, str) and res.returncode == 0
            traced = json.loads(out.read_text())["tests"]
            assert traced[DOUBLE]["passed"] and traced[DOUBLE]["lines"] == {"calc.py": [2]}
        finally:
            await zygote.close()

    asyncio.run(main())
