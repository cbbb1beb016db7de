"""The lint role's fixes, one file at a time: each fix ruff offers as the
diff and id ``_patches.FileText`` gives it, made from the file's lines.

A large tree offers some 15,000 fixes, most of them one edit that turns one
line into another. Those are written here from the line's own text and the
few lines around it, with no offsets into the whole file: the file is split
into lines once for the role's snippets, and that split is all they read.
Anything else (several edits, an edit across lines, a column past its
line's end, a file without a final newline near the fix) goes to
``FileText``, built once per file and only when one of its fixes needs it.
"""

from __future__ import annotations

from hashlib import sha256
from typing import Any

from ._patches import _ODD, FileText, TextEdit, _header, patch_id

CONTEXT = 3  # lines around a change, as ``FileText.fix`` writes them


class FileFixes:
    """The fixes of one file (``text`` as read, ``pieces`` its split at
    "\\n"), each as ``(diff, patch id)``."""

    __slots__ = ("full", "head", "id_head", "pieces", "plain", "rel", "text")

    def __init__(self, rel: str, text: str, pieces: list[str]):
        self.rel = rel
        self.text = text
        self.pieces = pieces
        self.head = _header(rel)
        # A name holding a break str.splitlines knows changes what
        # ``patch_id`` reads of the diff: those are read from the diff.
        self.plain = _ODD.search(rel) is None and "\n" not in rel
        self.id_head = f"diff --git a/{rel} b/{rel}\x1f-"
        self.full: FileText | None = None  # for the fixes the line path does not take

    def fix(self, finding_id: str, edits: list[dict[str, Any]]) -> tuple[str, str] | None:
        """The diff and patch id of ``edits`` (ruff's JSON), or None when
        they change nothing. ValueError (KeyError, TypeError) when they
        overlap or are malformed: no patch is offered then."""
        if len(edits) == 1:
            e = edits[0]
            start, end = e["location"], e["end_location"]
            line, col = int(start["row"]), int(start["column"])
            if line == int(end["row"]):
                made = self._one_line(finding_id, line, col, int(end["column"]),
                                      e.get("content") or "")
                if made is not False:
                    return made
        return self._whole(finding_id, edits)

    def _one_line(self, finding_id: str, line: int, col: int, end_col: int, content: str
                  ) -> tuple[str, str] | None | bool:
        """One edit inside one line that ends in a newline; False where
        ``FileText`` must decide (the edit leaves its line, the new text is
        not one line, the lines after the fix end the file without a
        newline)."""
        pieces = self.pieces
        n = len(pieces)
        if not 1 <= line < n:  # the last piece has no newline after it
            return False
        old_line = pieces[line - 1]
        if not 1 <= col <= end_col <= len(old_line) + 1:
            return False
        new_line = old_line[:col - 1] + content + old_line[end_col - 1:]
        if new_line == old_line:
            return None
        if "\n" in new_line:
            return False
        i = line - 1  # the fixed line's index
        w0 = max(0, i - CONTEXT)
        w1 = i + 1 + CONTEXT
        if w1 >= n:
            # The window reaches the file's end: its last lines must end in
            # a newline (the piece after the last one is empty), or the
            # hunk marks the missing one and FileText writes it.
            if pieces[-1]:
                return False
            w1 = n - 1
        before, after = pieces[w0:i], pieces[i + 1:w1]
        span = _range(w0, len(before) + 1 + len(after))
        diff = "".join([
            self.head, "@@ -", span, " +", span, " @@\n",
            *((" ", "\n ".join(before), "\n") if before else ()),
            "-", old_line, "\n+", new_line, "\n",
            *((" ", "\n ".join(after), "\n") if after else ()),
        ])
        if (not self.plain or old_line.startswith("-- ") or new_line.startswith("++ ")
                or _ODD.search(diff)):
            # str.splitlines (``patch_id``'s) breaks these lines elsewhere,
            # or a changed line reads as a ---/+++ header: read the diff.
            return diff, patch_id(finding_id, diff)
        basis = f"{self.id_head}{old_line}\x1f+{new_line}"
        digest = sha256(basis.encode("utf-8", "surrogateescape")).hexdigest()
        return diff, f"fix-{finding_id}-{digest[:6]}"

    def _whole(self, finding_id: str, edits: list[dict[str, Any]]) -> tuple[str, str] | None:
        made = [_edit(e) for e in edits]
        lo, hi = self._window(made)
        if lo is None:
            full = self.full
            if full is None:
                full = self.full = FileText(self.rel, self.text, self.pieces)
            diff, basis = full.fix(made)
        else:
            # ``FileText.fix`` of the whole file reads only the lines from
            # CONTEXT before the first edit to CONTEXT after the last: those
            # lines alone give the same diff (no offsets into the whole file
            # made, a third of these fixes' time).
            pieces = self.pieces
            part = pieces[lo:hi]
            if hi < len(pieces):
                part.append("")  # the lines after: the part's lines all end in a newline
            diff, basis = FileText(self.rel, "\n".join(part), part, lo).fix(
                [e._replace(start_line=e.start_line - lo, end_line=e.end_line - lo) for e in made])
        if not diff:
            return None
        return diff, patch_id(finding_id, diff, basis)

    def _window(self, edits: list[TextEdit]) -> tuple[int, int] | tuple[None, None]:
        """The lines (``pieces[lo:hi]``) that ``FileText.fix`` reads for
        ``edits``; (None, None) where an edit's place is outside its line
        (a column past the line's end, a line past the file's): the whole
        file decides then."""
        pieces = self.pieces
        n = len(pieces)
        first = last = None
        for e in edits:
            for line, col in ((e.start_line, e.start_col), (e.end_line, e.end_col)):
                if not 1 <= line <= n or not 1 <= col <= len(pieces[line - 1]) + 1:
                    return None, None
                if first is None or line < first:
                    first = line
                if last is None or line > last:
                    last = line
        if first is None or last is None:
            return None, None
        return max(0, first - 1 - CONTEXT), min(n, last + CONTEXT)


def _range(start: int, length: int) -> str:
    # ``_patches._range`` for a hunk of at least one line
    return str(start + 1) if length == 1 else f"{start + 1},{length}"


def _edit(e: dict[str, Any]) -> TextEdit:
    return TextEdit(
        start_line=int(e["location"]["row"]),
        start_col=int(e["location"]["column"]),
        end_line=int(e["end_location"]["row"]),
        end_col=int(e["end_location"]["column"]),
        content=e.get("content") or "",
    )
