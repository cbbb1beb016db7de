"""What the user sees: unsaved buffers, position encodings with non-ASCII
text, diagnostics that follow edits, fixes on edited buffers (files changed on
disk: test_watch.py)."""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest
from lsprotocol import types
from pytest_lsp import LanguageClient

from .conftest import EDITORS, run_and_wait, start, superqode_diags, wait_for

UNICODE_LINE = 'GREETING = "héllo 😀"  # PLANTED\n'
_PREFIX = UNICODE_LINE[: UNICODE_LINE.index("PLANTED")]
EXPECTED_START = {
    "utf-16": len(_PREFIX.encode("utf-16-le")) // 2,  # 😀 takes two units
    "utf-8": len(_PREFIX.encode("utf-8")),
    "utf-32": len(_PREFIX),
}
NEGOTIATED = {"visual-studio-code": "utf-16", "neovim": "utf-8", "emacs": "utf-32"}


@pytest.mark.parametrize("editor", EDITORS)
async def test_non_ascii_columns_in_the_negotiated_encoding(lsp: LanguageClient, shop: Path, editor):
    result = await start(lsp, shop, editor=editor)
    enc = NEGOTIATED[editor]
    assert str(getattr(result.capabilities.position_encoding, "value", result.capabilities.position_encoding) or "utf-16") == enc
    path = shop / "shop" / "greeting.py"
    path.write_text("# ünïcödé module\n" + UNICODE_LINE, encoding="utf-8")
    uri = lsp.editor.open(path)
    await run_and_wait(lsp, {"uri": uri, "roles": ["toy_tester"]})
    (d,) = await wait_for(lambda: superqode_diags(lsp, uri), 30, "diagnostic")
    assert d.range.start.line == 1
    assert d.range.start.character == EXPECTED_START[enc]
    assert d.range.end.character == EXPECTED_START[enc] + len("PLANTED")
    # The editor's own arithmetic maps the range back onto the marker.
    line = lsp.editor.text(uri).split("\n")[1]
    from .conftest import char_to_index

    s = char_to_index(line, d.range.start.character, enc)
    e = char_to_index(line, d.range.end.character, enc)
    assert line[s:e] == "PLANTED"
    # An edit before the marker on another line keeps the columns right.
    lsp.editor.edit(uri, (0, 0), (0, 0), "# ☃\n")
    await wait_for(lambda: [x for x in superqode_diags(lsp, uri) if x.range.start.line == 2], 10, "shift")
    (d2,) = superqode_diags(lsp, uri)
    assert d2.range.start.character == EXPECTED_START[enc]


@pytest.mark.parametrize("editor", EDITORS)
async def test_unsaved_buffer_is_what_qe_tests(lsp: LanguageClient, shop: Path, editor):
    await start(lsp, shop, editor=editor)
    path = shop / "shop" / "pricing.py"
    on_disk = path.read_text(encoding="utf-8")
    uri = lsp.editor.open(path)
    lines = on_disk.split("\n")
    lines.insert(3, "UNSAVED = 1  # PLANTED")
    lsp.editor.set_text(uri, "\n".join(lines))
    await run_and_wait(lsp, {"uri": uri, "roles": ["toy_tester"]})
    (d,) = await wait_for(lambda: superqode_diags(lsp, uri), 30, "diagnostic")
    assert d.range.start.line == 3 and d.code == "TOY1"
    assert path.read_text(encoding="utf-8") == on_disk  # the user's file was never written
    status = subprocess.run(["git", "status", "--porcelain"], cwd=shop, capture_output=True, text=True)
    assert status.stdout.strip() == ""
    # And its fix applies to the unsaved buffer, not to the file on disk.
    res = await lsp.workspace_execute_command_async(
        types.ExecuteCommandParams(command="superqode.applyFix",
                                   arguments=[{"findingId": d.data["findingId"]}])
    )
    assert res["applied"] is True
    assert "UNSAVED = 1  # fixed" in lsp.editor.text(uri)
    assert path.read_text(encoding="utf-8") == on_disk


async def test_diagnostics_follow_edits_and_edited_findings_are_dropped(lsp: LanguageClient, shop: Path):
    await start(lsp, shop)
    path = shop / "shop" / "marks.py"
    path.write_text("a = 1  # PLANTED\nb = 2\nc = 3  # PLANTED\nd = 4\n", encoding="utf-8")
    uri = lsp.editor.open(path)
    await run_and_wait(lsp, {"uri": uri, "roles": ["toy_tester"]})
    await wait_for(lambda: len(superqode_diags(lsp, uri)) == 2, 30, "two diagnostics")

    def lines():
        return sorted(d.range.start.line for d in superqode_diags(lsp, uri))

    lsp.editor.edit(uri, (1, 0), (1, 0), "inserted = 0\ninserted = 1\n")  # between the two
    await wait_for(lambda: lines() == [0, 4], 10, "second finding shifted by two")
    lsp.editor.edit(uri, (0, 0), (0, 1), "A")  # type on the first flagged line
    await wait_for(lambda: lines() == [4], 10, "edited finding dropped")
    lsp.editor.edit(uri, (1, 0), (3, 0), "")  # delete the inserted lines again
    await wait_for(lambda: lines() == [2], 10, "finding moved back up")
    (d,) = superqode_diags(lsp, uri)
    assert d.data["version"] == lsp.editor.buffers[uri][0]
    # The dropped finding's fix is not offered any more.
    res = await lsp.text_document_code_action_async(
        types.CodeActionParams(
            text_document=types.TextDocumentIdentifier(uri=uri),
            range=types.Range(start=types.Position(0, 0), end=types.Position(0, 0)),
            context=types.CodeActionContext(diagnostics=[], only=[types.CodeActionKind.QuickFix]),
        )
    )
    assert not res
    # Enter at the end of the flagged line opens a line below it: the finding stays.
    eol = len("c = 3  # PLANTED")
    lsp.editor.edit(uri, (2, eol), (2, eol), "\n")
    version = lsp.editor.buffers[uri][0]
    await wait_for(lambda: [d for d in superqode_diags(lsp, uri) if d.data["version"] == version], 10,
                   "diagnostics for the new version")
    assert lines() == [2] and not superqode_diags(lsp, uri)[0].message.startswith("[stale")


async def test_fix_not_offered_when_its_code_changed_since_the_run(lsp: LanguageClient, shop: Path):
    await start(lsp, shop)
    path = shop / "shop" / "marks.py"
    path.write_text("x = 1\ny = 2  # PLANTED\nz = 3\n", encoding="utf-8")
    await run_and_wait(lsp, {"roles": ["toy_tester"]})
    from pygls.uris import from_fs_path

    uri = from_fs_path(str(path))
    (d,) = await wait_for(lambda: superqode_diags(lsp, uri), 30, "diagnostic")
    # Someone changes the context lines on disk; the editor then opens the file.
    path.write_text("x = 100\ny = 2  # PLANTED\nz = 300\n", encoding="utf-8")
    lsp.editor.open(path)
    actions = await lsp.text_document_code_action_async(
        types.CodeActionParams(
            text_document=types.TextDocumentIdentifier(uri=uri),
            range=types.Range(start=types.Position(1, 0), end=types.Position(1, 0)),
            context=types.CodeActionContext(diagnostics=[d], only=[types.CodeActionKind.QuickFix]),
        )
    )
    assert not actions
    with pytest.raises(Exception, match="no longer fits"):
        await lsp.workspace_execute_command_async(
            types.ExecuteCommandParams(command="superqode.applyFix",
                                       arguments=[{"findingId": d.data["findingId"]}])
        )
    assert lsp.editor.applied == []
