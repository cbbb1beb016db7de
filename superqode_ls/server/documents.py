"""Document sync: findings follow the user's edits; the read-only analyzers
run by themselves on open, save and a pause in typing (``live.py``);
runOnSave starts a quick run on the saved file (debounced, cancelling the
previous on-save run)."""

from __future__ import annotations

import asyncio

from lsprotocol import types

from . import tracking
from .live import live_of
from .patches import split_lines
from .runs import start_run
from .server import SuperQodeServer

SAVE_DEBOUNCE = 0.4


def register(ls: SuperQodeServer) -> None:
    @ls.feature(types.TEXT_DOCUMENT_DID_OPEN)
    def did_open(ls: SuperQodeServer, params: types.DidOpenTextDocumentParams) -> None:
        uri = params.text_document.uri
        ls.doc_lines[uri] = params.text_document.text.split("\n")
        tracked = ls.store.get(uri)
        if tracked and tracking.reanchor(tracked, split_lines(params.text_document.text), strict=False):
            ls.store.touch(uri)
        if tracked:
            ls.publisher.mark(uri)
        live_of(ls).trigger(uri, "open")

    @ls.feature(types.TEXT_DOCUMENT_DID_CHANGE)
    def did_change(ls: SuperQodeServer, params: types.DidChangeTextDocumentParams) -> None:
        uri = params.text_document.uri
        # The document already holds the whole batch; the lines kept from the
        # last change are the text before it.
        before = ls.doc_lines.get(uri)
        doc = ls.open_document(uri)
        after = doc.source.split("\n") if doc is not None else None
        if after is not None:
            ls.doc_lines[uri] = after
        live_of(ls).trigger(uri, "type")
        tracked = ls.store.get(uri)
        if not tracked:
            return
        changed = False
        if before is not None and after is not None:
            only = params.content_changes[0] if len(params.content_changes) == 1 else None
            rng = getattr(only, "range", None)
            if rng is not None:
                changed = tracking.follow(tracked, before, after, rng.start.line, rng.end.line)
            else:  # the whole text, or several changes: compared as a whole
                changed = tracking.follow(tracked, before, after)
        else:
            changed = _by_line_numbers(ls, uri, tracked, params)
        if changed:
            ls.store.touch(uri)
        if ls.client.pull_mode:
            return  # pull clients ask again after a change by themselves
        # Re-send even when nothing moved so the diagnostics carry the new version.
        ls.publisher.mark(uri)

    @ls.feature(types.TEXT_DOCUMENT_DID_CLOSE)
    def did_close(ls: SuperQodeServer, params: types.DidCloseTextDocumentParams) -> None:
        uri = params.text_document.uri
        ls.doc_lines.pop(uri, None)
        live_of(ls).forget(uri)
        tracked = ls.store.get(uri)
        ls.forget_disk_lines(uri)  # it may have just been saved
        # Unsaved edits are gone with the buffer: check findings against the disk.
        if tracked and tracking.reanchor(tracked, ls.disk_lines(uri), strict=False):
            ls.store.touch(uri)
            ls.publisher.mark(uri)

    @ls.feature(types.TEXT_DOCUMENT_DID_SAVE, types.SaveOptions(include_text=False))
    async def did_save(ls: SuperQodeServer, params: types.DidSaveTextDocumentParams) -> None:
        uri = params.text_document.uri
        live_of(ls).trigger(uri, "save")
        folder = ls.folder_for_uri(uri)
        await ls.settings_ready()
        if folder is None or not ls.settings_for(folder).runOnSave:
            return
        timers = ls.save_timers
        if (old := timers.pop(folder, None)) is not None:
            old.cancel()
        loop = asyncio.get_running_loop()
        timers[folder] = loop.call_later(SAVE_DEBOUNCE, _run_on_save, ls, folder, uri)


    @ls.command("superqode.liveStatus")
    def live_status(ls: SuperQodeServer, *args) -> dict:
        """The automatic runs: started per document, running, waiting."""
        return live_of(ls).status()


def _by_line_numbers(ls: SuperQodeServer, uri: str, tracked, params) -> bool:
    """Without the text before the change (a change to a document never
    opened here): line numbers alone decide."""
    changed = False
    for change in params.content_changes:
        rng = getattr(change, "range", None)
        if rng is None:
            changed |= tracking.reanchor(tracked, ls.current_lines(uri), strict=True)
        else:
            changed |= tracking.apply_change(
                tracked, (rng.start.line, rng.start.character),
                (rng.end.line, rng.end.character), change.text,
            )
    return changed


def _run_on_save(ls: SuperQodeServer, folder: str, uri: str) -> None:
    ls.save_timers.pop(folder, None)
    for run in ls.runs.active():
        if run.trigger == "save" and run.folder == folder:
            run.cancel()
    rel = ls.rel_path(folder, uri)
    if rel is None:
        return
    start_run(ls, folder, files=[rel], mode="quick", roles=ls.settings_for(folder).roles,
              trigger="save")
