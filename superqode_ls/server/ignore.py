""""Ignore this finding", by the mechanism the finding's own tool reads, so
ruff, bandit and mypy in CI stay quiet too, not only SuperQode:

- a ruff rule: ``# noqa: CODE`` (joined to the line's ``# noqa: X`` as
  ``# noqa: X, CODE``);
- a bandit rule: ``# nosec BXXX`` (joined likewise);
- a mypy error: ``# type: ignore[code]``;
- anything else (SuperQode's own rules, the secrets scan, test failures), and
  any comment that would push the line past the line length of a checker the
  project configures that counts such comments (flake8/pycodestyle, pylint,
  black): an entry in the folder's baseline file (``superqode.ignoreFinding``),
  which editor runs then use.

ruff leaves pragma comments (``# noqa``, ``# nosec``, ``# type: ignore``) out
of a line's length, so where ruff is the only judge of line length the
comment always goes on the line: bandit in CI reads nothing else.

SuperQode's engine honours the same comments (``qe/noise.py``); the old
``# superqode: ignore[...]`` comment is still read there, never written.
"""

from __future__ import annotations

import configparser
import io
import os
import re
import stat
import threading
import tokenize
import tomllib
from collections import OrderedDict
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from lsprotocol import types
from pygls.uris import to_fs_path

from ..config import ConfigError, load_config
from ..engine import suggestions
from .convert import to_client_col
from .errors import fail
from .server import SuperQodeServer
from .store import Tracked

_PY = {".py", ".pyi", ".pyw"}
_CODE = r"[A-Za-z]+[0-9]+"
_MYPY_CODE = r"[a-z][a-z0-9-]*"


@dataclass(frozen=True)
class Pragma:
    """One tool's suppression comment: how a new one reads, and the existing
    one a code joins (its code list in group ``codes``)."""

    tool: str
    fresh: str  # format with {code}
    existing: re.Pattern[str]
    bare: re.Pattern[str]  # the comment without codes: it silences everything already
    joiner: str = ", "


PRAGMAS = {
    "ruff": Pragma("ruff", "# noqa: {code}",
                   re.compile(rf"#\s*noqa:\s*(?P<codes>{_CODE}(?:\s*,\s*{_CODE})*)", re.IGNORECASE),
                   re.compile(r"#\s*noqa(?!:)\b", re.IGNORECASE)),
    "bandit": Pragma("bandit", "# nosec {code}",
                     re.compile(r"#\s*nosec:?\s*(?P<codes>B[0-9]+(?:\s*,\s*B[0-9]+)*)", re.IGNORECASE),
                     re.compile(r"#\s*nosec\b(?!:?\s*B[0-9])", re.IGNORECASE)),
    "mypy": Pragma("mypy", "# type: ignore[{code}]",
                   re.compile(rf"#\s*type:\s*ignore\[(?P<codes>{_MYPY_CODE}(?:\s*,\s*{_MYPY_CODE})*)\]"),
                   re.compile(r"#\s*type:\s*ignore(?!\[)")),
}
# Codes a tool's comment cannot name (mypy's own labels for parse errors).
_UNNAMEABLE = {"syntax", "misc-syntax"}


def pragma_for(tool: str, rule: str) -> Pragma | None:
    p = PRAGMAS.get(tool)
    if p is None or rule in _UNNAMEABLE:
        return None
    pattern = _MYPY_CODE if tool == "mypy" else _CODE
    return p if re.fullmatch(pattern, rule) else None


# Checkers that count a trailing pragma comment in a line's length, with the
# length each uses when its config does not set one.
_COUNTING_DEFAULTS = {"flake8": 79, "pycodestyle": 79, "pep8": 79, "pylint": 100, "black": 88}
_INI_SECTIONS = {"flake8": "flake8", "pycodestyle": "pycodestyle", "pep8": "pep8",
                 "pylint.format": "pylint", "format": "pylint"}


