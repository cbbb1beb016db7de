"""The line map's half of the warm mutant server (``_forkserver``): which
lines of the files under test each collected test runs, traced once in a
forked child per shard of the suite.

Copied beside ``_forkserver`` into the run's plugins folder as
``superqode_forktrace`` and imported from there; like it, it imports nothing
from SuperQode: it runs in the project's Python.
"""

import contextlib
import json
import os
import time
import warnings


def preload():
    """Import coverage.py once in the first process, before it forks the
    workers that trace: each trace child then starts its tracer without
    importing it again (on 16 workers, 16 imports side by side were most of
    the trace's CPU). Missing here: each child fails as before, and the role
    maps lines with its coverage pass, which says why."""
    with contextlib.suppress(Exception):
        import coverage  # noqa: F401


def shard(items, ks, n):
    """The items of shards ``ks`` (a list, or one index) of ``n``: whole test
    files (module-scoped fixtures set up once), the biggest first onto the
    emptiest shard; the same split in every worker, which all collected the
    same items. Fewer files than shards (one big parametrized file): runs of
    adjacent items. In collection order."""
    ks = set(ks) if isinstance(ks, list) else {ks}
    files = {}
    for item in items:
        files.setdefault(item.nodeid.split("::")[0], []).append(item)
    if len(files) < n:
        size = -(-len(items) // n)
        return [item for i, item in enumerate(items) if i // size in ks]
    load = [0] * n
    mine = set()
    for name in sorted(files, key=lambda f: (-len(files[f]), f)):
        i = load.index(min(load))
        load[i] += len(files[name])
        if i in ks:
            mine.add(name)
    return [item for item in items if item.nodeid.split("::")[0] in mine]


class _Outcomes:
    """Each test's outcome and duration, as the coverage line map's plugin
    counts them: failed if any phase failed or the call did not pass."""

    def __init__(self):
        self.tests = {}

    def pytest_runtest_logreport(self, report):
        t = self.tests.setdefault(report.nodeid, {"passed": True, "duration": 0.0})
        t["duration"] += report.duration
        if report.failed or (report.when == "call" and not report.passed):
            t["passed"] = False


def _coverage(files):
    """coverage.py's tracer (C, or sys.monitoring) on ``files`` only, in
    memory, ignoring the project's own coverage settings. The role makes
    sure coverage is importable here (the project's, or SuperQode's lent);
    when it is not, the child fails and the role maps lines with its
    coverage pass instead, which says why."""
    import coverage

    return coverage.Coverage(data_file=None, include=list(files), branch=False,
                             config_file=False)


def _coverage_lines(cov, session, items, files, times):
    """Lines per test with one coverage context per test (as the coverage
    pass's plugin switches them); ``times``: when the tests start and end."""
    cov.start()
    times["tests"] = time.monotonic()
    hook = session.config.hook
    for i, item in enumerate(items):
        cov.switch_context(item.nodeid)
        nextitem = items[i + 1] if i + 1 < len(items) else None
        hook.pytest_runtest_protocol(item=item, nextitem=nextitem)
    times["ran"] = time.monotonic()
    cov.switch_context("")
    with warnings.catch_warnings():
        # A shard whose tests never reach the files under test collects no
        # data; coverage warns, and a project's `filterwarnings = error`
        # would turn that warning into a broken trace.
        warnings.simplefilter("ignore")
        cov.stop()
        data = cov.get_data()
    per_test = {}
    for measured in data.measured_files():
        rel = files.get(os.path.realpath(measured))
        if rel is None:
            continue
        for line, contexts in data.contexts_by_lineno(measured).items():
            for nodeid in contexts:
                if nodeid:
                    per_test.setdefault(nodeid, set()).add((rel, line))
    return per_test


def trace_child(session, items, files, out):
    """Run ``items`` once and write which lines of ``files`` (real path ->
    relative) each of them ran. Lines run at import time belong to no test,
    as with per-test coverage contexts: those modules are imported already."""
    try:
        times = {"started": time.monotonic()}
        outcomes = _Outcomes()
        session.config.pluginmanager.register(outcomes, "superqode_trace_outcomes")
        per_test = _coverage_lines(_coverage(files), session, items, files, times)
        result = {}
        for nodeid, t in outcomes.tests.items():
            by_file = {}
            for rel, line in per_test.get(nodeid, ()):
                by_file.setdefault(rel, []).append(line)
            result[nodeid] = {**t, "lines": by_file}
        times["written"] = time.monotonic()
        with open(out, "w", encoding="utf-8") as fh:
            json.dump({"tests": result, "times": times}, fh)
        os._exit(0)
    except BaseException:  # noqa: BLE001 - pytest.exit, os._exit in a test, our bug
        os._exit(3)
