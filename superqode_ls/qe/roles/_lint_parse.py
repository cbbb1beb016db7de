"""ruff's diagnostics as the lint role's findings and patches, in one pass.

A large tree gives some 17,600 diagnostics and 15,000 fixes, so the work
per item is kept to what the result holds: each finding and range is made
as validating it would leave it (its fields in the model's order, the same
fields set) straight from a dict, each id is one hash, and a file is read
and split at "\\n" once, for its snippets and its fixes (``_lint_fixes``):
a fix's diff is made from that text when something reads it, so a file
with fixes is held as long as their patches are.
"""

from __future__ import annotations

import io
import os
import tokenize
from collections.abc import Callable
from hashlib import sha256
from pathlib import Path
from time import monotonic
from typing import Any, NamedTuple

from pydantic import BaseModel

from ...models import Finding, Patch, Range, Severity
from ._common import rel_to
from ._lint_fixes import FileFixes


class Kind(NamedTuple):
    """What a rule code decides of its findings, worked out once per code."""

    severity: Severity
    category: str
    prefix: str  # of the finding's id
    noise: str | None  # why it is noise (a style rule the project never chose)


class Parsed(NamedTuple):
    findings: list[Finding]
    patches: list[Patch]
    unlinted: list[str]  # files ruff could not read (declared another encoding)
    unpatched: bool = False  # patch-making stopped at ``patch_until``


# ruff's fix applicability (spelt "displayonly" by newer ruff) -> our tag.
APPLICABILITY = {"safe": "safe", "unsafe": "unsafe", "display-only": "display-only",
                 "displayonly": "display-only"}


