"""The warm pytest's start (mutation_tester): the launcher reads the
interpreter's and its environment's valid bytecode in place, compiles the
copy's code into the session's cache and writes nowhere else; SuperQode's
own interpreter loads hypothesis's plugin only for a suite that uses it.
Real interpreters, real files."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import _pytest.main

from superqode_ls.qe.roles import _mutation_launch
from superqode_ls.qe.roles._pyenv import pytest_argv
from superqode_ls.workspace.pyenv import ProjectPython

from .conftest import write_files

PYTEST_MAIN = os.path.realpath(_pytest.main.__file__)


def _cached(prefix: Path, source: str) -> Path:
    name = Path(source).stem + f".{sys.implementation.cache_tag}.pyc"
    return prefix / Path(source).parent.relative_to("/") / name


def _beside(source: str) -> Path:
    return Path(source).parent / "__pycache__" / f"{Path(source).stem}.{sys.implementation.cache_tag}.pyc"


def _run(tmp_path: Path, argv: list[str]) -> tuple[subprocess.CompletedProcess, Path, Path]:
    copy = tmp_path / "scratch" / "w0"
    write_files(copy, {
        "calc.py": "def double(x):\n    return x * 2\n",
        "tests/test_calc.py": "from calc import double\n\n\ndef test_double():\n"
                              "    assert double(2) == 4\n",
    })
    prefix = tmp_path / "pycache"
    env = {**os.environ, "PYTHONPYCACHEPREFIX": str(prefix), "PYTHONPATH": str(copy)}
    env.pop("PYTHONDONTWRITEBYTECODE", None)
    res = subprocess.run([sys.executable, *argv, "-q", "-p", "no:cacheprovider", "-c",
                          os.devnull, "--rootdir", str(copy)],
                         cwd=copy, env=env, capture_output=True, text=True, timeout=120)
    return res, prefix, copy


def test_the_launcher_reads_installed_bytecode_in_place_and_compiles_the_copy_into_the_cache(
        tmp_path):
    launcher = tmp_path / "plugins" / "superqode_launch.py"
    launcher.parent.mkdir()
    shutil.copyfile(_mutation_launch.__file__, launcher)
    res, prefix, copy = _run(tmp_path, [str(launcher)])
    assert res.returncode == 0 and "1 passed" in res.stdout, res.stdout + res.stderr
    # The code under test: compiled into the session's cache, never beside it.
    assert _cached(prefix, os.path.realpath(copy / "calc.py")).is_file()
    assert not (copy / "__pycache__").exists()
    # pytest's own module, whose installed bytecode is valid: read in place.
    fresh = _mutation_launch._fresh(PYTEST_MAIN, str(_beside(PYTEST_MAIN)))
    assert _cached(prefix, PYTEST_MAIN).is_file() is not fresh


def test_without_the_launcher_the_cache_compiles_pytest_itself(tmp_path):
    # What the launcher saves: with a prefix, Python reads only there.
    res, prefix, _ = _run(tmp_path, ["-m", "pytest"])
    assert res.returncode == 0, res.stdout + res.stderr
    assert _cached(prefix, PYTEST_MAIN).is_file()


def test_bytecode_is_never_written_outside_the_cache(tmp_path):
    # The import system's write, after install(): into the cache it lands,
    # anywhere else (beside a source) it is dropped.
    src = tmp_path / "src" / "mod.py"
    src.parent.mkdir()
    src.write_text("X = 1\n", encoding="utf-8")
    prefix = tmp_path / "pycache"
    script = (
        "import importlib.util, sys\n"
        f"spec = importlib.util.spec_from_file_location('launch', {_mutation_launch.__file__!r})\n"
        "m = importlib.util.module_from_spec(spec); spec.loader.exec_module(m)\n"
        "m.install()\n"
        "be = sys.modules['_frozen_importlib_external']\n"
        f"loader = be.SourceFileLoader('mod', {str(src)!r})\n"
        "for target in sys.argv[1:]:\n"
        f"    loader._cache_bytecode({str(src)!r}, target, b'x')\n"
    )
    beside = tmp_path / "src" / "__pycache__" / "mod.pyc"
    inside = prefix / "mod.pyc"
    env = {**os.environ, "PYTHONPYCACHEPREFIX": str(prefix)}
    env.pop("PYTHONDONTWRITEBYTECODE", None)
    res = subprocess.run([sys.executable, "-c", script, str(beside), str(inside)], env=env,
                         capture_output=True, text=True, timeout=60)
    assert res.returncode == 0, res.stderr
    assert inside.is_file()
    assert not beside.exists()


def test_own_interpreter_loads_hypothesis_plugin_only_for_a_suite_that_uses_it(tmp_path):
    own = ProjectPython(python=sys.executable, source="superqode")
    plain, uses = tmp_path / "plain", tmp_path / "uses"
    write_files(plain, {"test_a.py": "def test_a():\n    assert True\n"})
    write_files(uses, {"test_a.py": "from hypothesis import given, strategies as st\n\n\n"
                                    "@given(st.integers())\ndef test_a(x):\n    assert x == x\n"})
    assert "_hypothesis_pytestplugin" not in pytest_argv(own, None, {}, plain)
    assert "_hypothesis_pytestplugin" in pytest_argv(own, None, {}, uses)
