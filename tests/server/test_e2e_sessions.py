"""Sessions from the editor: progress and cancel, stale runs, runOnSave,
settings without restart, multi-root, pull diagnostics, reports."""

from __future__ import annotations

from pathlib import Path

import psutil
from lsprotocol import types
from pygls.uris import from_fs_path
from pytest_lsp import LanguageClient

from .conftest import (
    caught_up,
    plant,
    progress_ended,
    run_and_wait,
    run_qe,
    sessions,
    start,
    superqode_diags,
    wait_for,
)


def progress_messages(client: LanguageClient, sid: str) -> list[str]:
    out = []
    for v in client.progress_reports.get(f"superqode/{sid}", []):
        msg = getattr(v, "message", None) or getattr(v, "title", None)
        if msg:
            out.append(msg)
    return out


async def test_progress_shows_roles_and_counts_and_cancel_from_the_client_stops_the_run(
    lsp: LanguageClient, shop: Path
):
    # The cancel must be what ends the run: on a loaded machine the default
    # 60 s quick budget can run out first (toy_slow sleeps 60 s at nice +10).
    (shop / "superqode.yaml").write_text("qe:\n  budgets:\n    quick: 900\n", encoding="utf-8")
    await start(lsp, shop)
    plant(shop)
    sid = await run_qe(lsp, {"roles": ["toy_tester", "toy_slow"]})
    # runQE returned at once; the run goes on with progress until cancelled.
    await wait_for(lambda: any("toy_slow started" in m for m in progress_messages(lsp, sid)), 60,
                   "toy_slow to start")
    begin = lsp.progress_reports[f"superqode/{sid}"][0]
    assert isinstance(begin, types.WorkDoneProgressBegin) and begin.cancellable
    await wait_for(lambda: any("toy_tester ok (1 finding(s))" in m for m in progress_messages(lsp, sid)),
                   60, "toy_tester to report")
    # Findings of finished roles are already on screen while the run goes on.
    planted = from_fs_path(str(shop / "shop" / "planted.py"))
    await wait_for(lambda: superqode_diags(lsp, planted), 10, "streamed finding")
    server = psutil.Process(lsp._server.pid)

    def sleeping_child():
        out = []
        for c in server.children(recursive=True):
            try:
                if "time.sleep" in " ".join(c.cmdline()):
                    out.append(c)
            except psutil.Error:
                pass
        return out

    slow = await wait_for(sleeping_child, 30, "toy_slow's process")
    cpus = sorted(server.cpu_affinity())
    if len(cpus) > 1:  # the session's tools keep off one CPU, left to the editor
        assert sorted(slow[0].cpu_affinity()) == cpus[:-1]
        assert slow[0].nice() >= server.nice() + 10
    lsp.window_work_done_progress_cancel(types.WorkDoneProgressCancelParams(token=f"superqode/{sid}"))
    end = await wait_for(lambda: progress_ended(lsp, sid), 120, "progress end")
    assert "cancelled" in end.message
    (s,) = [s for s in await sessions(lsp) if s["sessionId"] == sid]
    assert s["state"] == "cancelled"
    # The server's warm bandit waits for the next run (its own runs, forked
    # below it, must be gone too).
    warm = [c for c in server.children() if "_bandit_server.py" in " ".join(c.cmdline())]
    assert len(warm) <= 1
    # Where it runs in a namespace sandbox of its own, its launcher and
    # supervisor are above it: one server process, no forked run.
    inside = [d for w in warm for d in w.children(recursive=True)]
    assert len([d for d in inside if d.cmdline()[-1:] == warm[0].cmdline()[-1:]
                and not any(a.endswith("landlock.py") for a in d.cmdline())]) <= 1
    assert not [c for c in server.children(recursive=True) if c.is_running()
                and c.status() != psutil.STATUS_ZOMBIE and c not in warm + inside]
    assert superqode_diags(lsp, planted)  # what was found before the cancel stays


