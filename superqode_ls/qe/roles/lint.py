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
import os
import re
import time
from pathlib import Path
from typing import Any

import pydantic_core

from ...models import Finding, Severity
from ..gc_pause import PAUSE
from ..ruff_rules import LIKELY_BUG, ruff_severity
from ._common import SKIP_DIRS, load_json, selected_files, tail
from ._lint_parse import Kind, parse
from ._target import _toml, ruff_target
from .base import FileCheckRole, RoleContext, RoleOutput, ToolFailed, rechecked, reported, tool_path

PY_SUFFIXES = (".py", ".pyi")

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

    # A copy the verifier checks beside its file (``verify_copies.beside``)
    # gets the ids its findings would have in that file: a finding's id can
    # depend on its line's other findings (``_lint_parse._crowded``), so it
    # cannot be made again from the finding alone.
    ids_follow_copies = True

    async def recheck(self, ctx: RoleContext, files: list[str]) -> list[Finding]:
        # The verifier reads the findings only: no diff per fix (half of a
        # re-run's time on a large file).
        return rechecked(await reported(self._check(ctx, files, with_patches=False, copies=True)))

    async def _check(
        self, ctx: RoleContext, files: list[str] | None, with_patches: bool = True,
        copies: bool = False,
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
        # Bytes: pydantic's parser reads them as they are (decoding tens of
        # MB to text first cost a third of the parse).
        res = await ctx.run(cmd, raw_stdout=True)
        if res.timed_out:
            raise ToolFailed("ruff", "ruff ran out of time", status="timeout")
        # Off the event loop (seconds on a large tree, during which signals
        # must still be served), with the collector paused throughout.
        # Told to stop, the role returns ruff's findings: the fixes (most of
        # its own time on a large tree) are made only until a share of the
        # time left is all there is, what the findings alone take.
        left = ctx.remaining()
        patch_until = None if left is None else time.monotonic() + left - _findings_share(left)
        out = await asyncio.to_thread(PAUSE.run, self._read, ctx.sandbox, res.stdout_bytes or b"",
                                      with_patches, res.returncode == 0, copies, patch_until)
        if out is None:
            reason = tail(res.stderr) or f"ruff exited with {res.returncode}"
            raise ToolFailed("ruff", f"ruff failed: {reason}")
        return out

    def _read(self, root: Path, text: bytes | str, with_patches: bool, ok: bool,
              copies: bool = False, patch_until: float | None = None) -> RoleOutput | None:
        """ruff's JSON as the role's output; None when it is not ruff's
        list of diagnostics (or ruff failed). The JSON (some 200,000
        containers on a large tree) is let go here, before the collector
        resumes: kept until then, its first collections walked it all for
        nothing to collect (0.2 s on sqlalchemy)."""
        try:
            data = _load(text)
        except ValueError:
            return None
        if not ok or not isinstance(data, list):
            return None
        # ``data`` is this call's own: let go of as it is read.
        return self._parse(root, data, with_patches, copies, patch_until, consume=True)

    def _parse(
        self, root: Path, data: list[dict[str, Any]], with_patches: bool = True,
        copies: bool = False, patch_until: float | None = None, consume: bool = False,
    ) -> RoleOutput:
        # One pass over ruff's diagnostics makes the findings, their ids and
        # snippets, and a file's patches once its findings are all made
        # (``_lint_parse``).
        parsed = parse(root, data, self.name, _Codes(chosen_rules(root)).kind, with_patches,
                       copy_of if copies else None, patch_until, consume)
        reason = None
        if unlinted := parsed.unlinted:
            shown = ", ".join(unlinted[:5]) + (f" and {len(unlinted) - 5} more" if len(unlinted) > 5 else "")
            reason = f"ruff reads UTF-8 only; not linted (declared another encoding): {shown}"
        if parsed.unpatched:
            missing = sum(1 for f in parsed.findings if f.fix_patch_id is None
                          and any(t.startswith("fix:") for t in f.tags))
            reason = "; ".join(filter(None, (
                reason, f"no time left to make fixes: {missing} finding(s) without theirs")))
        return RoleOutput(findings=parsed.findings, patches=parsed.patches, tool="ruff",
                          reason=reason)


def _findings_share(left: float) -> float:
    """Of the ``left`` seconds, those kept for the findings without fixes:
    a tenth, 1 s at least (17,600 of them take about 1 s of CPU on two
    loaded cores), never more than half."""
    return min(0.5 * left, max(1.0, 0.1 * left))


class _Codes:
    """What each rule code decides of its findings (``Kind``)."""

    def __init__(self, chosen: tuple[str, ...] | None):
        self.chosen = chosen

    def kind(self, code: str) -> Kind:
        severity = ruff_severity(code)
        # A rule the project never chose (ruff's newer defaults): style, or
        # a medium one that is more often a deliberate idiom than a bug
        # (B008's call in a default is how FastAPI and typer declare).
        quiet = (self.chosen is not None and not selected_by(code, self.chosen)
                 and (severity.rank <= Severity.low.rank
                      or (severity is Severity.medium and not LIKELY_BUG.match(code))))
        return Kind(severity, "syntax" if code in ("syntax-error", "invalid-syntax") else "lint",
                    code.lower(), _UNCHOSEN if quiet else None)


def _load(text: bytes | str) -> Any:
    """ruff's JSON (tens of MB on a large tree): pydantic's parser, twice as
    fast as the json module; the tolerant reader where that fails (on the
    text as ``run_command`` decodes it otherwise)."""
    try:
        return pydantic_core.from_json(text)
    except ValueError:
        if isinstance(text, bytes):
            text = text.decode("utf-8", "replace")
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


def copy_of(rel: str) -> str:
    """The file a copy named by ``verify_copies.beside`` stands for
    (``a/m_sqcopy1_m.py`` -> ``a/m.py``); any other name, itself."""
    m = _COPY.match(rel)
    return f"{m['dir']}{m['stem']}{m['suffix']}" if m else rel


_COPY = re.compile(r"(?P<dir>(?:.*/)?)(?P<stem>[^/]+)_sqcopy\d+_(?P=stem)(?P<suffix>\.[^/.]+)\Z")


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


_UNCHOSEN = ("a rule the project has not chosen (in ruff's defaults, not in its "
             "configuration), style or a deliberate idiom more often than a bug")
