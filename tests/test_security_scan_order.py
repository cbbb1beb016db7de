"""The security role's pattern scans on a large project under a deadline:
product code is scanned before tests (a stop leaves the tests), the report
lists the findings in the files' own order whatever order they were scanned
in, the whole-tree walks give what ``ast.walk`` gives, and a scan held up by
one large file still gives what the finished files found."""

from __future__ import annotations

import ast
import threading
from pathlib import Path

from superqode_ls.qe.roles import _security_scan, _web_sinks
from superqode_ls.qe.roles import security as security_mod
from superqode_ls.qe.roles._common import SourceCache
from superqode_ls.qe.roles._security_scan import Progress, scan_files
from superqode_ls.qe.roles.security import SecurityTester
from tests.role_helpers import make_ctx, run_role

UNSAFE = "import yaml\n\n\ndef load(doc):\n    return yaml.unsafe_load(doc)\n"
SQL = ("def find(db, name):\n"
       "    return db.execute(\"SELECT * FROM users WHERE name = '%s'\" % name)\n")


def test_product_code_is_scanned_first_and_reported_in_file_order(make_repo, monkeypatch):
    # tests/ sorts before zpkg/: the old order scanned the tests first
    repo = make_repo({"tests/test_load.py": UNSAFE, "tests/test_sql.py": SQL,
                      "zpkg/load.py": UNSAFE, "zpkg/sql.py": SQL})
    orders: list[list[str]] = []
    real = security_mod.scan_files

    def recorded(role, root, src, py_files, *rest, **kw):
        orders.append(list(py_files))
        return real(role, root, src, py_files, *rest, **kw)

    monkeypatch.setattr(security_mod, "scan_files", recorded)
    out = run_role(SecurityTester(), make_ctx(repo))
    assert orders == [["zpkg/load.py", "zpkg/sql.py", "tests/test_load.py", "tests/test_sql.py"]]
    ours = [f for f in out.findings if f.tool == "superqode-patterns"]
    files = [f.file for f in ours]
    # the report's order is the files' order, as a scan in that order gives
    direct = scan_files("security_tester", repo, SourceCache(repo), sorted(files), [])
    assert files == sorted(files) == [f.file for f in direct]
    assert {f.file for f in ours} == {"tests/test_load.py", "tests/test_sql.py",
                                      "zpkg/load.py", "zpkg/sql.py"}


def test_the_fast_walk_is_ast_walk():
    """The walks the scans share give the same nodes in the same order as
    ``ast.walk`` and ``ast.iter_child_nodes`` (on SuperQode's own sources:
    every kind of statement and expression they hold)."""
    here = Path(_security_scan.__file__).parent
    for path in sorted(here.glob("*.py"))[:40]:
        tree = ast.parse(path.read_text(encoding="utf-8"))
        assert [id(n) for n in _web_sinks.walk(tree)] == [id(n) for n in ast.walk(tree)]
        for node in ast.walk(tree):
            assert _web_sinks.children(node) == list(ast.iter_child_nodes(node))


def test_a_scan_held_up_by_one_file_gives_what_the_others_found(tmp_path):
    """The scan thread stuck in a large file when the role must stop: what
    the finished files found is there, the file at hand and the rest are
    named as not scanned."""
    for name in ("a.py", "b.py", "c.py"):
        (tmp_path / name).write_text(UNSAFE)
    entered, release = threading.Event(), threading.Event()

    class SlowOnB(SourceCache):
        def text(self, rel):
            if rel == "b.py":
                entered.set()
                release.wait(30)  # a large file at a loaded machine's pace
            return super().text(rel)

    progress, stop, missed = Progress(), threading.Event(), []
    worker = threading.Thread(target=scan_files, args=(
        "security_tester", tmp_path, SlowOnB(tmp_path), ["a.py", "b.py", "c.py"], [], stop,
        missed, progress))
    worker.start()
    try:
        assert entered.wait(30)
        stop.set()
        found, left = progress.so_far(["a.py", "b.py", "c.py"], [])
    finally:
        release.set()
        worker.join(30)
    assert [f.file for f in found] == ["a.py"]
    assert [f.rule_id for f in found] == ["yaml-unsafe-load"]
    assert left == ["b.py", "c.py"]
    # the thread itself ended after the file at hand
    assert missed == ["c.py"]


def test_a_busy_machine_stops_the_tools_earlier(make_repo, monkeypatch):
    """The role's own work after bandit (its results read, the context
    checks, the fixes) keeps a tenth of the time left on a quiet machine and
    up to twice that at a load many times the CPUs: at a load of 20-25 on
    2 cores a tenth was not enough and the role ran past its deadline."""
    import asyncio

    repo = make_repo({"app.py": UNSAFE})
    margins = {}
    for load in (0.5, 8.0, 15.0, 60.0):
        monkeypatch.setattr(security_mod.os, "getloadavg", lambda load=load: (load, load, load))

        async def margin():
            ctx = make_ctx(repo, deadline_in=40.0)
            return ctx.deadline - security_mod._stop_at(ctx)

        monkeypatch.setattr(type(make_ctx(repo).runtime), "cpu_count", lambda self: 2)
        margins[load] = asyncio.run(margin())
    assert abs(margins[0.5] - 4.0) < 0.1 and abs(margins[8.0] - 4.0) < 0.1
    assert 5.4 < margins[15.0] < 6.6  # 1.5 times
    assert abs(margins[60.0] - 8.0) < 0.1  # at most twice
