""""Ignore this finding": an inline ``# superqode: ignore[RULE]`` comment on
the flagged line (the suppression syntax ``qe/noise.py`` reads, so the next
run drops it too), or an entry in the folder's baseline file
(``superqode.ignoreFinding``), which editor runs then use.
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

from lsprotocol import types

from ..config import ConfigError, load_config
from ..qe import baseline
from .convert import to_client_col
from .errors import fail
from .server import SuperQodeServer
from .store import Tracked

# Files whose comments start with "#" (what noise.py's suppression reads).
HASH_COMMENT = {".py", ".pyi", ".pyw", ".sh", ".bash", ".yaml", ".yml", ".toml", ".cfg", ".ini",
                ".rb", ".pl", ".r", ".conf", ".env", ".txt", ""}
_EXISTING = re.compile(r"#\s*superqode:\s*ignore\[(?P<codes>[^\]]*)\]", re.IGNORECASE)


def inline_edit(ls: SuperQodeServer, t: Tracked) -> types.WorkspaceEdit | None:
    """The comment that silences ``t`` on its first line (None: the file's
    comments are not ``#``, or the line is gone)."""
    if t.stale or Path(t.finding.file or "").suffix.lower() not in HASH_COMMENT:
        return None
    lines = ls.current_lines(t.uri)
    if t.sl >= len(lines):
        return None
    line = lines[t.sl]
    rule = t.finding.rule_id
    m = _EXISTING.search(line)
    if m:  # one comment per line: the rule joins the ones it names
        codes = [c.strip() for c in m.group("codes").split(",") if c.strip()]
        start, end, new = m.start("codes"), m.end("codes"), ", ".join([*codes, rule])
    else:
        start = end = len(line)
        new = f"  # superqode: ignore[{rule}]"
    rng = types.Range(
        start=types.Position(t.sl, to_client_col(lines, t.sl, start, ls.encoding)),
        end=types.Position(t.sl, to_client_col(lines, t.sl, end, ls.encoding)),
    )
    edit = types.TextEdit(range=rng, new_text=new)
    if ls.client.document_changes:
        doc = types.OptionalVersionedTextDocumentIdentifier(uri=t.uri, version=ls.document_version(t.uri))
        return types.WorkspaceEdit(document_changes=[types.TextDocumentEdit(text_document=doc, edits=[edit])])
    return types.WorkspaceEdit(changes={t.uri: [edit]})


def baseline_path(ls: SuperQodeServer, folder: str) -> Path:
    """The folder's configured baseline, else ``.superqode/baseline.json``."""
    configured = load_config(Path(folder)).qe.baseline
    return baseline.resolve_path(Path(folder), None, configured) or Path(folder) / baseline.DEFAULT_PATH


def actions(ls: SuperQodeServer, t: Tracked, diag: types.Diagnostic | None, literal: bool,
            kind: str) -> list:
    rule = t.finding.rule_id
    out: list[Any] = []
    edit = inline_edit(ls, t) if literal else None
    if edit is not None:
        out.append(types.CodeAction(
            title=f"SuperQode: ignore {rule} on this line",
            kind=kind, diagnostics=[diag] if diag else None, edit=edit))
    cmd = types.Command(title=f"SuperQode: ignore {rule} (add to the baseline)",
                        command="superqode.ignoreFinding", arguments=[{"findingId": t.id}])
    out.append(types.CodeAction(title=cmd.title, kind=kind,
                                diagnostics=[diag] if diag else None, command=cmd)
               if literal else cmd)
    return out


def add_to_baseline(ls: SuperQodeServer, t: Tracked) -> Path:
    """Accept ``t`` into its folder's baseline (the ``superqode.ignoreFinding``
    command, off the event loop; a RequestFailed line on failure)."""
    try:
        return baseline.add(baseline_path(ls, t.folder), [t.finding])
    except (ConfigError, OSError) as e:
        raise fail(f"could not add {t.finding.rule_id} to the baseline: {e}") from None


def forget(ls: SuperQodeServer, t: Tracked) -> None:
    """Stop showing ``t`` (it is in the baseline now)."""
    ls.store.by_uri.get(t.uri, {}).pop(t.id, None)
    ls.store.touch(t.uri)
    ls.publisher.mark(t.uri)
