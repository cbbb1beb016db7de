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
            fix = "" if patch is None else f"\n\n{_OFFER[patch.label]}"
            message = diagnostic_message(f)
            # Evidence that only repeats the message is left out: the text is said once.
            evidence = "".join(f"\n- {e.message}" for e in f.evidence[:5]
                               if e.message and e.message.strip() not in message)
            md = ls.client.hover_markdown
            rule = f"**{f.rule_id}**" if md else f.rule_id
            link = ""
            if f.help_uri:
                link = f"\n\n[{f.rule_id} rule]({f.help_uri})" if md else f"\n\n{f.help_uri}"
            parts.append(
                f"{rule} ({f.severity.value}, {f.role}/{f.tool}): {message}{evidence}{link}{fix}"
            )
        if not parts:
            return None
        fmt = types.MarkupKind.Markdown if ls.client.hover_markdown else types.MarkupKind.PlainText
        return types.Hover(contents=types.MarkupContent(kind=fmt, value="\n\n---\n\n".join(parts)))


# What the quick fix is, in the words of its verification (Patch.label).
_OFFER = {
    "verified": "Verified fix available (the tool and the tests covering it pass).",
    "tool-verified only": "Fix available, tool-verified only (no covering tests ran).",
    "not verified": "Unverified fix available.",
    "suppression": "Suppression available (silences the finding; does not fix it).",
}
