"""Issue 16, the server side of the editor experience, through a real client
over stdio: workspace pull diagnostics, static roles that never wait for the
trust question, findings that follow what an edit changed, fix-all that says
what it did, one message per finding with its rule link, "ignore this
finding", and a session end every editor shows."""

from __future__ import annotations

import asyncio
import json
from functools import partial
from pathlib import Path

from lsprotocol import types
from pygls.uris import from_fs_path
from pytest_lsp import LanguageClient, client_capabilities

from . import conftest
from .conftest import (
    caught_up,
    command,
    plant,
    progress_ended,
    run_and_wait,
    run_qe,
    sessions,
    start,
    superqode_diags,
    wait_for,
)

# Quick fixes only unless asked otherwise (the apply-the-fix flows).
code_actions = partial(conftest.code_actions, only=(types.CodeActionKind.QuickFix,))


# ---- 1. workspace findings reach a pull client --------------------------------------------
# ---- 2. static roles never wait for trust -------------------------------------------------
async def test_static_findings_show_while_the_trust_question_is_open(lsp: LanguageClient, shop: Path):
    await start(lsp, shop)
    uri = from_fs_path(str(plant(shop)))
    answer: asyncio.Future = asyncio.get_running_loop().create_future()
    asked: list[types.ShowMessageRequestParams] = []

    async def show_message_request(params: types.ShowMessageRequestParams):
        asked.append(params)
        return await answer  # the user has not answered yet

    lsp.protocol.fm.features[types.WINDOW_SHOW_MESSAGE_REQUEST] = show_message_request
    sid = await run_qe(lsp, {"roles": ["toy_exec", "toy_tester"]})
    # The static role's finding shows with the question still open; the run
    # says what it waits for and has not ended.
    await wait_for(lambda: superqode_diags(lsp, uri), 60, "static finding")
    await wait_for(lambda: any("toy_exec wait(s) for the trust answer" in (getattr(v, "message", "") or "")
                               for v in lsp.progress_reports.get(f"superqode/{sid}", [])), 60, "the wait said")
    assert not answer.done() and len(asked) == 1
    assert "toy_exec runs this repository's code" in asked[0].message
    assert not progress_ended(lsp, sid)
    assert [(s["sessionId"], s["trusted"]) for s in await sessions(lsp)] == [(sid, False)]

    answer.set_result(types.MessageActionItem(title="Trust folder"))
    # The role that runs code goes on in the same run: one end, one verdict.
    end = await wait_for(lambda: progress_ended(lsp, sid), 120, "the run's end")
    listed = await sessions(lsp)
    assert [(s["sessionId"], s["trusted"]) for s in listed] == [(sid, True)]
    assert end.message.startswith(f"session {sid}: {listed[0]['findings']} finding(s), "), end.message
    assert "trust" not in end.message
    assert [d.code for d in superqode_diags(lsp, uri)] == ["TOY1"]


async def test_a_dismissed_trust_question_skips_the_role_and_says_why(lsp: LanguageClient, shop: Path):
    await start(lsp, shop)
    uri = from_fs_path(str(plant(shop)))
    lsp.editor.replies = [("this repository's code", None)]  # closed without an answer
    sid = await run_and_wait(lsp, {"roles": ["toy_exec", "toy_tester"]})
    await wait_for(lambda: superqode_diags(lsp, uri), 10, "static finding")
    said = await wait_for(lambda: [m.message for m in lsp.messages if "skipped toy_exec" in m.message],
                          10, "the skip said")
    assert "dismissed" in said[0]
    assert len(await sessions(lsp)) == 1  # nothing follows
    assert "toy_exec skipped (" in progress_ended(lsp, sid).message


