"""type_tester: mypy on the project's package(s).

mypy resolves third-party imports in the project's own environment
(``--python-executable``, the interpreter ``_pyenv`` finds; only in trusted
folders, since asking it runs it). Imports still missing there are ignored
rather than reported; the project's own mypy settings
(mypy.ini, setup.cfg, pyproject.toml) still apply. mypy's cache goes to a
per-project directory, ``$SUPERQODE_HOME/cache/<repo-key>/mypy``, never into
the sandbox; only the mypy process may write it (``_mypy_cache``).
"""

from __future__ import annotations

import contextlib
import io
import json
import re
import tempfile
import tokenize
from collections.abc import Iterator
from dataclasses import replace
from pathlib import Path
from typing import Any

from ...models import Evidence, Finding, Range, Severity
from ...workspace.extras import needs
from ...workspace.paths import project_cache
from ...workspace.proc import ProcResult
from ._common import SKIP_DIRS, SourceCache, assign_ids, rel_to, selected_files, tail, walk_files
from ._mypy_cache import mypy_cache
from ._pyenv import project_python
from ._unit_projects import each_project, files_in, merged, moved, projects, sub_context
from .base import Role, RoleContext, RoleOutput, ToolFailed, reported, tool_path

PY_SUFFIXES = (".py", ".pyi")

_TEXT_LINE = re.compile(
    r"^(?P<file>.+?):(?P<line>\d+):(?:(?P<col>\d+):)?(?:(?P<eline>\d+):(?P<ecol>\d+):)?"
    r" (?P<sev>error|note|warning): (?P<msg>.*?)(?:  \[(?P<code>[\w-]+)\])?$"
)

_LOW = {"import-untyped", "import-not-found", "import", "no-untyped-def", "no-untyped-call"}
_INFO = {"annotation-unchecked", "unused-ignore", "unused-coroutine"}
_HIGH = {"syntax"}


def mypy_severity(code: str | None) -> Severity:
    if code in _HIGH:
        return Severity.high
    if code in _LOW:
        return Severity.low
    if code in _INFO:
        return Severity.info
    return Severity.medium


def find_targets(root: Path) -> list[str]:
    """Top-level packages (at the root or under ``src/``); else top-level modules."""
    targets: list[str] = []
    for base in (root, root / "src"):
        if not base.is_dir():
            continue
        for d in sorted(base.iterdir()):
            if (
                d.is_dir()
                and not d.is_symlink()
                and d.name not in SKIP_DIRS
                and d.name not in ("tests", "test", "docs", "examples")
                and not d.name.startswith(".")
                and (d / "__init__.py").is_file()
            ):
                targets.append(d.relative_to(root).as_posix())
    if targets:
        return targets
    return [
        p.name
        for p in sorted(root.glob("*.py"))
        if p.is_file()
        and p.name not in ("setup.py", "conftest.py")
        and not p.name.startswith("test_")
    ]


