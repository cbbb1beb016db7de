"""bandit's results per file, kept between runs by SuperQode's own process.

bandit analyses one file at a time, and on a large project it is most of
quick mode's time: a run that stops at its deadline leaves files unscanned,
and the next run used to start again from nothing. Each file bandit scanned
whole is kept here under a key of what decides its results: bandit itself
(its version, its plugins, its interpreter), the command's options and
configuration file, the file's path and the digest of its bytes. A later
run of the same project takes those files' results from here and gives
bandit only the rest.

Who writes: SuperQode's process alone, from the output of the confined
bandit it started. The folder is outside ``$SUPERQODE_HOME/cache`` and no
session's process may write it (the barrier leaves SuperQode's home
read-only to them: tests/redteam/test_bandit_cache.py). A session can
still change a file while bandit reads it (its tests run beside bandit):
an entry is written only when the file is the same inode with the same
size, modification and change times after bandit as when its digest was
taken (no write, rename or link leaves the change time as it was), so a
result is never kept under the digest of bytes bandit did not read.

Checked before use: an entry must name its own key, path and digest and
hold results of bandit's shape for that file only; anything else is a miss.
Bounded: entries over ``MAX_ENTRY_BYTES`` are not kept, and a project keeps
at most ``MAX_ENTRIES`` (the oldest go first).
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import os
import stat
import sys
from dataclasses import dataclass, field
from importlib import metadata
from pathlib import Path
from typing import Any

from ...config import superqode_home
from ...workspace.artifacts import atomic_write
from ...workspace.paths import repo_key
from ._common import read_bounded, rel_to

VERSION = 1  # of the entries' format
MAX_ENTRIES = 20_000  # per project: sqlalchemy has 668 files
MAX_ENTRY_BYTES = 1_000_000
# Entries of a small tree walked twice for ``.bandit`` files (``tree_folders``)
# before its bandit walk is kept; past it, the walks would cost more than
# they save.
MAX_WALK = 20_000
_SUFFIX = ".json"


def cache_dir(project: Path) -> Path:
    """Not under ``$SUPERQODE_HOME/cache``: only SuperQode's process writes
    here, never a session's."""
    return superqode_home() / "bandit-results" / repo_key(project)


def identity(bandit: str, options: list[str], root: Path) -> str | None:
    """What decides bandit's results besides the file: its version and
    plugins (from the environment it runs in), its interpreter, the
    options and the configuration file they name. None when bandit cannot
    be told apart from another one (nothing is kept then)."""
    try:
        exe = os.path.realpath(bandit)
        st = os.stat(exe)
        version = metadata.version("bandit")
        plugins = sorted(f"{e.name}={e.value}" for e in metadata.entry_points(group="bandit.plugins"))
    except (OSError, metadata.PackageNotFoundError):
        return None
    parts = [exe, str(st.st_size), str(st.st_mtime_ns), version, sys.version, *plugins, "\0",
             *options]
    if "-c" in options:
        at = options.index("-c") + 1
        if at >= len(options):
            return None
        try:
            parts.append(hashlib.sha256((root / options[at]).read_bytes()).hexdigest())
        except OSError:
            return None
    return hashlib.sha256("\x1f".join(parts).encode("utf-8", "surrogateescape")).hexdigest()


@dataclass
class _Seen:
    """A file as it was when its digest was taken."""

    digest: str
    stat: tuple[int, ...]


@dataclass
class BanditCache:
    folder: Path
    ident: str
    root: Path
    seen: dict[str, _Seen] = field(default_factory=dict)
    hits: int = 0
    written: int = 0

    def split(self, files: list[str]) -> tuple[list[dict[str, Any]], list[str]]:
        """The kept results of ``files`` (in file order) and the files
        bandit must scan; the latter's digests are taken now."""
        results: list[dict[str, Any]] = []
        todo: list[str] = []
        for rel in files:
            seen = _look(self.root / rel)
            if seen is None:
                todo.append(rel)
                continue
            kept = self._read(rel, seen.digest)
            if kept is None:
                self.seen[rel] = seen
                todo.append(rel)
            else:
                results.extend(kept)
                self.hits += 1
        return results, todo

    def store(self, files: list[str], data: dict[str, Any]) -> None:
        """Keep what one finished bandit run over ``files`` said of each:
        only files it scanned without an error and that did not change
        since their digests were taken."""
        metrics = data.get("metrics")
        if not isinstance(metrics, dict):
            return
        scanned = {rel_to(self.root, str(k)) for k in metrics if k != "_totals"}
        failed = {rel_to(self.root, str(e.get("filename")))
                  for e in data.get("errors") or [] if isinstance(e, dict)}
        mine: dict[str, list[dict[str, Any]]] = {rel: [] for rel in files}
        for r in data.get("results") or []:
            if isinstance(r, dict) and (rel := rel_to(self.root, str(r.get("filename", "")))) in mine:
                mine[rel].append(r)
        for rel, results in mine.items():
            seen = self.seen.get(rel)
            if seen is None or rel not in scanned or rel in failed:
                continue
            now = _look(self.root / rel, digest=False)
            if now is None or now.stat != seen.stat:
                continue  # changed while bandit read it: what it saw is not these bytes
            self._write(rel, seen.digest, results)

    def _key(self, rel: str, digest: str) -> str:
        raw = f"{VERSION}\0{self.ident}\0{rel}\0{digest}".encode("utf-8", "surrogateescape")
        return hashlib.sha256(raw).hexdigest()

    def _read(self, rel: str, digest: str) -> list[dict[str, Any]] | None:
        key = self._key(rel, digest)
        path = self.folder / key[:2] / f"{key}{_SUFFIX}"
        raw = read_bounded(path, MAX_ENTRY_BYTES)
        try:
            entry = None if raw is None else json.loads(raw)
        except ValueError:
            return None
        if not (isinstance(entry, dict) and entry.get("key") == key and entry.get("file") == rel
                and entry.get("digest") == digest and isinstance(entry.get("results"), list)):
            return None
        results = entry["results"]
        if not all(_result_of(r, rel, self.root) for r in results):
            return None
        return results

    def _write(self, rel: str, digest: str, results: list[dict[str, Any]]) -> None:
        key = self._key(rel, digest)
        raw = json.dumps({"key": key, "file": rel, "digest": digest, "results": results},
                         separators=(",", ":"))
        if len(raw) > MAX_ENTRY_BYTES:
            return
        with contextlib.suppress(OSError):
            atomic_write(self.folder / key[:2] / f"{key}{_SUFFIX}", raw)
            self.written += 1

    def prune(self) -> None:
        """At most ``MAX_ENTRIES`` kept: the oldest written go."""
        try:
            entries = [(e.stat().st_mtime_ns, e.path) for d in os.scandir(self.folder)
                       if d.is_dir(follow_symlinks=False)
                       for e in os.scandir(d.path) if e.name.endswith(_SUFFIX)]
        except OSError:
            return
        if len(entries) <= MAX_ENTRIES:
            return
        entries.sort()
        for _, path in entries[:len(entries) - MAX_ENTRIES]:
            with contextlib.suppress(OSError):
                os.unlink(path)


