"""Hover over a flagged range: what was found, by which role, and whether a
verified fix is available (``details``)."""

from __future__ import annotations

from lsprotocol import types

from .details import details
from .server import SuperQodeServer


def register(ls: SuperQodeServer) -> None:
    @ls.feature(types.TEXT_DOCUMENT_HOVER)
    def hover(ls: SuperQodeServer, params: types.HoverParams):
        line = params.position.line
        md = ls.client.hover_markdown
        parts = [details(ls, t, md) for t in ls.store.visible(params.text_document.uri)
                 if t.sl <= line <= t.el]
        if not parts:
            return None
        fmt = types.MarkupKind.Markdown if ls.client.hover_markdown else types.MarkupKind.PlainText
        return types.Hover(contents=types.MarkupContent(kind=fmt, value="\n\n---\n\n".join(parts)))
