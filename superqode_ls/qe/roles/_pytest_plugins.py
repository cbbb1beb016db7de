"""Small pytest plugins written into scratch dirs and loaded with ``-p``.

They run inside the project's test process (the project's interpreter and
code), so they import nothing from SuperQode and only write JSON files.
"""

from __future__ import annotations

import re
from pathlib import Path

# Per-test coverage contexts (like pytest-cov's --cov-context=test) plus the
# outcome and duration of every test: the line -> tests map of the mutation
# tester, and which tests are trustworthy (only those that pass unmutated).
LINEMAP_PLUGIN = """
import json
import os

import pytest

_OUT = os.environ["SUPERQODE_LINEMAP_OUT"]
_tests = {}


def _cov():
    try:
        import coverage
    except ImportError:
        return None
    return coverage.Coverage.current()


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_protocol(item, nextitem):
    cov = _cov()
    if cov is not None:
        cov.switch_context(item.nodeid)
    yield
    if cov is not None:
        cov.switch_context("")


def pytest_runtest_logreport(report):
    t = _tests.setdefault(report.nodeid, {"passed": True, "duration": 0.0})
    t["duration"] += report.duration
    if report.failed or (report.when == "call" and not report.passed):
        t["passed"] = False


def pytest_sessionfinish(session, exitstatus):
    with open(_OUT, "w", encoding="utf-8") as fh:
        json.dump({"tests": _tests, "exitstatus": int(exitstatus)}, fh)
"""

# One JSON line per generated test: where it crashed (frames), with what
# (exception) and on which input (hypothesis' "Falsifying example" notes).
# Lines are appended as tests finish, so a run killed on a hang still tells
# which tests completed and which one was running.
CRASH_PLUGIN = """
import json
import os
import traceback

import pytest

_OUT = os.environ["SUPERQODE_CRASH_OUT"]


def _write(rec):
    with open(_OUT, "a", encoding="utf-8") as fh:
        fh.write(json.dumps(rec) + "\\n")


def _leaves(exc):
    subs = getattr(exc, "exceptions", None)
    if subs:
        out = []
        for s in subs:
            out.extend(_leaves(s))
        return out
    return [exc]


def pytest_runtest_logstart(nodeid, location):
    _write({"event": "start", "nodeid": nodeid})


def pytest_collectreport(report):
    # A file that cannot be collected has no test to report on: say why.
    if report.failed:
        _write({"event": "collect_error", "nodeid": report.nodeid,
                "text": str(report.longrepr)[-4000:]})


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_makereport(item, call):
    outcome = yield
    report = outcome.get_result()
    if call.when != "call":
        if report.failed:
            _write({"event": "error", "nodeid": item.nodeid, "when": call.when,
                    "text": str(report.longrepr)[-4000:]})
        return
    rec = {"event": "done", "nodeid": item.nodeid, "passed": report.passed, "errors": []}
    if call.excinfo is not None and not report.passed:
        top = call.excinfo.value
        notes = list(getattr(top, "__notes__", []) or [])
        for exc in _leaves(top):
            frames = [(f.filename, f.lineno, f.name)
                      for f in traceback.extract_tb(exc.__traceback__)]
            rec["errors"].append({
                "type": type(exc).__name__,
                "message": str(exc)[:500],
                "notes": list(getattr(exc, "__notes__", []) or []) or notes,
                "frames": frames,
            })
    _write(rec)
"""


def write_plugin(directory: Path, name: str, source: str) -> str:
    directory.mkdir(parents=True, exist_ok=True)
    (directory / f"{name}.py").write_text(source, encoding="utf-8")
    return name


def collect_reason(text: str, limit: int = 300) -> str:
    """What says why pytest could not collect a file: the exception line of
    its report (``E   SyntaxError: ...``) with the file and line when pytest
    gives them, else the first lines of the report."""
    lines = [ln.rstrip() for ln in text.splitlines() if ln.strip()]
    exc = [ln[1:].strip() for ln in lines if ln.startswith("E ")]
    raised = [ln for ln in exc if re.match(r"^[A-Za-z_][\w.]*: ", ln)]
    if raised:
        where = next((m for ln in exc if (m := re.match(r'^File "(.+)", line (\d+)', ln))), None)
        reason = raised[-1]
        if where:
            reason += f" ({where.group(1).rsplit('/', 1)[-1]} line {where.group(2)})"
    else:
        reason = " / ".join((exc or lines)[:2])
    return reason[:limit] or "no reason given"
