"""server/trust.py: which folders may run project code; fail-closed, remembered. The rules
as functions, then through a real server over stdio: the question, its answer remembered, the
trustedFolders setting."""

from __future__ import annotations

import json
import os
from pathlib import Path

from pygls.uris import from_fs_path
from pytest_lsp import LanguageClient

from superqode_ls.server import trust

from .conftest import plant, run_and_wait, sessions, start, superqode_diags, wait_for


def test_trust_is_fail_closed_and_remembered(tmp_path):
    project = tmp_path / "proj"
    (project / "sub").mkdir(parents=True)
    assert not trust.is_trusted(project)
    assert trust.is_trusted(project / "sub", [str(project)])
    trust.remember(project)
    assert trust.is_trusted(project / "sub")
    data = json.loads(trust.store_path().read_text())
    assert data["folders"] == [os.path.realpath(project)]
    trust.store_path().write_text("{not json")
    assert not trust.is_trusted(project)  # a broken store trusts nothing
    assert not trust.is_trusted(tmp_path / "elsewhere", [str(project)])


async def session_info(lsp: LanguageClient, sid: str) -> dict:
    return next(s for s in await sessions(lsp) if s["sessionId"] == sid)


async def test_untrusted_folder_runs_no_code_until_the_user_trusts_it(lsp: LanguageClient, shop: Path):
    await start(lsp, shop)
    uri = from_fs_path(str(plant(shop)))
    lsp.editor.replies = [("this repository's code", "Not now")]
    sid = await run_and_wait(lsp, {"roles": ["toy_exec", "toy_tester"]})
    assert len(lsp.editor.prompts) == 1 and "toy_exec" in lsp.editor.prompts[0].message
    info = await session_info(lsp, sid)
    assert info["trusted"] is False
    # The static role ran; the code-executing one did not.
    diags = await wait_for(lambda: superqode_diags(lsp, uri), 10, "static finding")
    assert len(diags) == 1
    assert any("not trusted" in m.message for m in lsp.log_messages)
    # Declined once: not asked again in this server's lifetime.
    sid = await run_and_wait(lsp, {"roles": ["toy_exec"]})
    assert len(lsp.editor.prompts) == 1 and (await session_info(lsp, sid))["trusted"] is False
    assert not (Path(os.environ["SUPERQODE_HOME"]) / "trusted-folders.json").exists()


async def test_trust_prompt_answer_is_remembered(lsp: LanguageClient, shop: Path):
    await start(lsp, shop)
    uri = from_fs_path(str(plant(shop)))
    lsp.editor.replies = [("this repository's code", "Trust folder")]
    sid = await run_and_wait(lsp, {"roles": ["toy_exec"]})
    assert (await session_info(lsp, sid))["trusted"] is True
    await wait_for(lambda: superqode_diags(lsp, uri), 10, "finding of the trusted role")
    store = json.loads((Path(os.environ["SUPERQODE_HOME"]) / "trusted-folders.json").read_text())
    assert store["folders"] == [str(shop.resolve())]
    await run_and_wait(lsp, {"roles": ["toy_exec"]})
    assert len(lsp.editor.prompts) == 1


async def test_trusted_folders_setting_needs_no_prompt(lsp: LanguageClient, shop: Path):
    await start(lsp, shop, settings={"trustedFolders": [str(shop)]})
    uri = from_fs_path(str(plant(shop)))
    sid = await run_and_wait(lsp, {"roles": ["toy_exec"]})
    assert lsp.editor.prompts == [] and (await session_info(lsp, sid))["trusted"] is True
    await wait_for(lambda: superqode_diags(lsp, uri), 10, "finding")
