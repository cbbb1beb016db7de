"""server/fixes.py: quick fixes end to end: code actions with versioned edits, applyFix /
applyAllFixes via workspace/applyEdit, the resulting files checked on disk."""

from __future__ import annotations

from pathlib import Path

import pytest
from lsprotocol import types
from pygls.uris import from_fs_path
from pytest_lsp import LanguageClient

from tests.conftest import run_git

from .conftest import EDITORS, code_actions, run_and_wait, start, superqode_diags, wait_for

PLANTED = "PLANTED"


@pytest.mark.parametrize("editor", EDITORS)
async def test_quickfix_edits_the_open_buffer_with_a_versioned_edit(lsp: LanguageClient, shop: Path, editor):
    await start(lsp, shop, editor=editor)
    path = shop / "shop" / "catalog.py"
    uri = lsp.editor.open(path)
    await run_and_wait(lsp, {"uri": uri, "roles": ["lint_tester"]})
    diags = await wait_for(lambda: superqode_diags(lsp, uri), 30, "diagnostics")
    f401 = next(d for d in diags if d.code == "F401")
    actions = await code_actions(lsp, uri, f401.range.start.line, diagnostics=[f401])
    fix = next(a for a in actions if a.kind == types.CodeActionKind.QuickFix)
    assert "F401" in fix.title and fix.diagnostics[0].data["findingId"] == f401.data["findingId"]
    if lsp.capabilities.workspace.workspace_edit.document_changes:
        (change,) = fix.edit.document_changes
        assert change.text_document.version == 1  # versioned: refused if the buffer moved on
    else:
        assert list(fix.edit.changes) == [uri]
    # The editor applies it (as a user picking the quick fix), then saves.
    result = lsp.editor.apply(types.ApplyWorkspaceEditParams(edit=fix.edit))
    assert result.applied
    lsp.editor.save(uri)
    text = path.read_text(encoding="utf-8")
    assert "import os\n" not in text and "import json\n" in text
    # The fixed finding's line was edited: it no longer shows.
    await wait_for(lambda: all(d.code != "F401" for d in superqode_diags(lsp, uri)), 10, "F401 gone")


async def test_versioned_edit_is_refused_after_the_buffer_changed(lsp: LanguageClient, shop: Path):
    await start(lsp, shop)
    path = shop / "shop" / "catalog.py"
    uri = lsp.editor.open(path)
    await run_and_wait(lsp, {"uri": uri, "roles": ["lint_tester"]})
    diags = await wait_for(lambda: superqode_diags(lsp, uri), 30, "diagnostics")
    f841 = next(d for d in diags if d.code == "F841")
    actions = await code_actions(lsp, uri, f841.range.start.line, only=[types.CodeActionKind.QuickFix])
    (fix,) = [a for a in actions if a.title.startswith("SuperQode (F841): ")]
    first_start = fix.edit.document_changes[0].edits[0].range.start.line
    lsp.editor.edit(uri, (0, 0), (0, 0), "# header\n")  # the user keeps typing
    assert not lsp.editor.apply(types.ApplyWorkspaceEditParams(edit=fix.edit)).applied
    # Asked again, the server re-anchors the fix on the new text (one line lower).
    actions = await code_actions(lsp, uri, f841.range.start.line + 1, only=[types.CodeActionKind.QuickFix])
    (fix,) = [a for a in actions if a.title.startswith("SuperQode (F841): ")]
    (change,) = fix.edit.document_changes
    assert change.text_document.version == 2
    assert change.edits[0].range.start.line == first_start + 1
    assert lsp.editor.apply(types.ApplyWorkspaceEditParams(edit=fix.edit)).applied
    assert "        len(matches)\n" in lsp.editor.text(uri)


