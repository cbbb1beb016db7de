"""server/watch.py: a file changed on disk outside the editor (a checkout, a
formatter): findings in files no editor has open move with their flagged line
or are dropped (a real server over stdio, a real file rewritten)."""

from __future__ import annotations

from pathlib import Path

from pygls.uris import from_fs_path
from pytest_lsp import LanguageClient

from .conftest import run_and_wait, start, superqode_diags, wait_for


async def test_findings_in_closed_files_follow_changes_on_disk(lsp: LanguageClient, shop: Path):
    await start(lsp, shop)
    path = shop / "shop" / "marks.py"
    path.write_text("a = 1\nb = 2  # PLANTED\nc = 3  # PLANTED\n", encoding="utf-8")
    await run_and_wait(lsp, {"roles": ["toy_tester"]})
    uri = from_fs_path(str(path))
    await wait_for(lambda: len(superqode_diags(lsp, uri)) == 2, 30, "two diagnostics")
    # Another tool rewrites the file: two lines on top, the second marker gone.
    path.write_text("# one\n# two\na = 1\nb = 2  # PLANTED\nc = 3\n", encoding="utf-8")
    await wait_for(lambda: [d.range.start.line for d in superqode_diags(lsp, uri)] == [3], 30,
                   "finding moved with its line, the other dropped")