def parse(root: Path, data: list[dict[str, Any]], role: str, kind_of: Callable[[str], Kind],
          with_patches: bool = True, named: Callable[[str], str] | None = None,
          patch_until: float | None = None, consume: bool = False) -> Parsed:
    """``data``: ruff's diagnostics (its JSON, read); ``kind_of``: a rule
    code's ``Kind``. Findings in ruff's order, numbered as ``assign_ids``
    numbers them; a file's patches made once all its findings are (a
    finding's id, which its patch's id hashes, is final only then).
    ``named``: the file name a file's ids are made with, where it is not
    its own (a copy checked beside its file: ``lint.copy_of``).
    ``patch_until`` (``time.monotonic()``): from then on no more patches
    are made (asked at each file; ``Parsed.unpatched`` says so), the
    findings all are. ``consume``: each diagnostic is let go of in ``data``
    once read (its list then holds None there), so that what is made next
    takes the memory it held: the findings of a large tree otherwise each
    took new pages from the system."""
    findings: list[Finding] = []
    patches: list[Patch] = []
    unlinted: list[str] = []
    rels = _Rels(root)
    names = [rels(d.get("filename", "")) for d in data]
    # ruff lists a file's diagnostics together; were it ever not to,
    # every file is held to the end, as ids need all of a file's.
    visits = [r for i, r in enumerate(names) if not i or r != names[i - 1]]
    apart = len(set(visits)) == len(visits)
    base = str(root)
    files: dict[str, FileFixes | None] = {}
    groups: dict[str, list[Finding]] = {}  # id -> the findings made with it
    # Findings on one line, ruff's neighbours (it lists them by place):
    # [(finding, its line, ruff's fix), ...] per line with more than one.
    runs: list[list[tuple[Finding, int, Any]]] = []
    run: list[tuple[Finding, int, Any]] | None = None
    last: tuple[Finding, int, Any] | None = None
    fixes: list[tuple[Finding, dict[str, Any], str]] = []
    kinds: dict[str, Kind] = {}
    rel: str | None = None
    hashed = ""
    lines: list[str] | None = None
    count = 0
    unpatched = False
    for i, (r, diag) in enumerate(zip(names, data)):
        if consume:
            data[i] = None  # type: ignore[call-overload]
        get = diag.get
        code = get("code") or get("name") or "syntax-error"
        if type(code) is not str:
            code = str(code)
        if code == "E902" and "UTF-8" in str(get("message")) and _declared_ok(root / r):
            # Valid Python in its declared encoding (PEP 263): ruff reads
            # UTF-8 only, so this is ruff's limit, not a fault in the file.
            unlinted.append(r)
            continue
        if r != rel:
            if with_patches and patch_until is not None and monotonic() >= patch_until:
                with_patches, fixes, unpatched = False, [], True
            if apart and rel is not None:
                _number(groups, runs, files, named)
                patches += _patches(fixes, files)
                _release(files)
                groups, runs, fixes, files = {}, [], [], {}
            rel = r
            if r in files:
                held = files[r]
            else:
                held = files[r] = _read(base, r)
            lines = held.pieces if held is not None else None
            count = len(lines) if lines is not None else 0
            last = run = None
            hashed = named(r) if named is not None else r
        kind = kinds.get(code)
        if kind is None:
            kind = kinds[code] = kind_of(code)
        loc = get("location") or _EMPTY
        end = get("end_location") or loc
        line = int(loc.get("row") or 1)
        fix = get("fix") or None
        applicability = APPLICABILITY.get(fix.get("applicability")) if fix else None
        said = get("message") or get("name") or code
        if type(said) is not str:
            said = str(said)
        url = get("url")
        snippet = lines[line - 1].rstrip("\r") if 1 <= line <= count else None  # type: ignore[index]
        # Finding.stable_id, without a model per call.
        basis = "\x1f".join(("ruff", code, hashed, " ".join(snippet.split()) if snippet else "",
                             "" if snippet else said))
        fid = f"{kind.prefix}-{sha256(basis.encode('utf-8', 'surrogateescape')).hexdigest()[:12]}"
        span = _new(Range)
        _set_dict(span, "__dict__", {
            "start_line": max(1, line),
            "start_col": max(1, int(loc.get("column") or 1)),
            "end_line": max(1, int(end.get("row") or line)),
            "end_col": max(1, int(end.get("column") or 1)),
        })
        _set_fields(span, set(_RANGE_SET))
        _set_extra(span, None)
        _set_private(span, None)
        finding = _new(Finding)
        # Every field, in the model's order, as validation leaves them: the
        # rule id is the code and its name is in help_uri, so the text says
        # the problem once, as ruff does.
        _set_dict(finding, "__dict__", {
            "id": fid, "role": role, "tool": "ruff", "rule_id": code, "title": said,
            "message": said, "severity": kind.severity, "confidence": 0.9,
            "category": kind.category, "file": r, "range": span, "evidence": [],
            "fix_patch_id": None, "verified": False,
            "tags": ["ruff", f"fix:{applicability}"] if applicability else ["ruff"],
            "help_uri": url if isinstance(url, str) else None, "related_rules": [],
            "severity_reason": None, "noise": kind.noise, "snippet": snippet,
        })
        _set_fields(finding, set(_NOISY_SET if kind.noise else _FINDING_SET))
        _set_extra(finding, None)
        _set_private(finding, None)
        findings.append(finding)
        group = groups.get(fid)
        if group is None:
            groups[fid] = [finding]
        else:
            group.append(finding)
        item = (finding, line, fix if get("cell") is None else None)
        if last is not None and last[1] == line:
            if run is None:
                run = [last]
                runs.append(run)
            run.append(item)
        else:
            run = None
        last = item
        if (with_patches and applicability is not None and fix.get("edits")  # type: ignore[union-attr]
                and get("cell") is None):
            fixes.append((finding, fix, applicability))  # type: ignore[arg-type]
    if with_patches and patch_until is not None and monotonic() >= patch_until:
        fixes, unpatched = [], True
    _number(groups, runs, files, named)
    patches += _patches(fixes, files)
    _release(files)
    return Parsed(findings, patches, unlinted, unpatched)


def _release(files: dict[str, FileFixes | None]) -> None:
    """The files' lines that no fix's diff reads let go of (their fixes are
    all named, so the whole split is needed no more)."""
    for held in files.values():
        if held is not None:
            held.release()


