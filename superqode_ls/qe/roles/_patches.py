"""Turning a tool's text edits into patches that ``git apply`` accepts.

Roles never edit the shared sandbox: they compute the fixed text in memory and
keep the difference as a unified diff (``a/<rel>`` -> ``b/<rel>``) against the
file as it is in the sandbox, which mirrors the project at session start.
"""

from __future__ import annotations

import bisect
import difflib
import hashlib
import itertools
import re
import threading
from collections import OrderedDict
from collections.abc import Callable, Iterable
from typing import Any, NamedTuple, TypeVar

from pydantic import BaseModel

from ...models import Finding, Patch

NO_NEWLINE = "\\ No newline at end of file\n"


class TextEdit(NamedTuple):
    """Replace [start, end) with ``content``; lines and columns 1-based, columns
    in code points (the convention of ruff's JSON and of our models). A tuple:
    a large tree's role makes tens of thousands."""

    start_line: int
    start_col: int
    end_line: int
    end_col: int
    content: str


def _line_starts(text: str) -> list[int]:
    return _starts(text.split("\n"))


def _starts(pieces: list[str]) -> list[int]:
    """Offsets of the lines split at "\n" (``pieces``). map/accumulate over
    builtins: no Python frame per line (a file of thousands of lines per
    fixed file on a large tree)."""
    return [0, *itertools.accumulate(map((1).__add__, map(len, pieces)))][:-1]


def _offset(starts: list[int], text: str, line: int, col: int) -> int:
    if line > len(starts):  # one past the last line: end of file
        return len(text)
    return min(starts[line - 1] + col - 1, len(text))


def _spans(starts: list[int], text: str, edits: list[TextEdit]) -> list[tuple[int, int, str]]:
    """The edits as sorted (start, end, content) offsets; ValueError when two
    overlap (the caller then offers no patch rather than a wrong one)."""
    spans = sorted(
        (
            _offset(starts, text, e.start_line, e.start_col),
            _offset(starts, text, e.end_line, e.end_col),
            e.content,
        )
        for e in edits
    )
    pos = 0
    for start, end, _ in spans:
        if start < pos or end < start:
            raise ValueError("overlapping edits")
        pos = end
    return spans


def _splice(text: str, spans: list[tuple[int, int, str]], lo: int = 0, hi: int | None = None) -> str:
    """``text[lo:hi]`` with the ``spans`` (all inside it) applied."""
    out: list[str] = []
    pos = lo
    for start, end, content in spans:
        out.append(text[pos:start])
        out.append(content)
        pos = end
    out.append(text[pos:hi])
    return "".join(out)


