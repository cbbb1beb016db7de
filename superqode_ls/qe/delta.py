"""``--since REF``: report only the findings a change introduced.

The same roles run twice: on the current state (the session itself) and on
the merge-base of REF with HEAD, in a second sandbox made at that commit
(the user's checkout is never switched). A finding is "introduced" when its
stable id (tool, rule, file, flagged text -- no line number) is not among the
base's, counted like a baseline: moved code keeps its id and is not new, a
third copy of a line the base had twice is.

Both runs look only at the files the change touched (tracked changes since
the merge-base plus untracked files): a finding in an untouched file has the
same id on both sides, so it could never be new, and the base run then costs
what the change costs, not what the repository costs.

Roles that target code rather than files (mutation testing, generated
tests) go further: they stay inside the lines the change touched
(``Since.lines``: added or modified lines of the current state, every line of
an untracked file), so a one-line change is not a whole module's mutants.

The base run failing fails the session (it cannot say what is new); a base
run that ran out of time only makes more findings look new, never fewer.
"""

from __future__ import annotations

import asyncio
import contextlib
import dataclasses
from collections import Counter
from collections.abc import Callable
from pathlib import Path
from typing import Any

from unidiff import PatchSet
from unidiff.errors import UnidiffParseError

from ..events import EventBus
from ..models import QualityReport, SinceBase
from ..workspace.errors import WorkspaceError
from ..workspace.git import GitError, git, repo_root, resolve_commit


@dataclasses.dataclass
class Since:
    ref: str
    merge_base: str
    changed: list[str]  # project-relative, existing files only
    # Per changed file, the lines (1-based, current numbering) the change
    # added or modified; a file with only deletions has an empty set.
    lines: dict[str, frozenset[int]] = dataclasses.field(default_factory=dict)


def resolve_since(project: Path, ref: str) -> Since:
    """The merge-base of REF and HEAD and what changed since; one-line
    ``WorkspaceError`` (exit 2, nothing created) when there is none."""
    root = repo_root(project)
    if root is None:
        raise WorkspaceError("--since needs a git repository")
    try:
        resolve_commit(root, ref)
    except GitError:
        raise WorkspaceError(f"--since: unknown revision {ref!r}") from None
    out = git(["merge-base", "HEAD", ref], root, check=False)
    base = out.stdout.decode().strip()
    if out.returncode != 0 or not base:
        raise WorkspaceError(f"--since {ref}: no merge-base with HEAD (unrelated histories?)")
    changed = changed_files(project, base)
    return Since(ref=ref, merge_base=base, changed=changed,
                 lines=changed_lines(project, base, changed))


def changed_files(project: Path, base: str) -> list[str]:
    """Files under ``project`` that differ from ``base`` in the working tree
    (committed, staged or not) plus untracked ones, relative to ``project``."""
    diff = git(["diff", "--name-only", "--no-renames", "--relative", "-z", base, "--", "."],
               project, check=False)
    new = git(["ls-files", "-z", "-o", "--exclude-standard", "--", "."], project, check=False)
    if diff.returncode != 0 or new.returncode != 0:
        raise WorkspaceError(f"--since: cannot list the changes since {base[:12]}")
    names = (diff.stdout + new.stdout).decode("utf-8", "surrogateescape").split("\0")
    return sorted({n for n in names if n and (project / n).is_file()})


def changed_lines(project: Path, base: str, changed: list[str]) -> dict[str, frozenset[int]]:
    """The lines of each file in ``changed`` that differ from ``base``: the
    diff's added lines for tracked files, every line of an untracked one."""
    if not changed:
        return {}
    out = git(["-c", "core.quotePath=false", "diff", "-U0", "--no-color", "--no-ext-diff", "--no-textconv", "--no-renames", "--relative",
               "--src-prefix=a/", "--dst-prefix=b/", base, "--", *changed], project, check=False)
    if out.returncode != 0:
        raise WorkspaceError(f"--since: cannot list the changed lines since {base[:12]}")
    try:
        patch = PatchSet(out.stdout.decode("utf-8", "surrogateescape"))
    except UnidiffParseError as e:
        raise WorkspaceError(f"--since: cannot read the diff since {base[:12]}: {e}") from None
    lines: dict[str, frozenset[int]] = {}
    for pf in patch:
        rel = pf.path
        lines[rel] = frozenset(ln.target_line_no for hunk in pf for ln in hunk
                               if ln.is_added and ln.target_line_no)
    for rel in changed:
        if rel not in lines:  # untracked: all of it is new
            try:
                n = len((project / rel).read_bytes().splitlines())
            except OSError:
                n = 0
            lines[rel] = frozenset(range(1, n + 1))
    return lines


class BaseRun:
    """The base half of a ``--since`` session, started beside the session.

    ``make`` builds a session from a request (the pipeline passes its own
    class: this module must not import the pipeline)."""

    def __init__(self, since: Since, request: Any, make: Callable[..., Any]):
        self.since = since
        overrides = _merge(request.config_overrides, {"qe": {"verify_max_fixes": 0}})
        # The base's fixes are never shown: no time goes into verifying them.
        self.request = dataclasses.replace(
            request, since=None, base_ref=since.merge_base, isolation="worktree", overlays={},
            baseline=None, update_baseline=False, config_overrides=overrides,
            files=since.changed if request.files is None else request.files,
        )
        self.session = make(self.request, bus=EventBus())
        self.report: QualityReport | None = None
        self._task: asyncio.Task | None = None

    def start(self) -> None:
        self._task = asyncio.ensure_future(self.session.run())

    async def known(self) -> Counter[str]:
        """Ids the base already had (raises when the base run failed)."""
        assert self._task is not None
        report: QualityReport = await asyncio.shield(self._task)
        self.report = report
        return Counter(f.id for f in report.findings)

    def info(self, introduced: int | None) -> SinceBase:
        r = self.report
        return SinceBase(
            ref=self.since.ref, merge_base=self.since.merge_base, files=len(self.request.files or []),
            base_session=r.session_id if r else None,
            base_report=r.artifacts.get("json") if r else None,
            base_complete=bool(r and not r.timed_out and not r.cancelled),
            introduced=introduced,
        )

    def cancel(self) -> None:
        self.session.cancel()

    async def close(self) -> None:
        """Wait for the base to end (cancelled when still running): its
        sandbox is reverted before the session returns."""
        task = self._task
        if task is None:
            return
        if not task.done():
            self.session.cancel()
        with contextlib.suppress(BaseException):
            await task


def _merge(a: dict, b: dict) -> dict:
    out = dict(a)
    for k, v in b.items():
        out[k] = _merge(out.get(k) or {}, v) if isinstance(v, dict) else v
    return out
