"""The verification step's verdicts kept between runs (verify_step.verify):
an unchanged project's next run takes them instead of trying its fixes again.

A fix's verdict depends on the fix, the files it changes, the tests that
import them and whatever those import, the environment the tests ran in, the
tool that re-checked it and the type checker's configuration. The key holds
all of them, as coarse as it must be to hold them:

- the sandbox's tree, whole (``noise_cache.tree_state``: every entry by its
  bytes and run bit, links by their target): the fixed files, the covering
  tests, the conftests and every module they import, the configuration the
  tools read;
- the environment the tests run with: the interpreter (its real path and
  stamp) and the state of its installed packages (each site-packages
  folder's stamp moves when anything is installed or removed), and why it is
  not ready where it is not (``ProjectPython.setup``);
- the step's settings: whole suite or covering tests, trust, the type gate,
  the sandbox's isolation;
- each fix's role: its tool (binary, variables, user configuration) and its
  context's settings, and the role's findings before the fixes;
- the fix itself (its diff, files and the findings it claims);
- ``noise_cache.CODE``: SuperQode's own code and the interpreter's version.

Kept: the verdicts that say something of the fix (verified, tool-verified
only, rejected); never a "not verified" that says the step could not judge
the fix (out of time, its re-check cut off). A tool-verified one whose
covering tests or type check did not finish is kept as it is (``keepable``).
Kept only where every entry of the key's tree is as it was after the step
(the verifier puts every file back; one changed or gone keeps nothing; one
the tests added is theirs). A file of another format, code or
shape, or a link in its place, is read as nothing. Who writes: SuperQode's
process alone, outside ``$SUPERQODE_HOME/cache``. Bounded: one file a
project, ``MAX_ENTRIES`` runs' keys, ``MAX_BYTES``.
"""

from __future__ import annotations

import asyncio
import hashlib
import json
import os
import stat
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ..config import superqode_home
from ..models import Finding, Patch
from ..workspace.paths import repo_key
from . import noise_cache
from .probe_cache import site_dirs
from .roles.base import Role, RoleContext
from .verify_cache import read_entries, settings_state, store_entry, tool_state

VERSION = 1
MAX_BYTES = 4_000_000
MAX_ENTRIES = 2  # the tree as it is and as it was; a third run of another tree drops the oldest
_NAME = "step-verdicts.json"
# Verdicts that say the step could not judge the fix this time (verify_step,
# fix_tests, covering, type_gate wording): never kept.
TRANSIENT = ("no time left", "did not finish", "not run yet", "still being built",
             "type check not run", "could not run", "slow to start", "had not started",
             "ran out of time", "over the verification cap", "did not run")
_FIELDS = {"verified": bool, "verification": str}


def cache_file(project: Path) -> Path:
    """Not under ``$SUPERQODE_HOME/cache``: only SuperQode's process writes here."""
    return superqode_home() / "fix-verdicts" / repo_key(project) / _NAME


def _env_state(python: Any) -> str | None:
    """The interpreter and its packages' state; None where they cannot be
    told apart (no site-packages found): then nothing is kept."""
    if python is None:
        return "none"
    exe, prefix = getattr(python, "python", None), getattr(python, "prefix", None)
    if not exe or not prefix:
        return None
    sites = site_dirs(prefix)
    if not sites:
        return None
    try:
        st = os.stat(exe)
        parts = [os.path.realpath(exe), str(st.st_mtime_ns), str(getattr(python, "setup", None))]
        parts += [f"{s}\0{s.stat().st_mtime_ns}" for s in sites]
    except OSError:
        return None
    return "\0".join(parts)


def tree_entries(root: Path) -> dict[str, str] | None:
    """Every entry of the tree at ``root`` -> its digest (a file's bytes and
    run bit, a link's target, "d" for a folder); None past ``noise_cache``'s
    bounds or where the tree cannot be read. Entry by entry, so that the tree
    after the step can be told from the key's by what changed, not only
    whether something did."""
    out: dict[str, str] = {}
    total = 0
    top = os.fspath(root)
    try:
        for dirpath, dirnames, filenames in os.walk(top, onerror=_raise):
            dirnames.sort()
            rel_dir = os.path.relpath(dirpath, top)
            for name in sorted(filenames) + dirnames:
                path = os.path.join(dirpath, name)
                rel = name if rel_dir == "." else f"{rel_dir}/{name}"
                st = os.lstat(path)
                if stat.S_ISLNK(st.st_mode):
                    out[rel] = "l" + os.readlink(path)
                elif stat.S_ISDIR(st.st_mode):
                    out[rel] = "d"
                elif stat.S_ISREG(st.st_mode):
                    total += st.st_size
                    if total > noise_cache.MAX_TREE_BYTES:
                        return None
                    out[rel] = "f" + noise_cache._file_digest(path, st, rel == ".git").decode()
                else:
                    out[rel] = "o"
                if len(out) > noise_cache.MAX_FILES:
                    return None
    except OSError:
        return None
    return out


def _raise(e: OSError) -> None:
    raise e


def _digest(entries: dict[str, str]) -> str:
    h = hashlib.sha256()
    for rel in sorted(entries):
        h.update(rel.encode("utf-8", "surrogateescape") + b"\0" + entries[rel].encode(
            "utf-8", "surrogateescape") + b"\0")
    return h.hexdigest()