class FileText:
    """One file's text, split into lines once for the diffs of every fix a
    tool offers in it: a large tree has thousands of fixes in files of
    thousands of lines, and splitting (or rebuilding) the text per fix was
    most of the lint role's own time."""

    __slots__ = ("head", "line0", "pieces", "rel", "starts", "text")  # one per fixed file

    def __init__(self, rel: str, text: str, pieces: list[str] | None = None, line0: int = 0):
        self.rel = rel
        self.text = text
        # Lines of the file before ``text`` (a part of it): the diffs' hunks
        # name the file's lines.
        self.line0 = line0
        # Split at "\n" only, the ends put back per window (``lines``):
        # most of a file's lines are never in one. ``pieces``: that split,
        # where the caller already has it (the role's snippets).
        self.pieces = text.split("\n") if pieces is None else pieces
        self.starts = _starts(self.pieces)
        self.head = _header(rel)  # the same for all of its fixes

    def lines(self, i: int, j: int) -> list[str]:
        """``split_lines(text)[i:j]``."""
        pieces = self.pieces
        end = len(pieces) - 1  # the piece after the last "\n"
        out = [p + "\n" for p in pieces[i:min(j, end)]]
        if j > end >= i and pieces[end]:
            out.append(pieces[end])
        return out

    def diff(self, edits: list[TextEdit], context: int = 3) -> str:
        """The diff ``edits`` make to the file ("" for none); ValueError when
        they overlap. Only the lines the edits touch are rebuilt; the diff is
        the one ``unified_diff`` gives for a change of one block, a valid one
        otherwise."""
        text, starts = self.text, self.starts
        if len(edits) == 1:  # most fixes: no sort, nothing to overlap
            e = edits[0]
            start = _offset(starts, text, e.start_line, e.start_col)
            end = _offset(starts, text, e.end_line, e.end_col)
            if end < start:
                raise ValueError("overlapping edits")
            spans = [(start, end, e.content)]
        else:
            spans = _spans(starts, text, edits)
            if not spans:
                return ""
        # The lines the edits touch: from the first one's start to the end
        # of the line holding the last one's end (spans do not overlap, so
        # the last span ends last).
        first = bisect.bisect_right(starts, spans[0][0]) - 1
        last = bisect.bisect_right(starts, spans[-1][1]) - 1
        r_s = starts[first]
        r_e = starts[last + 1] if last + 1 < len(starts) else len(text)
        new = _splice(text, spans, r_s, r_e)
        if new == text[r_s:r_e]:
            return ""
        # The window with ``context`` lines around: its old lines are the
        # file's; the new ones the same with the touched lines replaced
        # (those end in a newline unless they end the file, so the lists
        # join as the window's text would split).
        w0 = max(0, first - context)
        w1 = last + 1 + context
        if first == last and last + 1 < len(starts) and new and new.find("\n") == len(new) - 1:
            # One whole line (ending in a newline, as all around it do) made
            # another: most fixes. The hunk ``_diff_lines`` writes for it,
            # its context cut from the text as it stands (every line in it
            # ends in a newline: no list of lines needed).
            w_e = starts[w1] if w1 < len(starts) else len(text)
            after = text[r_e:w_e]
            if not after or after[-1] == "\n":
                w_s = starts[w0]
                before = text[w_s:r_s]
                span = _range(w0 + self.line0, first - w0 + 1 + after.count("\n"))
                old = text[r_s:r_e]
                return "".join([
                    self.head, "@@ -", span, " +", span, " @@\n",
                    _context(before), "-", old, "+", new, _context(after)])
        before, after_lines = self.lines(w0, first), self.lines(last + 1, w1)
        return _diff_lines(self.rel, [*before, *self.lines(first, last + 1), *after_lines],
                           [*before, *split_lines(new), *after_lines], context, w0 + self.line0)


    def changes(self, edits: list[TextEdit]) -> list[tuple[str, str]] | None:
        """What ``edits`` change, for the fix's id: each one's original text
        and new text, in the file's order; None when they change nothing
        (``diff`` gives "" then) and ValueError when they overlap, as
        ``diff`` decides, without making the diff."""
        text = self.text
        if len(edits) == 1:  # as ``diff`` reads one edit
            e = edits[0]
            start = _offset(self.starts, text, e.start_line, e.start_col)
            end = _offset(self.starts, text, e.end_line, e.end_col)
            if end < start:
                raise ValueError("overlapping edits")
            spans = [(start, end, e.content)]
        else:
            spans = _spans(self.starts, text, edits)
            if not spans:
                return None
        lo, hi = spans[0][0], spans[-1][1]
        if len(spans) == 1:
            if text[lo:hi] == spans[0][2]:
                return None
        elif _splice(text, spans, lo, hi) == text[lo:hi]:
            return None
        return [(text[start:end], content) for start, end, content in spans]


def _context(seg: str) -> str:
    """Lines (each ending in a newline) as a hunk's context lines."""
    return " " + seg[:-1].replace("\n", "\n ") + "\n" if seg else ""


# The line breaks str.splitlines knows besides "\n" ("\r" among them, kept
# inside lines by the diffs): ``_basis`` reads such a diff line by line.
_ODD = re.compile("[\r\x0b\x0c\x1c\x1d\x1e\x85\u2028\u2029]")


