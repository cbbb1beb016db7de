"""Patches of findings -> WorkspaceEdits against the current documents.

Edits use versioned ``documentChanges`` when the client supports them (so a
client rejects an edit made for an older version of the buffer), ``changes``
otherwise. A patch that no longer fits the current text is not offered.
"""

from __future__ import annotations

import logging
from collections.abc import Iterable

from lsprotocol import types

from ..models import Patch
from .convert import HINT, diagnostic_severity, units
from .patches import FileEdits, LineEdit, PatchError, file_edits, text_edit_range
from .server import SuperQodeServer
from .store import Tracked

log = logging.getLogger(__name__)


def patch_of(ls: SuperQodeServer, t: Tracked) -> Patch | None:
    """The finding's fix: it travels with the finding (set when its run
    finished), so a run the registry dropped takes no fix with it."""
    return t.patch if t.finding.fix_patch_id else None


def edits_for(
    ls: SuperQodeServer, folder: str, patches: Iterable[Patch]
) -> tuple[list[FileEdits], set[str]]:
    """Per-file edits of several patches, and the ids of the patches taken; a
    patch that does not fit, or overlaps one already taken, is left out."""
    merged: dict[str, FileEdits] = {}
    taken: set[str] = set()
    for patch in patches:
        try:
            fes = file_edits(patch.diff, lambda rel: _read(ls, folder, rel))
        except PatchError as e:
            log.info("patch %s not offered: %s", patch.id, e)
            continue
        if any(fe.create and fe.path in merged for fe in fes):
            continue
        clash = False
        for fe in fes:
            have = merged.get(fe.path)
            if have is not None and _overlaps(have.edits, fe.edits):
                clash = True
        if clash:
            continue
        taken.add(patch.id)
        for fe in fes:
            have = merged.get(fe.path)
            if have is None:
                merged[fe.path] = fe
            else:
                have.edits = sorted(have.edits + fe.edits, key=lambda e: (e.start, e.end))
    return list(merged.values()), taken


def _overlaps(a: list[LineEdit], b: list[LineEdit]) -> bool:
    for x in a:
        for y in b:
            if x.start < y.end and y.start < x.end:
                return True
            if x.start == y.start:  # two insertions at one place: order unclear
                return True
    return False


def _read(ls: SuperQodeServer, folder: str, rel: str) -> str | None:
    uri = ls.uri_for(folder, rel)
    if uri is None:
        raise PatchError(f"{rel}: outside the workspace folder")
    return ls.current_text(uri)


def workspace_edit(ls: SuperQodeServer, folder: str, fes: list[FileEdits]) -> types.WorkspaceEdit | None:
    if not fes:
        return None
    enc = ls.encoding
    creates = ls.client.document_changes and "create" in ls.client.resource_ops
    doc_changes: list = []
    changes: dict[str, list[types.TextEdit]] = {}
    for fe in fes:
        uri = ls.uri_for(folder, fe.path)
        if uri is None:
            return None
        if fe.create and not creates:
            return None  # the client cannot create files through an edit
        edits = []
        for e in fe.edits:
            rng = text_edit_range(fe, e, lambda s: units(s, enc))
            edits.append(
                types.TextEdit(
                    range=types.Range(
                        start=types.Position(**rng["start"]), end=types.Position(**rng["end"])
                    ),
                    new_text=e.new_text,
                )
            )
        if ls.client.document_changes:
            if fe.create:
                doc_changes.append(types.CreateFile(uri=uri, kind="create"))
                version = None
            else:
                version = ls.document_version(uri)
            doc_changes.append(
                types.TextDocumentEdit(
                    text_document=types.OptionalVersionedTextDocumentIdentifier(
                        uri=uri, version=version
                    ),
                    edits=edits,
                )
            )
        else:
            changes[uri] = edits
    if ls.client.document_changes:
        return types.WorkspaceEdit(document_changes=doc_changes)
    return types.WorkspaceEdit(changes=changes)


def fix_edit(ls: SuperQodeServer, t: Tracked) -> types.WorkspaceEdit | None:
    if t.stale:
        return None
    patch = patch_of(ls, t)
    if patch is None:
        return None
    fes, _ = edits_for(ls, t.folder, [patch])
    return workspace_edit(ls, t.folder, fes)


def is_unsafe(t: Tracked) -> bool:
    """ruff marks some fixes unsafe or display-only (they may change what the
    code does): never verified, never part of fix-all unless ``fixAllUnsafe``
    says so, and labelled as such."""
    return "fix:unsafe" in t.finding.tags or "fix:display-only" in t.finding.tags