class TypeTester(Role):
    name = "type_tester"
    tool = "mypy"
    description = "mypy on the package(s) found; missing third-party imports are ignored"
    modes = frozenset({"deep"})
    uses_project_python = True

    def unavailable(self, config=None) -> str | None:
        if tool_path("mypy") is None:
            return needs("mypy")
        return None

    async def run(self, ctx: RoleContext) -> RoleOutput:
        subs = await projects(ctx)
        if subs is not None:  # a monorepo: each project from its folder, with its interpreter
            return await each_project(ctx, subs, self._run_one, tool="mypy", python=ctx.trusted,
                                      nothing="nothing to check")
        return await self._run_one(ctx)

    async def _run_one(self, ctx: RoleContext) -> RoleOutput:
        if ctx.files is None:
            targets = find_targets(ctx.sandbox)
            if not targets:
                return RoleOutput(
                    status="skipped", reason="no Python package or module found", tool="mypy"
                )
            return await reported(self._check(ctx, targets, None))
        files = selected_files(ctx.sandbox, ctx.files, PY_SUFFIXES)
        if not files:
            return RoleOutput(
                status="skipped", reason="none of the selected files is Python", tool="mypy"
            )
        return await reported(self._check(ctx, files, set(files)))

    async def recheck(self, ctx: RoleContext, files: list[str]) -> list[Finding]:
        return (await self.check_files(ctx, files)).findings

    async def check_files(self, ctx: RoleContext, files: list[str]) -> RoleOutput:
        """mypy on ``files`` with the project's configuration, with its
        status (the fix verifier's type check fails closed on a failed run).
        In a monorepo, each project's files with that project's."""
        subs = await projects(ctx)
        if subs is not None:
            parts: list[tuple[str, RoleOutput]] = []
            for sub in subs:
                if mine := files_in(files, sub):
                    out = await self.check_files(
                        await sub_context(ctx, sub, mine, python=ctx.trusted), mine)
                    parts.append((sub, replace(out, findings=moved(out.findings, sub))))
            return merged(parts) if parts else RoleOutput(tool="mypy")
        files = selected_files(ctx.sandbox, files, PY_SUFFIXES)
        if not files:
            return RoleOutput(tool="mypy")
        return await reported(self._check(ctx, files, set(files)))

    async def _check(
        self, ctx: RoleContext, targets: list[str], only: set[str] | None
    ) -> RoleOutput:
        mypy = tool_path("mypy")
        if mypy is None:
            return RoleOutput(status="skipped", reason=self.unavailable(), tool="mypy")
        # One file mypy cannot decode stops the whole run: leave such files
        # out and say which.
        undecodable = _undecodable(ctx.sandbox, targets)
        targets = [t for t in targets if t not in undecodable]
        if not targets:
            return RoleOutput(status="skipped", tool="mypy",
                              reason=_undecodable_reason(undecodable))
        excludes = [a for rel in undecodable for a in ("--exclude", f"(^|/){re.escape(rel)}$")]
        where: list[str] = []
        interpreter = None
        if ctx.trusted or ctx.python is not None:
            py = await project_python(ctx)
            if not py.own:
                where = ["--python-executable", py.python]
                interpreter = f"imports resolved in {py.shown(ctx.project)}"
        with _cache_dir(ctx.project) as shared:
            async with mypy_cache(ctx, shared, where) as (cache, env, where):
                res, json_mode = await _run_mypy(
                    ctx, [mypy, *excludes, *where, "--cache-dir", cache], targets, env)
        if res.timed_out:
            raise ToolFailed("mypy", "mypy ran out of time", status="timeout")
        records = _parse_json(res.stdout) if json_mode else _parse_text(res.stdout)
        if res.returncode not in (0, 1) and not records:
            reason = tail(res.stderr or res.stdout) or f"mypy exited with {res.returncode}"
            raise ToolFailed("mypy", f"mypy failed: {reason}")
        findings = self._findings(ctx.sandbox, records, only)
        notes = [_undecodable_reason(undecodable) if undecodable else None, interpreter]
        return RoleOutput(findings=findings, tool="mypy", reason="; ".join(n for n in notes if n) or None)

    def _findings(
        self, root: Path, records: list[dict[str, Any]], only: set[str] | None
    ) -> list[Finding]:
        src = SourceCache(root)
        findings: list[Finding] = []
        for r in records:
            rel = rel_to(root, str(r.get("file") or ""))
            if only is not None and rel not in only:
                continue
            line = max(1, int(r.get("line") or 1))
            if r.get("severity") == "note":
                # A note explains the error just before it.
                if findings and findings[-1].file == rel:
                    findings[-1].evidence.append(
                        Evidence(message=str(r.get("message")), file=rel, line=line)
                    )
                continue
            code = r.get("code") or (
                "syntax" if "syntax" in str(r.get("message")).lower() else "misc"
            )
            message = str(r.get("message") or "")
            hint = r.get("hint")
            raw_col = r.get("column")
            col = raw_col + 1 if isinstance(raw_col, int) and raw_col >= 0 else 1
            end_line = r.get("end_line")
            end_col = r.get("end_column")
            findings.append(
                Finding(
                    role=self.name,
                    tool="mypy",
                    rule_id=code,
                    title=message if len(message) <= 120 else message[:117] + "...",
                    message=f"{message}\n{hint}" if hint else message,
                    severity=mypy_severity(code),
                    confidence=0.5 if code in _LOW else 0.8,
                    category="types",
                    file=rel,
                    range=Range(
                        start_line=line,
                        start_col=max(1, col),
                        end_line=end_line
                        if isinstance(end_line, int) and end_line >= line
                        else None,
                        end_col=int(end_col) + 1
                        if isinstance(end_col, int) and end_col >= 0
                        else None,
                    ),
                    tags=["mypy"],
                    help_uri=f"https://mypy.readthedocs.io/en/stable/error_code_list.html#code-{code}",
                    snippet=src.line(rel, line),
                )
            )
        return assign_ids(findings)


