"""lint_tester: ruff, with each fix ruff offers turned into its own patch.

The role is read-only: it runs ``ruff check --no-fix --no-cache --output-format
json`` (whose diagnostics carry the fix edits, whatever the project's ``fix``
setting says), applies the edits to an in-memory copy of
the file and keeps the difference as a patch. The project's own ruff
configuration (pyproject.toml / ruff.toml) decides which rules run; where it
names no ``target-version``, the Python the project declares does
(``_target.py``), so no fix rewrites code into syntax it cannot run.

A fix ruff marks unsafe or display-only may change what the code means: it is
offered, tagged ``fix:unsafe`` / ``fix:display-only`` on its finding, and
never verified nor part of fix-all (``verify_step.choose``).
"""

from __future__ import annotations

import asyncio
import functools
import gc
import io
import os
import re
import threading
import tokenize
from collections.abc import Callable
from hashlib import sha256
from pathlib import Path
from typing import Any, NamedTuple, TypeVar

import pydantic_core

from ...models import Finding, Patch, Range, Severity
from ._common import (
    SKIP_DIRS,
    SourceCache,
    load_json,
    rel_to,
    selected_files,
    tail,
)
from ._patches import FileText, TextEdit, maker, patch_id
from ._target import _toml, ruff_target
from .base import FileCheckRole, RoleContext, RoleOutput, ToolFailed, reported, tool_path

PY_SUFFIXES = (".py", ".pyi")
_T = TypeVar("_T")

# Rules that mean the code is broken or will fail at run time.
_HIGH = re.compile(r"^(E9\d\d|F82[123]|F63[1-4]|F70[1-7]|PLE\d+|syntax-error|invalid-syntax)$")
# bugbear's idiom notes: true, rarely a bug, often deliberate (an attribute
# read for its side effect, hasattr(x, "__call__"), getattr with a constant
# name, an unused loop variable, an abstract class without abstract methods).
_IDIOM = re.compile(r"^B(004|007|009|010|018|024|027)$")
# Likely bugs rather than style. Not RUF012/RUF013 (a mutable class
# attribute without ``ClassVar``, an implicit ``Optional``): notes on the
# annotations, not on what the code does.
_MEDIUM = re.compile(r"^(B\d+|S\d+|F(?!401|841|811|541)\d+|PLW\d+|ASYNC\d+|RUF006)$")
# Pure style/formatting: worth knowing, never a reason to fail.
_INFO = re.compile(r"^(E[1-5]\d\d|W\d+|I\d+|D\d+|N\d+|Q\d+|COM\d+|UP\d+|RUF022|ISC\d+)$")


@functools.cache  # a few dozen codes, thousands of diagnostics
def ruff_severity(code: str) -> Severity:
    if _HIGH.match(code):
        return Severity.high
    if _IDIOM.match(code):
        return Severity.low
    if _MEDIUM.match(code):
        return Severity.medium
    if _INFO.match(code):
        return Severity.info
    return Severity.low


# ruff's long-standing default rules: what a project without its own
# selection has always been linted with.
CLASSIC_DEFAULTS = ("E4", "E7", "E9", "F")


def chosen_rules(root: Path) -> tuple[str, ...] | None:
    """The rule selectors the project chose: ruff's classic defaults and
    what its configuration adds with ``extend-select``; None when its
    configuration ``select``s its own set (or extends another file): then
    every rule that runs is one it chose. Newer ruff releases run more
    rules by default than a project was written against."""
    configs = [(_toml(root / name), ("lint",)) for name in ("ruff.toml", ".ruff.toml")]
    tool = _toml(root / "pyproject.toml").get("tool", {})
    ruff = tool.get("ruff") if isinstance(tool, dict) else None
    if isinstance(ruff, dict):
        configs.append((ruff, ("lint",)))
    chosen: list[str] = list(CLASSIC_DEFAULTS)
    for config, sections in configs:
        if not config:
            continue
        if "extend" in config:
            return None
        for table in (config, *(config.get(s) for s in sections)):
            if not isinstance(table, dict):
                continue
            if table.get("select"):
                return None
            if isinstance(table.get("extend-select"), list):
                chosen += [str(x).upper() for x in table["extend-select"]]
        break  # ruff reads the first configuration it finds
    return tuple(chosen)


