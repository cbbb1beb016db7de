"""Two findings on one line in the editor: once the user applies one quick
fix, the other's quick fix is still offered and edits the line as it is now
(the fix's own change, re-derived: ``qe.rebase``); it is not offered where
the user changed the characters it changes."""

from __future__ import annotations

from pathlib import Path

from lsprotocol import types
from pytest_lsp import LanguageClient

from .conftest import code_actions, run_and_wait, start, superqode_diags, wait_for

COND = "def f(a, b):\n    if a == None and b == True:\n        return 1\n"


async def _fix(lsp: LanguageClient, uri: str, diag: types.Diagnostic) -> types.CodeAction | None:
    actions = await code_actions(lsp, uri, diag.range.start.line, diagnostics=[diag],
                                 only=[types.CodeActionKind.QuickFix])
    return next((a for a in actions or [] if a.title.startswith(f"SuperQode ({diag.code}): ")
                 and a.edit is not None), None)


async def _both_findings(lsp: LanguageClient, shop: Path) -> tuple[str, list[types.Diagnostic]]:
    """COND open in the editor after a lint run: its E711 and E712 on one line."""
    path = shop / "shop" / "cond.py"
    path.write_text(COND, encoding="utf-8")
    await start(lsp, shop)
    uri = lsp.editor.open(path)
    await run_and_wait(lsp, {"uri": uri, "roles": ["lint_tester"]})
    diags = await wait_for(lambda: (d := superqode_diags(lsp, uri)) and {"E711", "E712"} <= {x.code for x in d}
                           and d, 30, "E711 and E712")
    return uri, diags


async def test_the_other_same_line_quick_fix_applies_after_the_first(lsp: LanguageClient, shop: Path):
    uri, diags = await _both_findings(lsp, shop)
    e711 = next(d for d in diags if d.code == "E711")
    e712 = next(d for d in diags if d.code == "E712")
    first = await _fix(lsp, uri, e712)
    assert first is not None
    assert lsp.editor.apply(types.ApplyWorkspaceEditParams(edit=first.edit)).applied
    assert lsp.editor.text(uri) == COND.replace("b == True", "b")
    # The other fix was made on the line before that edit: still offered,
    # and it makes its own change only.
    second = await _fix(lsp, uri, e711)
    assert second is not None, "the E711 quick fix is no longer offered"
    assert lsp.editor.apply(types.ApplyWorkspaceEditParams(edit=second.edit)).applied
    assert lsp.editor.text(uri) == COND.replace("b == True", "b").replace("a == None", "a is None")


async def test_a_same_line_quick_fix_is_not_offered_where_its_characters_changed(
        lsp: LanguageClient, shop: Path):
    uri, diags = await _both_findings(lsp, shop)
    e711 = next(d for d in diags if d.code == "E711")
    col = COND.splitlines()[1].index("==")
    lsp.editor.edit(uri, (1, col), (1, col + 2), "!=")  # the user's own edit of those characters
    assert await _fix(lsp, uri, e711) is None