def _patches(fixes: list[tuple[Finding, dict[str, Any], str]],
             files: dict[str, FileFixes | None]) -> list[Patch]:
    """A patch per fix (none where its edits change nothing or are
    malformed), each finding's ``fix_patch_id`` set in place."""
    patches: list[Patch] = []
    for finding, fix, applicability in fixes:
        fields = finding.__dict__
        held = files.get(fields["file"])
        if held is None:
            continue
        fid = fields["id"]
        try:
            made = held.fix(fid, fix["edits"])
        except (ValueError, KeyError, TypeError):
            continue
        if made is None:
            continue
        diff, pid = made
        description = fix.get("message") or f"Fix {fields['rule_id']}"
        if applicability != "safe":
            description += f" (ruff marks this fix {applicability}: review it)"
        patch = _new(Patch)
        _set_dict(patch, "__dict__", {
            "id": pid, "description": description, "diff": diff, "files": [fields["file"]],
            "finding_ids": [fid], "role": fields["role"], "tool": "ruff", "verified": False,
            "verification": None, "kind": "fix", "verified_by": None,
        })
        _set_fields(patch, set(_PATCH_SET))
        _set_extra(patch, None)
        _set_private(patch, None)
        patches.append(patch)
        # In place, as pydantic's assignment does: these findings were
        # made here, just now.
        fields["fix_patch_id"] = pid
        finding.__pydantic_fields_set__.add("fix_patch_id")
    return patches


def _read(base: str, rel: str) -> FileFixes | None:
    """The file's text, as on disk (no newline translation), and its split;
    None when it cannot be read as UTF-8."""
    try:
        with open(os.path.join(base, rel), "rb") as fh:
            text = fh.read().decode("utf-8")
    except (OSError, UnicodeDecodeError):
        return None
    return FileFixes(rel, text, text.split("\n"))


def _number(groups: dict[str, list[Finding]], runs: list[list[tuple[Finding, int, Any]]],
            files: dict[str, FileFixes | None], named: Callable[[str], str] | None = None) -> None:
    """The ids made final, in place: a finding that shares its line with
    another one's fix is anchored on the line as that fix leaves it
    (``_crowded``); then ``assign_ids``'s numbering: identical problems in
    one file (same rule, same text) get ``-2``, ``-3``... in line order."""
    for run in runs:
        for finding, old in _crowded(run, files, named):
            same = groups[old]
            del same[next(k for k, f in enumerate(same) if f is finding)]  # not ==: by fields
            if not same:
                del groups[old]
            groups.setdefault(finding.__dict__["id"], []).append(finding)
    for same in groups.values():
        if len(same) < 2:
            continue
        order = sorted(range(len(same)), key=lambda i: (same[i].range.start_line, i))
        for n, i in enumerate(order[1:], start=2):
            fields = same[i].__dict__
            fields["id"] = f"{fields['id']}-{n}"


def _crowded(run: list[tuple[Finding, int, Any]], files: dict[str, FileFixes | None],
             named: Callable[[str], str] | None = None) -> list[tuple[Finding, str]]:
    """Findings of one line (``run``) whose line holds other findings' fixes
    that stay on it: each is anchored on the line with those fixes made, so
    that applying one of them (the line then reads just so) leaves the
    others' ids, and their fixes' ids, as they were. The findings whose id
    changed, each with its id before."""
    finding, line, _ = run[0]
    rel = finding.__dict__["file"]
    here = [(f, _in_line(fix, line)) for f, _, fix in run]
    if not any(edits for _, edits in here):
        return []
    held = files.get(rel)
    pieces = held.pieces if held is not None else None
    if pieces is None or not 1 <= line <= len(pieces):
        return []
    text = pieces[line - 1]
    moved: list[tuple[Finding, str]] = []
    for finding, mine in here:
        # A fix that is the same as this finding's would fix it too.
        others: list[list[tuple[int, int, str]]] = []
        for _, e in here:
            if e and e != mine and e not in others:
                others.append(e)
        if not others:
            continue
        made = _made(text, others)
        if made is None:
            continue
        fields = finding.__dict__
        anchor = " ".join(made.split())
        basis = "\x1f".join(("ruff", fields["rule_id"], named(rel) if named else rel, anchor, "" if anchor else fields["title"]))
        old = fields["id"]
        fields["id"] = f"{old.rsplit('-', 1)[0]}-{sha256(basis.encode('utf-8', 'surrogateescape')).hexdigest()[:12]}"
        moved.append((finding, old))
    return moved


