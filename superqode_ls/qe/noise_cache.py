"""The noise filter's results kept between runs by SuperQode's own process.

On a small project the filter over a few hundred findings (its context
step's parses, the library and project rules, the walks) is a warm run's
largest step of SuperQode's own, and an unchanged project's next run gave
the same verdicts again. What the filter says depends on the findings it
is given, its settings, its own code and any file under the tree it reads
(its rules read the flagged modules, configuration files, and walk the
project): so a result is kept only for all of them as they were.

- The tree: every entry under the root (folders, files by the digest of
  their bytes, links by their target, never followed, anything else by its
  kind), read by this process before the filter runs. A tree over
  ``MAX_FILES`` entries or ``MAX_TREE_BYTES`` is not kept (the digest would
  cost what the filter does).
- The findings and the settings (threshold, baseline, path classes), as
  their JSON.
- ``CODE``: the source of every module of the package (any change of a rule
  anywhere makes a new cache), the format's version and the interpreter's.

A session's process may change a file while the filter reads it: the
result is kept only where every entry's inode, size and change time
(``st_ctime``, which no process can set) are the same after the filter as
when the tree was read, so a result is never kept under bytes it did not
read. A filter stopped by its deadline (``unfiltered``) is not kept.

Who writes: SuperQode's process alone; the folder is outside
``$SUPERQODE_HOME/cache`` and no session's process may write SuperQode's
home (tests/redteam/test_noise_cache.py). Read back: a file of another
format, code or shape is read as nothing (the filter runs). Bounded: one
file a project, ``MAX_ENTRIES`` results, ``MAX_BYTES``.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import os
import stat
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

from ..config import superqode_home
from ..models import Finding
from ..workspace.artifacts import atomic_write
from ..workspace.paths import repo_key
from .noise import NoiseResult
from .roles._common import read_bounded

VERSION = 1
MAX_BYTES = 16_000_000
MAX_ENTRIES = 4  # the whole run's filter and the early verification's, two sets of settings
MAX_FILES = 20_000
MAX_TREE_BYTES = 64_000_000
# Reading the tree costs about 40 us a file (pygoat: 350 entries, 14 ms of
# CPU) and the filter about 600 us a finding (256 findings, 160 ms): kept
# only where the tree has at most this many entries a finding, so a large
# tree with few findings never pays a walk the filter would not have cost.
FILES_A_FINDING = 8
_NAME = "results.json"
_COUNTS = ("suppressed", "below_threshold", "duplicates", "baseline_filtered", "merged_lines",
           "unfiltered")


def _code_digest() -> str:
    pkg = Path(__file__).resolve().parent.parent
    h = hashlib.sha256(f"{VERSION}\0{sys.version}\0".encode())
    for path in sorted(pkg.rglob("*.py")):
        try:
            h.update(str(path.relative_to(pkg)).encode() + b"\0" + path.read_bytes() + b"\0")
        except OSError:
            h.update(str(path).encode() + b"\0missing\0")
    return h.hexdigest()


# Taken when the filter's cache is first imported (the warm helper imports
# it once and restarts when its code changes): source edited afterwards
# would name results of the code that was loaded.
CODE = _code_digest()


def cache_file(project: Path) -> Path:
    """Not under ``$SUPERQODE_HOME/cache``: only SuperQode's process writes
    here, never a session's."""
    return superqode_home() / "noise-results" / repo_key(project) / _NAME


def _stamp(st: os.stat_result) -> tuple[int, int, int, int, int]:
    return (st.st_ino, st.st_size, st.st_mtime_ns, st.st_ctime_ns, st.st_mode)


def tree_state(root: Path, *, contents: bool, limit: int | None = None) -> tuple[str, dict[str, tuple]] | None:
    """(the digest of the tree, every entry's stamp) where ``contents``, else
    ("", stamps); None past the bounds (``limit`` entries, at most
    ``MAX_FILES``) or where the tree cannot be read."""
    limit = MAX_FILES if limit is None else min(limit, MAX_FILES)
    h = hashlib.sha256()
    stamps: dict[str, tuple] = {}
    total = 0
    top = os.fspath(root)
    try:
        stamps[""] = _stamp(os.lstat(top))
        for dirpath, dirnames, filenames in os.walk(top, onerror=_raise):
            dirnames.sort()
            rel_dir = os.path.relpath(dirpath, top)
            for name in sorted(filenames) + [d for d in dirnames if os.path.islink(os.path.join(dirpath, d))]:
                path = os.path.join(dirpath, name)
                rel = name if rel_dir == "." else f"{rel_dir}/{name}"
                st = os.lstat(path)
                stamps[rel] = _stamp(st)
                if len(stamps) > limit:
                    return None
                if not contents:
                    continue
                if stat.S_ISLNK(st.st_mode):
                    h.update(b"l\0" + rel.encode("utf-8", "surrogateescape") + b"\0"
                             + os.readlink(path).encode("utf-8", "surrogateescape") + b"\0")
                elif stat.S_ISREG(st.st_mode):
                    total += st.st_size
                    if total > MAX_TREE_BYTES:
                        return None
                    h.update(b"f\0" + rel.encode("utf-8", "surrogateescape") + b"\0"
                             + _file_digest(path, st, rel == ".git") + b"\0")
                else:
                    h.update(b"o\0" + rel.encode("utf-8", "surrogateescape") + b"\0")
            for d in dirnames:
                rel = d if rel_dir == "." else f"{rel_dir}/{d}"
                if rel not in stamps:  # links to folders were listed (and are not walked)
                    stamps[rel] = _stamp(os.lstat(os.path.join(dirpath, d)))
                    if len(stamps) > limit:
                        return None
                    if contents:
                        h.update(b"d\0" + rel.encode("utf-8", "surrogateescape") + b"\0")
    except OSError:
        return None
    return (h.hexdigest() if contents else ""), stamps