def edits_diff(rel: str, old: str, edits: list[TextEdit], context: int = 3) -> str:
    """The diff ``edits`` make to ``old`` ("" for none); ValueError when they
    overlap. For many fixes to one file, ``FileText`` splits it once."""
    return FileText(rel, old).diff(edits, context)


def split_lines(text: str) -> list[str]:
    """Lines with their ends, split at "\\n" only (as diff and git do)."""
    # Keep "\r" inside the line so CRLF files produce diffs that apply byte
    # for byte.
    lines = text.split("\n")
    tail = lines.pop()
    out = [line + "\n" for line in lines]
    if tail:
        out.append(tail)
    return out


def unified_diff(rel: str, old: str, new: str, context: int = 3) -> str:
    """A git-style unified diff of one file, or "" when nothing changed."""
    if old == new:
        return ""
    return _diff_lines(rel, split_lines(old), split_lines(new), context, 0)


def _diff_lines(rel: str, a: list[str], b: list[str], context: int, offset: int) -> str:
    """The diff of lines ``a`` -> ``b`` which start at line ``offset`` (0-based)
    of the file and hold ``context`` unchanged lines around every change
    (or reach the file's edge)."""
    body: list[str] = []
    # A fix touches a line or two of a file that may have thousands, and a
    # role makes thousands of fixes on a large tree: a change that is one
    # small block gets its hunk written directly (difflib over the whole
    # file, per fix, took seconds); anything else goes through difflib.
    head = 0
    while head < len(a) and head < len(b) and a[head] == b[head]:
        head += 1
    tail = 0
    while tail < len(a) - head and tail < len(b) - head and a[-1 - tail] == b[-1 - tail]:
        tail += 1
    if len(a) - tail - head <= _SMALL and len(b) - tail - head <= _SMALL:
        lines = _one_hunk(rel, a, b, head, tail, context, offset)
        if (not a or a[-1].endswith("\n")) and (not b or b[-1].endswith("\n")):
            # every line ends in a newline: nothing to mark line by line
            return _header(rel) + "".join(lines[2:])
    else:
        lines = difflib.unified_diff(a, b, fromfile=f"a/{rel}", tofile=f"b/{rel}", n=context)
        if offset:
            lines = (_HUNK.sub(lambda m: _shifted(m, offset), ln) if ln.startswith("@@") else ln
                     for ln in lines)
    for i, line in enumerate(lines):
        if i < 2:  # the ---/+++ header lines
            body.append(line.rstrip("\n") + "\n")
        elif line.endswith("\n"):
            body.append(line)
        else:  # last line of a file without a final newline
            body.append(line + "\n" + NO_NEWLINE)
    return f"diff --git a/{rel} b/{rel}\n" + "".join(body)


def _header(rel: str) -> str:
    # as the line loop below writes ---/+++ (a newline at the end of a name
    # is not kept)
    return f"diff --git a/{rel} b/{rel}\n" + f"--- a/{rel}".rstrip("\n") + "\n" + \
        f"+++ b/{rel}".rstrip("\n") + "\n"


_SMALL = 12  # changed lines on either side for the direct one-hunk path
_HUNK = re.compile(r"^@@ -(\d+)((?:,\d+)?) \+(\d+)((?:,\d+)?) @@")


def _shifted(m: re.Match[str], offset: int) -> str:
    # A window's hunk header in the whole file's line numbers.
    return f"@@ -{int(m.group(1)) + offset}{m.group(2)} +{int(m.group(3)) + offset}{m.group(4)} @@"


def _range(start: int, length: int) -> str:
    # difflib's (and git's) convention: an empty range names the line before it.
    if length == 1:
        return str(start + 1)
    return f"{start + 1 if length else start},{length}"


