"""End to end: a real server process, real sessions on a copy of examples/shop."""

from __future__ import annotations

from pathlib import Path

import pytest
from lsprotocol import types
from pygls.uris import from_fs_path
from pytest_lsp import LanguageClient

from .conftest import EDITORS, run_and_wait, start, superqode_diags, wait_for


@pytest.mark.parametrize("editor", EDITORS)
async def test_run_qe_publishes_diagnostics_per_contract(lsp: LanguageClient, shop: Path, editor):
    await start(lsp, shop, editor=editor)
    catalog = from_fs_path(str(shop / "shop" / "catalog.py"))
    sid = await run_and_wait(lsp, {"roles": ["lint_tester"]})
    diags = await wait_for(lambda: superqode_diags(lsp, catalog), 30, "diagnostics")
    by_code = {d.code: d for d in diags}
    assert {"F401", "F841"} <= set(by_code)
    d = by_code["F401"]
    assert d.source == "superqode"
    assert d.range.start.line == 5 and d.range.start.character == 7
    assert d.data["sessionId"] == sid and d.data["findingId"].startswith("f401-")
    # ruff's lint findings are Warnings, as ruff's own server shows them; an
    # unused import is an advisory of the default view (noise): a Hint.
    assert by_code["F841"].severity == types.DiagnosticSeverity.Warning
    assert by_code["F401"].severity == types.DiagnosticSeverity.Hint


async def test_revert_session_stops_a_running_session(lsp: LanguageClient, shop: Path):
    await start(lsp, shop)
    sid = (await lsp.workspace_execute_command_async(
        types.ExecuteCommandParams(command="superqode.runQE", arguments=[{"roles": ["toy_slow"]}])
    ))["sessionId"]
    await wait_for(lambda: any("toy_slow started" in (getattr(v, "message", "") or "")
                               for v in lsp.progress_reports.get(f"superqode/{sid}", [])), 60, "start")
    res = await lsp.workspace_execute_command_async(
        types.ExecuteCommandParams(command="superqode.revertSession", arguments=[{"sessionId": sid}])
    )
    assert res["reverted"] is True and res["state"] == "cancelled"
    listed = await lsp.workspace_execute_command_async(
        types.ExecuteCommandParams(command="superqode.listSessions", arguments=[])
    )
    assert not any(s.get("onDisk") and s["sessionId"] == sid for s in listed["sessions"])
    from superqode_ls.workspace.paths import SessionPaths

    assert not SessionPaths(shop, sid).sandbox.exists()


async def test_first_session_names_the_protection_level(lsp: LanguageClient, shop: Path):
    from superqode_ls.workspace import namespaces

    await start(lsp, shop)
    await run_and_wait(lsp, {"roles": ["lint_tester"]})
    await run_and_wait(lsp, {"roles": ["lint_tester"]})
    said = [m.message for m in lsp.log_messages if "SuperQode protection:" in m.message]
    assert said == [f"SuperQode protection: {namespaces.protection_level()}"]  # once, not per run
    reports = sorted((shop / ".superqode" / "qe-artifacts" / "qr").glob("*.json"))
    import json

    assert json.loads(reports[-1].read_text())["protection"] == namespaces.protection_level()