async def test_cancel_command_and_stale_run(lsp: LanguageClient, shop: Path):
    # The cancel must be what ends the run: on a loaded machine the default
    # 60 s quick budget can run out first (toy_slow sleeps 60 s at nice +10).
    (shop / "superqode.yaml").write_text("qe:\n  budgets:\n    quick: 900\n", encoding="utf-8")
    await start(lsp, shop)
    plant(shop)
    sid = await run_qe(lsp, {"roles": ["toy_tester", "toy_slow"]})
    planted = from_fs_path(str(shop / "shop" / "planted.py"))
    await wait_for(lambda: superqode_diags(lsp, planted), 60, "streamed finding")
    # The user's files change under the running session...
    pricing = shop / "shop" / "pricing.py"
    pricing.write_text(pricing.read_text(encoding="utf-8") + "\n# changed\n", encoding="utf-8")
    res = await lsp.workspace_execute_command_async(
        types.ExecuteCommandParams(command="superqode.cancel", arguments=[{"sessionId": sid}])
    )
    assert res == {"sessionId": sid, "cancelled": True}
    end = await wait_for(lambda: progress_ended(lsp, sid), 120, "progress end")
    assert "cancelled" in end.message
    # ...so its findings are marked stale, and the user is told.
    await wait_for(lambda: all(d.message.startswith("[stale") for d in superqode_diags(lsp, planted)),
                   10, "stale marking")
    await wait_for(lambda: any("stale" in m.message for m in lsp.messages), 10, "stale message")
    (s,) = [s for s in await sessions(lsp) if s["sessionId"] == sid]
    assert s["stale"] is True


async def test_cancel_before_the_editor_answered_progress_create(lsp: LanguageClient, shop: Path):
    """The editor answers workDoneProgress/create after the run was cancelled:
    the late answer is not reported to the user as a server error."""
    import asyncio

    await start(lsp, shop)
    answered, cancelled = asyncio.Event(), asyncio.Event()
    fm = lsp.protocol.fm
    original = fm.features[types.WINDOW_WORK_DONE_PROGRESS_CREATE]

    async def slow_create(params):
        await asyncio.wait_for(cancelled.wait(), 30)  # the editor answers after the cancel
        result = original(params)
        answered.set()
        return result

    fm.features[types.WINDOW_WORK_DONE_PROGRESS_CREATE] = slow_create
    sid = await run_qe(lsp, {"roles": ["toy_slow"]})
    res = await lsp.workspace_execute_command_async(
        types.ExecuteCommandParams(command="superqode.cancel", arguments=[{"sessionId": sid}])
    )
    assert res == {"sessionId": sid, "cancelled": True}
    cancelled.set()
    await asyncio.wait_for(answered.wait(), 30)
    await caught_up(lsp)  # the late answer has been read and handled by the server
    (s,) = [s for s in await sessions(lsp) if s["sessionId"] == sid]
    assert s["state"] == "cancelled"
    errors = [m.message for m in lsp.log_messages if m.type == types.MessageType.Error]
    errors += [m.message for m in lsp.messages if m.type == types.MessageType.Error]
    assert errors == []


async def test_run_on_save_runs_quick_mode_on_the_saved_file_debounced(lsp: LanguageClient, shop: Path):
    await start(lsp, shop, settings={"runOnSave": True, "roles": ["toy_tester"]})
    path = shop / "shop" / "pricing.py"
    uri = lsp.editor.open(path)
    lsp.editor.set_text(uri, lsp.editor.text(uri) + "SAVED = 1  # PLANTED\n")
    lsp.editor.save(uri)
    lsp.editor.save(uri)  # saved twice in a row: one run
    d = await wait_for(lambda: superqode_diags(lsp, uri), 60, "diagnostic after save")
    assert d[0].code == "TOY1"
    runs = await sessions(lsp)
    ours = [s for s in runs if s.get("files") is not None]
    assert len(ours) == 1 and ours[0]["files"] == ["shop/pricing.py"] and ours[0]["mode"] == "quick"


