"""server/hover.py: hover over a flagged range says what was found, once, with its rule
link and how far its fix was verified (a real server over stdio)."""

from __future__ import annotations

from pathlib import Path

import pytest
from lsprotocol import types
from pytest_lsp import LanguageClient

from .conftest import EDITORS, run_and_wait, start, superqode_diags, wait_for


@pytest.mark.parametrize("editor", EDITORS)
async def test_hover_explains_the_finding_and_its_fix(lsp: LanguageClient, shop: Path, editor):
    await start(lsp, shop, editor=editor)
    uri = lsp.editor.open(shop / "shop" / "catalog.py")
    await run_and_wait(lsp, {"uri": uri, "roles": ["lint_tester"]})
    (d,) = [x for x in await wait_for(lambda: superqode_diags(lsp, uri), 30, "diags") if x.code == "F401"]
    hover = await lsp.text_document_hover_async(
        types.HoverParams(text_document=types.TextDocumentIdentifier(uri=uri), position=d.range.start)
    )
    # An untrusted folder runs no tests: the fix is checked by the tool only.
    assert "F401" in hover.contents.value
    assert "Fix available, tool-verified only" in hover.contents.value
    formats = lsp.capabilities.text_document.hover.content_format or []
    expected = types.MarkupKind.Markdown if types.MarkupKind.Markdown in formats else types.MarkupKind.PlainText
    assert hover.contents.kind == expected
    nothing = await lsp.text_document_hover_async(
        types.HoverParams(text_document=types.TextDocumentIdentifier(uri=uri), position=types.Position(0, 0))
    )
    assert nothing is None


async def test_one_message_with_the_rule_link_and_a_hover_that_says_it_once(lsp: LanguageClient, shop: Path):
    await start(lsp, shop)
    catalog = lsp.editor.open(shop / "shop" / "catalog.py")
    await run_and_wait(lsp, {"roles": ["lint_tester", "security_tester"]})
    f401 = next(d for d in await wait_for(lambda: superqode_diags(lsp, catalog), 30, "lint")
                if d.code == "F401")
    # an advisory of the default view: the message says why it is noise
    assert f401.message == ("`os` imported but unused "
                            "[noise: advisory: unused import (seldom a bug)]")
    assert f401.code_description.href == "https://docs.astral.sh/ruff/rules/unused-import"
    bandit = [d for uri in lsp.diagnostics for d in superqode_diags(lsp, uri)
              if isinstance(d.code, str) and d.code.startswith("B") and d.code_description]
    assert bandit, "a bandit finding with its rule page"
    for d in bandit:
        assert d.code not in d.message and "(" + d.code not in d.message
        assert d.code_description.href.startswith("https://bandit.readthedocs.io/")
    hover = await lsp.text_document_hover_async(
        types.HoverParams(text_document=types.TextDocumentIdentifier(uri=catalog), position=f401.range.start))
    assert hover.contents.value.count("imported but unused") == 1
    assert "https://docs.astral.sh/ruff/rules/unused-import" in hover.contents.value