def _in_line(fix: Any, line: int) -> list[tuple[int, int, str]] | None:
    """A fix's edits as (start, end column, text), when all of them lie in
    ``line``; None otherwise (or when malformed)."""
    if not fix:
        return None
    try:
        out = []
        for e in fix.get("edits") or ():
            start, end = e["location"], e["end_location"]
            if int(start["row"]) != line or int(end["row"]) != line:
                return None
            content = e.get("content") or ""
            if type(content) is not str:
                return None
            out.append((int(start["column"]), int(end["column"]), content))
    except (KeyError, TypeError, ValueError, AttributeError):
        return None
    return sorted(out) or None


def _made(text: str, fixes: list[list[tuple[int, int, str]]]) -> str | None:
    """``text`` with ``fixes`` made, left to right, a fix that overlaps one
    made before left out; None when none could be made."""
    spans: list[tuple[int, int, str]] = []
    for edits in sorted(fixes):
        if any(not 1 <= s <= e <= len(text) + 1 for s, e, _ in edits):
            continue
        pos = spans[-1][1] if spans else 0
        ok = True
        for s, e, _ in edits:
            if s < pos:
                ok = False
                break
            pos = e
        if ok and (not spans or edits[0][0] >= spans[-1][1]):
            spans.extend(edits)
    if not spans:
        return None
    out, pos = [], 1
    for s, e, content in spans:
        out.append(text[pos - 1:s - 1])
        out.append(content)
        pos = e
    out.append(text[pos - 1:])
    return "".join(out)


class _Rels:
    """ruff's file names (absolute, under the folder it ran in) as
    root-relative paths: each name once, and a name under ``root`` as it
    is spelt cut without resolving it (``rel_to`` resolves, a dozen system
    calls per file: a third of the role's own time on gunicorn's tree)."""

    def __init__(self, root: Path):
        self.root = root
        self.prefix = str(root).rstrip("/") + "/"
        self.names: dict[str, str] = {}

    def __call__(self, name: str) -> str:
        rel = self.names.get(name)
        if rel is None:
            rest = name[len(self.prefix):] if name.startswith(self.prefix) else None
            if rest and "/../" not in f"/{rest}/" and "/./" not in f"/{rest}/":
                rel = rest
            else:
                rel = rel_to(self.root, name)
            self.names[name] = rel
        return rel


def _declared_ok(path: Path) -> bool:
    """Whether Python can read the file in the encoding it declares."""
    try:
        data = path.read_bytes()
        encoding, _ = tokenize.detect_encoding(io.BytesIO(data).readline)
        data.decode(encoding)
    except (OSError, SyntaxError, UnicodeError, LookupError):
        return False
    return encoding not in ("utf-8", "utf-8-sig")


_EMPTY: dict[str, Any] = {}
# The fields a finding, range and patch made here have set, as validating
# the values given would leave them (the rest hold their defaults).
_FINDING_SET = frozenset({"id", "role", "tool", "rule_id", "title", "message", "severity",
                          "confidence", "category", "file", "range", "tags", "help_uri",
                          "snippet"})
_NOISY_SET = _FINDING_SET | {"noise"}
_RANGE_SET = frozenset({"start_line", "start_col", "end_line", "end_col"})
_PATCH_SET = frozenset({"id", "description", "diff", "files", "finding_ids", "role", "tool"})
# What pydantic's own model_construct sets, through the slots' own setters
# (model_construct took 0.5 ms a call; these, a few hundred ns).
_new = object.__new__
_set_dict = object.__setattr__  # called as _set_dict(obj, "__dict__", fields)
_SLOTS = BaseModel.__dict__


def _setter(slot: str) -> Callable[[Any, Any], None]:
    return _SLOTS[slot].__set__  # type: ignore[no-any-return]


_set_fields = _setter("__pydantic_fields_set__")
_set_extra = _setter("__pydantic_extra__")
_set_private = _setter("__pydantic_private__")
