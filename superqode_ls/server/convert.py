"""Finding (models) -> LSP diagnostic, as plain JSON-ready dicts.

Diagnostics are built as dicts rather than lsprotocol objects: publishing 10k
findings through cattrs costs several hundred milliseconds, a dict goes straight
to ``json.dumps``. Pull responses structure the same dicts into lsprotocol types.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from typing import Any

from ..models import Finding, Range, Severity

SOURCE = "superqode"

# LSP DiagnosticSeverity: 1 error, 2 warning, 3 information, 4 hint.
_SEVERITY = {
    Severity.critical: 1,
    Severity.high: 1,
    Severity.medium: 2,
    Severity.low: 3,
    Severity.info: 4,
}

UTF8, UTF16, UTF32 = "utf-8", "utf-16", "utf-32"

# LSP DiagnosticTag, as ruff's own server sets them: code that does nothing
# is shown greyed (1 Unnecessary), a deprecated API struck through (2 Deprecated).
UNNECESSARY, DEPRECATED = 1, 2
_RUFF_TAGS = {
    **dict.fromkeys(
        ("F401", "F811", "F841", "F842", "ARG001", "ARG002", "ARG003", "ARG004", "ARG005",
         "RUF100", "PIE790", "ERA001"),
        UNNECESSARY,
    ),
    # pyupgrade's deprecated imports and aliases, NumPy 2's deprecated names.
    **dict.fromkeys(("UP005", "UP023", "UP026", "UP035", "NPY201", "PGH001"), DEPRECATED),
}


ERROR, WARNING, HINT = 1, 2, 4
# ruff's own server: every rule a Warning but an undefined name (F821) and a
# file it could not read (E902), and a syntax error (no rule code) an Error.
_RUFF_ERRORS = frozenset({"F821", "E902"})
_RUFF_SYNTAX = frozenset({"syntax-error", "invalid-syntax"})
# flake8-bandit's rules in ruff are security findings: they keep the
# severity model's mapping, as bandit's own do.
_RUFF_SECURITY = re.compile(r"S\d{3}")


def lsp_severity(sev: Severity) -> int:
    return _SEVERITY[sev]


def diagnostic_severity(f: Finding) -> int:
    """The LSP severity a finding is shown with, the one place it is decided
    (what the user was shown, ``fixes.shown``, reads it too).

    Noise is a Hint: there, one click away, never in the problem list's way.
    A ruff lint finding is shown as ruff's own server shows it, so the same
    unused import looks the same with both servers running. Where the
    severity model changed a ruff finding's severity (another tool rates the
    same line, ``severity_reason``; merged reports, ``related_rules``) or
    the rule is a security one, the model's severity stands: it is never
    watered down to ruff's Warning."""
    if f.noise:
        return HINT
    if (f.tool == "ruff" and not f.severity_reason and not f.related_rules
            and not _RUFF_SECURITY.fullmatch(f.rule_id)):
        if f.category == "syntax" or f.rule_id in _RUFF_SYNTAX or f.rule_id in _RUFF_ERRORS:
            return ERROR
        return WARNING
    return _SEVERITY[f.severity]


def diagnostic_tags(f: Finding) -> list[int]:
    """The finding's DiagnosticTags (ruff's rules only: another tool's code
    of the same name is another rule)."""
    tag = _RUFF_TAGS.get(f.rule_id) if f.tool == "ruff" else None
    return [tag] if tag is not None else []


def model_range_to_points(rng: Range | None, lines: Sequence[str]) -> tuple[int, int, int, int]:
    """Model range (1-based, code points, exclusive end) -> 0-based (sl, sc, el, ec)
    in code points, clamped to the text. No range means the first line."""
    if rng is None:
        line_text = _line(lines, 0)
        return 0, 0, 0, len(line_text)
    sl = rng.start_line - 1
    sc = rng.start_col - 1
    el = (rng.end_line if rng.end_line is not None else rng.start_line) - 1
    if rng.end_col is not None:
        ec = rng.end_col - 1
    else:
        ec = len(_line(lines, el))  # no end column: to the end of the line
    if el < sl or (el == sl and ec < sc):
        el, ec = sl, sc
    if el == sl and ec == sc:
        # An empty range is invisible in most editors: widen it to the rest of the line.
        ec = max(sc, len(_line(lines, sl)))
    return sl, sc, el, ec


