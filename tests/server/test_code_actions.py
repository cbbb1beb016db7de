"""server/code_actions.py: the code actions offered on a flagged line (a real server over stdio)."""

from __future__ import annotations

from pathlib import Path

from pytest_lsp import LanguageClient

from .conftest import code_actions, start


async def test_run_qe_code_action_starts_a_session_on_the_file(lsp: LanguageClient, shop: Path):
    await start(lsp, shop)
    uri = lsp.editor.open(shop / "shop" / "pricing.py")
    actions = await code_actions(lsp, uri, 0, only=["source.superqode.runQE"])
    (action,) = actions
    assert action.kind == "source.superqode.runQE" and action.command.command == "superqode.runQE"
    assert list(action.command.arguments) == [{"uri": uri}]
