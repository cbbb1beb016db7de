"""server/diagnostics.py: pull diagnostics (document and workspace, with result ids,
partial results) and who is offered pull at all (a real server over stdio)."""

from __future__ import annotations

from pathlib import Path

from lsprotocol import types
from pygls.uris import from_fs_path
from pytest_lsp import LanguageClient

from superqode_ls.server.base import ClientFeatures
from superqode_ls.server.diagnostics import workspace_reports
from superqode_ls.server.server import SuperQodeServer
from tests.server.findings import tracked

from .conftest import plant, run_and_wait, start, wait_for


def test_workspace_reports_full_unchanged_and_cleared(tmp_path):
    """The reports a workspace pull gets, from the store directly: a document
    with findings in full, unchanged when the client has its result id, and
    one the client knew of whose findings are gone as an empty full report."""
    (tmp_path / "a.py").write_text("import os\nimport sys\n")
    ls = SuperQodeServer()
    t = tracked(1)
    t.uri, t.folder = (tmp_path / "a.py").as_uri(), str(tmp_path)
    ls.store.add(t)
    (full,) = workspace_reports(ls, {})
    assert full["kind"] == "full" and full["uri"] == t.uri and full["version"] is None
    assert [d["code"] for d in full["items"]] == ["F401"]
    assert full["items"][0]["range"]["start"] == {"line": 1, "character": 0}
    gone = "file:///elsewhere/gone.py"
    unchanged, cleared = workspace_reports(ls, {t.uri: full["resultId"], gone: "old"})
    assert unchanged == {"kind": "unchanged", "uri": t.uri, "version": None,
                         "resultId": full["resultId"]}
    assert cleared["kind"] == "full" and cleared["uri"] == gone and cleared["items"] == []


async def test_workspace_pull_lists_findings_of_unopened_files(lsp: LanguageClient, shop: Path):
    result = await start(lsp, shop, pull=True)
    assert result.capabilities.diagnostic_provider.workspace_diagnostics is True
    closed = from_fs_path(str(plant(shop)))
    opened = lsp.editor.open(plant(shop, "shop/open_one.py", "y = 2  # PLANTED\n"))
    await run_and_wait(lsp, {"roles": ["toy_tester"]})
    await wait_for(lambda: lsp.diagnostic_refresh_count > 0, 10, "workspace/diagnostic/refresh")
    assert closed not in lsp.diagnostics  # nothing pushed to a pull client

    report = await lsp.workspace_diagnostic_async(types.WorkspaceDiagnosticParams(previous_result_ids=[]))
    by_uri = {r.uri: r for r in report.items}
    # The file no editor opened is listed exactly like the open one.
    for uri, version in ((closed, None), (opened, 1)):
        r = by_uri[uri]
        assert r.kind == "full" and r.version == version and r.result_id
        (d,) = r.items
        assert d.code == "TOY1" and d.source == "superqode"

    # Asked again with the result ids: nothing changed, nothing resent.
    again = await lsp.workspace_diagnostic_async(types.WorkspaceDiagnosticParams(
        previous_result_ids=[types.PreviousResultId(uri=r.uri, value=r.result_id) for r in report.items]))
    assert {r.uri: r.kind for r in again.items if r.uri in (closed, opened)} == {
        closed: "unchanged", opened: "unchanged"}

    # With a partial result token the reports come as $/progress and the answer is empty.
    partial: list = []
    default = lsp.protocol.fm.features[types.PROGRESS]

    def on_progress(params: types.ProgressParams):
        if params.token == "pull-1":
            partial.extend(params.value["items"])
            return None
        return default(params)

    lsp.protocol.fm.features[types.PROGRESS] = on_progress
    final = await lsp.workspace_diagnostic_async(
        types.WorkspaceDiagnosticParams(previous_result_ids=[], partial_result_token="pull-1"))
    assert list(final.items) == []
    await wait_for(lambda: any(r["uri"] == closed for r in partial), 10, "partial results")
    (r,) = [r for r in partial if r["uri"] == closed]
    assert r["kind"] == "full" and [d["code"] for d in r["items"]] == ["TOY1"]


async def test_pull_diagnostics_with_result_ids_and_refresh(lsp: LanguageClient, shop: Path):
    result = await start(lsp, shop, pull=True)
    assert result.capabilities.diagnostic_provider is not None
    path = plant(shop)
    uri = lsp.editor.open(path)
    await run_and_wait(lsp, {"roles": ["toy_tester"]})
    await wait_for(lambda: lsp.diagnostic_refresh_count > 0, 10, "workspace/diagnostic/refresh")
    assert uri not in lsp.diagnostics  # pull clients are not pushed to
    report = await lsp.text_document_diagnostic_async(
        types.DocumentDiagnosticParams(text_document=types.TextDocumentIdentifier(uri=uri))
    )
    assert report.kind == "full" and report.result_id
    (d,) = report.items
    assert d.code == "TOY1" and d.source == "superqode"
    again = await lsp.text_document_diagnostic_async(
        types.DocumentDiagnosticParams(text_document=types.TextDocumentIdentifier(uri=uri),
                                       previous_result_id=report.result_id)
    )
    assert again.kind == "unchanged" and again.result_id == report.result_id
    lsp.editor.edit(uri, (0, 0), (0, 1), "z")  # edit the flagged line
    after = await lsp.text_document_diagnostic_async(
        types.DocumentDiagnosticParams(text_document=types.TextDocumentIdentifier(uri=uri),
                                       previous_result_id=report.result_id)
    )
    assert after.kind == "full" and list(after.items) == []


async def test_push_only_clients_are_not_offered_pull(lsp: LanguageClient, shop: Path):
    result = await start(lsp, shop, editor="neovim")  # pull, but no refresh support
    assert result.capabilities.diagnostic_provider is None


async def test_a_role_end_asks_a_pull_client_at_once_and_streamed_findings_wait_their_turn():
    """VS Code pulls: each role's end (``flush(now=True)``) sends its refresh
    at once, even right after the previous role's; findings streaming in
    (``mark``) are asked for at most once per REFRESH_INTERVAL."""
    import asyncio

    ls = SuperQodeServer()
    ls.client = ClientFeatures(types.ClientCapabilities(
        text_document=types.TextDocumentClientCapabilities(diagnostic=types.DiagnosticClientCapabilities()),
        workspace=types.WorkspaceClientCapabilities(
            diagnostics=types.DiagnosticWorkspaceClientCapabilities(refresh_support=True))))
    assert ls.client.pull_mode
    asked: list[None] = []

    async def refresh(_params) -> None:
        asked.append(None)

    ls.workspace_diagnostic_refresh_async = refresh
    publisher = ls.publisher
    try:
        publisher.mark("file:///a.py")
        publisher.flush(now=True)  # bandit's findings are all in
        publisher.mark("file:///a.py")
        publisher.flush(now=True)  # ruff's, a moment later
        assert publisher._refresh_pending is None  # nothing left to wait out
        await asyncio.gather(*ls._tasks)
        assert len(asked) == 2
        publisher.mark("file:///a.py")
        publisher.flush()  # a finding streamed in: after the interval
        assert publisher._refresh_pending is not None
    finally:
        if publisher._refresh_pending is not None:
            publisher._refresh_pending.cancel()
        await asyncio.gather(*ls._tasks, return_exceptions=True)
    assert len(asked) == 2
