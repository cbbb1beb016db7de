"""The run registry's bounds (count and bytes, the latest run of each folder
always kept, running runs never dropped) and the streaming filter, in process
with real files."""

from __future__ import annotations

import asyncio
from collections import Counter
from types import SimpleNamespace

from superqode_ls.models import Event, Finding, Range, Severity
from superqode_ls.server.registry import ENV_MAX_RUNS, Run, RunRegistry


def run(n: int, folder: str = "/a", state: str = "done", overlay: int = 0) -> Run:
    r = Run(id=f"qe-{n}", folder=folder, files=None, mode="quick", roles=None, trigger="save",
            overlays={"x.py": b"x" * overlay} if overlay else {})
    r.state = state
    r.started = float(n)  # started in the order of n
    return r


def ids(reg: RunRegistry) -> list[str]:
    return [r.id for r in reg]


def test_count_bound_drops_the_oldest_but_keeps_the_latest_of_each_folder():
    reg = RunRegistry(max_runs=2, max_bytes=10**9)
    reg.add(run(0, "/b"))  # the oldest, but the only (so latest) run of /b
    for n in range(1, 6):
        reg.add(run(n, "/a"))
    dropped = reg.prune()
    assert [r.id for r in dropped] == ["qe-1", "qe-2", "qe-3", "qe-4"]
    assert ids(reg) == ["qe-0", "qe-5"]  # over the bound by one: the latest per folder wins
    assert reg.expired("qe-1") and not reg.expired("qe-5") and reg.get("qe-1") is None
    assert reg.dropped == 4


def test_runs_still_going_are_never_dropped_nor_counted_against_finished_ones():
    reg = RunRegistry(max_runs=1, max_bytes=10**9)
    reg.add(run(1, state="running"))
    reg.add(run(2))
    reg.add(run(3, state="starting"))
    assert reg.prune() == []  # qe-2 is the only finished run
    assert ids(reg) == ["qe-1", "qe-2", "qe-3"]
    assert [r.id for r in reg.active()] == ["qe-1", "qe-3"]


def test_byte_bound_drops_oldest_until_under_it():
    reg = RunRegistry(max_runs=100, max_bytes=2500)
    for n in range(5):
        reg.add(run(n, overlay=1000))
    assert reg.bytes() == 5000
    dropped = reg.prune()
    assert [r.id for r in dropped] == ["qe-0", "qe-1", "qe-2"]
    assert reg.bytes() == 2000 and ids(reg) == ["qe-3", "qe-4"]


def test_byte_bound_keeps_the_latest_run_even_when_it_alone_is_too_big():
    reg = RunRegistry(max_runs=100, max_bytes=10)
    reg.add(run(1, "/a", overlay=500))
    reg.add(run(2, "/b", overlay=500))
    reg.add(run(3, "/a", overlay=500))
    assert [r.id for r in reg.prune()] == ["qe-1"]
    assert ids(reg) == ["qe-2", "qe-3"]


def test_bounds_come_from_the_environment_and_bad_values_fall_back(monkeypatch):
    monkeypatch.setenv(ENV_MAX_RUNS, "3")
    assert RunRegistry().max_runs == 3
    monkeypatch.setenv(ENV_MAX_RUNS, "lots")
    assert RunRegistry().max_runs == RunRegistry(max_runs=None).max_runs != 3


def test_fix_all_cache_is_bounded():
    from superqode_ls.server.server import FIX_ALL_CACHE_MAX, SuperQodeServer

    ls = SuperQodeServer()
    for n in range(FIX_ALL_CACHE_MAX + 10):
        ls.cache_fix_all(f"file:///f{n}.py", ("k", n), None)
    assert len(ls.fix_all_cache) == FIX_ALL_CACHE_MAX
    assert "file:///f0.py" not in ls.fix_all_cache
    assert f"file:///f{FIX_ALL_CACHE_MAX + 9}.py" in ls.fix_all_cache


def _server(tmp_path):
    """A server over one workspace folder, its output dropped."""
    from lsprotocol import types
    from pygls.uris import from_fs_path
    from pygls.workspace import Workspace

    from superqode_ls.server.setup import create_server

    ls = create_server()
    ls.protocol.set_writer(SimpleNamespace(write=lambda data: None, close=lambda: None))
    ls.protocol._workspace = Workspace(
        from_fs_path(str(tmp_path)),
        workspace_folders=[types.WorkspaceFolder(uri=from_fs_path(str(tmp_path)), name="w")])
    return ls, ls.folder_paths()[0]