async def test_runs_started_while_the_question_is_open_share_its_answer(lsp: LanguageClient, shop: Path):
    await start(lsp, shop)
    plant(shop)
    answer: asyncio.Future = asyncio.get_running_loop().create_future()
    asked: list[types.ShowMessageRequestParams] = []

    async def show_message_request(params: types.ShowMessageRequestParams):
        asked.append(params)
        return await answer

    lsp.protocol.fm.features[types.WINDOW_SHOW_MESSAGE_REQUEST] = show_message_request
    first = await run_qe(lsp, {"roles": ["toy_exec", "toy_tester"]})
    second = await run_qe(lsp, {"roles": ["toy_exec", "toy_tester"]})
    for sid in (first, second):
        await wait_for(lambda sid=sid: any("wait(s) for the trust answer" in (getattr(v, "message", "") or "")
                                           for v in lsp.progress_reports.get(f"superqode/{sid}", [])),
                       120, f"{sid} waiting for the answer")
    assert len(asked) == 1  # one question for both runs
    answer.set_result(types.MessageActionItem(title="Not now"))
    for sid in (first, second):
        end = await wait_for(lambda sid=sid: progress_ended(lsp, sid), 120, f"{sid} end")
        assert "toy_exec skipped (you answered Not now)" in end.message, end.message
    said = await wait_for(lambda: [m.message for m in lsp.messages if "skipped toy_exec" in m.message
                                   and len([x for x in lsp.messages if "skipped toy_exec" in x.message]) == 2],
                          10, "each run says its skip")
    assert all("you answered Not now" in m for m in said)
    assert [s["trusted"] for s in await sessions(lsp)] == [False, False]


# ---- 3. findings follow what an edit changed ------------------------------------------------
NEIGHBOURS = """import json
import os
# PLANTED right below the unused import
from dataclasses import dataclass


@dataclass
class A:
    x: int = 1

    def f(self):
        count = len(json.dumps({}))  # PLANTED in a line with an unsafe fix
        return 1
"""


async def test_an_f401_fix_deleting_a_line_keeps_every_other_finding_moved(lsp: LanguageClient, shop: Path):
    await start(lsp, shop, editor="neovim")
    uri = lsp.editor.open(plant(shop, "shop/neighbours.py", NEIGHBOURS))
    await run_and_wait(lsp, {"uri": uri, "roles": ["lint_tester", "toy_tester"]})
    diags = await wait_for(lambda: len(superqode_diags(lsp, uri)) >= 4 and superqode_diags(lsp, uri),
                           30, "lint and toy findings")
    before = sorted((d.code, d.range.start.line) for d in diags)
    assert ("F401", 1) in before and ("TOY1", 2) in before
    f401 = next(d for d in diags if d.code == "F401")
    (fix,) = [a for a in await code_actions(lsp, uri, 1, [f401]) if a.title.startswith("SuperQode (F401): Remove unused import")]
    # Applied the way Neovim does: each TextEdit an incremental change (the
    # patch's hunk spans the neighbouring lines too).
    edits = fix.edit.document_changes[0].edits if fix.edit.document_changes else fix.edit.changes[uri]
    for e in sorted(edits, key=lambda e: (e.range.start.line, e.range.start.character), reverse=True):
        lsp.editor.edit(uri, (e.range.start.line, e.range.start.character),
                        (e.range.end.line, e.range.end.character), e.new_text)
    assert "import os\n" not in lsp.editor.text(uri)
    expect = sorted((c, line - 1) for c, line in before if c != "F401")
    await wait_for(lambda: sorted((d.code, d.range.start.line) for d in superqode_diags(lsp, uri)) == expect,
                   10, f"every other finding moved up one line: {expect}")
    # Typing in a flagged line does drop that finding, and only it.
    toy = next(d for d in superqode_diags(lsp, uri) if d.code == "TOY1" and d.range.start.line == 1)
    lsp.editor.edit(uri, (toy.range.start.line, 0), (toy.range.start.line, 0), "# ")
    await wait_for(lambda: sorted((d.code, d.range.start.line) for d in superqode_diags(lsp, uri))
                   == [x for x in expect if x != ("TOY1", 1)], 10, "only the edited finding gone")


# ---- 4. fix-all over open and unopened files, safe fixes only ---------------------------------
# ---- 5. the end of a session without progress -------------------------------------------------
async def test_a_client_without_progress_gets_the_verdict_as_a_message(lsp: LanguageClient, shop: Path):
    caps = client_capabilities("emacs")
    caps.window.work_done_progress = False
    await lsp.initialize_session(types.InitializeParams(
        capabilities=caps, root_uri=from_fs_path(str(shop)),
        workspace_folders=[types.WorkspaceFolder(uri=from_fs_path(str(shop)), name=shop.name)]))
    plant(shop)
    sid = await run_qe(lsp, {"roles": ["toy_tester"]})
    said = await wait_for(lambda: [m for m in lsp.messages if f"session {sid}:" in m.message], 120, "end")
    assert "1 finding(s)" in said[0].message and said[0].message.split(", ")[-1] in (
        "pass", "fail", "conditional")
    assert f"superqode/{sid}" not in lsp.progress_reports


