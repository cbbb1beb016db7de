"""pytest-lsp plumbing for the language server tests.

The test client plays a small editor: it keeps the buffers it opened, answers
``workspace/applyEdit`` by applying the edit (to the buffer when the file is
open, to the file on disk otherwise; a versioned edit for another version is
refused) and answers ``window/showMessageRequest`` from a table of replies.
"""

from __future__ import annotations

import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any, Union

import pytest
import pytest_lsp
from lsprotocol import types
from pygls.uris import from_fs_path, to_fs_path
from pytest_lsp import ClientServerConfig, LanguageClient, client_capabilities

from tests.waiting import wait_for_async

SERVER = [sys.executable, str(Path(__file__).with_name("toy_server.py"))]
EDITORS = ["visual-studio-code", "neovim", "emacs"]


def split_lines(text: str) -> list[str]:
    return text.split("\n")


def char_to_index(line: str, character: int, encoding: str) -> int:
    """Client code units -> index in ``line`` (independent of the server's code)."""
    if encoding == "utf-32":
        return character
    count = 0
    for idx, ch in enumerate(line):
        if count >= character:
            return idx
        count += len(ch.encode("utf-8")) if encoding == "utf-8" else len(ch.encode("utf-16-le")) // 2
    return len(line)


def offset(text: str, pos: Any, encoding: str) -> int:
    lines = text.split("\n")
    line = pos["line"] if isinstance(pos, dict) else pos.line
    character = pos["character"] if isinstance(pos, dict) else pos.character
    if line >= len(lines):
        return len(text)
    start = sum(len(x) + 1 for x in lines[:line])
    return start + char_to_index(lines[line].rstrip("\r"), character, encoding)


def apply_text_edits(text: str, edits: list, encoding: str) -> str:
    spans = []
    for e in edits:
        spans.append((offset(text, e.range.start, encoding), offset(text, e.range.end, encoding), e.new_text))
    for start, end, new in sorted(spans, key=lambda s: (s[0], s[1]), reverse=True):
        text = text[:start] + new + text[end:]
    return text


class Editor:
    """What an editor holds: open buffers, versions, replies to prompts."""

    def __init__(self, client: LanguageClient):
        self.client = client
        self.buffers: dict[str, list] = {}  # uri -> [version, text]
        self.applied: list[types.ApplyWorkspaceEditParams] = []
        self.prompts: list[types.ShowMessageRequestParams] = []
        self.replies: list[tuple[str, str | None]] = []  # (substring of message, action title)
        self.encoding = "utf-16"

    # -- protocol-side ------------------------------------------------------------
    def apply(self, params: types.ApplyWorkspaceEditParams) -> types.ApplyWorkspaceEditResult:
        self.applied.append(params)
        edit = params.edit
        changes: list[tuple[str, int | None, list]] = []
        for dc in edit.document_changes or []:
            if isinstance(dc, types.TextDocumentEdit):
                changes.append((dc.text_document.uri, dc.text_document.version, list(dc.edits)))
            elif isinstance(dc, types.CreateFile):
                Path(to_fs_path(dc.uri)).parent.mkdir(parents=True, exist_ok=True)
                Path(to_fs_path(dc.uri)).write_text("", encoding="utf-8")
        for uri, edits in (edit.changes or {}).items():
            changes.append((uri, None, list(edits)))
        for uri, version, _ in changes:
            buf = self.buffers.get(uri)
            if version is not None and (buf is None or buf[0] != version):
                return types.ApplyWorkspaceEditResult(applied=False, failure_reason="version mismatch")
        for uri, _, edits in changes:
            if uri in self.buffers:
                buf = self.buffers[uri]
                self.set_text(uri, apply_text_edits(buf[1], edits, self.encoding))
            else:
                path = Path(to_fs_path(uri))
                old = path.read_text(encoding="utf-8") if path.exists() else ""
                path.write_text(apply_text_edits(old, edits, self.encoding), encoding="utf-8")
        return types.ApplyWorkspaceEditResult(applied=True)

    def answer(self, params: types.ShowMessageRequestParams) -> types.MessageActionItem | None:
        self.prompts.append(params)
        for needle, title in self.replies:
            if needle in params.message:
                if title is None:
                    return None
                return types.MessageActionItem(title=title)
        return None

    # -- user-side ----------------------------------------------------------------
    def open(self, path: Path, text: str | None = None, language: str = "python") -> str:
        uri = from_fs_path(str(path))
        if text is None:
            text = path.read_text(encoding="utf-8")
        self.buffers[uri] = [1, text]
        self.client.text_document_did_open(
            types.DidOpenTextDocumentParams(
                text_document=types.TextDocumentItem(uri=uri, language_id=language, version=1, text=text)
            )
        )
        return uri

    def text(self, uri: str) -> str:
        return self.buffers[uri][1]

    def set_text(self, uri: str, text: str) -> None:
        """Replace the whole buffer (a full-document change)."""
        buf = self.buffers[uri]
        buf[0] += 1
        buf[1] = text
        self.client.text_document_did_change(
            types.DidChangeTextDocumentParams(
                text_document=types.VersionedTextDocumentIdentifier(uri=uri, version=buf[0]),
                content_changes=[types.TextDocumentContentChangeWholeDocument(text=text)],
            )
        )

    def edit(self, uri: str, start: tuple[int, int], end: tuple[int, int], new_text: str) -> None:
        """An incremental change, positions in the negotiated encoding."""
        buf = self.buffers[uri]
        rng = types.Range(start=types.Position(*start), end=types.Position(*end))
        buf[1] = apply_text_edits(buf[1], [types.TextEdit(range=rng, new_text=new_text)], self.encoding)
        buf[0] += 1
        self.client.text_document_did_change(
            types.DidChangeTextDocumentParams(
                text_document=types.VersionedTextDocumentIdentifier(uri=uri, version=buf[0]),
                content_changes=[types.TextDocumentContentChangePartial(range=rng, text=new_text)],
            )
        )

    def save(self, uri: str) -> None:
        Path(to_fs_path(uri)).write_text(self.buffers[uri][1], encoding="utf-8")
        self.client.text_document_did_save(
            types.DidSaveTextDocumentParams(text_document=types.TextDocumentIdentifier(uri=uri))
        )