def selected_by(code: str, selectors: tuple[str, ...]) -> bool:
    """Whether ``code`` (``BLE001``) falls under one of ``selectors``
    (``B`` is bugbear's prefix, not ``BLE``'s; ``PL`` is every pylint rule)."""
    for sel in selectors:
        if sel == "ALL":
            return True
        if code.startswith(sel) and (
                len(code) == len(sel) or code[len(sel)].isdigit() or sel[-1].isdigit()
                or sel == "PL"):
            return True
    return False


class LintTester(FileCheckRole):
    name = "lint_tester"
    tool = "ruff"
    cost = 1
    file_local = True
    description = "ruff lint; every fix ruff offers becomes a patch (the sandbox is not edited)"

    def unavailable(self, config=None) -> str | None:
        if tool_path("ruff") is None:
            return "ruff is not installed in SuperQode's environment"
        return None

    async def recheck(self, ctx: RoleContext, files: list[str]) -> list[Finding]:
        # The verifier reads the findings only: no diff per fix (half of a
        # re-run's time on a large file).
        return (await reported(self._check(ctx, files, with_patches=False))).findings

    async def _check(
        self, ctx: RoleContext, files: list[str] | None, with_patches: bool = True
    ) -> RoleOutput:
        ruff = tool_path("ruff")
        if ruff is None:
            return RoleOutput(status="skipped", reason=self.unavailable(), tool="ruff")
        if files is None:
            if not _any_python(ctx.sandbox):
                return RoleOutput(status="skipped", reason="no Python files to lint", tool="ruff")
            targets = ["."]
        else:
            targets = selected_files(ctx.sandbox, files, PY_SUFFIXES)
            if not targets:
                return RoleOutput(
                    status="skipped", reason="none of the selected files is Python", tool="ruff"
                )
        cmd = ruff_command(ruff, ctx.sandbox, targets)
        res = await ctx.run(cmd)
        if res.timed_out:
            raise ToolFailed("ruff", "ruff ran out of time", status="timeout")
        try:
            data = await asyncio.to_thread(_GC_PAUSE.run, _load, res.stdout)
        except ValueError:
            data = None
        if res.returncode != 0 or not isinstance(data, list):
            reason = tail(res.stderr) or f"ruff exited with {res.returncode}"
            raise ToolFailed("ruff", f"ruff failed: {reason}")
        # Per-diagnostic work (a diff per fix) off the event loop: on a large
        # tree it is seconds, during which signals must still be served.
        return await asyncio.to_thread(_GC_PAUSE.run, self._parse, ctx.sandbox, data, with_patches)

    def _parse(
        self, root: Path, data: list[dict[str, Any]], with_patches: bool = True
    ) -> RoleOutput:
        # One pass over ruff's diagnostics makes the findings, their ids
        # and snippets, and once a file's are all made (a finding's id,
        # which its patch's id hashes, is final only then) its patches.
        # Thousands of each on a large tree: per-item work is kept to the
        # model, a hash and a diff (no validation, no helper per field),
        # and a file's text is read and split once, for its snippets and
        # its fixes, and let go after it (all of a large tree's text and
        # lines held at once made the role's memory, and its page faults,
        # several times ruff's output).
        findings: list[Finding] = []
        patches: list[Patch] = []
        fixes: list[tuple[Finding, dict[str, Any]]] = []
        unlinted: list[str] = []
        rels = _Rels(root)
        codes = _Codes(chosen_rules(root))
        groups: dict[str, list[Finding]] = {}  # id -> findings made with it
        names = [rels(d.get("filename", "")) for d in data]
        # ruff lists a file's diagnostics together; were it ever not to,
        # every file is held to the end, as ids need all of a file's.
        runs = [r for i, r in enumerate(names) if not i or r != names[i - 1]]
        apart = len(set(runs)) == len(runs)
        src = SourceCache(root)
        rel = lines = None
        for r, diag in zip(names, data):
            code = _text(diag.get("code") or diag.get("name") or "syntax-error")
            if code == "E902" and "UTF-8" in str(diag.get("message")) and _declared_ok(root / r):
                # Valid Python in its declared encoding (PEP 263): ruff reads
                # UTF-8 only, so this is ruff's limit, not a fault in the file.
                unlinted.append(r)
                continue
            if r != rel:
                if apart and rel is not None:
                    _number(groups)
                    patches += self._patches(src, fixes)
                    groups, fixes, src = {}, [], SourceCache(root)
                rel, lines = r, src.split(r)
            kind = codes.get(code) or codes.add(code)
            loc = diag.get("location") or {}
            end = diag.get("end_location") or loc
            line = int(loc.get("row") or 1)
            fix = diag.get("fix") or None
            applicability = _APPLICABILITY.get((fix or {}).get("applicability"))
            said = _text(diag.get("message") or diag.get("name") or code)
            url = diag.get("url")
            snippet = (lines[line - 1].rstrip("\r") if lines is not None and 1 <= line <= len(lines)
                       else None)
            # Finding.stable_id, here without a model per call.
            basis = "\x1f".join(["ruff", code, rel, " ".join(snippet.split()) if snippet else "",
                                  "" if snippet else said])
            fid = f"{kind.prefix}-{sha256(basis.encode('utf-8', 'surrogateescape')).hexdigest()[:12]}"
            # Made without validation (``trusted``): every value here is of
            # its field's type (ruff's strings are checked as read).
            finding = _FINDING({
                "role": self.name,
                "tool": "ruff",
                "rule_id": code,
                # The rule id is the diagnostic's code and its name is in
                # help_uri: the text says the problem once, as ruff does.
                "title": said,
                "message": said,
                "severity": kind.severity,
                "confidence": 0.9,
                "category": kind.category,
                "file": rel,
                "range": _RANGE({
                    "start_line": max(1, line),
                    "start_col": max(1, int(loc.get("column") or 1)),
                    "end_line": max(1, int(end.get("row") or line)),
                    "end_col": max(1, int(end.get("column") or 1)),
                }),
                "tags": ["ruff", f"fix:{applicability}"] if applicability else ["ruff"],
                "help_uri": url if isinstance(url, str) else None,
                "snippet": snippet,
                # style from ruff's newer defaults: the project never chose it
                **kind.noise,
                "id": fid,
            })
            findings.append(finding)
            group = groups.get(fid)
            if group is None:
                groups[fid] = [finding]
            else:
                group.append(finding)
            if (
                with_patches
                and fix
                and applicability is not None
                and fix.get("edits")
                and diag.get("cell") is None
            ):
                fixes.append((finding, fix))
        _number(groups)
        patches += self._patches(src, fixes)
        reason = None
        if unlinted:
            shown = ", ".join(unlinted[:5]) + (f" and {len(unlinted) - 5} more" if len(unlinted) > 5 else "")
            reason = f"ruff reads UTF-8 only; not linted (declared another encoding): {shown}"
        return RoleOutput(findings=findings, patches=patches, tool="ruff",
                          reason=reason)

    @staticmethod
    def _patches(src: SourceCache, fixes: list[tuple[Finding, dict[str, Any]]]) -> list[Patch]:
        patches: list[Patch] = []
        text: FileText | None = None
        for finding, fix in fixes:
            fields = finding.__dict__
            rel = fields["file"]
            if text is None or text.rel != rel:
                # ruff lists a file's diagnostics together: split each once
                old = src.text(rel)
                if old is None:
                    continue
                text = FileText(rel, old, src.split(rel))
            try:
                diff, basis = text.fix([_edit(e) for e in fix["edits"]])
            except (ValueError, KeyError, TypeError):
                continue
            if not diff:
                continue
            description = fix.get("message") or f"Fix {fields['rule_id']}"
            kind = _APPLICABILITY.get(fix.get("applicability"))
            if kind != "safe":
                description += f" (ruff marks this fix {kind}: review it)"
            fid = fields["id"]
            pid = patch_id(fid, diff, basis)
            patches.append(_PATCH({
                "id": pid, "description": description, "diff": diff, "files": [rel],
                "finding_ids": [fid], "role": fields["role"], "tool": "ruff",
            }))
            # In place, as pydantic's assignment does: these findings were
            # made here, just now (a copy each was seconds on a large tree).
            fields["fix_patch_id"] = pid
            finding.__pydantic_fields_set__.add("fix_patch_id")
        return patches


