"""Recovery of interrupted sessions, from the editor (trust: test_trust.py)."""

from __future__ import annotations

import json
import os
from pathlib import Path

from lsprotocol import types
from pytest_lsp import LanguageClient

from superqode_ls.workspace.paths import SessionPaths, new_session_id, repo_key
from superqode_ls.workspace.records import SessionRecord, write_record

from ..safety_helpers import crash_session
from .conftest import start, wait_for


def interrupted_session(repo: Path) -> tuple[str, SessionPaths]:
    sid = new_session_id()
    paths = SessionPaths(repo, sid)
    paths.sandbox.mkdir(parents=True)
    (paths.sandbox / "left-behind.txt").write_text("work in progress\n")
    rec = SessionRecord(
        id=sid, repo=str(repo.resolve()), repo_key=repo_key(repo), sandbox=str(paths.sandbox),
        state="running", isolation="snapshot", pid=os.getpid(), pid_start=0.0,  # owner gone
    )
    write_record(paths.record, rec)
    return sid, paths


async def test_interrupted_session_offered_on_start_and_discarded(lsp: LanguageClient, shop: Path):
    sid, paths = interrupted_session(shop)
    lsp.editor.replies = [(sid, "Revert and discard")]
    await start(lsp, shop)
    prompt = await wait_for(lambda: lsp.editor.prompts, 30, "recovery prompt")
    assert sid in prompt[0].message
    assert [a.title for a in prompt[0].actions] == ["Resume", "Revert and discard", "View changes"]
    await wait_for(lambda: not paths.record.exists() and not paths.sandbox.exists(), 30, "discard")
    await wait_for(lambda: any(sid in m.message and "discarded" in m.message for m in lsp.log_messages),
                   10, "log line")
    assert (shop / "shop" / "catalog.py").exists()  # the project itself is untouched


async def test_view_changes_and_resume_from_the_prompt(lsp: LanguageClient, shop: Path):
    view_sid = crash_session(shop, edits={"shop/catalog.py": "# work in progress\n"})
    view_paths = SessionPaths(shop, view_sid)
    resume_sid, resume_paths = interrupted_session(shop)
    lsp.editor.replies = [(view_sid, "View changes"), (resume_sid, "Resume")]
    await start(lsp, shop)
    await wait_for(
        lambda: all(any(sid in p.message for p in lsp.editor.prompts) for sid in (view_sid, resume_sid)),
        30, "two recovery prompts",
    )
    offered = [p for p in lsp.editor.prompts if "was interrupted" in p.message]
    assert len(offered) == 2
    # View: the changes saved as <id>-recovered.patch (engine.recovery) and shown.
    shown = await wait_for(lambda: lsp.shown_documents, 30, "changes shown")
    assert shown[0].uri.endswith(f"{view_sid}-recovered.patch")
    patch = shop / ".superqode" / "qe-artifacts" / "patches" / f"{view_sid}-recovered.patch"
    assert "+# work in progress" in patch.read_text()
    assert view_paths.record.exists()  # viewing keeps the session
    # Resume: the sandbox is adopted (state kept), as `superqe recover --resume` does;
    # it changed nothing the engine can read, so no patch is written.
    await wait_for(lambda: any(resume_sid in m.message and "kept" in m.message
                               for m in lsp.log_messages), 30, "resumed")
    assert json.loads(resume_paths.record.read_text())["state"] == "kept"
    assert resume_paths.sandbox.is_dir()
    assert not list(patch.parent.glob(f"{resume_sid}-*"))
    for sid, paths in ((view_sid, view_paths), (resume_sid, resume_paths)):
        res = await lsp.workspace_execute_command_async(
            types.ExecuteCommandParams(command="superqode.recover",
                                       arguments=[{"sessionId": sid, "action": "revert"}])
        )
        assert res["action"] == "revert" and not paths.record.exists()