def make_client() -> LanguageClient:
    client = pytest_lsp.make_test_lsp_client()
    conv = client.protocol._converter

    # lsprotocol reads any code action that has a ``command`` as a Command; tell
    # them apart the way editors do (a Command's ``command`` is a string).
    def code_action_or_command(obj, _type):
        if isinstance(obj.get("command"), str):
            return conv.structure(obj, types.Command)
        return conv.structure(obj, types.CodeAction)

    conv.register_structure_hook(Union[types.Command, types.CodeAction], code_action_or_command)
    editor = Editor(client)
    client.editor = editor  # type: ignore[attr-defined]

    @client.feature(types.WORKSPACE_APPLY_EDIT)
    def apply_edit(params: types.ApplyWorkspaceEditParams):
        return editor.apply(params)

    @client.feature(types.WINDOW_SHOW_MESSAGE_REQUEST)
    def show_message_request(params: types.ShowMessageRequestParams):
        return editor.answer(params)

    return client


_CURRENT: LanguageClient | None = None


@pytest_lsp.fixture(config=ClientServerConfig(server_command=SERVER, client_factory=make_client))
async def lsp(lsp_client: LanguageClient):
    global _CURRENT
    _CURRENT = lsp_client
    yield
    await lsp_client.shutdown_session()


def capabilities(editor: str, *, pull: bool = False) -> types.ClientCapabilities:
    caps = client_capabilities(editor)
    if pull:
        caps.text_document.diagnostic = types.DiagnosticClientCapabilities(
            related_document_support=False
        )
        caps.workspace.diagnostics = types.DiagnosticWorkspaceClientCapabilities(refresh_support=True)
    return caps


