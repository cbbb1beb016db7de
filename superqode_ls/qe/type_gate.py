"""The project's own type check as part of "verified": where the project
declares a mypy configuration ([tool.mypy] in pyproject.toml, mypy.ini,
.mypy.ini, [mypy] in setup.cfg), the fixes that passed their tool and tests
are applied together (those of a file that go together) and mypy, with that
configuration, runs on the fixed files before and after: a file whose fixes
bring a new mypy error loses "verified" for all of them (one run cannot tell
which); fixes it could not check (no time left, mypy failed, a fix that does
not go with the others of its file) are "tool-verified only", said so.

Bounded: two mypy runs per session, within the session's budget. mypy runs
on the fixed files only: an error a fix causes in a module importing them
(a re-export dropped, a name another module imports from there) is not seen
here; such fixes are never verified anyway (ruff's unsafe ones, and those
verify_exports.py finds).
"""

from __future__ import annotations

import asyncio
import configparser
import tomllib
from collections import Counter
from collections.abc import Awaitable, Callable
from pathlib import Path

from ..models import Finding, Patch
from ..workspace.pyprojects import python_projects
from .patching import patch_files, write_copies
from .roles._patches import split_lines
from .roles.base import Role, RoleContext, RoleOutput
from .verify_aside import TreeBackup, leads_out
from .verify_copies import merged, pack, read_texts

# Seconds a gate needs at least: below that it is not started (and said).
_MIN_S = 5.0


def mypy_declared(root: Path) -> bool:
    for name in ("mypy.ini", ".mypy.ini"):
        if (root / name).is_file():
            return True
    try:
        with open(root / "pyproject.toml", "rb") as fh:
            if "mypy" in tomllib.load(fh).get("tool", {}):
                return True
    except (OSError, tomllib.TOMLDecodeError, UnicodeDecodeError):
        pass
    cfg = configparser.ConfigParser(interpolation=None)
    try:
        cfg.read(root / "setup.cfg", encoding="utf-8")
    except (configparser.Error, UnicodeDecodeError):
        return False
    return cfg.has_section("mypy")


def mypy_projects(root: Path) -> list[str]:
    """The folders (relative, POSIX; ``""``: the root) whose own
    configuration declares mypy: the root and each Python project below it
    (a monorepo's ``backend/`` with its ``[tool.mypy]``)."""
    folders = dict.fromkeys(["", *python_projects(root)])
    return [f for f in folders if mypy_declared(root / f if f else root)]


def in_projects(rel: str, folders: list[str]) -> bool:
    """Whether the repository-relative ``rel`` lies in one of ``folders``."""
    return any(not f or rel.startswith(f + "/") for f in folders)


def _demote(p: Patch, why: str) -> Patch:
    msg = (p.verification or "").removeprefix("verified: ").removeprefix("tool-verified only: ")
    return p.model_copy(update={"verified": False, "verified_by": "tool",
                                "verification": f"tool-verified only: {msg}; {why}"})


def _rejected(p: Patch, why: str) -> Patch:
    return p.model_copy(update={"verified": False, "verified_by": None,
                                "verification": f"not verified: {why}"})


async def type_gate(
    patches: dict[str, Patch], ids: list[str], root: Path, role: Role, ctx: RoleContext,
    deadline: float | None, check: Callable[[RoleContext, list[str]], Awaitable[RoleOutput]],
) -> None:
    """Check the accepted fixes among ``ids`` with the project's mypy
    (``check``: the type role's check of some files); ``patches`` is updated
    in place."""
    accepted = [patches[i] for i in ids if patches[i].verified_by is not None
                and patches[i].role != role.name]
    if not accepted:
        return
    loop = asyncio.get_running_loop()
    files_of = {p.id: (p.files or patch_files(p.diff)) for p in accepted}
    texts = await asyncio.to_thread(read_texts, root, {f for fs in files_of.values() for f in fs})
    copies: dict[str, str] = {}
    checked: dict[str, list[Patch]] = {}
    for p in accepted:
        if len(files_of[p.id]) != 1 or texts.get(files_of[p.id][0]) is None:
            patches[p.id] = _demote(p, "the type check ran on one-file fixes only")
    for rel in sorted({fs[0] for pid, fs in files_of.items() if len(fs) == 1}):
        text = texts.get(rel)
        if text is None:
            continue
        lines = split_lines(text)
        mine = [p for p in accepted if files_of[p.id] == [rel]]
        parts, left = pack(lines, mine)
        # The first copy holds the fixes that go together: those are checked.
        first = parts[0] if parts else []
        for p in left + [p for part in parts[1:] for p, _ in part]:
            patches[p.id] = _demote(p, "not type-checked (it does not go with the other fixes of its file)")
        if first:
            copies[rel] = merged(lines, list({p.diff: cs for p, cs in first}.values()))
            checked[rel] = list({p.id: p for p, _ in first}.values())
    for rel in [rel for rel in copies if leads_out(root, rel)]:
        # The project's tests ran before this: one may have swapped the file
        # (or its folder) for a link to the user's files, and SuperQode's own
        # process, which writes the copy, is not behind the barrier.
        del copies[rel]
        for p in checked.pop(rel):
            patches[p.id] = _rejected(p, "its file now leads out of the sandbox")
    if not copies:
        return
    files = sorted(copies)
    if deadline is not None and deadline - loop.time() < _MIN_S:
        for ps in checked.values():
            for p in ps:
                patches[p.id] = _demote(p, "type check not run: no time left in the session budget")
        return
    before = await check(ctx, files)
    after = None
    if before.status == "ok":
        backup = TreeBackup(root, files)  # mypy's plugins are the project's code
        try:
            write_copies(root, copies)
            after = await check(ctx, files)
        finally:
            backup.restore()
    # Fails closed: a check that did not run (timeout, mypy failed) verifies nothing.
    failed = after is None or after.status != "ok"
    why = (after or before).reason or (after or before).status
    for rel, ps in checked.items():
        new = [] if failed or after is None else _new_errors(
            [f for f in before.findings if f.file == rel], [f for f in after.findings if f.file == rel])
        for p in ps:
            if failed:
                patches[p.id] = _demote(p, f"the project's mypy could not check it ({why})")
            elif new:
                patches[p.id] = _rejected(p, f"mypy (the project's configuration) reports new errors "
                                             f"with this file's fixes: {'; '.join(new[:3])}")
            else:
                patches[p.id] = p.model_copy(update={
                    "verification": f"{p.verification}; the project's mypy passes no worse"})


def _new_errors(before: list[Finding], after: list[Finding]) -> list[str]:
    """mypy errors (rule and text, not line: the fixes move lines) that
    appeared."""
    was = Counter((f.rule_id, f.message) for f in before)
    out = []
    for f in after:
        key = (f.rule_id, f.message)
        if was[key] > 0:
            was[key] -= 1
        else:
            out.append(f"{f.rule_id}: {f.message}")
    return out