# ---- 6. one message, the rule link, ignore this finding ---------------------------------------
async def test_ignore_this_finding_with_the_tools_comment_and_in_the_baseline(lsp: LanguageClient, shop: Path):
    await start(lsp, shop, editor="neovim")
    path = shop / "shop" / "catalog.py"
    uri = lsp.editor.open(path)
    await run_and_wait(lsp, {"uri": uri, "roles": ["lint_tester"]})
    diags = await wait_for(lambda: len(superqode_diags(lsp, uri)) >= 2 and superqode_diags(lsp, uri), 30, "lint")
    f401 = next(d for d in diags if d.code == "F401")
    f841 = next(d for d in diags if d.code == "F841")
    # Everything on the line (a light bulb, a code-action menu): the default
    # first (ruff marks the fix safe and went quiet on it: the fix, as ruff's
    # own server offers it), then the details, then the ignores, never the default.
    actions = await code_actions(lsp, uri, f401.range.start.line, [f401], only=None)
    titles = [a.title for a in actions if a.diagnostics]
    inline_title = "SuperQode: ignore F401 on this line (# noqa: F401)"
    assert titles == ["SuperQode (F401): Remove unused import: `os`", "SuperQode: show details of F401",
                      inline_title, "SuperQode: ignore F401 (add to the baseline)"]
    assert [a.title for a in actions if a.is_preferred] == [titles[0]]
    inline = actions[titles.index(inline_title)]
    assert inline.kind == "superqode.ignore"
    # Asked for quick fixes only (apply-the-fix flows), the fix alone.
    only_fix = await code_actions(lsp, uri, f401.range.start.line, [f401])
    assert [a.title for a in only_fix] == ["SuperQode (F401): Remove unused import: `os`"]
    assert lsp.editor.apply(types.ApplyWorkspaceEditParams(edit=inline.edit)).applied
    assert "import os  # noqa: F401\n" in lsp.editor.text(uri)
    # F841's fix is unsafe: "show details" is the default, first, never an ignore.
    actions = await code_actions(lsp, uri, f841.range.start.line, [f841], only=None)
    assert [a.title for a in actions if a.is_preferred] == ["SuperQode: show details of F841"]
    assert actions[0].is_preferred and not any(a.is_preferred for a in actions if a.kind == "superqode.ignore")
    said = await command(lsp, "superqode.showFinding", {"findingId": f841.data["findingId"]})
    assert said["details"].startswith("F841 ") and any(said["details"] == m.message for m in lsp.messages)
    # The baseline action: the finding goes into .superqode/baseline.json.
    actions = await code_actions(lsp, uri, f841.range.start.line, [f841], only=["superqode.ignore"])
    (base,) = [a for a in actions if a.title == "SuperQode: ignore F841 (add to the baseline)"]
    res = await lsp.workspace_execute_command_async(
        types.ExecuteCommandParams(command=base.command.command, arguments=base.command.arguments))
    entries = json.loads(Path(res["baseline"]).read_text(encoding="utf-8"))["findings"]
    assert res["baseline"] == str(shop / ".superqode" / "baseline.json")
    assert [e["rule_id"] for e in entries] == ["F841"]
    # Said, with where it went and how it comes back (the squiggle just goes).
    assert any(m.message.startswith(f"SuperQode: F841 in shop/catalog.py:{f841.range.start.line + 1} added "
                                    "to the baseline (.superqode/baseline.json)") for m in lsp.messages), \
        [m.message for m in lsp.messages]
    await wait_for(lambda: all(d.code != "F841" for d in superqode_diags(lsp, uri)), 10, "F841 hidden")
    # The next run leaves both out: ruff reads the comment, the engine the baseline.
    lsp.editor.save(uri)
    await run_and_wait(lsp, {"uri": uri, "roles": ["lint_tester"]})
    await caught_up(lsp)  # the final publish follows the progress end
    await wait_for(lambda: lsp.editor.text(uri) and not [d for d in superqode_diags(lsp, uri)
                                                         if d.code in ("F401", "F841", "E501")], 10, "both ignored")


