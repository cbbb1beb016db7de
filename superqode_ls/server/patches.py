"""Patch (unified diff) -> text edits against what the user has *now*.

A patch was made against the project as it was when the session started. Each
hunk is re-anchored on the current text: its old lines (context + removals)
must appear verbatim, at the recorded position or nearby; if they do not, the
patch is refused rather than applied to code it was not made for.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from ..errors import EXIT_FAILED, SuperQodeError
from ..engine.suggestions import relocate

SEARCH_WINDOW = 400


class PatchError(SuperQodeError):
    """The patch cannot be applied to the current text (one-line reason)."""

    exit_code = EXIT_FAILED


def split_lines(text: str) -> list[str]:
    """Lines as LSP and git count them (``\\n`` separated, ``\\r`` dropped);
    unlike ``str.splitlines`` a form feed or U+2028 does not end a line."""
    parts = text.split("\n")
    if parts and parts[-1] == "":
        parts.pop()
    return [p.removesuffix("\r") for p in parts]


@dataclass
class LineEdit:
    start: int  # first replaced line (0-based)
    end: int  # line after the last replaced one
    new_text: str


@dataclass
class FileEdits:
    path: str  # project-relative
    edits: list[LineEdit]
    create: bool = False
    lines: list[str] | None = None  # current lines (None when the file is created)
    ends_with_newline: bool = True
    eol: str = "\n"


def _strip_prefix(name: str) -> str:
    for prefix in ("a/", "b/"):
        if name.startswith(prefix):
            return name[len(prefix):]
    return name


def parse(diff: str):
    from unidiff import PatchSet  # only when a fix is asked for
    from unidiff.errors import UnidiffParseError

    try:
        return PatchSet(diff)
    except (UnidiffParseError, ValueError) as e:
        raise PatchError(f"malformed patch: {e}") from None


def _hunk_sides(hunk) -> tuple[list[str], list[str], bool]:
    old: list[str] = []
    new: list[str] = []
    new_no_eol = False
    prev = None
    for line in hunk:
        kind = line.line_type
        value = line.value.rstrip("\n").rstrip("\r")
        if kind == "\\":
            if prev in (" ", "+"):
                new_no_eol = True
            continue
        if kind in (" ", "-"):
            old.append(value)
        if kind in (" ", "+"):
            new.append(value)
        prev = kind
    return old, new, new_no_eol


def _find(lines: list[str], block: list[str], expected: int) -> int | None:
    """Nearest index where ``block`` occurs verbatim, searching out from ``expected``."""
    n, k = len(lines), len(block)
    if k == 0:
        return expected if 0 <= expected <= n else None

    def at(i: int) -> bool:
        return 0 <= i and i + k <= n and lines[i : i + k] == block

    if at(expected):
        return expected
    for dist in range(1, SEARCH_WINDOW + 1):
        if at(expected - dist):
            return expected - dist
        if at(expected + dist):
            return expected + dist
        if expected - dist < 0 and expected + dist + k > n:
            break
    return None


def _fuzzy(
    lines: list[str], hunk, old: list[str], new: list[str], expected: int
) -> tuple[int | None, list[str], list[str]]:
    """(where, old, new) with the hunk's outer context trimmed on either side
    (most context first, at least one line kept), or (None, old, new)."""
    kinds = [ln.line_type for ln in hunk if ln.line_type in (" ", "-", "+")]
    lead = next((i for i, k in enumerate(kinds) if k != " "), len(kinds))
    trail = next((i for i, k in enumerate(reversed(kinds)) if k != " "), 0)
    trims = sorted(((le, ri) for le in range(lead + 1) for ri in range(trail + 1)),
                   key=lambda lr: (-(lr[0] + lr[1]), -min(lr)))
    for left, right in trims[1:]:
        if left + right == 0:
            break
        o = old[lead - left:len(old) - (trail - right)]
        n = new[lead - left:len(new) - (trail - right)]
        at = _find(lines, o, expected + lead - left)
        if at is not None:
            return at, o, n
    return None, old, new


def _moved(lines: list[str], hunk, old: list[str], new: list[str], expected: int
           ) -> tuple[int, int, list[str], int] | None:
    """(start, end, new lines, where its context starts) of a hunk whose removed lines a neighbouring
    fix changed elsewhere (``qe.rebase.relocate``); None when it cannot be."""
    kinds = [ln.line_type for ln in hunk if ln.line_type in (" ", "-", "+")]
    lead = next((i for i, k in enumerate(kinds) if k != " "), len(kinds))
    trail = next((i for i, k in enumerate(reversed(kinds)) if k != " "), 0)
    if lead + trail >= len(kinds):
        return None
    core = kinds[lead:len(kinds) - trail]
    n_old = sum(1 for k in core if k != "+")
    n_new = sum(1 for k in core if k != "-")
    got = relocate(lines, old[:lead], old[lead:lead + n_old], new[lead:lead + n_new],
                   old[lead + n_old:], expected, "\n".join, _split)
    return None if got is None else (*got, got[0] - lead)


def _split(text: str) -> list[str]:
    return text.split("\n")


def file_edits(diff: str, read_text: Callable[[str], str | None]) -> list[FileEdits]:
    """Edits for every file of ``diff`` against the texts ``read_text(path)`` gives
    (None: the file does not exist). Raises PatchError when a hunk does not fit."""
    out: list[FileEdits] = []
    for pf in parse(diff):
        if pf.is_removed_file or (pf.source_file and pf.target_file and
                                  _strip_prefix(pf.source_file) != _strip_prefix(pf.target_file)
                                  and not pf.is_added_file):
            raise PatchError(f"{pf.path}: deleting or renaming files is not offered as a fix")
        path = _strip_prefix(pf.target_file if pf.is_added_file else pf.source_file)
        text = read_text(path)
        if pf.is_added_file:
            if text is not None:
                raise PatchError(f"{path}: file to create already exists")
            new_lines: list[str] = []
            no_eol = False
            for hunk in pf:
                _, new, no_eol = _hunk_sides(hunk)
                new_lines.extend(new)
            body = "\n".join(new_lines) + ("" if no_eol or not new_lines else "\n")
            out.append(FileEdits(path, [LineEdit(0, 0, body)], create=True))
            continue
        if text is None:
            raise PatchError(f"{path}: file not found or not UTF-8")
        lines = split_lines(text)
        eol = "\r\n" if "\r\n" in text[: text.find("\n") + 1 or len(text)] else "\n"
        ends_nl = text.endswith("\n") or text == ""
        edits: list[LineEdit] = []
        drift = 0
        floor = 0
        for hunk in pf:
            old, new, new_no_eol = _hunk_sides(hunk)
            expected = max(hunk.source_start - 1, 0) + drift
            if not old:
                expected = hunk.source_start + drift  # pure insertion after that line
            at = _find(lines, old, expected)
            if at is None and old:
                # A fix applied before this one may have changed a context
                # line (its neighbour): trimmed context, as patch's fuzz.
                at, old, new = _fuzzy(lines, hunk, old, new, expected)
            if at is None and old:
                # ... or changed other characters of its removed lines (two
                # findings on one line): the fix's change made on them as
                # they are (``qe.rebase``).
                moved = None if new_no_eol else _moved(lines, hunk, old, new, expected)
                if moved is not None and moved[0] >= floor:
                    at, end, made, top = moved
                    edits.append(LineEdit(at, end, "".join(ln + eol for ln in made)))
                    drift = top - max(hunk.source_start - 1, 0)
                    floor = end
                    continue
            if at is None or at < floor:
                raise PatchError(
                    f"{path}: the code near line {hunk.source_start} changed since the run"
                )
            drift = at - max(hunk.source_start - 1, 0) if old else drift
            end = at + len(old)
            new_text = eol.join(new)
            if new and not (end >= len(lines) and new_no_eol):
                new_text += eol
            edits.append(LineEdit(at, end, new_text))
            floor = end
        out.append(FileEdits(path, edits, lines=lines, ends_with_newline=ends_nl, eol=eol))
    return out


def text_edit_range(fe: FileEdits, e: LineEdit, units: Callable[[str], int]) -> dict:
    """LSP range of a line edit; whole lines, so only an edit that reaches the end
    of a file without a final newline needs the client's code units."""
    lines = fe.lines or []
    start = {"line": e.start, "character": 0}
    if e.end >= len(lines) and not fe.ends_with_newline and lines:
        last = len(lines) - 1
        end = {"line": last, "character": units(lines[last])}
        if e.start > last:
            start = dict(end)
    else:
        end = {"line": e.end, "character": 0}
    return {"start": start, "end": end}


def apply_to_text(text: str, fe: FileEdits) -> str:
    """The text after ``fe`` (used to verify edits and by tests)."""
    lines = split_lines(text)
    pos = 0
    eol = fe.eol
    chunks: list[str] = []
    for e in fe.edits:
        chunks.append("".join(line + eol for line in lines[pos:e.start]))
        chunks.append(e.new_text)
        pos = e.end
    tail = lines[pos:]
    chunks.append("".join(line + eol for line in tail))
    result = "".join(chunks)
    if not fe.ends_with_newline and tail and result.endswith(eol):
        result = result[: -len(eol)]
    return result
