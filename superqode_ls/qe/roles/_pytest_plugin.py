"""pytest plugin the unit_tester loads into the project's test run.

It is copied to a private directory and loaded with ``-p``; it must only need
pytest itself and ``_failure_chain.py``, copied beside it (it runs under the
project's interpreter). Each failure is
appended to ``$SUPERQODE_PYTEST_REPORT`` as one JSON line as soon as it
happens, so a run killed at its deadline still leaves what it found; how
far the suite got (tests collected, tests done) is kept in
``$SUPERQODE_PYTEST_PROGRESS``, rewritten in place after each test.

How long each test module took is kept in ``$SUPERQODE_PYTEST_DURATIONS``
(rewritten when a module's first test ends, so a killed run leaves the
modules it finished and the one it was in). ``$SUPERQODE_PYTEST_ORDER`` (quick mode, for a suite
that did not fit its cap last time) orders the modules: the ones named
first, then the changed ones, then those never timed, then the rest
fastest first; a module's own tests keep their order.
"""

import json
import os

import pytest

try:  # copied beside this module in the run's private folder (unit.py)
    from superqode_failure_chain import chain as _chain
except ImportError:  # imported from the package itself
    from superqode_ls.qe.roles._failure_chain import chain as _chain

_OUT = os.environ.get("SUPERQODE_PYTEST_REPORT")
# Outcomes of the tests that ran, for the summary (how much of the suite ran).
_COUNTS = {"passed": 0, "skipped": 0, "collect_errors": 0}
_PROGRESS = os.environ.get("SUPERQODE_PYTEST_PROGRESS")
# A run stopped at quick mode's cap (killed, no sessionfinish) still says how
# much of the suite ran. One fixed-width pwrite at offset 0 per test (about a
# microsecond): no file made and renamed per test, no thread in the tests'
# process.
_STATE = {"fd": None, "collected": 0, "done": 0, "worker": False}
_DURATIONS = os.environ.get("SUPERQODE_PYTEST_DURATIONS")
_ORDER = os.environ.get("SUPERQODE_PYTEST_ORDER")
_TIMES = {"module": None, "seconds": {}}


def _progress():
    # Under pytest-xdist only the controller counts: it sees every worker's
    # reports; a worker knows only its own share. (Asked of the run's own
    # configuration: an environment variable may come from whatever started
    # SuperQode, itself a worker of another xdist run.)
    if not _PROGRESS or _STATE["worker"]:
        return
    try:
        if _STATE["fd"] is None:
            _STATE["fd"] = os.open(_PROGRESS, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
        os.pwrite(_STATE["fd"], b"%12d %12d\n" % (_STATE["collected"], _STATE["done"]), 0)
    except OSError:
        pass  # only a count for the report: never the run's failure


def _write(record):
    if not _OUT:
        return
    with open(_OUT, "a", encoding="utf-8") as fh:
        fh.write(json.dumps(record) + "\n")
        fh.flush()


def _entries(excinfo):
    out = []
    try:
        for entry in excinfo.traceback:
            out.append({"path": str(entry.path), "lineno": entry.lineno + 1, "name": entry.name})
    except Exception:  # noqa: BLE001,S110 - a broken traceback must not break the run
        pass
    return out


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_makereport(item, call):
    outcome = yield
    report = outcome.get_result()
    if not report.failed:
        return
    excinfo = call.excinfo
    path, lineno, _ = item.location
    record = {
        "kind": "test",
        "nodeid": report.nodeid,
        "when": report.when,
        "test_path": str(item.path) if hasattr(item, "path") else path,
        "test_line": (lineno + 1) if isinstance(lineno, int) else None,
        "exc_type": excinfo.typename if excinfo else None,
        "message": (excinfo.exconly() if excinfo else str(report.longrepr))[:4000],
        "entries": _entries(excinfo) if excinfo else [],
        "chain": _chain(excinfo.value) if excinfo else [],
        "longrepr": str(report.longrepr)[-6000:],
        # What the test logged (a setup that logged the error it caught and
        # then failed its own check): evidence of the cause, read as text.
        "logged": "\n".join(str(c) for t, c in getattr(report, "sections", ())
                             if "log" in t or "stderr" in t)[-3000:],
        # What a re-run of this test costs (unit_tester re-runs failures once).
        "duration": float(getattr(report, "duration", 0.0) or 0.0),
        # A test the project marks as needing the network (``network``...).
        "markers": sorted({m.name for m in item.iter_markers()})[:20],
    }
    _write(record)


def pytest_configure(config):
    _STATE["worker"] = hasattr(config, "workerinput")


def pytest_collection_finish(session):
    _STATE["collected"] = len(session.items)
    _progress()


@pytest.hookimpl(optionalhook=True)
def pytest_xdist_node_collection_finished(node, ids):
    # The controller collects nothing itself: each worker's list is the suite.
    _STATE["collected"] = max(_STATE["collected"], len(ids))
    _progress()


def _module(nodeid):
    return nodeid.split("::", 1)[0]


def _flush_times(running=None):
    if not _DURATIONS or _STATE["worker"]:
        return
    try:
        with open(_DURATIONS + ".tmp", "w", encoding="utf-8") as fh:
            json.dump({"done": _TIMES["seconds"], "running": running}, fh)
        os.replace(_DURATIONS + ".tmp", _DURATIONS)
    except OSError:
        pass  # only quick mode's ordering: never the run's failure


def _time(report):
    module = _module(report.nodeid)
    if _TIMES["module"] != module:
        # A module ended: kept, so a run killed later still has its time;
        # the one that starts is named (a run killed in it: it is slow).
        _TIMES["module"] = module
        _flush_times(running=module)
    seconds = _TIMES["seconds"]
    seconds[module] = round(seconds.get(module, 0.0) + float(report.duration or 0.0), 4)


@pytest.hookimpl(trylast=True)
def pytest_collection_modifyitems(session, config, items):
    if not _ORDER:
        return
    try:
        with open(_ORDER, encoding="utf-8") as fh:
            order = json.load(fh)
        first = {m: i for i, m in enumerate(order.get("first") or [])}
        changed = set(order.get("changed") or [])
        seconds = order.get("seconds") or {}
    except (OSError, ValueError, AttributeError):
        return  # the suite's own order

    def key(item):
        module = _module(item.nodeid)
        if module in first:
            return (0, first[module])
        if module in changed:
            return (1, 0)
        if module not in seconds:
            return (2, 0)
        return (3, float(seconds[module]))

    items.sort(key=key)  # stable: each module's tests keep their order


def pytest_runtest_logreport(report):
    _time(report)
    if report.when == "teardown":
        _STATE["done"] += 1
        _progress()
    if report.skipped:
        _COUNTS["skipped"] += 1
    elif report.when == "call" and report.passed:
        _COUNTS["passed"] += 1


def pytest_collectreport(report):
    if report.failed:
        _COUNTS["collect_errors"] += 1
        _write(
            {
                "kind": "collect",
                "nodeid": report.nodeid,
                "when": "collect",
                "message": str(report.longrepr)[-6000:],
                "entries": [],
            }
        )


def pytest_sessionfinish(session, exitstatus):
    _flush_times()
    _write(
        {
            "kind": "summary",
            "exitstatus": int(exitstatus),
            "collected": session.testscollected,
            "failed": session.testsfailed,
            # pytest-randomly reorders and reseeds: a re-run turns it off.
            "randomly": session.config.pluginmanager.hasplugin("randomly"),
            **_COUNTS,
        }
    )