async def test_a_secret_defaults_to_its_details_and_is_ignored_only_in_the_baseline(lsp: LanguageClient, shop: Path):
    await start(lsp, shop)
    uri = lsp.editor.open(shop / "shop" / "storage.py")
    await run_and_wait(lsp, {"uri": uri, "roles": ["security_tester"]})
    secret = next(d for d in await wait_for(lambda: superqode_diags(lsp, uri), 30, "security")
                  if str(d.code).startswith("secret-"))
    actions = await code_actions(lsp, uri, secret.range.start.line, [secret], only=None)
    mine = [a for a in actions if secret in (a.diagnostics or [])]
    assert mine[0].title == f"SuperQode: show details of {secret.code}" and mine[0].is_preferred
    ignores = [a for a in mine if a.kind == "superqode.ignore"]
    assert [a.title for a in ignores] == [f"SuperQode: ignore {secret.code} (add to the baseline)"]
    assert not any(a.is_preferred for a in ignores)


# ---- 7. smalls ----------------------------------------------------------------------------------
async def test_revert_of_an_ended_session_does_not_say_reverted(lsp: LanguageClient, shop: Path):
    await start(lsp, shop)
    plant(shop)
    sid = await run_and_wait(lsp, {"roles": ["toy_tester"]})
    res = await command(lsp, "superqode.revertSession", {"sessionId": sid})
    assert res["reverted"] is False and "nothing to revert" in res["message"]


def test_refused_requests_and_late_cancels_log_no_traceback(caplog):
    import logging
    from concurrent.futures import Future

    from superqode_ls.server.errors import fail
    from superqode_ls.server.setup import create_server

    ls = create_server()
    sent: list = []
    ls.protocol._send_response = lambda msg_id, result=None, error=None: sent.append((msg_id, error))
    refused: Future = Future()
    refused.set_exception(fail("no worktree 'nope' for /repo (see: superqe worktree list)"))
    with caplog.at_level(logging.DEBUG):
        ls.protocol._send_handler_result(refused, msg_id=7)
        ls.protocol._handle_cancel_notification(99)  # a request already answered
    ((msg_id, error),) = sent
    assert msg_id == 7 and error.message.startswith("no worktree 'nope'")
    assert not [r for r in caplog.records if r.exc_info]
    assert not [r for r in caplog.records if r.levelno >= logging.WARNING]
    # A real fault still gets its traceback.
    broken: Future = Future()
    broken.set_exception(ZeroDivisionError("bug"))
    with caplog.at_level(logging.DEBUG):
        ls.protocol._send_handler_result(broken, msg_id=8)
    assert any(r.exc_info for r in caplog.records)


def test_follow_drops_a_finding_only_when_its_own_lines_change():
    from superqode_ls.models import Finding, Range, Severity
    from superqode_ls.server import tracking
    from superqode_ls.server.store import Tracked

    def at(line: int, last: int | None = None) -> Tracked:
        f = Finding(role="r", tool="t", rule_id="R1", title="x", message="x", severity=Severity.low,
                    file="a.py", range=Range(start_line=line + 1, start_col=1)).with_stable_id()
        return Tracked(finding=f, session_id="s", uri="file:///a.py", folder="/", sl=line, sc=0,
                       el=line if last is None else last, ec=3)

    before = ["import json", "import os", "# note", "x = 1", "y = 2", ""]
    # A fix whose edit spans its neighbours (a diff hunk): lines 0-4 rewritten, only "import os" gone.
    above, fixed, below, pair = at(0), at(1), at(2), at(3, 4)
    after = ["import json", "# note", "x = 1", "y = 2", ""]
    assert tracking.follow([above, fixed, below, pair], before, after, 0, 4)
    assert [(t.sl, t.el, t.stale) for t in (above, fixed, below, pair)] == [
        (0, 0, False), (1, 1, True), (1, 1, False), (2, 3, False)]
    # Without bounds (a whole-document change) the same; a changed line of a
    # two-line finding drops it, and a line break typed after a flagged line keeps it.
    pair2, mid = at(3, 4), at(2)
    tracking.follow([pair2, mid], before, ["import json", "import os", "# note", "",
                                           "x = 1", "y = 3", ""])
    assert pair2.stale and (mid.sl, mid.stale) == (2, False)
    enter = at(1)
    tracking.follow([enter], before, ["import json", "import os", "    ", "# note", "x = 1", "y = 2", ""], 1, 1)
    assert (enter.sl, enter.stale) == (1, False)
