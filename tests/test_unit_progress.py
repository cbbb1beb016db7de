"""The unit role's recorder keeps how far a suite got (tests collected, tests
done) in a progress file, read back when the run is stopped at its cap; real
pytest processes, with and without pytest-xdist."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from superqode_ls.qe.roles import unit
from superqode_ls.qe.roles._unit_records import progress_said, read_progress


def _suite(tmp_path: Path) -> Path:
    tests = tmp_path / "proj" / "tests"
    tests.mkdir(parents=True)
    for i in range(5):
        (tests / f"test_{i}.py").write_text(f"def test_{i}():\n    assert {i} < 4\n")
    plugins = tmp_path / "plugins"
    plugins.mkdir()
    shutil.copyfile(unit._PLUGIN_SOURCE, plugins / f"{unit.PLUGIN_MODULE}.py")
    return tests.parent


def _run(tmp_path: Path, *extra: str) -> dict | None:
    proj = _suite(tmp_path)
    env = {**os.environ, "PYTHONPATH": str(tmp_path / "plugins"),
           "SUPERQODE_PYTEST_REPORT": str(tmp_path / "records.jsonl"),
           "SUPERQODE_PYTEST_PROGRESS": str(tmp_path / "progress")}
    # (kept: this test may itself run in an xdist worker, and the recorder
    # must count even when its caller's environment says so)
    env.pop("PYTEST_ADDOPTS", None)
    subprocess.run([sys.executable, "-m", "pytest", "-p", unit.PLUGIN_MODULE, "-p",
                    "no:cacheprovider", "-q", *extra, "tests"],
                   cwd=proj, env=env, capture_output=True, timeout=300, check=False)
    return read_progress(tmp_path / "progress")


def test_progress_counts_the_suite(tmp_path):
    progress = _run(tmp_path)
    assert progress == {"kind": "progress", "collected": 5, "done": 5}
    assert progress_said([progress]) == "5 of 5 tests run"


def test_progress_under_xdist_is_the_whole_suite(tmp_path):
    pytest.importorskip("xdist")
    # Each worker knows only its share and collects nothing for the
    # controller: before, the controller wrote "0 collected" (no count said)
    # or a worker its own share over it.
    assert _run(tmp_path, "-n", "2") == {"kind": "progress", "collected": 5, "done": 5}