def tree_folders(root: Path) -> dict[str, tuple[int, ...]] | None:
    """Each folder of ``root`` as bandit's own walk (``bandit -r .``) lists
    it, with what changes when an entry is added, removed or renamed in it
    (its change time moves, whatever a process does to its times); None
    where bandit's walk would find a ``.bandit`` file (its options then come
    from there, which the cache's key does not hold) or a folder cannot be
    read. Names only, no link followed."""
    failed: list[OSError] = []
    folders: dict[str, tuple[int, ...]] = {}
    seen = 0
    for top, dirs, names in os.walk(root, onerror=failed.append):
        if ".bandit" in names:
            return None
        seen += len(dirs) + len(names)
        if seen > MAX_WALK:
            return None  # a small Python tree in a large one (node_modules): not kept
        try:
            st = os.stat(top, follow_symlinks=False)
        except OSError:
            return None
        folders[top] = (st.st_dev, st.st_ino, st.st_mtime_ns, st.st_ctime_ns)
    return None if failed else folders


def store_walk(cache: BanditCache, files: list[str], data: dict[str, Any],
               before: dict[str, tuple[int, ...]] | None) -> None:
    """Keep what ``bandit -r .`` over a whole small tree said of ``files``
    (the role's list of them) only where it is what a run over that list
    gives: no ``.bandit`` in the tree and no entry of any folder added,
    removed or renamed from before the run (``before``: ``tree_folders``)
    to after it (so no ``.bandit`` came and went while bandit walked), and
    bandit scanned exactly ``files``. A later run of the unchanged tree then
    starts no bandit (``split``)."""
    metrics = data.get("metrics")
    if before is None or not isinstance(metrics, dict):
        return
    scanned = {rel_to(cache.root, str(k)) for k in metrics if k != "_totals"}
    if scanned != set(files) or tree_folders(cache.root) != before:
        return
    cache.store(files, data)


def open_cache(project: Path, root: Path, bandit: str, options: list[str]) -> BanditCache | None:
    ident = identity(bandit, options, root)
    if ident is None:
        return None
    return BanditCache(cache_dir(project), ident, root)


def _look(path: Path, digest: bool = True) -> _Seen | None:
    """The file's digest and the stat that says it has not changed since;
    None for anything but a regular file that can be read (a FIFO swapped
    in by the session's processes does not block)."""
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC)
    except OSError:
        return None
    try:
        st = os.fstat(fd)
        if not stat.S_ISREG(st.st_mode):
            return None
        h = hashlib.sha256()
        if digest:
            with os.fdopen(os.dup(fd), "rb") as fh:
                for chunk in iter(lambda: fh.read(1 << 20), b""):
                    h.update(chunk)
    except OSError:
        return None
    finally:
        os.close(fd)
    return _Seen(h.hexdigest() if digest else "",
                 (st.st_dev, st.st_ino, st.st_size, st.st_mtime_ns, st.st_ctime_ns))


# The fields bandit_findings reads, and their types.
_FIELDS: dict[str, tuple[type, ...]] = {
    "filename": (str,), "test_id": (str,), "line_number": (int,), "line_range": (list,),
    "col_offset": (int, type(None)), "end_col_offset": (int, type(None)),
    "issue_severity": (str,), "issue_confidence": (str,), "issue_text": (str,),
    "test_name": (str,), "more_info": (str, type(None)), "issue_cwe": (dict, type(None)),
}


def _result_of(r: Any, rel: str, root: Path) -> bool:
    """Whether ``r`` has the shape of a bandit result for ``rel``."""
    if not isinstance(r, dict):
        return False
    for name, types in _FIELDS.items():
        if name in r and not isinstance(r[name], types):
            return False
    return ("filename" in r and rel_to(root, r["filename"]) == rel
            and all(type(n) is int for n in r.get("line_range") or []))
