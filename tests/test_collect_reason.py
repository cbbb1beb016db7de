"""Generated tests that pytest cannot collect say why: the crash plugin the
test generator loads records pytest's collection error, and the reason is its
first exception lines (a real pytest run, as test_generator starts it)."""

from __future__ import annotations

import json
import os
import subprocess
import sys

from superqode_ls.qe.roles._pytest_plugins import CRASH_PLUGIN, collect_reason, write_plugin


def test_collection_error_is_recorded_with_its_reason(tmp_path):
    tools, gen = tmp_path / "tools", tmp_path / "gen"
    gen.mkdir()
    plugin = write_plugin(tools, "superqode_crash", CRASH_PLUGIN)
    (gen / "pytest.ini").write_text("[pytest]\n")
    (gen / "test_gen_broken.py").write_text("import no_such_module_here\n\n\ndef test_x():\n    pass\n")
    (gen / "test_gen_syntax.py").write_text("def test_y(:\n    pass\n")
    (gen / "test_gen_ok.py").write_text("def test_z():\n    assert True\n")
    events = tmp_path / "events.jsonl"
    env = {**os.environ, "SUPERQODE_CRASH_OUT": str(events),
           "PYTHONPATH": str(tools), "PYTHONDONTWRITEBYTECODE": "1"}
    argv = [sys.executable, "-m", "pytest", "-p", plugin, "-p", "no:cacheprovider",
            "-c", str(gen / "pytest.ini"), "--rootdir", str(gen), "-q", "--no-header", "-rN",
            "--continue-on-collection-errors",
            *(str(gen / n) for n in ("test_gen_broken.py", "test_gen_syntax.py", "test_gen_ok.py"))]
    proc = subprocess.run(argv, cwd=tmp_path, env=env, capture_output=True, text=True, timeout=120,
                          check=False)
    assert proc.returncode != 0
    recs = [json.loads(line) for line in events.read_text().splitlines()]
    errors = {r["nodeid"]: collect_reason(r["text"]) for r in recs if r["event"] == "collect_error"}
    assert set(errors) == {"test_gen_broken.py", "test_gen_syntax.py"}, recs
    assert errors["test_gen_broken.py"] == "ModuleNotFoundError: No module named 'no_such_module_here'"
    assert errors["test_gen_syntax.py"].startswith("SyntaxError: ")
    assert errors["test_gen_syntax.py"].endswith("(test_gen_syntax.py line 1)")
    assert any(r["event"] == "done" and r["passed"] for r in recs)  # the good file still ran


def test_collect_reason_without_exception_lines():
    assert collect_reason("first\n\nsecond\nthird\n") == "first / second"
    assert collect_reason("E   something odd\nE   more\nE   and more") == "something odd / more"
    assert collect_reason("") == "no reason given"
    assert len(collect_reason("E   " + "x" * 1000)) == 300
