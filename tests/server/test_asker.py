"""Agent permissions set to ``ask`` reach the user as window/showMessageRequest."""

from __future__ import annotations

import json
from pathlib import Path

from pytest_lsp import LanguageClient

from .conftest import run_and_wait, start


async def test_ask_prompts_the_user_and_follows_the_answer(lsp: LanguageClient, shop: Path):
    await start(lsp, shop, settings={"trustedFolders": [str(shop)]})
    lsp.editor.replies = [("wants to use run_shell", "Allow")]
    sid = await run_and_wait(lsp, {"roles": ["toy_asker"]})
    prompt = next(p for p in lsp.editor.prompts if "run_shell" in p.message)
    assert "pytest -x tests/" in prompt.message
    assert [a.title for a in prompt.actions] == ["Allow", "Deny"]
    assert _reason(shop, sid) == "permission granted"

    lsp.editor.replies = [("wants to use run_shell", "Deny")]
    sid = await run_and_wait(lsp, {"roles": ["toy_asker"]})
    assert _reason(shop, sid) == "permission denied"

    lsp.editor.replies = [("wants to use run_shell", None)]  # dismissed
    sid = await run_and_wait(lsp, {"roles": ["toy_asker"]})
    assert _reason(shop, sid) == "permission denied"


def _reason(shop: Path, sid: str) -> str:
    """The toy role's reason, from the session's Quality Report on disk."""
    [qr] = (shop / ".superqode/qe-artifacts/qr").glob(f"qr-*-{sid}.json")
    [run] = [r for r in json.loads(qr.read_text())["roles"] if r["role"] == "toy_asker"]
    assert run["status"] == "ok"
    return run["reason"]