def _raise(e: OSError) -> None:
    raise e


def _file_digest(path: str, st: os.stat_result, top_git: bool = False) -> bytes:
    """The bytes' digest and whether the file may be run (the mode's part
    a rule could read); opened without following a link, checked the same
    file as listed (a FIFO or a swapped file is an error: nothing kept).
    ``top_git``: the root's ``.git``, which in a sandbox is git's one line
    naming the sandbox's own folder (another each session): that line is
    read as one value, whatever the folder; any other content as bytes."""
    fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC)
    with os.fdopen(fd, "rb") as fh:
        now = os.fstat(fh.fileno())
        if not stat.S_ISREG(now.st_mode) or now.st_ino != st.st_ino:
            raise OSError("changed while read")
        raw = fh.read(st.st_size + 1)
        if len(raw) != st.st_size:
            raise OSError("changed while read")
        if top_git and raw.startswith(b"gitdir: ") and raw.count(b"\n") <= 1 and raw.endswith(b"\n"):
            raw = b"gitdir: (the sandbox's)\n"
        d = hashlib.blake2b(raw, digest_size=16)
    d.update(b"x" if st.st_mode & 0o111 else b"-")
    return d.hexdigest().encode()


def result_key(tree: str, findings: list[Finding], settings: dict[str, Any]) -> str:
    h = hashlib.sha256(f"{CODE}\0{tree}\0".encode())
    h.update(json.dumps(settings, sort_keys=True, default=str).encode() + b"\0")
    for f in findings:
        h.update(f.model_dump_json().encode("utf-8", "surrogatepass") + b"\0")
    return h.hexdigest()


def worth_it(findings: int, files: int | None) -> bool:
    """Whether reading a tree of ``files`` (the user's listing; None: not
    known) can pay for itself against the filter over ``findings``."""
    return files is not None and 0 < files <= min(MAX_FILES, FILES_A_FINDING * findings)


def cached(project: Path, root: Path, findings: list[Finding], settings: dict[str, Any],
           run: Callable[[list[Finding]], NoiseResult], files: int | None = None) -> NoiseResult:
    """``run(findings)`` (the filter) or the result it gave for the same
    findings, settings and tree before; ``files``: how many files the
    user's tree has (``worth_it``)."""
    if not worth_it(len(findings), files):
        return run(findings)
    # a tree past the bound stops the walk there: never more than the filter's cost
    limit = FILES_A_FINDING * len(findings)
    state = tree_state(root, contents=True, limit=limit)
    if state is None:
        return run(findings)
    key = result_key(state[0], findings, settings)
    path = cache_file(project)
    entries = _read(path)
    raw = entries.get(key)
    if raw is not None:
        try:
            return _result(raw)
        except (ValueError, TypeError, KeyError):
            entries = {}
    result = run(findings)
    if result.unfiltered:
        return result
    after = tree_state(root, contents=False, limit=limit)
    if after is None or after[1] != state[1]:
        return result  # changed while the filter read it
    entries.pop(key, None)
    entries[key] = _dump(result)
    while len(entries) > MAX_ENTRIES:
        entries.pop(next(iter(entries)))
    data = json.dumps({"version": VERSION, "code": CODE, "entries": entries}, separators=(",", ":"))
    if len(data) <= MAX_BYTES:
        with contextlib.suppress(OSError):
            atomic_write(path, data)
    return result


def _read(path: Path) -> dict[str, Any]:
    raw = read_bounded(path, MAX_BYTES)
    try:
        data = None if raw is None else json.loads(raw)
    except ValueError:
        return {}
    if not (isinstance(data, dict) and data.get("version") == VERSION and data.get("code") == CODE
            and isinstance(data.get("entries"), dict)):
        return {}
    return data["entries"]


def _dump(result: NoiseResult) -> dict[str, Any]:
    findings = [f.model_dump(mode="json") for f in result.findings]
    before = [f.model_dump(mode="json") for f in result.before_baseline]
    return {"findings": findings, "before_baseline": before,
            **{k: getattr(result, k) for k in _COUNTS}}


def _result(raw: Any) -> NoiseResult:
    if not isinstance(raw, dict):
        raise TypeError("entry")
    counts = {k: raw[k] for k in _COUNTS}
    if not all(type(v) is int and v >= 0 for v in counts.values()):
        raise ValueError("counts")
    return NoiseResult(findings=[Finding.model_validate(f) for f in raw["findings"]],
               before_baseline=[Finding.model_validate(f) for f in raw["before_baseline"]],
               **counts)