def test_streamed_findings_are_filtered_as_the_report_filters_them(tmp_path):
    """Suppressed inline (in the buffer the run analysed) or baselined: never
    shown, not even while the run goes; below the threshold: shown as noise,
    as the report keeps it."""
    from superqode_ls.server.runs import _on_event, finding_filter

    (tmp_path / "a.py").write_text("import os\nimport sys\nimport re\n", encoding="utf-8")
    # The unsaved buffer the run took: line 2 now carries a suppression.
    overlays = {"a.py": b"import os\nimport sys  # noqa: F401\nimport re\n"}

    def f401(line: int, confidence: float = 1.0) -> Finding:
        return Finding(role="lint_tester", tool="ruff", rule_id="F401", title="unused import",
                       message=f"line {line}", severity=Severity.medium, file="a.py",
                       confidence=confidence, snippet=f"import m{line}",
                       range=Range(start_line=line, start_col=1, end_line=line, end_col=5)
                       ).with_stable_id()

    async def go() -> list[str]:
        ls, folder = _server(tmp_path)
        r = Run(id="qe-s", folder=folder, files=None, mode="quick", roles=None, trigger="command",
                overlays=overlays)
        # Line 3's finding is baselined once: the first copy hides, a second shows.
        r.keep = finding_filter(folder, overlays, 0.7, Counter({f401(3).id: 1}))
        ls.runs.add(r)
        progress = SimpleNamespace(findings=0, count=None, status=lambda: "", report=lambda *a, **k: None)
        for f in (f401(1), f401(2), f401(4, confidence=0.3), f401(3), f401(3)):
            data = {"finding": f.model_dump(mode="json", exclude_none=True)}
            _on_event(ls, r, progress, Event(type="role_finding", session_id="qe-s", data=data))
        await ls.publisher.drain()
        shown = sorted(t.finding.message for uri in ls.store.uris() for t in ls.store.get(uri))
        return shown, progress.findings

    # Three taken in (line 3's second copy is not baselined; line 4, below the
    # threshold, as noise, which the report keeps too); one entry per id.
    assert asyncio.run(go()) == (["line 1", "line 3", "line 4"], 3)


def test_a_documents_diagnostics_are_most_important_first_noise_as_hints(tmp_path):
    """The editor lists a file's diagnostics as the report does: worth acting
    on by severity, noise last and as hints with its reason."""

    from superqode_ls.server.publisher import diagnostics_for
    from superqode_ls.server.runs import _on_event, finding_filter

    (tmp_path / "a.py").write_text("import os\nx = 1\ny = 2\nz = 3\n", encoding="utf-8")

    def mk(line: int, sev: Severity, noise: str | None = None) -> Finding:
        return Finding(role="lint_tester", tool="ruff", rule_id=f"R{line}", title="t",
                       message=f"line {line}", severity=sev, file="a.py", noise=noise,
                       snippet=f"l{line}", range=Range(start_line=line, start_col=1)
                       ).with_stable_id()

    async def go():
        ls, folder = _server(tmp_path)
        r = Run(id="qe-o", folder=folder, files=None, mode="quick", roles=None,
                trigger="command", overlays={})
        r.keep = finding_filter(folder, {}, 0.7)
        ls.runs.add(r)
        progress = SimpleNamespace(findings=0, count=None, status=lambda: "", report=lambda *a, **k: None)
        for f in (mk(1, Severity.low), mk(2, Severity.critical, noise="in tests code"),
                  mk(3, Severity.high), mk(4, Severity.medium)):
            data = {"finding": f.model_dump(mode="json", exclude_none=True)}
            _on_event(ls, r, progress, Event(type="role_finding", session_id="qe-o", data=data))
        await ls.publisher.drain()
        (uri,) = ls.store.uris()
        return diagnostics_for(ls, uri)

    diags = asyncio.run(go())
    assert [d["code"] for d in diags] == ["R3", "R4", "R1", "R2"]
    assert diags[-1]["severity"] == 4 and "[noise: in tests code]" in diags[-1]["message"]


def test_streamed_findings_come_at_the_level_the_report_gives_them(tmp_path):
    """A finding in tests/ streams in one level lower and as noise (a hint),
    as the report will have it: on flask, 41 errors in tests/ and docs/
    flashed in Problems during the run and became hints at its end."""
    from superqode_ls.config import DEFAULT_PATH_CLASSES
    from superqode_ls.engine.runs import finding_shape
    from superqode_ls.server.runs import _on_event

    (tmp_path / "tests").mkdir()
    (tmp_path / "tests" / "test_a.py").write_text("x = 'hunter2'\n", encoding="utf-8")
    (tmp_path / "a.py").write_text("x = 'hunter2'\n", encoding="utf-8")

    def b105(file: str) -> Finding:
        return Finding(role="security_tester", tool="bandit", rule_id="B105", title="password",
                       message="hard-coded password", severity=Severity.high, file=file,
                       category="security", confidence=0.9, snippet="x = 'hunter2'",
                       range=Range(start_line=1, start_col=1, end_line=1, end_col=5)).with_stable_id()

    async def go():
        ls, folder = _server(tmp_path)
        r = Run(id="qe-s", folder=folder, files=None, mode="quick", roles=None, trigger="command")
        r.shape = finding_shape(DEFAULT_PATH_CLASSES)
        ls.runs.add(r)
        progress = SimpleNamespace(findings=0, count=None, status=lambda: "", report=lambda *a, **k: None)
        for f in (b105("tests/test_a.py"), b105("a.py")):
            data = {"finding": f.model_dump(mode="json", exclude_none=True)}
            _on_event(ls, r, progress, Event(type="role_finding", session_id="qe-s", data=data))
        await ls.publisher.drain()
        return {t.finding.file: (t.finding.severity, t.finding.noise is not None)
                for uri in ls.store.uris() for t in ls.store.get(uri)}

    assert asyncio.run(go()) == {"tests/test_a.py": (Severity.medium, True), "a.py": (Severity.high, False)}
