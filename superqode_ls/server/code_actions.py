"""Code actions: a quickfix per finding with a patch that still fits,
``superqode.details`` ("show details", the default action of a finding
without a safe verified fix), ``superqode.ignore`` ("ignore this finding",
last: never the default),
``source.fixAll.superqode`` (all verified safe fixes of the file) and
``source.superqode.runQE`` (run QE on this file).

"Ignore" has a kind of its own, not under ``quickfix``: it shows beside the
fix wherever an editor lists every action (VS Code's light bulb and Ctrl+.,
Neovim's and Emacs' code-action menus), while a request for ``quickfix`` only
(apply-the-fix flows, "fix this" keybindings) still gets just the fix."""

from __future__ import annotations

from lsprotocol import types

from . import fixes, ignore
from .publisher import diagnostic_of
from .server import SuperQodeServer

FIX_ALL = "source.fixAll.superqode"
RUN_QE = "source.superqode.runQE"
IGNORE = "superqode.ignore"
DETAILS = "superqode.details"
KINDS = [types.CodeActionKind.QuickFix, DETAILS, IGNORE, FIX_ALL, RUN_QE]


def wanted(kind: str, only: list[str] | None) -> bool:
    if not only:
        return True
    return any(kind == o or kind.startswith(f"{o}.") for o in only)


def register(ls: SuperQodeServer) -> None:
    @ls.feature(
        types.TEXT_DOCUMENT_CODE_ACTION,
        types.CodeActionOptions(code_action_kinds=KINDS, resolve_provider=False),
    )
    def code_action(ls: SuperQodeServer, params: types.CodeActionParams):
        return actions_for(ls, params)


def actions_for(ls: SuperQodeServer, params: types.CodeActionParams):
    uri = params.text_document.uri
    only = [str(getattr(k, "value", k)) for k in (params.context.only or [])] or None
    out: list[types.CodeAction | types.Command] = []
    literal = ls.client.code_action_literals
    want_fix = wanted(types.CodeActionKind.QuickFix.value, only)
    want_ignore = wanted(IGNORE, only)
    want_details = wanted(DETAILS, only)
    if want_fix or want_ignore or want_details:
        asked = {
            (d.data or {}).get("findingId")
            for d in params.context.diagnostics
            if isinstance(d.data, dict) and d.source == "superqode"
        }
        lo, hi = params.range.start.line, params.range.end.line
        lines = ls.current_lines(uri) if ls.encoding != "utf-32" else ()
        version = ls.document_version(uri)
        for t in ls.store.visible(uri):
            if t.id not in asked and not (t.sl <= hi and lo <= t.el):
                continue
            diag = ls.protocol._converter.structure(
                diagnostic_of(ls, t, lines, version), types.Diagnostic
            ) if literal else None
            mine = _fix_actions(ls, t, diag, literal) if want_fix else []
            if want_details:
                preferred = not any(getattr(a, "is_preferred", False) for a in mine)
                mine.append(_details_action(t, diag, literal, preferred=preferred and literal))
            if want_ignore:
                mine.extend(ignore.actions(ls, t, diag, literal, IGNORE))
            out.extend(mine)
        # The default first too, for clients that take the first action
        # (a picker's Enter) rather than the preferred one.
        out.sort(key=lambda a: not getattr(a, "is_preferred", False))
    unsafe_ok = fixes.allows_unsafe(ls, uri)
    if wanted(FIX_ALL, only) and fixes.fixable(ls, uri, verified_only=True, allow_unsafe=unsafe_ok):
        if literal:
            # Editors ask for code actions at every cursor move: build the
            # fix-all edit once per document version and finding set.
            version = ls.document_version(uri)
            if version is None:  # not open: the file on disk is the text
                version = ls.disk_mtime(uri)
            key = (uri, version, ls.store.result_id(uri), unsafe_ok)
            cached = ls.fix_all_cache.get(uri)
            if cached is not None and cached[0] == key:
                edit = cached[1]
            else:
                edit, _ = fixes.fix_all_edit(ls, uri, allow_unsafe=unsafe_ok)
                ls.cache_fix_all(uri, key, edit)
            if edit is not None:
                out.append(types.CodeAction(title="SuperQode: apply all verified fixes",
                                            kind=FIX_ALL, edit=edit))
        else:
            out.append(types.Command(title="SuperQode: apply all verified fixes",
                                     command="superqode.applyAllFixes",
                                     arguments=[{"uri": uri, "notify": True}]))
    if wanted(RUN_QE, only) and ls.folder_for_uri(uri) is not None:
        cmd = types.Command(title="Run QE on this file", command="superqode.runQE",
                            arguments=[{"uri": uri}])
        out.append(types.CodeAction(title="Run QE on this file", kind=RUN_QE, command=cmd)
                   if literal else cmd)
    return out or None