def _ini_limits(path: Path, sections: dict[str, str]) -> list[int]:
    cp = configparser.ConfigParser(interpolation=None)
    try:
        cp.read_string(path.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, configparser.Error):
        return []
    out = []
    for name in cp.sections():
        checker = sections.get(name.lower())
        if checker is None:
            continue
        raw = cp[name].get("max-line-length", cp[name].get("max_line_length"))
        out.append(int(raw) if raw and raw.strip().isdigit() else _COUNTING_DEFAULTS[checker])
    return out


def _pyproject_limits(path: Path) -> list[int]:
    try:
        tool = tomllib.loads(path.read_text(encoding="utf-8")).get("tool", {})
    except (OSError, UnicodeDecodeError, tomllib.TOMLDecodeError):
        return []
    out = []
    for checker, key in (("black", "line-length"), ("flake8", "max-line-length"), ("pylint", "max-line-length")):
        table = tool.get(checker)
        if not isinstance(table, dict):
            continue
        if checker == "pylint":
            table = table.get("format", table) if isinstance(table.get("format"), dict) else table
        value = table.get(key)
        out.append(value if isinstance(value, int) and value > 0 else _COUNTING_DEFAULTS[checker])
    return out


def comment_limit(folder: str | Path, file: str | Path) -> int | None:
    """The line length an added pragma comment must keep ``file`` within: the
    shortest of the checkers configured between the file and the workspace
    folder that count such comments (flake8, pycodestyle, pylint, black);
    None where none is (ruff does not count them: any length will do)."""
    root = Path(folder).resolve()
    here = Path(file).resolve().parent
    limits: list[int] = []
    while True:
        limits += FOLDER_LIMITS.limits(here)
        if here == root or root not in here.parents:
            break
        here = here.parent
    return min(limits) if limits else None


# The files of one folder that may set a limit, in the order they are read.
_LIMIT_FILES = (".flake8", "setup.cfg", "tox.ini", ".pylintrc", "pylintrc", "pyproject.toml")
_Stamp = tuple[int, int, int] | None  # (mtime_ns, size, inode); None: not a regular file


def _stamp(path: Path) -> _Stamp:
    try:
        st = os.stat(path)
    except (OSError, ValueError):
        return None
    return (st.st_mtime_ns, st.st_size, st.st_ino) if stat.S_ISREG(st.st_mode) else None


def _folder_limits(here: Path, stamps: tuple[_Stamp, ...]) -> list[int]:
    """The limits the configuration files of ``here`` (those ``stamps``
    finds) set."""
    found = dict(zip(_LIMIT_FILES, stamps))
    limits: list[int] = []
    if found[".flake8"]:
        limits += _ini_limits(here / ".flake8", {"flake8": "flake8"})
    for name in ("setup.cfg", "tox.ini"):
        if found[name]:
            limits += _ini_limits(here / name, _INI_SECTIONS)
    for name in (".pylintrc", "pylintrc"):
        if found[name]:
            limits += _ini_limits(here / name, {"format": "pylint"}) or [_COUNTING_DEFAULTS["pylint"]]
    if found["pyproject.toml"]:
        limits += _pyproject_limits(here / "pyproject.toml")
    return limits


class FolderLimits:
    """Each folder's limits, read again only when one of its configuration
    files changes (its mtime, size or inode) or appears or goes: editors ask
    for code actions at each cursor move, and parsing setup.cfg, tox.ini and
    pyproject.toml of every folder up to the root each time was most of that
    request. The least recently asked folders go past ``bound``."""

    def __init__(self, bound: int = 256):
        self.bound = bound
        self._lock = threading.Lock()  # code actions run on worker threads too
        self._held: OrderedDict[Path, tuple[tuple[_Stamp, ...], list[int]]] = OrderedDict()

    def limits(self, here: Path) -> list[int]:
        # Stamped before reading: a file changed in between is read new
        # and stamped old, so the next request reads it again.
        stamps = tuple(_stamp(here / name) for name in _LIMIT_FILES)
        with self._lock:
            held = self._held.get(here)
            if held is not None and held[0] == stamps:
                self._held.move_to_end(here)
                return list(held[1])
        limits = _folder_limits(here, stamps) if any(stamps) else []
        with self._lock:
            self._held[here] = (stamps, limits)
            self._held.move_to_end(here)
            while len(self._held) > self.bound:
                self._held.popitem(last=False)
        return list(limits)


