"""What the unit role keeps of the last run of a project's whole suite, for
quick mode's next run: how long it took (or where quick mode's cap stopped
it), when it ended, and its failures that are not the environment's.

A suite that did not fit quick mode's cap last time still runs in quick
mode, as much of it as fits, in an order that puts what matters first
(``quick_order``): one slow run (a loaded machine) never switches it off.
When the cap comes before any test ended, the tests were not run, said so
(never a pass), and the last run's failures are carried forward, the same
findings with the same ids, each marked "from the last run, <date>", when
the project's code and test configuration are what that run tested (a hash
of them); otherwise one line says why they are not. The file lives in SuperQode's home, never where a
session writes; what it holds is read as data only.
"""

from __future__ import annotations

import asyncio
import hashlib
import json
import os
import stat
from datetime import UTC, datetime
from pathlib import Path, PurePosixPath
from typing import Any

from ...config import superqode_home
from ...models import Finding
from ...workspace.artifacts import atomic_write
from ...workspace.paths import repo_key
from ._common import read_bounded, walk_files
from .base import RoleContext, RoleOutput

MAX_KEPT = 50  # failures kept to carry forward (more: a broken suite, counted)
MAX_FILES = 20000  # .py files whose hashes a record keeps (a larger tree: the rest unknown)
MAX_MODULES = 20000  # test modules whose durations a record keeps
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
    return code_keys(root)[0]


def code_keys(root: Path) -> tuple[str, dict[str, str]]:
    """``code_key`` and each ``.py`` file's own short hash (what changed
    since a run: its tests run first in quick mode)."""
    h = hashlib.sha256()
    files: dict[str, str] = {}
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
        if rel.endswith(".py") and len(files) < MAX_FILES:
            files[rel] = hashlib.sha256(body).hexdigest()[:12]
    return h.hexdigest(), files


def record(project: Path, seconds: float, stopped: str | None = None,
           found: list[Finding] | None = None, key: str | None = None,
           scope: list[str] | tuple[str, ...] = (), modules: dict[str, float] | None = None,
           files: dict[str, str] | None = None) -> None:
    """Keep a whole-suite run (``scope``: the paths the project's default
    command selects, none for all): its time, its failures that are not
    noise with ``key`` (``code_key`` of what it tested), how long each test
    module took (``modules``, merged over the last runs' so a run stopped
    at the cap adds to what is known) and ``files`` (``code_keys``' hashes)."""
    path = durations_file(project)
    at = datetime.now(UTC).strftime("%Y-%m-%d %H:%M UTC")
    failing = [f for f in found or [] if f.noise is None]
    kept = [f.model_dump(mode="json") for f in failing[:MAX_KEPT]]
    known = _numbers(_read(project, scope).get("modules"))
    known.update(_numbers(modules))
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        atomic_write(path, json.dumps({"seconds": round(seconds, 3),
                                       **({"stopped": stopped} if stopped is not None else {}),
                                       "failures": len(failing), "at": at,
                                       **({"scope": list(scope)} if scope else {}),
                                       **({"key": key, "found": kept} if key else {}),
                                       **({"modules": dict(list(known.items())[-MAX_MODULES:])}
                                          if known else {}),
                                       **({"files": files} if files else {})}))
    except OSError:
        pass  # only an optimisation for quick mode


def slow(project: Path, seconds: float, scope: list[str] | tuple[str, ...],
         modules: dict[str, float] | None) -> None:
    """Keep that a quick run was stopped before any test ended (and the
    module it was in), the last run's failures and their date as they were."""
    data = _read(project, scope) or {"failures": 0, **({"scope": list(scope)} if scope else {})}
    known = _numbers(data.get("modules"))
    known.update(_numbers(modules))
    data.update(seconds=round(seconds, 3), stopped="", modules=known)
    try:
        durations_file(project).parent.mkdir(parents=True, exist_ok=True)
        atomic_write(durations_file(project), json.dumps(data))
    except OSError:
        pass  # only an optimisation for quick mode


def _numbers(raw: Any) -> dict[str, float]:
    """A record's module durations, read as data (a file from another version)."""
    if not isinstance(raw, dict):
        return {}
    return {str(k): float(v) for k, v in raw.items()
            if isinstance(k, str) and isinstance(v, (int, float)) and v >= 0}


def fits(project: Path, limit: float, scope: list[str] | tuple[str, ...] = ()) -> bool:
    """Whether the suite ended within quick mode's ``limit`` last time (or
    was never run): it then runs in its own order."""
    took_s, stopped = last_duration(project, scope)
    return took_s is None or (took_s <= limit and stopped is None)


def quick_order(project: Path, scope: list[str] | tuple[str, ...], files: dict[str, str],
                tests: list[str]) -> tuple[dict[str, Any], str]:
    """The order quick mode runs a suite that did not fit its cap last time
    (the recorder plugin's ``$SUPERQODE_PYTEST_ORDER``), and the line that
    says it: the modules of the last run's failing tests first, then the
    test modules changed since (and those named after a changed module:
    ``test_views.py`` for ``views.py``), then those never timed, then the
    rest fastest first, so as much of the suite as fits runs."""
    data = _read(project, scope)
    failing = [str(f.get("file")) for f in data.get("found") or []
               if isinstance(f, dict) and isinstance(f.get("file"), str)]
    first = list(dict.fromkeys(failing))
    before = data.get("files") if isinstance(data.get("files"), dict) else {}
    changed_py = [rel for rel, digest in files.items() if before and before.get(rel) != digest]
    stems = {PurePosixPath(rel).stem for rel in changed_py}
    changed = [t for t in tests if t in changed_py or _named_after(t, stems)]
    seconds = _numbers(data.get("modules"))
    parts = [f"{len(first)} module(s) with the last run's failures"] if first else []
    if changed:
        parts.append(f"{len(changed)} changed or covering a changed file")
    untimed = sum(1 for t in tests if t not in seconds and t not in first and t not in changed)
    if untimed:
        parts.append(f"{untimed} not timed yet")
    parts.append("then the rest fastest first")
    return ({"first": first, "changed": changed, "seconds": seconds},
            "the suite did not fit quick mode's cap last time: it runs in this order: "
            + ", ".join(parts))


def _named_after(test: str, stems: set[str]) -> bool:
    name = PurePosixPath(test).stem
    return any(name in (f"test_{s}", f"{s}_test", f"test_{s}s") for s in stems if s)


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


async def not_run(ctx: RoleContext, limit: float, scope: list[str],
                  said: str) -> RoleOutput:
    """Quick mode's answer when its cap came before any test ended: the
    tests were not run, said in one line (never a pass), with the last
    run's failures carried forward where the code is the one it tested."""
    reason = (f"tests not run: quick mode's {limit:.0f} s cap came before the first test "
              f"ended ({said}); `--mode deep` runs the suite")
    if last_failures(ctx.project, scope):
        key = await asyncio.to_thread(code_key, ctx.sandbox)
        found, carried_said = carried(ctx.project, key, scope)
        return RoleOutput(status="incomplete", tool="pytest", findings=found,
                          reason=f"{reason}; {carried_said}")
    return RoleOutput(status="incomplete", tool="pytest", reason=reason)