@dataclass
class StepKey:
    """The key of one run's tree, environment and settings; ``fix_key`` adds a fix."""

    project: Path
    root: Path
    digest: str
    entries: dict[str, str]

    @classmethod
    def make(cls, project: Path, root: Path, roles: dict[str, Role], contexts: dict[str, RoleContext],
             found: dict[str, list[Finding]], fix_roles: Iterable[str], python: Any,
             settings: dict[str, Any]) -> StepKey | None:
        """None where the tree is past ``noise_cache``'s bounds, cannot be
        read, or the environment cannot be told apart."""
        env = _env_state(python)
        if env is None:
            return None
        entries = tree_entries(root)
        if entries is None:
            return None
        h = hashlib.sha256(f"{VERSION}\0{noise_cache.CODE}\0{_digest(entries)}\0{env}\0".encode())
        h.update(json.dumps(settings, sort_keys=True, default=str).encode() + b"\0")
        for name in sorted(set(fix_roles)):
            role, ctx = roles.get(name), contexts.get(name)
            h.update(f"role\0{name}\0".encode())
            if role is None or ctx is None:
                continue
            h.update(tool_state(getattr(role, "tool", None)).encode() + b"\0")
            h.update(settings_state(ctx).encode() + b"\0")
            for f in found.get(name, []):
                h.update(f.model_dump_json().encode("utf-8", "surrogatepass") + b"\0")
        return cls(project, root, h.hexdigest(), entries)

    def fix_key(self, p: Patch) -> str:
        h = hashlib.sha256(self.digest.encode() + b"\0")
        h.update(json.dumps([p.id, p.role, p.tool, p.kind, str(p.diff), p.files, p.finding_ids],
                            default=str).encode("utf-8", "surrogatepass"))
        return h.hexdigest()

    def read(self) -> dict[str, dict[str, Any]]:
        """Fix key -> the verdict kept for it (``verified``, ``verification``,
        ``verified_by``)."""
        entry = _read(cache_file(self.project)).get(self.digest)
        if not isinstance(entry, dict):
            return {}
        return {k: v for k, v in entry.items() if isinstance(k, str) and _valid(v)}

    def keep(self, verdicts: dict[str, dict[str, Any]]) -> bool:
        """Kept where every entry of the key's tree is as it was; True when
        written. An entry the step added is allowed: what the tests wrote as
        they ran (sqlalchemy's suite leaves ``pysqlite_test_schema.db``), which
        they write again in every run, on a sandbox made afresh from the
        project; one changed or gone is not."""
        verdicts = {k: v for k, v in verdicts.items() if _valid(v) and keepable(v)}
        if not verdicts:
            return False
        after = tree_entries(self.root)
        if after is None or any(after.get(rel) != d for rel, d in self.entries.items()):
            return False
        return store_entry(cache_file(self.project), self.digest, verdicts, VERSION,
                           MAX_ENTRIES, MAX_BYTES)


def keepable(v: dict[str, Any]) -> bool:
    """A verdict that says something of the fix, not of this run's limits
    alone: a fix not tried (out of time, its re-check cut off) is tried
    again. A tool-verified one whose tests or type check did not finish is
    kept as it is: it claims no more than the tool's re-run showed, and
    trying it again on the same tree spent a large project's whole step on
    the same unfinished run (sqlalchemy: 145 s of covering tests and mypy
    cut off at their limits, every run)."""
    text = v.get("verification") or ""
    return bool(text) and (v.get("verified_by") == "tool" or not any(t in text for t in TRANSIENT))


def _valid(v: Any) -> bool:
    return (isinstance(v, dict) and all(isinstance(v.get(k), t) for k, t in _FIELDS.items())
            and v.get("verified_by") in (None, "tool", "tests")
            and not (v["verified"] and v.get("verified_by") is None))


def _read(path: Path) -> dict[str, Any]:
    """The entries of the file at ``path`` (``verify_cache.read_entries``:
    nothing behind a link, too large, or of another format or code)."""
    return read_entries(path, VERSION, MAX_BYTES)


async def take(project: Path | None, root: Path, todo: list[Patch], patches: dict[str, Patch],
               roles: dict[str, Role], contexts: dict[str, RoleContext],
               found: dict[str, list[Finding]], python: Any, settings: dict[str, Any],
               ) -> tuple[StepKey | None, dict[str, str], list[Patch]]:
    """(the run's key, each fix's key, the fixes of ``todo`` still to verify):
    those with a kept verdict get it in ``patches``. Nothing kept nor read
    without ``project``."""
    if project is None or not todo:
        return None, {}, todo
    key = await asyncio.to_thread(StepKey.make, project, root, roles, contexts, found,
                                  {p.role or "" for p in todo}, python, settings)
    if key is None:
        return None, {}, todo
    keys = {p.id: key.fix_key(p) for p in todo}
    kept = await asyncio.to_thread(key.read)
    rest = []
    for p in todo:
        v = kept.get(keys[p.id])
        if v is None:
            rest.append(p)
        else:
            patches[p.id] = patches[p.id].model_copy(update={
                "verified": v["verified"], "verification": v["verification"],
                "verified_by": v.get("verified_by")})
    return key, keys, rest


async def store(key: StepKey | None, keys: dict[str, str], patches: dict[str, Patch]) -> None:
    """The verdicts of the fixes in ``keys`` kept under ``key`` (``StepKey.keep``)."""
    if key is None or not keys:
        return
    verdicts = {k: {"verified": patches[pid].verified, "verification": patches[pid].verification,
                    "verified_by": patches[pid].verified_by} for pid, k in keys.items()}
    await asyncio.to_thread(key.keep, verdicts)