FOLDER_LIMITS = FolderLimits()


def comment_slot(lines: list[str], row: int) -> int | None:
    """Where a comment may go on line ``row`` (0-based): the column of its
    first comment, or its end; None where nothing may be added: the line ends
    inside a string (the comment would become text) or with a backslash, or
    the file does not tokenize."""
    line = lines[row]
    if line.rstrip().endswith("\\"):
        return None
    text = "\n".join(lines) + "\n"
    first_comment = None
    try:
        for tok in tokenize.generate_tokens(io.StringIO(text).readline):
            (sr, sc), (er, _ec) = tok.start, tok.end
            if sr - 1 > row:
                break
            if tok.type == tokenize.COMMENT and sr - 1 == row and first_comment is None:
                first_comment = sc
            elif tok.type not in (tokenize.NL, tokenize.NEWLINE) and sr - 1 <= row < er - 1:
                return None  # a string (or f-string part) runs on past this line
    except (tokenize.TokenError, SyntaxError):
        return None
    return len(line.rstrip()) if first_comment is None else first_comment


def comment_change(lines: list[str], row: int, tool: str, rule: str,
                   limit: int) -> tuple[int, int, str] | None:
    """(start, end, new text) that makes line ``row`` silence ``rule`` for
    ``tool``, or None: the tool has no comment for it, no comment can go on
    the line, or the line would grow past ``limit`` (then the baseline is the
    place; a line already too long may take ``# noqa: E501``, the comment made
    for it)."""
    p = pragma_for(tool, rule)
    if p is None:
        return None
    slot = comment_slot(lines, row)
    if slot is None:
        return None
    line = lines[row]
    m = p.existing.search(line)
    if m:  # one comment per tool per line: the code joins the ones it names
        codes = [c.strip() for c in m.group("codes").split(",")]
        if rule in codes:
            return None
        start = end = m.end("codes")
        new = f"{p.joiner}{rule}"
    elif p.bare.search(line):
        return None  # already silenced for every rule: nothing to add
    elif tool == "mypy" and slot < len(line.rstrip()):
        # mypy reads "# type: ignore" only as the line's first comment.
        start = end = slot
        new = f"{p.fresh.format(code=rule)}  "
    else:
        start, end = len(line.rstrip()), len(line)  # trailing blanks go
        new = f"  {p.fresh.format(code=rule)}"
    grown = line[:start] + new + line[end:]
    if limit is not None and len(grown) > limit and not (tool == "ruff" and rule == "E501"):
        return None
    return start, end, new


def inline_edit(ls: SuperQodeServer, t: Tracked) -> tuple[types.WorkspaceEdit, str] | None:
    """The tool's own comment that silences ``t`` on its first line, with the
    comment as the user will read it (None: use the baseline)."""
    f = t.finding
    if t.stale or Path(f.file or "").suffix.lower() not in _PY:
        return None
    lines = ls.current_lines(t.uri)
    if t.sl >= len(lines):
        return None
    path = to_fs_path(t.uri)
    if path is None:
        return None
    change = line_change(lines, t.sl, [(f.tool, f.rule_id), *_related(f.related_rules)],
                         comment_limit(t.folder, path))
    if change is None:
        return None
    start, end, new, shown = change
    rng = types.Range(
        start=types.Position(t.sl, to_client_col(lines, t.sl, start, ls.encoding)),
        end=types.Position(t.sl, to_client_col(lines, t.sl, end, ls.encoding)),
    )
    edit = types.TextEdit(range=rng, new_text=new)
    if ls.client.document_changes:
        doc = types.OptionalVersionedTextDocumentIdentifier(uri=t.uri, version=ls.document_version(t.uri))
        return types.WorkspaceEdit(document_changes=[types.TextDocumentEdit(text_document=doc, edits=[edit])]), shown
    return types.WorkspaceEdit(changes={t.uri: [edit]}), shown


