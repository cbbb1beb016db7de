"""Pull diagnostics: textDocument/diagnostic with result ids. Pushing (and
the refresh requests that tell a pull client to ask again) is the server's
``Publisher`` (``publisher.py``)."""

from __future__ import annotations

from lsprotocol import types

from .publisher import diagnostics_for
from .server import SuperQodeServer


def register(ls: SuperQodeServer) -> None:
    @ls.feature(
        types.TEXT_DOCUMENT_DIAGNOSTIC,
        types.DiagnosticOptions(
            identifier="superqode", inter_file_dependencies=False, workspace_diagnostics=False
        ),
    )
    def pull(ls: SuperQodeServer, params: types.DocumentDiagnosticParams):
        uri = params.text_document.uri
        rid = ls.store.result_id(uri)
        if params.previous_result_id == rid:
            return types.RelatedUnchangedDocumentDiagnosticReport(result_id=rid)
        items = ls.protocol._converter.structure(diagnostics_for(ls, uri), list[types.Diagnostic])
        return types.RelatedFullDocumentDiagnosticReport(items=items, result_id=rid)
