"""Diagnostics without a button: the read-only analyzers (ruff, bandit, the
secrets scan) run by themselves on open, on save and after a pause in
typing, on the buffer's text, quietly (no progress, no report files), one
run at a time per file, each trigger off by its setting."""

from __future__ import annotations

import asyncio
import dataclasses
import types as pytypes
from pathlib import Path

import psutil
import pytest
from lsprotocol import types
from pytest_lsp import LanguageClient

from superqode_ls.runtime import NICE_ENV, Runtime
from superqode_ls.server.live import LiveRunner
from superqode_ls.server.live_runtime import live_runtime
from superqode_ls.server.registry import LIVE, Run
from superqode_ls.workspace import landlock
from tests.waiting import wait_for_async

from .conftest import start, superqode_diags, wait_for

PLANTED = (
    "import os\n"
    "import subprocess\n"
    "\n"
    "\n"
    "def run(cmd):\n"
    "    return subprocess.run(cmd, shell=True)\n"
)
ON = {"lintOnOpen": True, "lintOnSave": True, "lintOnType": True}


async def live_status(lsp: LanguageClient) -> dict:
    return await lsp.workspace_execute_command_async(
        types.ExecuteCommandParams(command="superqode.liveStatus", arguments=[]))


async def until(lsp: LanguageClient, pred, what: str) -> dict:
    """Ask the server's automatic-run status until ``pred`` holds of it."""
    seen: list[dict] = []

    async def check():
        seen[:] = [await live_status(lsp)]
        return seen[0] if pred(seen[0]) else None

    return await wait_for_async(check, 60, what, detail=lambda: f"status: {seen}")


def settled(status: dict) -> bool:
    return not (status["timers"] or status["waiting"] or status["running"])


async def idle(lsp: LanguageClient) -> dict:
    return await until(lsp, settled, "the automatic runs to settle")


def codes(lsp: LanguageClient, uri: str) -> set[str]:
    return {str(d.code) for d in superqode_diags(lsp, uri)}


def planted(shop: Path, text: str = PLANTED) -> Path:
    target = shop / "shop" / "planted.py"
    target.write_text(text, encoding="utf-8")
    return target


async def test_open_shows_lint_and_security_without_a_command(
    lsp: LanguageClient, shop: Path, isolated_home: Path,
):
    target = planted(shop)
    await start(lsp, shop, live=True)
    uri = lsp.editor.open(target)  # type: ignore[attr-defined]
    await wait_for(lambda: {"F401", "B602"} <= codes(lsp, uri), 60, "F401 and B602 on open")
    # Quiet: no progress popup, no report written.
    assert not any(str(k).startswith("superqode/") for k in lsp.progress_reports)
    assert not list((shop / ".superqode").glob("qe-artifacts/**/*.json"))
    f401 = next(d for d in superqode_diags(lsp, uri) if d.code == "F401")
    assert list(f401.tags) == [types.DiagnosticTag.Unnecessary]
    assert f401.range.start.line == 0
    b602 = next(d for d in superqode_diags(lsp, uri) if d.code == "B602")
    assert not b602.tags
    # The fix says what it does, in ruff's words (handed over when the run ends).
    await idle(lsp)
    # The run's sandbox is gone with it.
    assert not list((isolated_home / ".superqode" / "working").glob("*/qe/*"))
    actions = await lsp.text_document_code_action_async(types.CodeActionParams(
        text_document=types.TextDocumentIdentifier(uri=uri), range=f401.range,
        context=types.CodeActionContext(diagnostics=[f401], only=[types.CodeActionKind.QuickFix])))
    assert [a.title for a in actions or []] == ["SuperQode (F401): Remove unused import: `os`"]


async def test_a_typed_problem_appears_after_the_pause_and_a_burst_is_coalesced(
    lsp: LanguageClient, shop: Path,
):
    target = planted(shop)
    await start(lsp, shop, live=True)
    editor = lsp.editor  # type: ignore[attr-defined]
    uri = editor.open(target)
    await wait_for(lambda: {"F401", "B602"} <= codes(lsp, uri), 60, "the findings on open")
    before = (await idle(lsp))["started"][uri]
    # Ten keystrokes, each its own didChange: "import sys" typed at the top.
    for n, ch in enumerate("import sys"):
        editor.edit(uri, (0, n), (0, n), ch)
    editor.edit(uri, (0, 10), (0, 10), "\n")
    await wait_for(lambda: any(d.code == "F401" and d.range.start.line == 0
                               and "sys" in d.message for d in superqode_diags(lsp, uri)),
                   60, "F401 for the typed import")
    after = (await idle(lsp))["started"][uri]
    assert 1 <= after - before <= 2, (before, after)
    # The old findings moved with the text, replaced, not duplicated.
    assert sorted(str(d.code) for d in superqode_diags(lsp, uri)).count("F401") == 2
    # Nothing was saved: the analysis read the buffer.
    assert not target.read_text(encoding="utf-8").startswith("import sys")