def _line(lines: Sequence[str], idx: int) -> str:
    if 0 <= idx < len(lines):
        return lines[idx].rstrip("\r\n")
    return ""


def units(text: str, encoding: str) -> int:
    """Length of ``text`` in the client's code units."""
    if encoding == UTF32 or text.isascii():
        return len(text)
    if encoding == UTF8:
        return len(text.encode("utf-8", "surrogatepass"))
    # UTF-16: characters beyond the BMP take two units.
    return len(text) + sum(1 for ch in text if ord(ch) > 0xFFFF)


def to_client_col(lines: Sequence[str], line: int, col: int, encoding: str) -> int:
    text = _line(lines, line)
    if encoding == UTF32 or text.isascii():
        return col
    return units(text[:col], encoding)


def from_client_col(lines: Sequence[str], line: int, character: int, encoding: str) -> int:
    """Client code units -> code points on ``line`` (clamped to the line)."""
    text = _line(lines, line)
    if encoding == UTF32 or text.isascii():
        return min(character, len(text))
    count = 0
    for idx, ch in enumerate(text):
        if count >= character:
            return idx
        if encoding == UTF8:
            count += len(ch.encode("utf-8", "surrogatepass"))
        else:
            count += 2 if ord(ch) > 0xFFFF else 1
    return len(text)


def lsp_range(
    lines: Sequence[str], sl: int, sc: int, el: int, ec: int, encoding: str
) -> dict[str, Any]:
    return {
        "start": {"line": sl, "character": to_client_col(lines, sl, sc, encoding)},
        "end": {"line": el, "character": to_client_col(lines, el, ec, encoding)},
    }


def diagnostic_message(f: Finding) -> str:
    """The problem said once: the rule id is the diagnostic's code (and its
    page the code's link), so a tool's "CODE (name): " prefix is dropped."""
    title = _without_code(f.title.strip(), f.rule_id)
    msg = _without_code(f.message.strip(), f.rule_id)
    if not msg or msg == title:
        text = title or f.rule_id
    elif not title or msg.startswith(title):
        text = msg
    else:
        text = f"{title}: {msg}"
    # The severity model's notes: the editor shows the same finding the report does.
    if f.related_rules:
        text += f" [also {', '.join(f.related_rules)}]"
    if f.severity_reason:
        text += f" [{f.severity.value}: {f.severity_reason}]"
    return text


def _without_code(text: str, rule_id: str) -> str:
    if text.startswith(rule_id):
        rest = text[len(rule_id):]
        if rest.startswith(" ("):  # "CODE (name): text"
            close = rest.find("):")
            if close > 0:
                return rest[close + 2:].strip()
        elif rest.startswith(":"):
            return rest[1:].strip()
    return text


def to_diagnostic(
    f: Finding,
    *,
    session_id: str,
    version: int | None,
    rng: dict[str, Any],
    uri_for: Any,
    stale: bool = False,
    related_support: bool = True,
) -> dict[str, Any]:
    """One finding as an LSP Diagnostic dict. ``uri_for(rel_path)`` maps evidence files."""
    message = diagnostic_message(f)
    if stale:
        message = f"[stale: files changed during the run] {message}"
    if f.noise:
        message = f"{message} [noise: {f.noise}]"
    diag: dict[str, Any] = {
        "range": rng,
        "severity": diagnostic_severity(f),
        "code": f.rule_id,
        "source": SOURCE,
        "message": message,
        "data": {"findingId": f.id, "sessionId": session_id, "version": version},
    }
    if f.help_uri:
        diag["codeDescription"] = {"href": f.help_uri}
    if tags := diagnostic_tags(f):
        diag["tags"] = tags
    if related_support and f.evidence:
        related = []
        for ev in f.evidence:
            target = ev.file or f.file
            uri = uri_for(target) if target else None
            if uri is None:
                continue
            line = max((ev.line or (f.range.start_line if f.range else 1)) - 1, 0)
            text = ev.message if not ev.snippet else f"{ev.message}: {ev.snippet.strip()}"
            related.append(
                {
                    "location": {
                        "uri": uri,
                        "range": {
                            "start": {"line": line, "character": 0},
                            "end": {"line": line + 1, "character": 0},
                        },
                    },
                    "message": text,
                }
            )
        if related:
            diag["relatedInformation"] = related
    return diag