def _one_hunk(
    rel: str, a: list[str], b: list[str], head: int, tail: int, n: int, offset: int = 0
) -> list[str]:
    """One hunk replacing a[head:-tail] with b[head:-tail], with full
    context on both sides (git anchors a hunk with less context at the end
    of the file, so context is cut only at the file's edges)."""
    start = max(0, head - n)
    before = a[start:head]
    after = a[len(a) - tail:len(a) - tail + n]
    old_mid, new_mid = a[head:len(a) - tail], b[head:len(b) - tail]
    old_len = len(before) + len(old_mid) + len(after)
    new_len = len(before) + len(new_mid) + len(after)
    return [
        f"--- a/{rel}\n", f"+++ b/{rel}\n",
        f"@@ -{_range(start + offset, old_len)} +{_range(start + offset, new_len)} @@\n",
        *(" " + ln for ln in before), *("-" + ln for ln in old_mid),
        *("+" + ln for ln in new_mid), *(" " + ln for ln in after),
    ]


def fix_id(finding_id: str, changes: Iterable[tuple[str, str]]) -> str:
    """A fix's id from its finding's and what its edits change: each edit's
    original text (of the range it replaces) and new text, in the file's
    order. Not where (positions) nor what is around it (context): a
    neighbouring fix that shifts or edits nearby lines must not turn this
    fix into another one; and no diff is needed to name a fix."""
    basis = "\x1f".join([f"{old}\x1e{new}" for old, new in changes])
    return f"fix-{finding_id}-{hashlib.sha256(basis.encode('utf-8', 'surrogateescape')).hexdigest()[:6]}"


class LazyDiff:
    """A patch's diff, made when something reads it (``models._Diff``):
    ``source.diff(edits)`` over the file's text as the role read it. Made
    diffs are memoised, most recent first, up to ``MEMO_CHARS`` characters
    in all (a session reads each fix's diff a few times: registering,
    sealing, reporting)."""

    __slots__ = ("edits", "source")

    def __init__(self, source: Any, edits: list[TextEdit]):
        self.source = source
        self.edits = edits

    def text(self) -> str:
        key = id(self)
        with _MEMO_LOCK:
            held = _MEMO.get(key)
            if held is not None and held[0] is self:
                _MEMO.move_to_end(key)
                return held[1]
        made = self.source.diff(self.edits)
        _remember(key, self, made)
        return made

    def __str__(self) -> str:
        return self.text()

    def __repr__(self) -> str:
        # Not made for a repr: asyncio's run reprs a task's result on its
        # way out (a role's output, thousands of patches).
        with _MEMO_LOCK:
            held = _MEMO.get(id(self))
        if held is not None and held[0] is self:
            return repr(held[1])
        return f"<diff of {len(self.edits)} edit(s) to {getattr(self.source, 'rel', '?')}, made when read>"

    def __eq__(self, other: object) -> bool:
        if isinstance(other, LazyDiff | str):
            return self.text() == str(other)
        return NotImplemented

    __hash__ = None  # type: ignore[assignment]  # equal by text, which is made on demand


MEMO_CHARS = 32 << 20
_MEMO: OrderedDict[int, tuple[LazyDiff, str]] = OrderedDict()  # id -> (the maker, its diff)
_MEMO_LOCK = threading.Lock()
_memo_size = 0


def _remember(key: int, lazy: LazyDiff, made: str) -> None:
    global _memo_size
    with _MEMO_LOCK:
        old = _MEMO.pop(key, None)
        if old is not None:
            _memo_size -= len(old[1])
        # The maker is held with its diff, so its id is not reused while
        # the entry stands.
        _MEMO[key] = (lazy, made)
        _memo_size += len(made)
        while _memo_size > MEMO_CHARS and len(_MEMO) > 1:
            _, (_, gone) = _MEMO.popitem(last=False)
            _memo_size -= len(gone)


def patch_id(finding_id: str, diff: str, basis: str | None = None) -> str:
    """The id of a fix known by its diff only (a whole new text: the
    security role's): its finding's and what the diff changes -- the lines it
    removes and adds, per file -- not where (hunk headers) nor what is around
    it (context): a neighbouring fix that shifts or edits nearby lines must not
    turn this fix into another one. ``basis``: those lines as ``_basis`` reads
    them, where the caller has them. Fixes made of edits are named by
    ``fix_id``."""
    if basis is None:
        basis = _basis(diff)
    return f"fix-{finding_id}-{hashlib.sha256(basis.encode('utf-8', 'surrogateescape')).hexdigest()[:6]}"


