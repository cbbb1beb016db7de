"""The editor's automatic runs verify their fixes without the project's mypy
(a whole-program check per pause in typing); "Run QE" keeps it."""

from __future__ import annotations

import asyncio

import pytest

from superqode_ls.qe.pipeline import QERequest, QESession
from superqode_ls.qe.roles.base import tool_path
from superqode_ls.server.registry import LIVE, Run
from superqode_ls.server.runs import build_request
from superqode_ls.server.server import SuperQodeServer

SOURCE = "import os\n\n\ndef f() -> int:\n    return 1\n"
PYPROJECT = '[project]\nname = "t"\nversion = "0"\n\n[tool.mypy]\nstrict = true\n'


def _session(repo, type_gate: bool) -> tuple[list, list[str]]:
    events: list[str] = []

    async def go():
        s = QESession(QERequest(project=repo, roles=["lint_tester"], files=["m.py"],
                                save_artifacts=False, type_gate=type_gate))
        s.bus.subscribe(lambda e: events.append(str(e.data.get("message") or "")))
        return await s.run()

    report = asyncio.run(go())
    return report.patches, events


@pytest.mark.skipif(not tool_path("mypy"), reason="needs mypy")
def test_automatic_runs_leave_the_type_gate_to_run_qe(make_repo):
    repo = make_repo({"pyproject.toml": PYPROJECT, "m.py": SOURCE})
    gated, said = _session(repo, True)
    (fix,) = [p for p in gated if p.kind == "fix"]
    assert "mypy" in (fix.verification or "") and any("mypy" in m for m in said)
    free, said = _session(repo, False)
    (fix,) = [p for p in free if p.kind == "fix"]
    assert fix.verified_by == "tool" and "mypy" not in (fix.verification or "")
    assert not any("mypy" in m for m in said)


def test_the_server_asks_it_of_automatic_runs_only(tmp_path):
    ls = SuperQodeServer()
    for trigger, gate in ((LIVE, False), ("command", True), ("save", True)):
        run = Run(id="r", folder=str(tmp_path), files=["m.py"], mode="quick", roles=None,
                  trigger=trigger)
        assert build_request(ls, run, None, True).type_gate is gate