def shown(t: Tracked) -> bool:
    """Whether the user was shown ``t``: published above hint severity. Hints
    (findings in examples, tests, docs, lowered by the path classes) are
    dots at most, absent from problem lists: a workspace Fix All leaves them."""
    return diagnostic_severity(t.finding) < HINT


def fixable(
    ls: SuperQodeServer, uri: str, *, verified_only: bool, allow_unsafe: bool = False,
    shown_only: bool = False,
) -> list[Tracked]:
    out = []
    for t in ls.store.visible(uri):
        if shown_only and not shown(t):
            continue
        p = patch_of(ls, t)
        # "Fix all" takes what the tool verified (with the tests, or without
        # where none could run: an untrusted folder); never a suppression.
        if p is None:
            continue
        if verified_only and is_unsafe(t):
            # Never verified (verify_step): taken only when the user said so.
            if allow_unsafe and p.kind == "fix":
                out.append(t)
            continue
        if verified_only and not (p.kind == "fix" and p.verified_by is not None):
            continue
        out.append(t)
    return out


def skip_reason(ls: SuperQodeServer, t: Tracked, allow_unsafe: bool) -> str | None:
    """Why fix-all leaves a finding that has a fix alone (None: it takes it,
    or it is a suppression, which is not a fix)."""
    p = patch_of(ls, t)
    if p is None or p.kind != "fix":
        return None
    if is_unsafe(t):
        return None if allow_unsafe else "ruff marks the fix unsafe: apply it on its own"
    if p.verified_by is None:
        return "fix not verified"
    return None


def fix_all_edit(
    ls: SuperQodeServer, uri: str, *, allow_unsafe: bool = False
) -> tuple[types.WorkspaceEdit | None, list[Tracked]]:
    """All verified (safe) fixes of findings in ``uri`` as one edit."""
    tracked = fixable(ls, uri, verified_only=True, allow_unsafe=allow_unsafe)
    if not tracked:
        return None, []
    return _edit_of(ls, tracked)


def _edit_of(ls: SuperQodeServer, tracked: list[Tracked]) -> tuple[types.WorkspaceEdit | None, list[Tracked]]:
    folder = tracked[0].folder
    patches: dict[str, Patch] = {}
    for t in tracked:
        p = patch_of(ls, t)
        if p is not None:
            patches.setdefault(p.id, p)
    fes, taken = edits_for(ls, folder, patches.values())
    applied = [t for t in tracked if (p := patch_of(ls, t)) is not None and p.id in taken]
    return workspace_edit(ls, folder, fes), applied


def allows_unsafe(ls: SuperQodeServer, uri: str) -> bool:
    return ls.settings_for(ls.folder_for_uri(uri)).fixAllUnsafe


def fix_all_batches(
    ls: SuperQodeServer, uris: Iterable[str], *, shown_only: bool = False
) -> tuple[list[tuple[types.WorkspaceEdit, list[Tracked]]], list[Tracked]]:
    """One edit per workspace folder for every verified fix in ``uris`` that
    fits together, and the fixable findings left for a later pass (their fix
    overlaps one taken, or does not fit the current text)."""
    by_folder: dict[str, list[Tracked]] = {}
    for uri in uris:
        for t in fixable(ls, uri, verified_only=True, allow_unsafe=allows_unsafe(ls, uri),
                         shown_only=shown_only):
            by_folder.setdefault(t.folder, []).append(t)
    batches: list[tuple[types.WorkspaceEdit, list[Tracked]]] = []
    left: list[Tracked] = []
    for tracked in by_folder.values():
        edit, applied = _edit_of(ls, tracked)
        done = {id(t) for t in applied}
        left.extend(t for t in tracked if id(t) not in done)
        if edit is not None and applied:
            batches.append((edit, applied))
    return batches, left


def forget_fixed(ls: SuperQodeServer, tracked: Iterable[Tracked]) -> None:
    """Findings whose fix the client applied: drop them and their siblings."""
    for t in tracked:
        patch = patch_of(ls, t)
        ids = set(patch.finding_ids if patch else []) | {t.id}
        for uri in list(ls.store.by_uri):
            per = ls.store.by_uri[uri]
            gone = [fid for fid in per if fid in ids]
            for fid in gone:
                del per[fid]
            if gone:
                ls.store.touch(uri)
                ls.publisher.mark(uri)
