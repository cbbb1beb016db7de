"""Recovery of interrupted sessions, from the editor (trust: test_trust.py)."""

from __future__ import annotations

import os
from pathlib import Path

from lsprotocol import types
from pytest_lsp import LanguageClient

from superqode_ls.workspace.paths import SessionPaths, new_session_id, repo_key
from superqode_ls.workspace.records import SessionRecord, write_record

from .conftest import progress_ended, start, wait_for


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
    view_sid, view_paths = interrupted_session(shop)
    resume_sid, resume_paths = interrupted_session(shop)
    lsp.editor.replies = [(view_sid, "View changes"), (resume_sid, "Resume")]
    await start(lsp, shop)
    # Both sessions are offered (the resumed run may add its own trust prompt).
    await wait_for(
        lambda: all(any(sid in p.message for p in lsp.editor.prompts) for sid in (view_sid, resume_sid)),
        30, "two recovery prompts",
    )
    offered = [p for p in lsp.editor.prompts if "was interrupted" in p.message]
    assert len(offered) == 2
    shown = await wait_for(lambda: lsp.shown_documents, 30, "changes shown")
    assert view_sid in shown[0].uri
    assert view_paths.record.exists()  # viewing keeps the session
    # Resume: the old sandbox goes, a new session runs on the folder.
    await wait_for(lambda: not resume_paths.record.exists(), 30, "old sandbox dropped")
    started = await wait_for(
        lambda: [t for t in lsp.progress_reports if t.startswith("superqode/qe-")], 30, "new run"
    )
    new_sid = started[0].split("/", 1)[1]
    assert new_sid not in (view_sid, resume_sid)
    await wait_for(lambda: progress_ended(lsp, new_sid), 120, "resumed run to end")
    res = await lsp.workspace_execute_command_async(
        types.ExecuteCommandParams(command="superqode.recover",
                                   arguments=[{"sessionId": view_sid, "action": "revert"}])
    )
    assert res["action"] == "revert" and not view_paths.record.exists()