def _related(rules: list[str]) -> list[tuple[str, str]]:
    """The same problem as other tools name it (a finding reported by bandit
    and ruff's flake8-bandit is kept once, the other id in ``related_rules``):
    each of those tools needs its own comment, or it still fails CI."""
    out = []
    for r in rules:
        if re.fullmatch(r"S[0-9]{3}", r):
            out.append(("ruff", r))
        elif re.fullmatch(r"B[0-9]{3}", r):
            out.append(("bandit", r))
    return out


def line_change(lines: list[str], row: int, rules: list[tuple[str, str]],
                limit: int | None) -> tuple[int, int, str, str] | None:
    """One edit of line ``row`` that silences every (tool, rule) of ``rules``
    with its tool's comment: (start, end, new text, the comment as shown).
    None when the first has no comment, or any of them does not fit: then
    the baseline (a comment that leaves one tool failing is no ignore)."""
    line = cur = lines[row]
    for tool, rule in rules:
        change = comment_change([*lines[:row], cur, *lines[row + 1:]], row, tool, rule, limit)
        if change is None:
            if pragma_for(tool, rule) is None or _silenced(cur, tool, rule):
                if (tool, rule) == rules[0]:
                    return None
                continue
            return None
        start, end, new = change
        cur = cur[:start] + new + cur[end:]
    if cur == line:
        return None
    same = 0
    while same < min(len(line), len(cur)) and line[same] == cur[same]:
        same += 1
    starts = [m.start() for p in PRAGMAS.values() if (m := p.existing.search(cur))]
    shown = cur[min(starts):].strip() if starts else cur[same:].strip()
    return same, len(line), cur[same:], shown


def _silenced(line: str, tool: str, rule: str) -> bool:
    p = PRAGMAS[tool]
    m = p.existing.search(line)
    return bool(p.bare.search(line) or (m and rule in [c.strip() for c in m.group("codes").split(",")]))


def baseline_path(ls: SuperQodeServer, folder: str) -> Path:
    """The folder's configured baseline, else ``.superqode/baseline.json``."""
    return suggestions.baseline_path(Path(folder), load_config(Path(folder)))


def actions(ls: SuperQodeServer, t: Tracked, diag: types.Diagnostic | None, literal: bool,
            kind: str) -> list:
    """The ignore actions of ``t``: its tool's comment where one fits, else the
    baseline. Never preferred: a default action must not silence a finding."""
    rule = t.finding.rule_id
    out: list[Any] = []
    inline = inline_edit(ls, t) if literal else None
    if inline is not None:
        edit, shown = inline
        out.append(types.CodeAction(
            title=f"SuperQode: ignore {rule} on this line ({shown})",
            kind=kind, diagnostics=[diag] if diag else None, edit=edit, is_preferred=False))
    cmd = types.Command(title=f"SuperQode: ignore {rule} (add to the baseline)",
                        command="superqode.ignoreFinding", arguments=[{"findingId": t.id}])
    out.append(types.CodeAction(title=cmd.title, kind=kind, is_preferred=False,
                                diagnostics=[diag] if diag else None, command=cmd)
               if literal else cmd)
    return out


def add_to_baseline(ls: SuperQodeServer, t: Tracked) -> Path:
    """Accept ``t`` into its folder's baseline (the ``superqode.ignoreFinding``
    command, off the event loop; a RequestFailed line on failure)."""
    try:
        return suggestions.add_to_baseline(baseline_path(ls, t.folder), [t.finding])
    except (ConfigError, OSError) as e:
        raise fail(f"could not add {t.finding.rule_id} to the baseline: {e}") from None


def baseline_note(t: Tracked, path: Path) -> str:
    """What the user is told once ``t`` is in the baseline: where, and that
    SuperQode alone reads it."""
    try:
        where = path.relative_to(Path(t.folder)).as_posix()
    except ValueError:
        where = str(path)
    f = t.finding
    return (f"SuperQode: {f.rule_id} in {f.file}:{t.sl + 1} added to the baseline ({where}): "
            "SuperQode no longer reports it, other tools still do; remove its entry there to see it again.")


def forget(ls: SuperQodeServer, t: Tracked) -> None:
    """Stop showing ``t`` (it is in the baseline now)."""
    ls.store.by_uri.get(t.uri, {}).pop(t.id, None)
    ls.store.touch(t.uri)
    ls.publisher.mark(t.uri)