_FINDING = maker(Finding)
_RANGE = maker(Range)
_PATCH = maker(Patch)


class _Kind(NamedTuple):
    """What a rule code decides of its findings, worked out once per code."""

    severity: Severity
    category: str
    prefix: str  # of the finding's id
    noise: dict[str, str]


class _Codes(dict[str, _Kind]):
    def __init__(self, chosen: tuple[str, ...] | None):
        super().__init__()
        self.chosen = chosen

    def add(self, code: str) -> _Kind:
        severity = ruff_severity(code)
        # a style rule the project never chose
        quiet = (self.chosen is not None and severity.rank <= Severity.low.rank
                 and not selected_by(code, self.chosen))
        kind = self[code] = _Kind(
            severity, "syntax" if code in ("syntax-error", "invalid-syntax") else "lint",
            code.lower(), _UNCHOSEN if quiet else {})
        return kind


def _number(groups: dict[str, list[Finding]]) -> None:
    """``assign_ids``'s numbering, in place: identical problems in one file
    (same rule, same text) get ``-2``, ``-3``... in line order."""
    for same in groups.values():
        if len(same) < 2:
            continue
        order = sorted(range(len(same)), key=lambda i: (same[i].range.start_line, i))
        for n, i in enumerate(order[1:], start=2):
            fields = same[i].__dict__
            fields["id"] = f"{fields['id']}-{n}"


