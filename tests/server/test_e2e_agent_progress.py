"""An agent at work in the editor: each tool call as $/progress while it runs,
and the tokens it spent in the end message."""

from __future__ import annotations

from pathlib import Path

from pytest_lsp import LanguageClient

from ..agent.scripted_server import ScriptedServer
from .conftest import progress_ended, run_and_wait, start


async def test_agent_calls_show_as_progress_and_tokens_at_the_end(lsp: LanguageClient,
                                                                  shop: Path):
    with ScriptedServer([
        {"status": 503, "body": "loading model"},  # a retry: why it waits, shown too
        {"tool_calls": [{"name": "read_file", "arguments": {"path": "shop/storage.py"}}]},
        {"tool_calls": [{"name": "search", "arguments": {"pattern": "shell=True"}}]},
        {"content": "nothing more to report"},
    ]) as server:
        (shop / "superqode.yaml").write_text(
            f"providers:\n  - {{name: local, base_url: '{server.base_url}', model: m,"
            " stream: false, retry_backoff_s: 0.01}\n")
        await start(lsp, shop, settings={"trustedFolders": [str(shop)]})
        sid = await run_and_wait(lsp, {"mode": "deep", "roles": ["agent_unit_tester"]})
    messages = [getattr(v, "message", "") or ""
                for v in lsp.progress_reports.get(f"superqode/{sid}", [])]
    assert any("agent_unit_tester: turn 1: read_file shop/storage.py" in m for m in messages)
    assert any("agent_unit_tester: turn 2: search shell=True" in m for m in messages)
    assert any("agent_unit_tester: provider local: HTTP 503: loading model" in m for m in messages)
    end = progress_ended(lsp, sid)
    assert end is not None and "model: 360 tokens" in (end.message or "")


async def test_a_requested_role_that_cannot_run_says_why_in_the_verdict(lsp: LanguageClient,
                                                                       shop: Path):
    # No provider configured: not "pass", and the end message says which role and why.
    await start(lsp, shop, settings={"trustedFolders": [str(shop)]})
    sid = await run_and_wait(lsp, {"mode": "deep", "roles": ["agent_unit_tester"]})
    end = progress_ended(lsp, sid)
    assert end is not None
    assert "conditional (agent_unit_tester skipped: no provider configured" in (end.message or "")
