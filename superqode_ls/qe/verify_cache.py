"""Quick mode's early fix verdicts kept between runs by SuperQode's own process.

The early verification (verify_early.py) judges a role's fixes on a tree of
the session's own: copies of every fixed file written, the role's tool re-run
on them round after round (on pygoat, 69 ruff fixes: most of a warm run's
verification). An unchanged project's next run judged the same fixes of the
same files again and reached the same verdicts. What those verdicts depend
on is kept in the key, so a verdict is kept only for all of them as they were:

- the sandbox's tree, whole (``noise_cache.tree_state``: every entry, files
  by their bytes and run bit, links by their target, never followed): the
  fixed files, the configuration the tool reads beside them (``pyproject.toml``,
  ``ruff.toml``, a ``--target-version`` from a declared Python) and whatever
  else a rule reads;
- the role's findings before the fixes, the fixes themselves (their diffs,
  the findings they claim), the role's name and its context's settings
  (SuperQode's configuration, the mode, the selected files, trust);
- the tool: its resolved path and that file's inode, size and times (a new
  version installed is another file), the ``<TOOL>_*`` variables of this
  process's environment and the tool's user-level configuration folder
  (every entry's bytes);
- ``noise_cache.CODE``: the source of every module of the package, the
  format's version and the interpreter's.

Why no test judged each fixed file (``FixTests.why_none``) is kept beside the
verdicts, not in the key: a kept entry is used only where it is the same now,
file by file, and the verification step checks it again before taking the
verdicts (``EarlyVerify.take``).

Fail closed: a verdict is kept only where every entry of the sandbox has the
same inode, size, times and change time after the re-runs as when its digest
was taken (the early tree links to the sandbox's other entries: a file a
session's process changed meanwhile and put back is seen by its change
time); verdicts not reached (out of time, a failed re-run: the early route
gave up) are never kept. A file of another format, code or shape, a link in
its place or one outside the project's folder is read as nothing (the fixes
are judged again). Who writes: SuperQode's process alone; the folder is
outside ``$SUPERQODE_HOME/cache`` and no session's process may write SuperQode's
home (tests/redteam/test_verify_cache.py). Bounded: one file a project,
``MAX_ENTRIES`` entries, ``MAX_BYTES``; a tree of more than ``FILES_A_FIX``
entries a fix (or ``noise_cache.MAX_FILES``) is not read (its digest would cost
what the re-runs do).
"""

from __future__ import annotations

import asyncio
import hashlib
import json
import os
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ..config import superqode_home
from ..models import Finding, Patch
from ..workspace.artifacts import atomic_write
from ..workspace.paths import repo_key
from . import noise_cache
from .fix_judge import VerifyResult
from .patching import patch_files
from .roles._common import read_bounded
from .roles.base import Role, RoleContext, tool_path

VERSION = 1
MAX_BYTES = 4_000_000
MAX_ENTRIES = 4  # a project's settings and roles, a few of them
# Reading the tree costs about 40 us an entry; judging a fix on copies costs
# well over a millisecond of the tool's and SuperQode's time (pygoat: 69 fixes,
# ~0.7 s): a tree of more entries than this a fix is not read.
FILES_A_FIX = 40
_NAME = "verdicts.json"
_RESULT_KEYS = {"patch_id": str, "verified": bool, "message": str, "removed": list, "new": list}


def cache_file(project: Path) -> Path:
    """Not under ``$SUPERQODE_HOME/cache``: only SuperQode's process writes
    here, never a session's."""
    return superqode_home() / "fix-verdicts" / repo_key(project) / _NAME


def tool_state(tool: str | None) -> str:
    """The tool's binary (resolved, its stamp), its variables and its user
    configuration: what makes another version or another setting."""
    h = hashlib.sha256()
    path = tool_path(tool) if tool else None
    if path is not None:
        real = os.path.realpath(path)
        try:
            st = os.stat(real)
            h.update(f"{real}\0{st.st_ino}\0{st.st_size}\0{st.st_mtime_ns}\0{st.st_ctime_ns}\0".encode())
        except OSError:
            h.update(f"{real}\0missing\0".encode())
    if tool:
        prefix = tool.upper().replace("-", "_") + "_"
        h.update(json.dumps(sorted((k, v) for k, v in os.environ.items() if k.startswith(prefix))).encode())
        config_home = Path(os.environ.get("XDG_CONFIG_HOME") or Path.home() / ".config")
        user = config_home / tool
        if os.path.lexists(user):
            state = noise_cache.tree_state(user, contents=True, limit=200) if user.is_dir() else None
            h.update(b"user\0" + (state[0] if state is not None else "unreadable").encode())
    return h.hexdigest()


