"""The lint role's fixes, one file at a time: each fix ruff offers named by
its id (``_patches.fix_id``, from what its edits change) and its diff left
to be made when something reads it (``_patches.LazyDiff``), from the file's
text as the role read it.

A large tree offers some 15,000 fixes, most of them one edit inside one
line: their ids are read from that line alone (the file is split into lines
once for the role's snippets, and that split is all they need), and so are
their diffs when read. Anything else (several edits, an edit across lines,
a column past its line's end, a file without a final newline near the fix)
goes to ``FileText``, built once per file and only when one of its fixes
needs it.

Once a file's fixes are all named, its fixes keep only the lines their
diffs read (``FileFixes.release``): each fix's lines and the context around
them. A large tree's 633,000 lines, held until the patches are let go of,
took 60 MB of new pages; the windows are a tenth of that.
"""

from __future__ import annotations

from hashlib import sha256 as _sha256
from typing import Any

from ._patches import FileText, LazyDiff, TextEdit, _header, fix_id

CONTEXT = 3  # lines around a change, as ``FileText.diff`` writes them


class FileFixes:
    """The fixes of one file (``text`` as read, ``pieces`` its split at
    "\\n"), each as ``(diff, patch id)``, the diff made when read.

    Only the split is held: the text is joined again from it for the few
    diffs that need the whole file (``FileText``). Held, the 20 MB of a
    large tree's text took new pages for every file read after it."""

    __slots__ = ("full", "head", "keep", "pieces", "rel", "sparse")

    def __init__(self, rel: str, text: str, pieces: list[str]):
        self.rel = rel
        self.pieces = pieces
        self.head = _header(rel)
        self.full: FileText | None = None  # for the fixes the line path does not take
        # The lines (0-based, end excluded) each fix's diff reads: its own
        # and ``CONTEXT`` around them (``release``).
        self.keep: list[tuple[int, int]] = []
        self.sparse = False  # only ``keep``'s lines are left in ``pieces``

    def fix(self, finding_id: str, edits: list[dict[str, Any]]) -> tuple[LazyDiff, str] | None:
        """The diff (to be made when read) and patch id of ``edits`` (ruff's
        JSON), or None when they change nothing. ValueError (KeyError,
        TypeError) when they overlap or are malformed: no patch is offered
        then."""
        if len(edits) == 1:
            # Most fixes (12,000 of 15,000 on a large tree): one edit in one
            # line, its id hashed here as ``fix_id`` hashes one change.
            e = _edit(edits[0])
            made = [e]
            line = e[0]
            if line == e[2] and 1 <= line <= len(self.pieces):
                old_line = self.pieces[line - 1]
                if 1 <= e[1] <= e[3] <= len(old_line) + 1:
                    old = old_line[e[1] - 1:e[3] - 1]
                    new = e[4]
                    if old == new:
                        return None
                    basis = f"{old}\x1e{new}".encode("utf-8", "surrogateescape")
                    self.keep.append((line - 1 - CONTEXT, line + CONTEXT))
                    return LazyDiff(self, made), f"fix-{finding_id}-{_sha256(basis).hexdigest()[:6]}"
        else:
            made = [_edit(e) for e in edits]
        changes = self._changes(made) if self.full is None else self.full.changes(made)
        if changes is None:
            return None
        # In range (``_changes`` took the lines): from the first edit's
        # line to the last one's, as ``FileText.diff`` reads them.
        self.keep.append((min(e.start_line for e in made) - 1 - CONTEXT,
                          max(e.end_line for e in made) + CONTEXT))
        return LazyDiff(self, made), fix_id(finding_id, changes)

    def release(self) -> None:
        """Once all of the file's fixes are named: let go of the lines no
        diff of theirs reads (each fix's lines and the ``CONTEXT`` around
        them are kept, and the last piece, which says whether the file ends
        in a newline). Not where a fix needed the whole file (a place past
        its line or past the file: ``FileText`` of the whole text decides
        those)."""
        keep, self.keep = self.keep, []
        if self.full is not None or not keep or self.sparse:
            return
        pieces = self.pieces
        sparse: list[str] = [None] * len(pieces)  # type: ignore[list-item]
        for a, b in keep:
            a = max(a, 0)
            sparse[a:b] = pieces[a:b]
        sparse[-1] = pieces[-1]
        self.pieces = sparse
        self.sparse = True

    def _changes(self, edits: list[TextEdit]) -> list[tuple[str, str]] | None:
        """``FileText.changes`` read from the lines alone, without the
        file's table of line offsets (``FileText``'s, made only when a diff
        is read): I001's import blocks, in 600 files of a large tree. Where
        a place lies outside its line (or past the file), ``FileText``
        decides as it always did."""
        pieces = self.pieces
        n = len(pieces)
        for e in edits:
            if not (1 <= e.start_line <= e.end_line <= n
                    and 1 <= e.start_col <= len(pieces[e.start_line - 1]) + 1
                    and 1 <= e.end_col <= len(pieces[e.end_line - 1]) + 1):
                return self._full().changes(edits)
        spans = sorted(edits) if len(edits) > 1 else edits
        pos = (0, 0)
        out: list[tuple[str, str]] = []
        gaps: list[str] = []
        for e in spans:
            start, end = (e.start_line, e.start_col), (e.end_line, e.end_col)
            if start < pos or end < start:
                raise ValueError("overlapping edits")
            if out:
                gaps.append(self._between(pos, start))
            out.append((self._between(start, end), e.content))
            pos = end
        if len(out) == 1:
            if out[0][0] == out[0][1]:
                return None
        elif "".join(g + new for g, (_, new) in zip(["", *gaps], out)) == \
                "".join(g + old for g, (old, _) in zip(["", *gaps], out)):
            return None
        return out

    def _between(self, start: tuple[int, int], end: tuple[int, int]) -> str:
        """The text from (line, column) ``start`` to ``end``, both in range."""
        pieces = self.pieces
        (l0, c0), (l1, c1) = start, end
        if l0 == l1:
            return pieces[l0 - 1][c0 - 1:c1 - 1]
        return "\n".join([pieces[l0 - 1][c0 - 1:], *pieces[l0:l1 - 1], pieces[l1 - 1][:c1 - 1]])

    def diff(self, edits: list[TextEdit]) -> str:
        """The diff of ``edits`` (as ``FileText.diff`` of the whole file
        gives it)."""
        if len(edits) == 1:
            made = self._one_line(edits[0])
            if made is not None:
                return made
        if self.sparse:
            return self._window(edits)
        return self._full().diff(edits)

    def _window(self, edits: list[TextEdit]) -> str:
        """The diff ``FileText.diff`` of the whole file gives ``edits`` (all
        in range), from the lines it reads: ``CONTEXT`` lines before the
        first edit's line to ``CONTEXT`` after the last one's, ending as
        the file does where they reach its end, else after a newline; the
        edits' lines counted from the first of them, the hunks' from the
        file's (``line0``)."""
        pieces = self.pieces
        w0 = max(0, min(e.start_line for e in edits) - 1 - CONTEXT)
        w1 = max(e.end_line for e in edits) + CONTEXT
        part = pieces[w0:] if w1 >= len(pieces) else [*pieces[w0:w1], ""]
        moved = [e._replace(start_line=e.start_line - w0, end_line=e.end_line - w0) for e in edits]
        return FileText(self.rel, "\n".join(part), part, w0).diff(moved)

    def _full(self) -> FileText:
        full = self.full
        if full is None:
            full = self.full = FileText(self.rel, "\n".join(self.pieces), self.pieces)
        return full

    def _one_line(self, e: TextEdit) -> str | None:
        """The diff of one edit inside one line that ends in a newline, from
        the lines around it; None where ``FileText`` must write it (the edit
        leaves its line or changes nothing, the new text is not one line,
        the lines after the fix end the file without a newline)."""
        pieces = self.pieces
        n = len(pieces)
        line, col, end_col = e.start_line, e.start_col, e.end_col
        if line != e.end_line or not 1 <= line < n:  # the last piece has no newline after it
            return None
        old_line = pieces[line - 1]
        if not 1 <= col <= end_col <= len(old_line) + 1:
            return None
        new_line = old_line[:col - 1] + e.content + old_line[end_col - 1:]
        if new_line == old_line or "\n" in new_line:
            return None
        i = line - 1  # the fixed line's index
        w0 = max(0, i - CONTEXT)
        w1 = i + 1 + CONTEXT
        if w1 >= n:
            # The window reaches the file's end: its last lines must end in
            # a newline (the piece after the last one is empty), or the
            # hunk marks the missing one and FileText writes it.
            if pieces[-1]:
                return None
            w1 = n - 1
        before, after = pieces[w0:i], pieces[i + 1:w1]
        span = _range(w0, len(before) + 1 + len(after))
        return "".join([
            self.head, "@@ -", span, " +", span, " @@\n",
            *((" ", "\n ".join(before), "\n") if before else ()),
            "-", old_line, "\n+", new_line, "\n",
            *((" ", "\n ".join(after), "\n") if after else ()),
        ])


def _range(start: int, length: int) -> str:
    # ``_patches._range`` for a hunk of at least one line
    return str(start + 1) if length == 1 else f"{start + 1},{length}"


def _edit(e: dict[str, Any]) -> TextEdit:
    start, end = e["location"], e["end_location"]
    content = e.get("content") or ""
    if type(content) is not str:
        raise TypeError("an edit's content is not text")
    # tuple.__new__: the NamedTuple's own __new__ is a Python call per edit
    return _tuple_new(TextEdit, (int(start["row"]), int(start["column"]), int(end["row"]),
                                 int(end["column"]), content))


_tuple_new = tuple.__new__