async def test_save_triggers_and_each_setting_turns_its_trigger_off(lsp: LanguageClient, shop: Path):
    target = planted(shop)
    await start(lsp, shop, live=True, settings={"lintOnOpen": False, "lintOnType": False})
    editor = lsp.editor  # type: ignore[attr-defined]
    uri = editor.open(target)
    status = await until(lsp, lambda s: settled(s) and s["skipped"].get("open"), "open skipped")
    assert status["started"] == {} and not superqode_diags(lsp, uri)
    editor.edit(uri, (0, 0), (0, 0), "import sys\n")
    status = await until(lsp, lambda s: settled(s) and s["skipped"].get("type"), "type skipped")
    assert status["started"] == {} and not superqode_diags(lsp, uri)
    editor.save(uri)
    await wait_for(lambda: {"F401", "B602"} <= codes(lsp, uri), 60, "the findings on save")
    assert (await idle(lsp))["started"] == {uri: 1}


async def test_save_off(lsp: LanguageClient, shop: Path):
    target = planted(shop)
    await start(lsp, shop, live=True, settings={"lintOnOpen": False, "lintOnSave": False})
    editor = lsp.editor  # type: ignore[attr-defined]
    uri = editor.open(target)
    editor.save(uri)
    status = await until(lsp, lambda s: settled(s) and s["skipped"].get("save"), "save skipped")
    assert status["started"] == {} and not superqode_diags(lsp, uri)


async def test_a_pull_client_pulls_them_without_a_command(lsp: LanguageClient, shop: Path):
    target = planted(shop)
    await start(lsp, shop, live=True, pull=True)
    uri = lsp.editor.open(target)  # type: ignore[attr-defined]
    report: list = []

    async def pulled() -> set[str]:
        res = await lsp.text_document_diagnostic_async(types.DocumentDiagnosticParams(
            text_document=types.TextDocumentIdentifier(uri=uri)))
        report[:] = getattr(res, "items", None) or []
        return {str(d.code) for d in report}

    await idle(lsp)
    while not {"F401", "B602"} <= await pulled():
        await idle(lsp)
    assert not lsp.diagnostics.get(uri)  # a pull client is not pushed to
    assert list(next(d for d in report if d.code == "F401").tags) == [types.DiagnosticTag.Unnecessary]


async def test_shutdown_mid_run_leaves_no_session_behind(lsp: LanguageClient, shop: Path, isolated_home: Path):
    target = planted(shop)
    await start(lsp, shop, live=True)
    uri = lsp.editor.open(target)  # type: ignore[attr-defined]
    await until(lsp, lambda s: s["running"] == [uri], "the run on open to start")
    await lsp.shutdown_session()
    lsp.capabilities = None  # shut down already: the fixture has nothing left to stop
    working = isolated_home / ".superqode" / "working"
    assert not list(working.glob("*/qe/*.heartbeat")), list(working.glob("*/qe/*"))


async def test_a_save_does_not_make_the_saved_files_findings_stale(lsp: LanguageClient, shop: Path):
    """The editor writes the file, then says so: the watcher's change (the
    repository's epoch moving under the run the save started) is the text that
    run analysed, so its findings are current, and their fixes offered."""
    target = planted(shop)
    await start(lsp, shop, live=True)
    editor = lsp.editor  # type: ignore[attr-defined]
    uri = editor.open(target)
    await wait_for(lambda: {"F401", "B602"} <= codes(lsp, uri), 60, "the findings on open")
    await idle(lsp)
    editor.edit(uri, (0, 0), (0, 0), "import sys\n")
    editor.save(uri)
    await wait_for(lambda: any("sys" in d.message for d in superqode_diags(lsp, uri)), 60, "F401 for sys")
    await idle(lsp)
    messages = [d.message for d in superqode_diags(lsp, uri)]
    assert len(messages) >= 3 and not any(m.startswith("[stale") for m in messages), messages
    sys_diag = next(d for d in superqode_diags(lsp, uri) if "sys" in d.message)
    actions = await lsp.text_document_code_action_async(types.CodeActionParams(
        text_document=types.TextDocumentIdentifier(uri=uri), range=sys_diag.range,
        context=types.CodeActionContext(diagnostics=[sys_diag], only=[types.CodeActionKind.QuickFix])))
    assert [a.title for a in actions or []] == ["SuperQode (F401): Remove unused import: `sys`"]


