"""mutation_tester's workers as forks of one warm pytest process: each
request reaches the worker it names and each reply comes back to its
caller while several run at once, a worker works in its own directory, a
closed worker answers nothing, and closing the zygote leaves no process.
A real pytest process with the real plugin."""

from __future__ import annotations

import asyncio
import os
import shutil
import sys
from pathlib import Path

import pytest

from superqode_ls.qe.roles import _forkserver
from superqode_ls.qe.roles._mutation_runner import SERVER_PLUGIN
from superqode_ls.qe.roles._mutation_spawn import Zygote

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