async def start(
    client: LanguageClient,
    folders: list[Path] | Path,
    *,
    editor: str = "visual-studio-code",
    options: dict | None = None,
    pull: bool = False,
    settings: dict | None = None,
    live: bool = False,
) -> types.InitializeResult:
    """initialize + initialized; ``settings`` answer workspace/configuration.

    The automatic runs on open, save and typing (on by default) are off
    unless ``live``: a test of something else then sees only its own runs
    (tests/server/test_live.py turns them on)."""
    folders = folders if isinstance(folders, list) else [folders]
    if not live and (options is None or isinstance(options, dict)):
        off = {"lintOnOpen": False, "lintOnSave": False, "lintOnType": False}
        if isinstance((options or {}).get("superqode"), dict):
            options = {**options, "superqode": {**off, **options["superqode"]}}
        else:
            options = {**off, **(options or {})}
    if settings is not None:
        client.set_configuration({"superqode": settings})
    result = await client.initialize_session(
        types.InitializeParams(
            capabilities=capabilities(editor, pull=pull),
            root_uri=from_fs_path(str(folders[0])),
            workspace_folders=[
                types.WorkspaceFolder(uri=from_fs_path(str(f)), name=f.name) for f in folders
            ],
            initialization_options=options,
        )
    )
    enc = result.capabilities.position_encoding
    client.editor.encoding = str(getattr(enc, "value", enc) or "utf-16")  # type: ignore[attr-defined]
    return result


async def wait_for(pred: Callable[[], Any], timeout: float = 60.0, what: str = "condition") -> Any:
    """tests/waiting.py's wait, naming what the server said when it times out."""

    def said() -> str:
        seen = "; ".join(m.message for m in (_CURRENT.log_messages + _CURRENT.messages)) if _CURRENT else ""
        return f"server said: {seen[-1500:]}"

    return await wait_for_async(pred, timeout, what, detail=said)


async def caught_up(client: LanguageClient) -> None:
    """Return once the server has read and handled everything sent before.

    The server reads its input in order, so its answer to a request comes
    after it read every earlier message; a second round trip also lets what
    the first one's messages woke up (a coroutine waiting on a response) run.
    For checking that something did NOT happen, where there is no event."""
    for _ in range(2):
        await sessions(client)


def progress_ended(client: LanguageClient, session_id: str) -> types.WorkDoneProgressEnd | None:
    for value in client.progress_reports.get(f"superqode/{session_id}", []):
        if isinstance(value, types.WorkDoneProgressEnd):
            return value
    return None


async def run_qe(client: LanguageClient, args: dict | None = None) -> str:
    res = await client.workspace_execute_command_async(
        types.ExecuteCommandParams(command="superqode.runQE", arguments=[args or {}])
    )
    return res["sessionId"]


async def run_and_wait(client: LanguageClient, args: dict | None = None, timeout: float = 120) -> str:
    sid = await run_qe(client, args)
    await wait_for(lambda: progress_ended(client, sid), timeout, f"session {sid} to end")
    return sid


def superqode_diags(client: LanguageClient, uri: str) -> list[types.Diagnostic]:
    return [d for d in client.diagnostics.get(uri, []) if d.source == "superqode"]


@pytest.fixture
def shop(example_copy: Path) -> Path:
    # Artifacts of a session someone ran on examples/shop itself are not part of it.
    import shutil

    shutil.rmtree(example_copy / ".superqode", ignore_errors=True)
    return example_copy


def plant(folder: Path, rel: str = "shop/planted.py", text: str = "x = 1  # PLANTED\n") -> Path:
    """A file the toy role flags (``# PLANTED``: finding TOY1)."""
    p = folder / rel
    p.parent.mkdir(parents=True, exist_ok=True)
    p.write_text(text, encoding="utf-8")
    return p


def command(client: LanguageClient, name: str, args: dict | None = None):
    """``workspace/executeCommand`` with one object argument (awaitable)."""
    return client.workspace_execute_command_async(
        types.ExecuteCommandParams(command=name, arguments=[args or {}])
    )


async def sessions(client: LanguageClient) -> list[dict]:
    res = await client.workspace_execute_command_async(
        types.ExecuteCommandParams(command="superqode.listSessions", arguments=[])
    )
    return res["sessions"]


def code_actions(client: LanguageClient, uri: str, line: int, diagnostics=(), only=None):
    """``textDocument/codeAction`` at the start of ``line`` (awaitable)."""
    return client.text_document_code_action_async(
        types.CodeActionParams(
            text_document=types.TextDocumentIdentifier(uri=uri),
            range=types.Range(start=types.Position(line, 0), end=types.Position(line, 0)),
            context=types.CodeActionContext(diagnostics=list(diagnostics),
                                            only=list(only) if only else None),
        )
    )