def _details_action(t, diag, literal: bool, *, preferred: bool):
    cmd = types.Command(title=f"SuperQode: show details of {t.finding.rule_id}",
                        command="superqode.showFinding", arguments=[{"findingId": t.id}])
    if not literal:
        return cmd
    return types.CodeAction(title=cmd.title, kind=DETAILS, diagnostics=[diag] if diag else None,
                            command=cmd, is_preferred=preferred)


def fix_title(t, fix) -> str:
    """Say what the edit does, in the tool's words (ruff's ``fix.message``),
    named the way ruff's own server names its fixes, so the two side by side
    tell apart: "SuperQode (F401): Remove unused import: `os`". A
    suppression says it silences."""
    rule = t.finding.rule_id
    if fix.kind == "suppression":
        added = _added_text(fix.diff)
        if added:  # what the edit writes, so it reads as no fix
            return f"SuperQode ({rule}): add `{added}` (silences it, does not fix it)"
        return f"SuperQode: suppress {rule} ({t.finding.title})"
    said = (fix.description or "").strip()
    if not said or said == f"Fix {rule}":  # the role's placeholder
        said = f"Fix {t.finding.title}"
    if fixes.is_unsafe(t) and "unsafe" not in said:
        said += " (unsafe: review it)"
    return f"SuperQode ({rule}): {said}"


def _added_text(diff: str, most: int = 60) -> str | None:
    """The text a one-line patch adds to its line (``usedforsecurity=False``
    in ``hashlib.sha1(s)`` -> ``hashlib.sha1(s, usedforsecurity=False)``),
    as written: None for any other patch, or one that also removes text."""
    minus = [ln[1:] for ln in diff.splitlines() if ln.startswith("-") and not ln.startswith("---")]
    plus = [ln[1:] for ln in diff.splitlines() if ln.startswith("+") and not ln.startswith("+++")]
    if len(minus) != 1 or len(plus) != 1:
        return None
    old, new = minus[0], plus[0]
    head = 0
    while head < min(len(old), len(new)) and old[head] == new[head]:
        head += 1
    tail = 0
    while tail < min(len(old), len(new)) - head and old[-1 - tail] == new[-1 - tail]:
        tail += 1
    if head + tail != len(old):
        return None  # something of the line went too
    added = new[head:len(new) - tail].strip(" ,")
    return added if added and len(added) <= most and "`" not in added else None


def _fix_actions(ls: SuperQodeServer, t, diag, literal: bool) -> list:
    """The finding's fix, labelled by what it is: a suppression silences, it
    does not fix (never titled "fix", never preferred); a fix ruff marks
    unsafe says so and is never preferred (nor part of fix-all)."""
    fix = fixes.patch_of(ls, t)
    if fix is None:
        return []
    title = fix_title(t, fix)
    if not literal:
        return [types.Command(title=title, command="superqode.applyFix",
                              arguments=[{"findingId": t.id}])]
    edit = fixes.fix_edit(ls, t)
    if edit is None:
        return []  # the code changed since the run: no fix rather than a wrong one
    return [types.CodeAction(
        title=title, kind=types.CodeActionKind.QuickFix, diagnostics=[diag], edit=edit,
        is_preferred=_default_fix(t, fix),
    )]


def _default_fix(t, fix) -> bool:
    """A fix is the default action when tests verified it, or when ruff marks
    it safe (it keeps what the code does) and ruff, run again on the edited
    file, went quiet: the fix ruff's own server offers first. Never a
    suppression, never an unsafe fix."""
    if fix.kind != "fix" or fixes.is_unsafe(t):
        return False
    return bool(fix.verified or (fix.verified_by == "tool" and t.finding.tool == "ruff"))
