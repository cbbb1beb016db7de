"""Pull diagnostics: textDocument/diagnostic and workspace/diagnostic, with
result ids. Pushing (and the refresh requests that tell a pull client to ask
again) is the server's ``Publisher`` (``publisher.py``).

The workspace pull is what lets a pull client (VS Code) list findings in files
it has not opened: every document the store knows is reported, unchanged ones
by result id only, and a document whose findings are gone with an empty list
so the client clears it. With a ``partialResultToken`` the reports go out in
``$/progress`` slices and the response itself is empty, as the protocol asks.
"""

from __future__ import annotations

import asyncio
from typing import Any

from lsprotocol import types

from .publisher import diagnostics_for
from .server import SuperQodeServer

# Documents per $/progress slice of a workspace pull.
PARTIAL_CHUNK = 200


def register(ls: SuperQodeServer) -> None:
    @ls.feature(
        types.TEXT_DOCUMENT_DIAGNOSTIC,
        types.DiagnosticOptions(
            identifier="superqode", inter_file_dependencies=False, workspace_diagnostics=True
        ),
    )
    def pull(ls: SuperQodeServer, params: types.DocumentDiagnosticParams):
        uri = params.text_document.uri
        rid = ls.store.result_id(uri)
        if params.previous_result_id == rid:
            return types.RelatedUnchangedDocumentDiagnosticReport(result_id=rid)
        items = ls.protocol._converter.structure(diagnostics_for(ls, uri), list[types.Diagnostic])
        return types.RelatedFullDocumentDiagnosticReport(items=items, result_id=rid)

    @ls.feature(types.WORKSPACE_DIAGNOSTIC)
    async def pull_workspace(ls: SuperQodeServer, params: types.WorkspaceDiagnosticParams):
        reports = workspace_reports(ls, {p.uri: p.value for p in params.previous_result_ids})
        token = params.partial_result_token
        if token is None:
            return ls.protocol._converter.structure(
                {"items": reports}, types.WorkspaceDiagnosticReport
            )
        for start in range(0, len(reports), PARTIAL_CHUNK):
            ls.protocol.notify(
                types.PROGRESS,
                types.ProgressParams(
                    token=token, value={"items": reports[start:start + PARTIAL_CHUNK]}
                ),
            )
            await asyncio.sleep(0)  # a big workspace leaves room for other requests
        return types.WorkspaceDiagnosticReport(items=[])


def workspace_reports(ls: SuperQodeServer, previous: dict[str, str]) -> list[dict[str, Any]]:
    """One report per document with findings now or at the client's last pull."""
    out: list[dict[str, Any]] = []
    for uri in dict.fromkeys([*ls.store.uris(), *previous]):
        rid = ls.store.result_id(uri)
        version = ls.document_version(uri)
        if previous.get(uri) == rid:
            out.append({"kind": "unchanged", "uri": uri, "version": version, "resultId": rid})
        else:
            out.append({"kind": "full", "uri": uri, "version": version, "resultId": rid,
                        "items": diagnostics_for(ls, uri)})
    return out