def settings_state(ctx: RoleContext) -> str:
    # The configuration's repr, not its JSON: a forked run of the warm helper
    # would build pydantic's serializer for it anew every run (~30 ms); a
    # repr that differs (a set's order) only misses.
    return json.dumps({"config": repr(ctx.config), "mode": ctx.mode, "files": ctx.files, "folder": ctx.folder,
                       "trusted": ctx.trusted, "lines": sorted((k, sorted(v)) for k, v in (ctx.lines or {}).items())},
                      sort_keys=True, default=str)


@dataclass
class Kept:
    """The early verdicts on one role's fixes, with the reason file by file
    no test judged them."""

    results: list[VerifyResult]
    whys: dict[str, str]


@dataclass
class VerdictKey:
    """The key of one role's fixes on one tree, and the tree's stamps as
    they were when its digest was taken (checked again before keeping)."""

    project: Path
    root: Path
    key: str
    digest: str
    stamps: dict[str, tuple]
    limit: int

    @classmethod
    def make(cls, project: Path, root: Path, role: Role, ctx: RoleContext,
             found: list[Finding], todo: list[Patch]) -> VerdictKey | None:
        """None where the tree is too large to be worth reading, or cannot be."""
        limit = min(noise_cache.MAX_FILES, FILES_A_FIX * len(todo))
        state = noise_cache.tree_state(root, contents=True, limit=limit)
        if state is None:
            return None
        h = hashlib.sha256(f"{VERSION}\0{noise_cache.CODE}\0{state[0]}\0{role.name}\0".encode())
        h.update(tool_state(getattr(role, "tool", None)).encode() + b"\0")
        h.update(settings_state(ctx).encode() + b"\0")
        for f in found:
            h.update(f.model_dump_json().encode("utf-8", "surrogatepass") + b"\0")
        h.update(b"fixes\0")
        for p in sorted(todo, key=lambda p: p.id):
            h.update(p.model_dump_json().encode("utf-8", "surrogatepass") + b"\0")
        return cls(project, root, h.hexdigest(), state[0], state[1], limit)

    def read(self) -> Kept | None:
        raw = read_entries(cache_file(self.project)).get(self.key)
        try:
            return _kept(raw) if raw is not None else None
        except (TypeError, ValueError, KeyError):
            return None

    def keep(self, kept: Kept, written: Sequence[str] = ()) -> bool:
        """Kept where the tree is as it was when its digest was taken; True
        when written. ``written``: files of the tree the verifier itself set
        aside and put back, copies in their place meanwhile (their change
        times, and their folders' times, are the verifier's): those are
        compared by their bytes, read again, and every other entry by its
        stamp."""
        after = noise_cache.tree_state(self.root, contents=bool(written), limit=self.limit)
        if after is None:
            return False
        if written:
            if after[0] != self.digest:
                return False
            folders = {str(p) if str(p) != "." else "" for rel in written for p in Path(rel).parents}
            same = (after[1].keys() == self.stamps.keys() and all(
                after[1][rel] == st or (rel in written and _same_file(after[1][rel], st))
                or (rel in folders and _same_folder(after[1][rel], st))
                for rel, st in self.stamps.items()))
        else:
            same = after[1] == self.stamps
        if not same:
            return False  # changed while the tool read it
        return store_entry(cache_file(self.project), self.key,
                           {"results": [_dump(r) for r in kept.results], "whys": kept.whys})


def _same_file(a: tuple, b: tuple) -> bool:
    """The same file (inode, size, mtime, ctime, mode), its change time aside:
    renamed aside and back."""
    return a[:3] == b[:3] and a[4] == b[4]