async def _run_mypy(ctx: RoleContext, head: list[str], targets: list[str],
                    env: dict[str, str] | None) -> tuple[ProcResult, bool]:
    """mypy's result, and whether its output is JSON."""
    common = [
        "--ignore-missing-imports",
        "--follow-imports=silent",
        "--show-column-numbers",
        "--show-error-end",
        "--show-error-codes",
        "--no-error-summary",
        "--hide-error-context",
        "--no-color-output",
        "--no-pretty",
    ]
    res = await ctx.run([head[0], "-O", "json", *head[1:], *common, "--", *targets], env=env)
    if res.returncode == 2 and "unrecognized arguments" in res.stderr:
        # mypy older than 1.11 has no JSON output.
        return await ctx.run([*head, *common, "--", *targets], env=env), False
    return res, True


def _undecodable(root: Path, targets: list[str]) -> list[str]:
    """Python files under ``targets`` that do not decode in their declared
    encoding (PEP 263, default UTF-8), e.g. Latin-1 text or binary data."""
    files: list[str] = []
    for t in targets:
        p = root / t
        if p.is_dir():
            files.extend(f"{t}/{rel}" for rel in walk_files(p, PY_SUFFIXES))
        elif p.is_file():
            files.append(t)
    bad = []
    for rel in files:
        try:
            rel.encode("utf-8")  # mypy stops with an internal error on such a name
            data = (root / rel).read_bytes()
            encoding, _ = tokenize.detect_encoding(io.BytesIO(data).readline)
            data.decode(encoding)
        except (OSError, SyntaxError, UnicodeError, LookupError):
            bad.append(rel)
    return bad


def _undecodable_reason(files: list[str], shown: int = 5) -> str:
    more = f" and {len(files) - shown} more" if len(files) > shown else ""
    names = [f.encode("utf-8", "surrogateescape").decode("utf-8", "replace") for f in files[:shown]]
    return (f"skipped {len(files)} file(s) that are not valid text in their encoding "
            f"or have a name that is not UTF-8: {', '.join(names)}{more}")


@contextlib.contextmanager
def _cache_dir(project: Path) -> Iterator[str]:
    """mypy's cache for this project, outside every sandbox, in the project's
    own cache folder (``paths.project_cache``): only this project's sessions
    can write it, so an entry one of them planted (mypy trusts an entry whose
    source is unchanged) cannot change another project's findings. A warm
    cache (typeshed above all) makes mypy several times faster. A temporary
    one when SuperQode's home is not writable."""
    path = project_cache(project) / "mypy"
    try:
        path.mkdir(parents=True, exist_ok=True)
    except OSError:
        with tempfile.TemporaryDirectory(prefix="superqode-mypy-") as tmp:
            yield tmp
        return
    yield str(path)


def _parse_json(stdout: str) -> list[dict[str, Any]]:
    out = []
    for line in stdout.splitlines():
        line = line.strip()
        if not line.startswith("{"):
            continue
        try:
            rec = json.loads(line)
        except ValueError:
            continue
        if isinstance(rec, dict) and "file" in rec:
            out.append(rec)
    return out


def _parse_text(stdout: str) -> list[dict[str, Any]]:
    """Text output in the same shape as the JSON records (0-based columns)."""
    out: list[dict[str, Any]] = []
    for line in stdout.splitlines():
        m = _TEXT_LINE.match(line.rstrip())
        if not m:
            continue
        col = int(m["col"]) - 1 if m["col"] else -1
        out.append(
            {
                "file": m["file"],
                "line": int(m["line"]),
                "column": col,
                "end_line": int(m["eline"]) if m["eline"] else None,
                "end_column": int(m["ecol"]) - 1 if m["ecol"] else None,
                "message": m["msg"],
                "hint": None,
                "code": m["code"],
                "severity": m["sev"],
            }
        )
    return out
