"""What the unit role keeps of the last run of a project's whole suite, for
quick mode's next run: how long it took (or where quick mode's cap stopped
it), when it ended, and its failures that are not the environment's.

Quick mode does not start a suite that took longer than its cap last time.
Its failures are then carried forward, the same findings with the same ids,
each marked "from the last run, <date>", when the project's code and test
configuration are what that run tested (a hash of them); otherwise one line
says why they are not. The file lives in SuperQode's home, never where a
session writes; what it holds is read as data only.
"""

from __future__ import annotations

import asyncio
import hashlib
import json
import os
import re
import stat
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from ...config import superqode_home
from ...models import Finding
from ...workspace.artifacts import atomic_write
from ...workspace.paths import repo_key
from ._common import read_bounded, walk_files
from .base import RoleContext, RoleOutput

MAX_KEPT = 50  # failures kept to carry forward (more: a broken suite, counted)
# What a suite's result depends on besides the environment: the code, its
# tests and the configuration that runs them.
_CODE_SUFFIXES = (".py", ".pyi", ".pyx", ".toml", ".cfg", ".ini", ".lock", ".txt")
CARRIED = "carried"
_MAX_READ = 4 << 20


def durations_file(project: Path) -> Path:
    return superqode_home() / "unit-durations" / f"{repo_key(project)}.json"  # not session-writable


def _read(project: Path, scope: list[str] | tuple[str, ...] = ()) -> dict[str, Any]:
    """The last record of the suite ``scope`` selects (its paths; none: the
    whole suite); {} when the last run was of another selection (the
    project's default command changed, or an older record of all of it)."""
    try:
        data = json.loads(durations_file(project).read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return {}
    if not isinstance(data, dict) or data.get("scope", []) != list(scope):
        return {}
    return data


def last_duration(project: Path, scope: list[str] | tuple[str, ...] = ()
                  ) -> tuple[float | None, str | None]:
    """(seconds, how far a run stopped at quick mode's cap got: "" when not
    known, None when the run was not stopped)."""
    data = _read(project, scope)
    try:
        stopped = data.get("stopped")
        return float(data["seconds"]), stopped if isinstance(stopped, str) else None
    except (ValueError, KeyError, TypeError):
        return None, None


def last_failures(project: Path, scope: list[str] | tuple[str, ...] = ()) -> str | None:
    """"3 failing test(s) (2026-11-27 12:40 UTC)": the failing tests (not the
    environment's) of the last recorded run and when it ended, or None when
    it had none."""
    data = _read(project, scope)
    try:
        count = int(data.get("failures") or 0)
    except (ValueError, TypeError):
        return None
    if count <= 0:
        return None
    at = data.get("at")
    return f"{count} failing test(s)" + (f" ({at})" if isinstance(at, str) and at else "")


def code_key(root: Path) -> str:
    """A hash of the sources, tests and configuration under ``root``."""
    h = hashlib.sha256()
    for rel in walk_files(root, _CODE_SUFFIXES):
        # The sandbox, after the project's tests ran in it: no link followed, no
        # FIFO waited on (read_bounded); a data file named .txt over the bound
        # counts by its size.
        path = root / rel
        body = read_bounded(path, _MAX_READ)
        if body is None:
            try:
                st = os.lstat(path)
                body = (b"\0size %d" % st.st_size if stat.S_ISREG(st.st_mode)
                        else b"\0not a file")
            except OSError:
                body = b"\0unreadable"
        h.update(rel.encode("utf-8", "surrogateescape") + b"\0" + body + b"\0")
    return h.hexdigest()


def record(project: Path, seconds: float, stopped: str | None = None,
           found: list[Finding] | None = None, key: str | None = None,
           scope: list[str] | tuple[str, ...] = ()) -> None:
    """Keep a whole-suite run (``scope``: the paths the project's default
    command selects, none for all): its time, and its failures that are
    not noise with ``key`` (``code_key`` of what it tested)."""
    path = durations_file(project)
    at = datetime.now(UTC).strftime("%Y-%m-%d %H:%M UTC")
    failing = [f for f in found or [] if f.noise is None]
    kept = [f.model_dump(mode="json") for f in failing[:MAX_KEPT]]
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        atomic_write(path, json.dumps({"seconds": round(seconds, 3),
                                       **({"stopped": stopped} if stopped is not None else {}),
                                       "failures": len(failing), "at": at,
                                       **({"scope": list(scope)} if scope else {}),
                                       **({"key": key, "found": kept} if key else {})}))
    except OSError:
        pass  # only an optimisation for quick mode


def carried(project: Path, key: str, scope: list[str] | tuple[str, ...] = ()
            ) -> tuple[list[Finding], str]:
    """The last run's failures carried forward when ``key`` is the code it
    tested, with the line that says so; else no findings and the line that
    says why not."""
    data = _read(project, scope)
    said = last_failures(project, scope) or "no failing test"
    at = data.get("at") if isinstance(data.get("at"), str) else "an earlier run"
    kept = data.get("found")
    if not isinstance(kept, list) or not data.get("key"):
        # (a record from an older SuperQode, which kept no findings)
        return [], (f"the last run had {said}, not re-checked here: `--mode deep` runs "
                    "the suite again")
    if data.get("key") != key:
        return [], (f"the last run had {said}, not carried forward: the project's code or "
                    "test configuration changed since")
    out = []
    for raw in kept:
        try:
            f = Finding.model_validate(raw)
        except ValueError:
            continue  # (a file from another version of SuperQode)
        out.append(f.model_copy(update={
            "message": f"from the last run, {at}: {f.message}",
            "tags": [*f.tags, CARRIED]}))
    count = int(data.get("failures") or 0)
    more = f" ({count - len(out)} more not kept)" if count > len(out) else ""
    return out, (f"the last run's {len(out)} failing test(s) carried forward from {at}{more}: "
                 "the project's code and test configuration are unchanged since")


async def ran_long(ctx: RoleContext, limit: float, scope: list[str]) -> RoleOutput | None:
    """Quick mode's answer when the suite (``scope``) ran past ``limit``
    last time: not started, the last run's failures carried forward where
    the code is the one it tested; None when it is to run."""
    took_s, stopped = last_duration(ctx.project, scope)
    if took_s is None or took_s <= limit:
        return None
    # "took 20 s ... only under 20 s" read as a contradiction when the last
    # run was the one stopped at the cap; "ran past the cap (253 of 253 tests
    # run)" as another when the cap came after its last test.
    counts = re.match(r"([\d,]+) of ([\d,]+) test", stopped or "")
    if counts and counts.group(1) == counts.group(2):
        stopped = None
    took = (f"the test suite ran past quick mode's {limit:.0f} s cap last time"
            f"{f' ({stopped})' if stopped else ''}" if stopped is not None
            else f"the test suite took {took_s:.0f} s last time, over quick mode's {limit:.0f} s")
    reason = f"{took}: not started in quick mode (`--mode deep` runs it fully)"
    if last_failures(ctx.project, scope):
        # Not a pass (the verdict stays what it was): the last run's
        # failures, carried forward where the code is the one it tested,
        # else one line saying why not.
        key = await asyncio.to_thread(code_key, ctx.sandbox)
        found, said = carried(ctx.project, key, scope)
        return RoleOutput(status="incomplete", tool="pytest", findings=found,
                          reason=f"{reason}; {said}")
    return RoleOutput(status="skipped", reason=reason, tool="pytest")
