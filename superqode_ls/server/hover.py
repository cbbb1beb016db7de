"""Hover over a flagged range: what was found, by which role, and whether a
verified fix is available."""

from __future__ import annotations

from lsprotocol import types

from . import fixes
from .convert import diagnostic_message
from .server import SuperQodeServer


def register(ls: SuperQodeServer) -> None:
    @ls.feature(types.TEXT_DOCUMENT_HOVER)
    def hover(ls: SuperQodeServer, params: types.HoverParams):
        line = params.position.line
        parts = []
        for t in ls.store.visible(params.text_document.uri):
            if not (t.sl <= line <= t.el):
                continue
            f = t.finding
            patch = fixes.patch_of(ls, t)
            fix = "" if patch is None else (
                "\n\nVerified fix available." if patch.verified else "\n\nUnverified fix available."
            )
            evidence = "".join(f"\n- {e.message}" for e in f.evidence[:5])
            rule = f"**{f.rule_id}**" if ls.client.hover_markdown else f.rule_id
            parts.append(
                f"{rule} ({f.severity.value}, {f.role}/{f.tool}): "
                f"{diagnostic_message(f)}{evidence}{fix}"
            )
        if not parts:
            return None
        fmt = types.MarkupKind.Markdown if ls.client.hover_markdown else types.MarkupKind.PlainText
        return types.Hover(contents=types.MarkupContent(kind=fmt, value="\n\n---\n\n".join(parts)))