def _same_folder(a: tuple, b: tuple) -> bool:
    """The same folder, its times aside: copies made and removed in it."""
    return a[0] == b[0] and a[4] == b[4]


async def lookup(project: Path, root: Path, role: Role, ctx: RoleContext, found: list[Finding],
                 todo: list[Patch], why_none: Callable[[list[str]], Awaitable[str | None]],
                 ) -> tuple[VerdictKey | None, Kept | None]:
    """(the key of ``todo`` on the tree at ``root``, the verdicts an earlier
    run reached for them where they hold now: every result one of ``todo``'s,
    each fixed file's reason no test judges it the same as now)."""
    key = await asyncio.to_thread(VerdictKey.make, project, root, role, ctx, found, todo)
    kept = await asyncio.to_thread(key.read) if key is not None else None
    if kept is None:
        return key, None
    files = {f for p in todo for f in (p.files or patch_files(p.diff))}
    if set(kept.whys) != files or not {r.patch_id for r in kept.results} <= {p.id for p in todo}:
        return key, None
    for rel in sorted(files):
        if await why_none([rel]) != kept.whys[rel]:
            return key, None
    return key, kept


async def store(key: VerdictKey | None, results: list[VerifyResult], whys: dict[str, str | None],
                written: Sequence[str] = ()) -> None:
    """``results`` kept under ``key`` where no test judged any of the files
    (``whys``: each one's reason) and the tree held still (``VerdictKey.keep``)."""
    if key is None or not whys or any(w is None for w in whys.values()):
        return
    await asyncio.to_thread(key.keep, Kept(list(results), {k: w for k, w in whys.items() if w}),
                            list(written))


def _dump(r: VerifyResult) -> dict[str, Any]:
    return {"patch_id": r.patch_id, "verified": r.verified, "message": r.message,
            "removed": list(r.removed), "new": list(r.new), "level": r.level}


def _kept(raw: Any) -> Kept:
    if not isinstance(raw, dict) or not isinstance(raw.get("results"), list) or not isinstance(
            raw.get("whys"), dict):
        raise TypeError("entry")
    results = []
    for r in raw["results"]:
        if not isinstance(r, dict) or any(not isinstance(r.get(k), t) for k, t in _RESULT_KEYS.items()):
            raise TypeError("result")
        if not all(isinstance(x, str) for x in (*r["removed"], *r["new"])):
            raise TypeError("ids")
        if r.get("level") not in (None, "tool", "tests"):
            raise ValueError("level")
        results.append(VerifyResult(r["patch_id"], r["verified"], r["message"], list(r["removed"]),
                                    list(r["new"]), r["level"]))
    whys = raw["whys"]
    if not all(isinstance(k, str) and isinstance(v, str) for k, v in whys.items()):
        raise TypeError("whys")
    return Kept(results, dict(whys))


def store_entry(path: Path, key: str, value: Any, version: int = VERSION,
                max_entries: int = MAX_ENTRIES, max_bytes: int = MAX_BYTES) -> bool:
    """Write ``value`` under ``key`` into the file at ``path``, newest last,
    the oldest entries dropped past ``max_entries``; nothing written (False)
    when the file would pass ``max_bytes`` or cannot be written."""
    entries = read_entries(path, version, max_bytes)
    entries.pop(key, None)
    entries[key] = value
    while len(entries) > max_entries:
        entries.pop(next(iter(entries)))
    data = json.dumps({"version": version, "code": noise_cache.CODE, "entries": entries},
                      separators=(",", ":"))
    if len(data) > max_bytes:
        return False
    try:
        atomic_write(path, data)
    except OSError:
        return False
    return True


def read_entries(path: Path, version: int = VERSION, max_bytes: int = MAX_BYTES) -> dict[str, Any]:
    """The entries of the file at ``path``: nothing where it is a link (never
    followed), not a plain file, over ``max_bytes``, or of another format
    (``version``) or code."""
    raw = read_bounded(path, max_bytes)
    try:
        data = None if raw is None else json.loads(raw)
    except ValueError:
        return {}
    if not (isinstance(data, dict) and data.get("version") == version
            and data.get("code") == noise_cache.CODE and isinstance(data.get("entries"), dict)):
        return {}
    return data["entries"]

