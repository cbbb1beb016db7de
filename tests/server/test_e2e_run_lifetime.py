"""Runs have a lifetime: the registry drops finished runs past its bound, and a
finding's quick fix still works after its run was dropped (the fix travels
with the finding). What the editor shows while a run streams is what it
shows at the end (suppressions and threshold applied as findings arrive)."""

from __future__ import annotations

from pathlib import Path

import pytest
from lsprotocol import types
from pygls.uris import from_fs_path
from pytest_lsp import LanguageClient

from superqode_ls.server.registry import ENV_MAX_RUNS

from .conftest import run_and_wait, start, superqode_diags, wait_for


@pytest.fixture
def keep_one_run(monkeypatch):
    # Read by the server the test starts (it inherits this environment).
    monkeypatch.setenv(ENV_MAX_RUNS, "1")


async def command(client: LanguageClient, name: str, args: dict | None = None):
    return await client.workspace_execute_command_async(
        types.ExecuteCommandParams(command=name, arguments=[args or {}]))


async def test_a_fix_still_applies_after_its_run_was_dropped(keep_one_run, lsp: LanguageClient, shop: Path):
    await start(lsp, shop)
    catalog = shop / "shop" / "catalog.py"
    uri = from_fs_path(str(catalog))
    before = catalog.read_text(encoding="utf-8")
    first = await run_and_wait(lsp, {"uri": uri, "roles": ["lint_tester"]})
    diags = await wait_for(lambda: superqode_diags(lsp, uri), 30, "diagnostics")
    f841 = next(d for d in diags if d.code == "F841")
    # A later run on another file of the folder: with one finished run kept,
    # the first run goes (the folder's latest is the second).
    second = await run_and_wait(lsp, {"uri": from_fs_path(str(shop / "shop" / "stats.py")),
                                      "roles": ["lint_tester"]})
    listed = (await command(lsp, "superqode.listSessions"))["sessions"]
    in_memory = [s["sessionId"] for s in listed if not s.get("onDisk")]
    assert second in in_memory and first not in in_memory
    # The finding of the dropped run is still shown, and its fix applies.
    assert any(d.data["findingId"] == f841.data["findingId"] for d in superqode_diags(lsp, uri))
    res = await command(lsp, "superqode.applyFix", {"findingId": f841.data["findingId"]})
    assert res["applied"] is True
    after = catalog.read_text(encoding="utf-8")
    assert after == before.replace("        count = len(matches)\n", "        len(matches)\n")
    # Asking about the dropped run is no error.
    assert (await command(lsp, "superqode.cancel", {"sessionId": first}))["cancelled"] is False
    reverted = await command(lsp, "superqode.revertSession", {"sessionId": first})
    assert reverted["reverted"] is False and "nothing to revert" in reverted["message"]


class Recorded(dict):
    """client.diagnostics that keeps every publish, not only the last."""

    def __init__(self) -> None:
        super().__init__()
        self.history: list[tuple[str, list]] = []

    def __setitem__(self, uri, diags) -> None:
        self.history.append((uri, list(diags)))
        super().__setitem__(uri, diags)


async def test_streamed_diagnostics_never_show_what_the_report_suppresses(lsp: LanguageClient, shop: Path):
    path = shop / "shop" / "suppressed.py"
    path.write_text("import os  # noqa: F401\nimport sys\nimport re  # superqode: ignore[F401]\n",
                    encoding="utf-8")
    lsp.diagnostics = Recorded()
    await start(lsp, shop)
    uri = from_fs_path(str(path))
    await run_and_wait(lsp, {"uri": uri, "roles": ["lint_tester"]})
    final = await wait_for(lambda: superqode_diags(lsp, uri), 30, "diagnostics")
    assert [(d.code, d.range.start.line) for d in final] == [("F401", 1)]
    seen = {(d.code, d.range.start.line) for u, diags in lsp.diagnostics.history if u == uri
            for d in diags if d.source == "superqode"}
    assert seen == {("F401", 1)}
