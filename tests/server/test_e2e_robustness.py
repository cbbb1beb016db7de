"""Bad input gets an LSP error or a logged line, never a crash or a hang;
startup does not load the engine (--tcp: test_tcp.py)."""

from __future__ import annotations

import asyncio
import subprocess
import sys
from concurrent.futures import Future
from pathlib import Path

import pytest
from lsprotocol import types
from pygls.exceptions import JsonRpcException
from pygls.uris import from_fs_path
from pytest_lsp import LanguageClient

from .conftest import run_and_wait, start, superqode_diags, wait_for


async def command(lsp: LanguageClient, name: str, *args):
    return await lsp.workspace_execute_command_async(
        types.ExecuteCommandParams(command=name, arguments=list(args))
    )


async def alive(lsp: LanguageClient) -> None:
    res = await command(lsp, "superqode.listSessions")
    assert "sessions" in res


@pytest.mark.parametrize(
    "name,args,code,needle",
    [
        ("superqode.runQE", [{"roles": 5}], -32602, "roles"),
        ("superqode.runQE", [{"mode": "sideways"}], -32602, "mode"),
        ("superqode.runQE", [{"roles": ["no_such_role"]}], -32602, "unknown role"),
        ("superqode.runQE", [["not", "an", "object"]], -32602, "object"),
        ("superqode.runQE", [{"uri": "file:///etc/passwd"}], -32803, "outside the workspace"),
        ("superqode.runQE", [{"uri": "untitled:Untitled-1"}], -32602, "not a file URI"),
        ("superqode.cancel", [{}], -32602, "sessionId"),
        ("superqode.cancel", [{"sessionId": "qe-nope"}], -32803, "no running session"),
        ("superqode.applyFix", [{"findingId": "nope"}], -32803, "no finding"),
        ("superqode.recover", [{"sessionId": "x", "action": "explode"}], -32602, "action"),
        ("superqode.recover", [{"sessionId": "not-a-session", "action": "view"}], -32803, "not a session id"),
        ("superqode.revertSession", [{"sessionId": "qe-20200101-000000-abcdef"}], -32803, "no session"),
        ("superqode.showReport", [{}], -32803, "no Quality Report"),
        ("superqode.noSuchCommand", [], -32602, "not defined"),
    ],
)
async def test_bad_commands_get_error_responses(lsp: LanguageClient, shop: Path, name, args, code, needle):
    await start(lsp, shop)
    with pytest.raises(JsonRpcException) as exc:
        await command(lsp, name, *args)
    assert exc.value.code == code and needle in str(exc.value)
    await alive(lsp)


async def test_non_utf8_file_and_unknown_documents_do_not_break_the_server(lsp: LanguageClient, shop: Path):
    await start(lsp, shop, editor="neovim")
    bad = shop / "shop" / "latin1.py"
    bad.write_bytes(b"# caf\xe9\nx = 1  # PLANTED\n")
    uri = from_fs_path(str(bad))
    sid = await run_and_wait(lsp, {"uri": uri, "roles": ["toy_tester", "lint_tester"]})
    assert sid
    await alive(lsp)
    # Requests about documents the server never saw, and outside the workspace.
    for target in (uri, "file:///nowhere/else.py"):
        actions = await lsp.text_document_code_action_async(
            types.CodeActionParams(
                text_document=types.TextDocumentIdentifier(uri=target),
                range=types.Range(start=types.Position(1, 0), end=types.Position(1, 0)),
                context=types.CodeActionContext(diagnostics=[]),
            )
        )
        assert all(getattr(a, "kind", None) != types.CodeActionKind.QuickFix for a in actions or [])
        hover = await lsp.text_document_hover_async(
            types.HoverParams(text_document=types.TextDocumentIdentifier(uri=target),
                              position=types.Position(99, 99))
        )
        assert hover is None
    # A fix for a non-UTF-8 file is refused rather than guessed.
    for d in superqode_diags(lsp, uri):
        with pytest.raises(JsonRpcException):
            await command(lsp, "superqode.applyFix", {"findingId": d.data["findingId"]})
    assert bad.read_bytes() == b"# caf\xe9\nx = 1  # PLANTED\n"


async def test_malformed_requests_get_errors(lsp: LanguageClient, shop: Path):
    await start(lsp, shop)
    for n, (method, params) in enumerate(
        [("textDocument/codeAction", {"textDocument": 42}),
         ("workspace/executeCommand", {"command": 7}),
         ("textDocument/hover", None)]
    ):
        # Sent raw: the typed client cannot even build these.
        fut: Future = Future()
        msg_id = f"malformed-{n}"
        lsp.protocol._request_futures[msg_id] = fut
        lsp.protocol._send_data({"jsonrpc": "2.0", "id": msg_id, "method": method, "params": params})
        with pytest.raises(JsonRpcException):
            await asyncio.wait_for(asyncio.wrap_future(fut), 30)
    # A change for a document that was never opened is logged, not fatal.
    lsp.text_document_did_change(
        types.DidChangeTextDocumentParams(
            text_document=types.VersionedTextDocumentIdentifier(uri="file:///never/opened.py", version=3),
            content_changes=[types.TextDocumentContentChangeWholeDocument(text="x")],
        )
    )
    await alive(lsp)


def test_startup_does_not_load_the_engine():
    code = (
        "import sys; from superqode_ls.server.setup import create_server; create_server();"
        "heavy = [m for m in ('superqode_ls.qe.pipeline', 'superqode_ls.workspace.session', 'unidiff')"
        " if m in sys.modules]; print(heavy)"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60)
    assert out.stdout.strip() == "[]", out.stderr


async def test_symlinked_workspace_gets_diagnostics_on_its_own_uris(lsp: LanguageClient, shop: Path, tmp_path):
    link = tmp_path / "linked workspace"
    link.symlink_to(shop, target_is_directory=True)
    (shop / "shop" / "planted.py").write_text("x = 1  # PLANTED\n", encoding="utf-8")
    await start(lsp, link)
    uri = lsp.editor.open(link / "shop" / "planted.py")
    await run_and_wait(lsp, {"uri": uri, "roles": ["toy_tester"]})
    (d,) = await wait_for(lambda: superqode_diags(lsp, uri), 30, "diagnostic on the linked URI")
    assert d.code == "TOY1"


async def test_malformed_notification_is_logged_not_fatal(lsp: LanguageClient, shop: Path):
    await start(lsp, shop)
    lsp.protocol._send_data({"jsonrpc": "2.0", "method": "textDocument/didOpen", "params": {"x": 1}})
    await wait_for(lambda: any("SuperQode" in m.message and m.type == types.MessageType.Error
                               for m in lsp.log_messages), 10, "logged error")
    assert not lsp.messages  # no pop-up
    await alive(lsp)