def _basis(diff: str) -> str:
    if _ODD.search(diff) is None:
        # Lines split at "\n" alone are splitlines' here: one search in C
        # rather than a test per line (import blocks: diffs of dozens).
        return "\x1f".join(_CHANGED.findall(diff))
    return "\x1f".join(
        ln for ln in diff.splitlines()
        if ln.startswith(("+", "-", "diff --git ")) and not ln.startswith(("+++ ", "--- "))
    )


# The lines ``_basis`` keeps: the header's first, the removed and added ones
# (not the "---"/"+++" header lines).
_CHANGED = re.compile(r"^(?:diff --git |\+(?!\+\+ )|-(?!-- )).*", re.MULTILINE)


def make_patch(finding: Finding, rel: str, old: str, new: str, description: str) -> Patch | None:
    """A patch fixing ``finding`` (whose id must be set), or None if no change."""
    return patch_of_diff(finding, rel, unified_diff(rel, old, new), description)


def patch_of_diff(
    finding: Finding, rel: str, diff: str, description: str, basis: str | None = None
) -> Patch | None:
    if not diff:
        return None
    return trusted(Patch, {
        "id": patch_id(finding.id, diff, basis),
        "description": description,
        "diff": diff,
        "files": [rel],
        "finding_ids": [finding.id],
        "role": finding.role,
        "tool": finding.tool,
    })


_M = TypeVar("_M", bound=BaseModel)
_MAKERS: dict[type[BaseModel], Callable[[dict[str, Any]], Any]] = {}


def trusted(cls: type[_M], values: dict[str, Any]) -> _M:
    """The model ``cls`` holding ``values``, made here from data of the
    declared types (strings, ints, enum members, models), as validating
    them would give it (the same fields, defaults and fields set) without
    validation: a large tree's lint role makes 17,600 findings and 15,000
    patches, and validating them was a tenth of its own time. Only for
    values the caller checked or made (a tool's JSON is read into these
    types first); a model with a required field missing, or with private
    attributes, is validated as usual."""
    make = _MAKERS.get(cls)
    if make is None:
        make = _MAKERS[cls] = maker(cls)
    return make(values)


def maker(cls: type[_M]) -> Callable[[dict[str, Any]], _M]:
    """``trusted`` for one model, its template prepared once (a role that
    makes tens of thousands keeps this and calls it)."""
    defaults: dict[str, Any] = {}
    factories: dict[str, Any] = {}
    for name, field in cls.model_fields.items():
        defaults[name] = None if field.default_factory else field.default
        if field.default_factory:
            factories[name] = field.default_factory
    required = frozenset(n for n, f in cls.model_fields.items() if f.is_required())
    checked = bool(cls.__private_attributes__)
    new, setattr_ = cls.__new__, object.__setattr__

    def make(values: dict[str, Any]) -> _M:
        if checked or not required <= values.keys():
            return cls(**values)
        fields = {**defaults, **values}  # in the order of the model's fields, as validation leaves them
        for name, factory in factories.items():
            if name not in values:
                fields[name] = factory()
        obj = new(cls)
        # What pydantic's own model_construct sets (it took 0.5 ms a call here).
        setattr_(obj, "__dict__", fields)
        setattr_(obj, "__pydantic_fields_set__", set(values))
        setattr_(obj, "__pydantic_extra__", None)
        setattr_(obj, "__pydantic_private__", None)
        return obj

    return make


def attach(findings: list[Finding], patches: list[Patch]) -> list[Finding]:
    """Findings with ``fix_patch_id`` pointing at their patch."""
    by_finding = {fid: p.id for p in patches for fid in p.finding_ids}
    return [
        f.model_copy(update={"fix_patch_id": by_finding[f.id]}) if f.id in by_finding else f
        for f in findings
    ]