class _GcPause:
    """Runs work with Python's cycle collector paused. A large tree's parse
    makes some 100,000 containers (the JSON, the findings, the patches) that
    all stay alive, and the collector's full passes over them took a sixth
    of the parse; nothing here makes cycles. Counted, so that parses side by
    side resume it once, after the last one, and never where it was off."""

    def __init__(self) -> None:
        self.lock = threading.Lock()
        self.holders = 0
        self.resume = False

    def run(self, work: Callable[..., _T], *args: Any) -> _T:
        with self.lock:
            if self.holders == 0:
                self.resume = gc.isenabled()
                gc.disable()
            self.holders += 1
        try:
            return work(*args)
        finally:
            with self.lock:
                self.holders -= 1
                if self.holders == 0 and self.resume:
                    gc.enable()


_GC_PAUSE = _GcPause()


def _load(text: str) -> Any:
    """ruff's JSON (tens of MB on a large tree): pydantic's parser, twice as
    fast as the json module; the tolerant reader where that fails."""
    try:
        return pydantic_core.from_json(text)
    except ValueError:
        return load_json(text)


def ruff_command(ruff: str, root: Path, targets: list[str]) -> list[str]:
    """The role's ruff command line on ``targets`` in ``root`` (bench/lint.py
    times ruff alone with the same one)."""
    return [
        ruff,
        "check",
        # A project's ``fix = true`` (flask sets it) would make ruff edit
        # the shared sandbox: counts would drop and bandit, running beside
        # us, would read the edited files. Fixes come back as JSON edits.
        "--no-fix",
        "--no-fix-only",
        "--no-cache",  # a cache dir would be a write into the shared sandbox
        "--output-format",
        "json",
        "--exit-zero",
        "--force-exclude",  # honour the project's excludes for explicit files too
        *(["--target-version", target] if (target := ruff_target(root)) else []),
        "--",
        *targets,
    ]


def _any_python(root: Path) -> bool:
    """Whether the tree holds a Python file (a regular one, outside the
    folders no role analyses): the first one answers, where listing them
    all (``walk_files``) cost a third of the role's own time."""
    for dirpath, dirnames, filenames in os.walk(root):
        dirnames[:] = [d for d in dirnames if d not in SKIP_DIRS and not d.endswith(".egg-info")]
        for name in filenames:
            if name.endswith(PY_SUFFIXES):
                path = os.path.join(dirpath, name)
                if os.path.isfile(path) and not os.path.islink(path):
                    return True
    return False


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


_UNCHOSEN = {"noise": "a style rule the project has not chosen (in ruff's defaults, not in its "
                      "configuration)"}

# ruff's fix applicability (spelt "displayonly" by newer ruff) -> our tag.
_APPLICABILITY = {"safe": "safe", "unsafe": "unsafe", "display-only": "display-only",
                  "displayonly": "display-only"}


def _declared_ok(path: Path) -> bool:
    """Whether Python can read the file in the encoding it declares."""
    try:
        data = path.read_bytes()
        encoding, _ = tokenize.detect_encoding(io.BytesIO(data).readline)
        data.decode(encoding)
    except (OSError, SyntaxError, UnicodeError, LookupError):
        return False
    return encoding not in ("utf-8", "utf-8-sig")


def _text(value: Any) -> str:
    """A string of ruff's JSON as a string (validation did this)."""
    return value if type(value) is str else str(value)


def _edit(e: dict[str, Any]) -> TextEdit:
    return TextEdit(
        start_line=int(e["location"]["row"]),
        start_col=int(e["location"]["column"]),
        end_line=int(e["end_location"]["row"]),
        end_col=int(e["end_location"]["column"]),
        content=e.get("content") or "",
    )
