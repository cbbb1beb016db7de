"""server/fix_all_scope.py: a workspace Fix All names the files nobody opened and edits them
only on the user's yes; unsafe fixes only when the setting says so (a real server over stdio)."""

from __future__ import annotations

from pathlib import Path

from lsprotocol import types
from pygls.uris import from_fs_path
from pytest_lsp import LanguageClient

from tests.conftest import run_git

from .conftest import code_actions, command, plant, run_and_wait, start, superqode_diags, wait_for


async def test_fix_all_everywhere_names_the_files_and_the_unsafe_fix_it_left(lsp: LanguageClient, shop: Path):
    # The old view: in the default one an unused import is an advisory, a
    # hint, which a workspace-wide fix-all leaves like the example's below.
    (shop / "superqode.yaml").write_text("qe:\n  default_view: all\n", encoding="utf-8")
    run_git(shop, "add", "superqode.yaml")
    run_git(shop, "commit", "-q", "-m", "the old view")
    await start(lsp, shop, editor="emacs")
    extra = plant(shop, "shop/extra.py", "import sys\nimport os\n\nprint(sys.argv)\n")
    (shop / "examples").mkdir(exist_ok=True)
    example = plant(shop, "examples/demo.py", "import os\n")  # a hint: never shown as a problem
    catalog = shop / "shop" / "catalog.py"
    uri = lsp.editor.open(catalog)  # one open buffer, one file nobody opened
    await run_and_wait(lsp, {"roles": ["lint_tester"]})
    await wait_for(lambda: superqode_diags(lsp, from_fs_path(str(extra))), 30, "extra.py finding")
    (hint,) = await wait_for(lambda: superqode_diags(lsp, from_fs_path(str(example))), 30, "the example's")
    assert hint.severity == types.DiagnosticSeverity.Hint
    # A file nobody opened is edited only once the user says so.
    lsp.editor.replies = [("Fix All would also edit", "Cancel")]
    res = await command(lsp, "superqode.applyAllFixes", {})
    assert res["applied"] == 0 and res["cancelled"] and "import os\n" in lsp.editor.text(uri)
    (asked,) = lsp.editor.prompts
    assert "1 file(s) no editor has open: shop/extra.py." in asked.message, asked.message
    # The narrow answer first: eglot pre-fills the first action as the one
    # Enter takes, and Enter must not edit files no one opened.
    assert [a.title for a in asked.actions] == ["Open files only", "Edit all files", "Cancel"]
    lsp.editor.replies = [("Fix All would also edit", "Edit all files")]
    res = await command(lsp, "superqode.applyAllFixes", {"notify": True})
    assert res["applied"] == 2 and sorted(res["files"]) == sorted([str(catalog), str(extra)])
    assert sorted(res["relFiles"]) == ["shop/catalog.py", "shop/extra.py"]
    assert example.read_text(encoding="utf-8") == "import os\n"  # the hint's fix was not taken
    said = await wait_for(lambda: [m.message for m in lsp.messages if "applied 2 fixes" in m.message], 10, "said")
    assert f"({res['counts']}) in shop/" in said[0] and "Skipped 1: F841 in shop/catalog.py" in said[0]
    assert [(s["rule"], s["file"]) for s in res["skipped"]] == [("F841", "shop/catalog.py")]
    assert "unsafe" in res["skipped"][0]["reason"]
    assert "import os\n" not in lsp.editor.text(uri) and "count = len(matches)" in lsp.editor.text(uri)
    assert extra.read_text(encoding="utf-8") == "import sys\n\nprint(sys.argv)\n"
    # The unsafe fix is its own, labelled action.
    f841 = next(d for d in superqode_diags(lsp, uri) if d.code == "F841")
    titles = [a.title for a in await code_actions(lsp, uri, f841.range.start.line, [f841],
                                                 only=[types.CodeActionKind.QuickFix])]
    assert any(t.startswith("SuperQode (F841): Remove assignment to unused variable") and "unsafe: review it" in t
               for t in titles), titles


async def test_fix_all_takes_unsafe_fixes_when_the_setting_says_so(lsp: LanguageClient, shop: Path):
    await start(lsp, shop, editor="emacs", settings={"fixAllUnsafe": True})
    catalog = shop / "shop" / "catalog.py"
    await run_and_wait(lsp, {"roles": ["lint_tester"]})
    await wait_for(lambda: len(superqode_diags(lsp, from_fs_path(str(catalog)))) >= 2, 30, "findings")
    res = await command(lsp, "superqode.applyAllFixes", {"uri": from_fs_path(str(catalog)), "notify": True})
    assert {k: res[k] for k in ("applied", "files", "skipped", "relFiles")} == {
        "applied": 2, "files": [str(catalog)], "skipped": [], "relFiles": ["shop/catalog.py"]}
    assert lsp.editor.prompts == []  # one file, asked for by its uri: no question
    text = catalog.read_text(encoding="utf-8")
    assert "import os\n" not in text and "count = len(matches)" not in text
    # The count in the words of the session's end and the report.
    end = next(m.message for m in lsp.log_messages if "finding(s)," in m.message)
    said = await wait_for(lambda: [m.message for m in lsp.messages if "applied 2 fixes" in m.message],
                          10, "fix-all said")
    assert f"applied 2 fixes ({res['counts']}) in shop/catalog.py." == said[0].removeprefix("SuperQode: ")
    assert res["counts"] in end or res["counts"].split(",")[0] in end