@pytest.mark.skipif(landlock.abi() is None, reason="guard only: no warm bandit (it would serve no run)")
async def test_the_warm_bandit_starts_with_the_server_at_its_priority_off_the_spared_cpu(
    lsp: LanguageClient, shop: Path,
):
    """bandit's warm process is started at initialize, before any file is
    opened, at the server's own priority (an automatic run's tools are not
    lowered: live_runtime.py), and still off the CPU kept for the editor."""
    await start(lsp, shop, live=True)
    server = psutil.Process(lsp._server.pid)  # type: ignore[attr-defined]

    def warm() -> list[psutil.Process]:
        found = []
        for c in server.children():
            try:  # a short-lived child of the warm-up may be ending (a zombie) meanwhile
                if "_bandit_server.py" in " ".join(c.cmdline()):
                    found.append(c)
            except psutil.Error:
                continue
        return found

    (bandit,) = await wait_for(warm, 60, "the warm bandit")
    assert bandit.nice() == server.nice()
    cpus = sorted(server.cpu_affinity())
    if len(cpus) > 1:
        assert sorted(bandit.cpu_affinity()) == cpus[:-1]
    target = planted(shop)
    uri = lsp.editor.open(target)  # type: ignore[attr-defined]
    await wait_for(lambda: {"F401", "B602"} <= codes(lsp, uri), 60, "F401 and B602 on open")
    await idle(lsp)
    assert warm() == [bandit]  # one warm process, still up for the next run


def test_an_automatic_runs_tools_keep_the_spared_cpu_and_the_users_nice(monkeypatch):
    monkeypatch.delenv(NICE_ENV, raising=False)
    editor = Runtime(nice=10, tool_cpus=frozenset({0}))
    assert live_runtime(editor) == dataclasses.replace(editor, nice=0)
    assert live_runtime(Runtime(nice=0)) == Runtime(nice=0)
    monkeypatch.setenv(NICE_ENV, "15")  # the user's choice, as for every run
    assert live_runtime(Runtime(nice=15, tool_cpus=frozenset({0}))).nice == 15


async def test_the_role_imports_wait_for_the_automatic_runs_to_end():
    """The warm-up's import of every role (lifecycle_warm.py) waits on
    ``quiet``: it returns at once with nothing to do, and otherwise when the
    last automatic run has ended."""
    uri = "file:///w/shop/planted.py"
    runner = LiveRunner(pytypes.SimpleNamespace(shutting_down=False))  # type: ignore[arg-type]
    await runner.quiet(60)  # nothing due, waiting or running
    run = Run(id="qe-1", folder="/w", files=["shop/planted.py"], mode="quick", roles=None, trigger=LIVE)
    runner.running[uri] = run
    runner._update_quiet()
    waiting = asyncio.ensure_future(runner.quiet(60))
    await asyncio.sleep(0)
    assert not waiting.done()
    runner._ended(uri, run)
    await waiting
    assert runner.status()["running"] == []


async def test_the_role_imports_wait_until_the_automatic_runs_have_settled():
    """``settled`` (what the warm-up's role imports wait on) returns only once
    no automatic run has been in flight for ``settle`` s: not at the first
    quiet moment after a file's findings, when the user's next change comes;
    at once when quiet has lasted that long; at ``timeout`` when runs go on."""
    uri = "file:///w/shop/planted.py"
    runner = LiveRunner(pytypes.SimpleNamespace(shutting_down=False))  # type: ignore[arg-type]
    run = Run(id="qe-1", folder="/w", files=["shop/planted.py"], mode="quick", roles=None, trigger=LIVE)
    runner.running[uri] = run
    runner._update_quiet()
    waiting = asyncio.ensure_future(runner.settled(60, settle=3600))
    await asyncio.sleep(0)
    runner._ended(uri, run)  # quiet now, not yet for an hour
    await runner.quiet(60)
    await asyncio.sleep(0)
    assert not waiting.done()
    waiting.cancel()
    runner._quiet_since -= 3600  # quiet for an hour: no wait
    await asyncio.wait_for(runner.settled(60, settle=3600), 60)
    runner.running[uri] = run  # a run that goes on: the timeout ends the wait
    runner._update_quiet()
    await runner.settled(0.05, settle=0.01)
    assert not runner._quiet.is_set()


def test_a_save_leaves_the_run_in_flight_on_the_same_text_to_finish():
    """A pause in typing started a run; the save that follows writes the text
    that run reads: it goes on (its findings come once, not after a second
    run). A save of a newer text cancels it, as every newer trigger does."""
    uri, folder = "file:///w/shop/planted.py", "/w"

    class Editor:  # the server's view of the document, nothing else
        shutting_down = False
        version = 3

        def folder_for_uri(self, u):
            return folder

        def settings_for(self, f):
            return _Settings()

        def document_version(self, u):
            return self.version

    class _Settings:
        lintOnSave = True

    ls = Editor()
    runner = LiveRunner(ls)  # type: ignore[arg-type]
    typed = Run(id="qe-1", folder=folder, files=["shop/planted.py"], mode="quick", roles=None,
                trigger=LIVE, versions={uri: 3})
    runner.running[uri] = typed
    runner._add(uri, "save")
    assert (runner.kept, typed.cancel_requested, list(runner.waiting)) == (1, False, [])
    ls.version = 4  # typed on before saving: the run reads an older text
    runner._add(uri, "save")
    assert (runner.kept, typed.cancel_requested, list(runner.waiting)) == (1, True, [uri])