async def test_multi_root_workspace(lsp: LanguageClient, shop: Path, make_repo):
    other = make_repo({"lib/m.py": "y = 2  # PLANTED\n"}, name="second root")
    plant(shop)
    await start(lsp, [shop, other])
    res = await lsp.workspace_execute_command_async(
        types.ExecuteCommandParams(command="superqode.runQE", arguments=[{"roles": ["toy_tester"]}])
    )
    assert len(res["sessionIds"]) == 2 and res["sessionId"] == res["sessionIds"][0]
    for sid in res["sessionIds"]:
        await wait_for(lambda sid=sid: progress_ended(lsp, sid), 60, "end")
    in_other = from_fs_path(str(other / "lib" / "m.py"))
    in_shop = from_fs_path(str(shop / "shop" / "planted.py"))
    await wait_for(lambda: superqode_diags(lsp, in_other) and superqode_diags(lsp, in_shop), 10, "both")
    folders = {s["folder"] for s in await sessions(lsp)}
    assert {str(other.resolve()), str(shop.resolve())} <= folders
    # A file URI runs in the folder that holds it.
    sid = await run_and_wait(lsp, {"uri": in_other, "roles": ["toy_tester"]})
    (s,) = [s for s in await sessions(lsp) if s["sessionId"] == sid]
    assert s["folder"] == str(other.resolve()) and s["files"] == ["lib/m.py"]


async def test_show_report_opens_the_markdown_quality_report(lsp: LanguageClient, shop: Path):
    await start(lsp, shop)
    sid = await run_and_wait(lsp, {"roles": ["lint_tester"]})
    res = await lsp.workspace_execute_command_async(
        types.ExecuteCommandParams(command="superqode.showReport", arguments=[{"sessionId": sid}])
    )
    assert res["shown"] is True
    (shown,) = lsp.shown_documents
    assert shown.uri == res["uri"] and shown.uri.endswith(".md")
    from pygls.uris import to_fs_path

    text = Path(to_fs_path(shown.uri)).read_text(encoding="utf-8")
    assert sid in text


async def test_a_new_save_cancels_the_previous_on_save_run(lsp: LanguageClient, shop: Path):
    # The saves' cancels must be what end both runs, not the default 60 s
    # quick budget, which toy_slow (60 s at nice +10) can reach under load.
    (shop / "superqode.yaml").write_text("qe:\n  budgets:\n    quick: 900\n", encoding="utf-8")
    await start(lsp, shop, settings={"runOnSave": True, "roles": ["toy_slow"]})
    uri = lsp.editor.open(shop / "shop" / "pricing.py")
    lsp.editor.save(uri)

    def started() -> list[str]:
        return [t.split("/", 1)[1] for t in lsp.progress_reports if t.startswith("superqode/")]

    (first,) = await wait_for(started, 60, "first on-save run")
    await wait_for(lambda: any("toy_slow started" in m for m in progress_messages(lsp, first)), 60,
                   "first run working")
    lsp.editor.save(uri)
    await wait_for(lambda: len(started()) == 2, 60, "second on-save run")
    end = await wait_for(lambda: progress_ended(lsp, first), 60, "first run cancelled")
    assert "cancelled" in end.message
    second = [s for s in started() if s != first][0]
    assert not progress_ended(lsp, second)
    await lsp.workspace_execute_command_async(
        types.ExecuteCommandParams(command="superqode.cancel", arguments=[{"sessionId": second}])
    )
    await wait_for(lambda: progress_ended(lsp, second), 60, "second run cancelled")


async def test_show_report_without_show_document_support_tells_the_path(lsp: LanguageClient, shop: Path):
    await start(lsp, shop, editor="emacs")  # declares no window/showDocument support
    sid = await run_and_wait(lsp, {"roles": ["lint_tester"]})
    res = await lsp.workspace_execute_command_async(
        types.ExecuteCommandParams(command="superqode.showReport", arguments=[{}])
    )
    assert res["shown"] is False and not lsp.shown_documents
    await wait_for(lambda: any(".md" in m.message for m in lsp.messages), 10, "path message")
    from pygls.uris import to_fs_path

    assert sid in Path(to_fs_path(res["uri"])).read_text(encoding="utf-8")