@pytest.mark.parametrize("editor", EDITORS)
async def test_apply_fix_command_edits_a_closed_file_on_disk(lsp: LanguageClient, shop: Path, editor):
    await start(lsp, shop, editor=editor)
    path = shop / "shop" / "catalog.py"
    uri = from_fs_path(str(path))
    before = path.read_text(encoding="utf-8")
    await run_and_wait(lsp, {"roles": ["lint_tester"]})
    diags = await wait_for(lambda: superqode_diags(lsp, uri), 30, "diagnostics")
    f841 = next(d for d in diags if d.code == "F841")
    res = await lsp.workspace_execute_command_async(
        types.ExecuteCommandParams(command="superqode.applyFix",
                                   arguments=[{"findingId": f841.data["findingId"]}])
    )
    assert res["applied"] is True
    assert len(lsp.editor.applied) == 1
    after = path.read_text(encoding="utf-8")
    assert after == before.replace("        count = len(matches)\n", "        len(matches)\n")
    await wait_for(lambda: all(d.code != "F841" for d in superqode_diags(lsp, uri)), 10, "F841 gone")


async def test_fix_all_code_action_and_apply_all_fixes(lsp: LanguageClient, shop: Path):
    # "Fix all" takes verified fixes: tool-quiet AND the tests importing
    # catalog.py pass, which needs a trusted folder (tests run its code).
    await start(lsp, shop, editor="neovim", settings={"trustedFolders": [str(shop)]})
    path = shop / "shop" / "catalog.py"
    uri = lsp.editor.open(path)
    await run_and_wait(lsp, {"uri": uri, "roles": ["lint_tester"]})
    await wait_for(lambda: len(superqode_diags(lsp, uri)) >= 2, 30, "diagnostics")
    actions = await code_actions(lsp, uri, 0, only=["source.fixAll"])
    (fix_all,) = actions
    assert fix_all.kind == "source.fixAll.superqode"
    assert lsp.editor.apply(types.ApplyWorkspaceEditParams(edit=fix_all.edit)).applied
    lsp.editor.save(uri)
    text = path.read_text(encoding="utf-8")
    # ruff marks the F841 fix unsafe: fix-all leaves it out, as ruff's own extension does.
    assert "import os\n" not in text and "count = len(matches)" in text
    # Nothing safe left to fix: the command reports zero, sends no edit and says what it skipped.
    n = len(lsp.editor.applied)
    res = await lsp.workspace_execute_command_async(
        types.ExecuteCommandParams(command="superqode.applyAllFixes", arguments=[{"uri": uri}])
    )
    assert res["applied"] == 0 and res["files"] == [] and len(lsp.editor.applied) == n
    (skip,) = res["skipped"]
    assert skip["rule"] == "F841" and "unsafe" in skip["reason"]


async def test_apply_all_fixes_command_sends_workspace_apply_edit(lsp: LanguageClient, shop: Path):
    # Untrusted: no tests run, the fixes are "tool-verified only" and still
    # what "apply all" takes (never a suppression). The old view: in the
    # default one the unused import is an advisory, a hint, which a
    # workspace-wide fix-all leaves (it takes only what the user was shown).
    (shop / "superqode.yaml").write_text("qe:\n  default_view: all\n", encoding="utf-8")
    run_git(shop, "add", "superqode.yaml")
    run_git(shop, "commit", "-q", "-m", "the old view")
    await start(lsp, shop, editor="emacs")
    path = shop / "shop" / "catalog.py"
    await run_and_wait(lsp, {"roles": ["lint_tester"]})
    uri = from_fs_path(str(path))
    await wait_for(lambda: len(superqode_diags(lsp, uri)) >= 2, 30, "diagnostics")
    lsp.editor.replies = [("Fix All would also edit", "Edit all files")]  # catalog.py is not open
    res = await lsp.workspace_execute_command_async(
        types.ExecuteCommandParams(command="superqode.applyAllFixes", arguments=[{}])
    )
    assert res["applied"] == 1 and res["files"] == [str(path)]
    assert [(s["rule"], "unsafe" in s["reason"]) for s in res["skipped"]] == [("F841", True)]
    text = path.read_text(encoding="utf-8")
    assert "import os\n" not in text and "count = len(matches)" in text
    await wait_for(lambda: [d.code for d in superqode_diags(lsp, uri)] == ["F841"], 10, "F401 cleared")

