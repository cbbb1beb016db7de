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
    assert d.severity in (types.DiagnosticSeverity.Warning, types.DiagnosticSeverity.Information,
                          types.DiagnosticSeverity.Error, types.DiagnosticSeverity.Hint)
