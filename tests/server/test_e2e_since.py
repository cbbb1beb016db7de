"""``superqode.runQE {since}`` ("Run QE on my changes"): a real server, the
base analysed in its own sandbox at the merge-base; only the problem the
branch introduced becomes a diagnostic."""

from __future__ import annotations

from pathlib import Path

from pygls.uris import from_fs_path
from pytest_lsp import LanguageClient

from tests.conftest import run_git

from .conftest import run_and_wait, start, superqode_diags, wait_for


async def test_run_qe_since_publishes_only_what_the_branch_introduced(lsp: LanguageClient, shop: Path):
    base = run_git(shop, "symbolic-ref", "--short", "HEAD").strip()
    run_git(shop, "checkout", "-q", "-b", "feature")
    catalog = shop / "shop" / "catalog.py"
    text = catalog.read_text()
    # One new unused import; the old unused ones (F401) move down a line.
    catalog.write_text(text.replace("import json\n", "import json\nimport base64\n", 1))
    run_git(shop, "commit", "-qam", "an unused import")
    await start(lsp, shop)
    uri = from_fs_path(str(catalog))
    sid = await run_and_wait(lsp, {"roles": ["lint_tester"], "since": base})
    diags = await wait_for(lambda: superqode_diags(lsp, uri), 60, "diagnostics")
    assert [(d.code, "base64" in d.message) for d in diags] == [("F401", True)]
    assert all(d.data["sessionId"] == sid for d in diags)
    # The rest of the old findings were not new: no other file got diagnostics.
    others = [u for u, ds in lsp.diagnostics.items() if u != uri and
              any(d.source == "superqode" for d in ds)]
    assert others == []
