"""What a session leaves behind: ``<project>/.superqode/qe-artifacts/``.

Every file name carries the session id, so two sessions (same day, same
second even) never overwrite each other. ``manifest.json`` indexes them.
``.superqode/`` is the one folder SuperQode writes in the user's project; its
``.gitignore`` of ``*`` keeps it out of their commits.

The project is untrusted input (a repository may ship ``.superqode/`` with
links, a forged manifest, forged reports): every access goes through
``ownfolder`` (no link below the project followed), and a manifest entry
counts only when its path names a file inside the artifacts folder
(:func:`entry_parts`); any other entry is ignored with a warning, never
deleted.
"""

from __future__ import annotations

import fcntl
import json
import os
import re
import tempfile
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from .ownfolder import (
    SuperqodeDirError,
    UnsafeOwnPath,
    folder,
    kind_at,
    lock_at,
    names_at,
    open_dir_at,
    read_at,
    remove_at,
    write_at,
)
from .paths import artifacts_root

__all__ = [
    "Artifacts",
    "SuperqodeDirError",
    "UnsafeOwnPath",
    "atomic_write",
    "check_superqode_dir",
    "clean_artifacts",
    "ensure_superqode_dir",
    "entry_parts",
    "read_artifact",
    "read_manifest",
    "update_manifest",
    "write_file",
]

SUBDIRS = ("qr", "patches", "generated-tests", "logs", "evidence")
OWN_PARTS = (".superqode",)
ART_PARTS = (".superqode", "qe-artifacts")
_manifest_lock = threading.Lock()


def _safe(name: str) -> str:
    return re.sub(r"[^\w.-]+", "-", name).strip("-") or "item"


def atomic_write(path: Path, data: bytes | str, *, mode: int | None = None, sync: bool = False) -> Path:
    """``data`` into ``path`` through a temporary file renamed over it;
    ``mode``: the file's permissions, ``sync``: on disk before the rename
    (a user's file: ``superqe suggestions apply``)."""
    path.parent.mkdir(parents=True, exist_ok=True)
    raw = data.encode("utf-8") if isinstance(data, str) else data
    fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", dir=path.parent)
    try:
        with os.fdopen(fd, "wb") as fh:
            fh.write(raw)
            if sync:
                fh.flush()
                os.fsync(fh.fileno())
        if mode is not None:
            os.chmod(tmp, mode)
        os.replace(tmp, path)
    except BaseException:
        try:
            os.unlink(tmp)
        except FileNotFoundError:
            pass
        raise
    return path


def write_file(path: Path, data: bytes | str) -> Path:
    """:func:`atomic_write`, except below a ``.superqode`` folder (the
    baseline the editor's "ignore this finding" writes, a report named
    there): that part of the path is the project's, so it is walked from the
    folder holding ``.superqode`` without following any link."""
    path = Path(path)
    parts = path.parts
    if OWN_PARTS[0] not in parts[:-1]:
        return atomic_write(path, data)
    i = len(parts) - 1 - parts[::-1].index(OWN_PARTS[0])
    raw = data.encode("utf-8") if isinstance(data, str) else data
    with folder(Path(*parts[:i]), parts[i:-1], create=True) as fd:
        assert fd is not None
        write_at(fd, parts[-1], raw)
    return path


def check_superqode_dir(project: Path) -> None:
    """Raise SuperqodeDirError, with one line saying why, when artifacts
    could not be written to ``<project>/.superqode``; create nothing. A link
    there (or at ``qe-artifacts``) is refused: the project is untrusted input."""
    root = Path(project) / ".superqode"
    try:
        with folder(project, ART_PARTS) as fd:
            for sub in SUBDIRS if fd is not None else ():
                with folder(project, (*ART_PARTS, sub)):  # a shipped link fails here
                    pass
    except UnsafeOwnPath as e:
        if e.link or e.path == root:
            raise
        # A file where a sub-folder goes: the session may run; writing its
        # artifacts fails then, after the revert, with the reason.
    except OSError:
        pass  # unreadable or missing project: said below in the user's terms
    if root.is_dir() and not os.access(root, os.W_OK | os.X_OK):
        raise SuperqodeDirError(f"{root}: not writable; SuperQode keeps its artifacts there")
    if not root.exists() and not os.access(project, os.W_OK | os.X_OK):
        raise SuperqodeDirError(
            f"{project}: read-only; SuperQode needs to create .superqode/ there for its artifacts")


def ensure_superqode_dir(project: Path) -> Path:
    root = Path(project) / ".superqode"
    try:
        with folder(project, OWN_PARTS, create=True) as fd:
            assert fd is not None
            if kind_at(fd, ".gitignore") is None:
                write_at(fd, ".gitignore", b"*\n")
    except SuperqodeDirError:
        raise
    except OSError as e:
        check_superqode_dir(project)
        raise SuperqodeDirError(f"{root}: cannot write ({e.strerror or e})") from None
    return root


class Artifacts:
    """Writer for one session's artifacts (every write through ``ownfolder``:
    no link below the project is followed)."""

    def __init__(self, project: Path, session_id: str, keep_runs: int | None = None,
                 run_id: str | None = None,
                 on_prune: Callable[[list[str]], None] | None = None):
        self.project = Path(project)
        self.session_id = session_id
        self.root = artifacts_root(self.project)
        # QE runs whose outputs the manifest keeps (see ``_prune``); None = all.
        self.keep_runs = keep_runs
        # A later phase of a run (the roles after the trust answer) writes no
        # report of its own: its entries name the run whose report holds it.
        self.run_id = run_id
        # Told the session ids of the runs whose outputs an update removed
        # (the pipeline drops their patch seals: ``patchseal.drop``).
        self._on_prune = on_prune
        # Entries waiting for one manifest write (see ``batch``); None = write each.
        self._pending: list[dict[str, Any]] | None = None

    @contextmanager
    def batch(self, held: list[dict[str, Any]] | None = None) -> Iterator[Artifacts]:
        """Record everything written inside the block in ONE manifest update:
        the manifest is rewritten whole each time, so thousands of patches
        written one by one cost quadratic time. ``held`` (an outermost
        batch): its entries go into that list instead, for a later batch to
        list with its own (``list_with``): the manifest, which every run
        kept makes longer, is read and rewritten once for both."""
        outer = self._pending is not None
        if not outer:
            self._pending = []
        done = False
        try:
            yield self
            done = True
        finally:
            if not outer:
                pending, self._pending = self._pending or [], None
                if held is not None and done:
                    held.extend(pending)
                elif pending:
                    # Also when held but the block failed (a full disk midway):
                    # its caller gets no result to list them with, and a file
                    # the manifest does not name is one `artifacts --clean` leaves.
                    self._update(pending)

    def list_with(self, entries: list[dict[str, Any]]) -> None:
        """Entries a batch held (``batch(held=...)``): listed with this batch's."""
        if self._pending is None:
            if entries:
                self._update(entries)
        else:
            self._pending.extend(entries)

    def _update(self, entries: list[dict[str, Any]]) -> None:
        pruned = update_manifest(self.root, *entries, keep_runs=self.keep_runs)
        if pruned and self._on_prune is not None:
            self._on_prune(pruned)

    def prepare(self) -> Artifacts:
        ensure_superqode_dir(self.project)
        for sub in SUBDIRS:
            with folder(self.project, (*ART_PARTS, sub), create=True):
                pass
        return self

    def _write(self, sub: tuple[str, ...], name: str, data: bytes | str,
               exclusive: bool = False) -> Path:
        raw = data.encode("utf-8", "surrogateescape") if isinstance(data, str) else data
        with folder(self.project, (*ART_PARTS, *sub), create=True) as fd:
            assert fd is not None
            write_at(fd, name, raw, exclusive=exclusive)
        return self.root.joinpath(*sub, name)

    def _record(self, kind: str, path: Path, **extra: Any) -> Path:
        entry = {
            "session_id": self.session_id,
            "kind": kind,
            "path": path.relative_to(self.root).as_posix(),
            "created": datetime.now(UTC).isoformat(),
            **({"run": self.run_id} if self.run_id else {}),
            **extra,
        }
        if self._pending is not None:
            self._pending.append(entry)
        else:
            self._update([entry])
        return path

    def _patch_name(self, name: str) -> str:
        return f"{self.session_id}-{_safe(name)}.patch"

    def write_patch(self, name: str, diff: str, **extra: Any) -> Path:
        # In a batch the manifest lists the file only after it is whole, and
        # its name is this session's alone: written in place (O_EXCL), not
        # temp file + rename, which doubles the cost of thousands of files.
        path = self._write(("patches",), self._patch_name(name), diff,
                           exclusive=self._pending is not None)
        return self._record("patch", path, **extra)

    def write_log(self, name: str, text: str) -> Path:
        path = self._write(("logs",), f"{self.session_id}-{_safe(name)}.log", text)
        return self._record("log", path)

    def write_evidence(self, name: str, data: bytes | str) -> Path:
        path = self._write(("evidence",), f"{self.session_id}-{_safe(name)}", data)
        return self._record("evidence", path)

    def write_generated_test(self, rel_name: str, text: str) -> Path:
        path = self._write(("generated-tests", self.session_id), _safe(rel_name), text)
        return self._record("generated-test", path)

    def report_path(self, ext: str, when: datetime | None = None) -> Path:
        when = when or datetime.now(UTC)
        return self.root / "qr" / f"qr-{when:%Y%m%d}-{self.session_id}.{ext}"

    def write_report(self, ext: str, text: str, when: datetime | None = None) -> Path:
        path = self._write(("qr",), self.report_path(ext, when).name, text)
        return self._record("report", path, format=ext)


def _project_of(root: Path) -> Path:
    """``root`` is ``<project>/.superqode/qe-artifacts``."""
    return Path(root).parents[1]


def entry_parts(path: Any) -> tuple[str, ...] | None:
    """The components of a manifest entry's path when it names something
    SuperQode writes: relative, POSIX, no ``.``/``..``/empty part, inside one
    of the artifact folders. None for anything else (a shipped manifest may
    say ``../../.bashrc`` or ``/home/me``)."""
    if not isinstance(path, str) or not path or "\0" in path or path.startswith("/"):
        return None
    parts = tuple(path.split("/"))
    if len(parts) < 2 or parts[0] not in SUBDIRS:
        return None
    if any(p in ("", ".", "..") for p in parts):
        return None
    return parts


def read_manifest(root: Path, warnings: list[str] | None = None) -> dict[str, Any]:
    """The manifest, with only the entries whose path is valid (see
    :func:`entry_parts`); each one left out is named in ``warnings``."""
    try:
        with folder(_project_of(root), ART_PARTS) as fd:
            return _manifest_at(fd, warnings)
    except OSError as e:
        if warnings is not None:
            warnings.append(str(e))
        return _manifest_at(None, warnings)


def _manifest_at(fd: int | None, warnings: list[str] | None) -> dict[str, Any]:
    raw = read_at(fd, "manifest.json") if fd is not None else None
    try:
        data = json.loads(raw) if raw is not None else None
    except ValueError:
        data = None
    if not (isinstance(data, dict) and isinstance(data.get("artifacts"), list)):
        return {"version": 1, "artifacts": []}
    good = []
    for entry in data["artifacts"]:
        if isinstance(entry, dict) and entry_parts(entry.get("path")) is not None:
            good.append(entry)
        elif warnings is not None:
            what = entry.get("path") if isinstance(entry, dict) else entry
            warnings.append(f"manifest entry ignored: {str(what)[:200]!r} is not a path inside "
                            "the artifacts folder")
    data["artifacts"] = good
    return data


def read_artifact(root: Path, rel: str) -> bytes | None:
    """The bytes of the artifact at manifest path ``rel``; None when the path
    is not valid, missing, or not a regular file (never through a link)."""
    parts = entry_parts(rel)
    if parts is None:
        return None
    try:
        with folder(_project_of(root), (*ART_PARTS, *parts[:-1])) as fd:
            return read_at(fd, parts[-1]) if fd is not None else None
    except OSError:
        return None


@contextmanager
def _locked_manifest(root: Path, create: bool) -> Iterator[int | None]:
    """The artifacts folder's descriptor with the manifest lock held: one
    lock per process plus a lock file across processes, so two sessions
    finishing together are both listed."""
    with folder(_project_of(root), ART_PARTS, create=create) as fd:
        if fd is None:
            yield None
            return
        with _manifest_lock:
            lock = lock_at(fd, ".manifest.lock")
            try:
                fcntl.flock(lock, fcntl.LOCK_EX)
                yield fd
            finally:
                os.close(lock)


def _write_manifest(fd: int, data: dict[str, Any]) -> None:
    write_at(fd, "manifest.json", (json.dumps(data, indent=2) + "\n").encode())


def update_manifest(root: Path, *entries: dict[str, Any],
                    keep_runs: int | None = None) -> list[str]:
    """List ``entries``; with ``keep_runs``, also drop the outputs of all but
    the newest ``keep_runs`` QE runs (``_prune``), in the same rewrite.
    Returns the session ids of the runs dropped."""
    with _locked_manifest(root, create=True) as fd:
        assert fd is not None
        data = _manifest_at(fd, None)  # through the descriptor the lock was taken in
        data["artifacts"].extend(entries)
        pruned = _prune(fd, data, keep_runs) if keep_runs else []
        _write_manifest(fd, data)
    return pruned


# What a QE run writes and can write again by running again. Never pruned:
# patches without findings -- a recovered session's work, `exec`'s changes, a
# disposed worktree's commits -- which nobody could make again.
_RUN_OUTPUTS = frozenset({"report", "log", "evidence", "generated-test"})


def _prunable(entry: dict[str, Any]) -> bool:
    kind = entry.get("kind")
    return kind in _RUN_OUTPUTS or (kind == "patch" and "finding_ids" in entry)


def _run_of(entry: dict[str, Any]) -> str:
    return str(entry.get("run") or entry.get("session_id"))


def _prune(fd: int, data: dict[str, Any], keep_runs: int) -> list[str]:
    """Remove the outputs of QE runs older than the newest ``keep_runs``: the
    folder and its manifest would otherwise grow with every run (the
    manifest is read and rewritten whole at each). A run is a session that
    listed a report; runs are ordered as the manifest lists them, which is
    the order they ended. A file that cannot be removed stays listed."""
    runs: dict[str, None] = {}
    for entry in data["artifacts"]:
        if entry.get("kind") == "report":
            runs.setdefault(_run_of(entry), None)
    if len(runs) <= keep_runs:
        return []
    old_runs = list(runs)[:len(runs) - keep_runs]
    old = set(old_runs)
    keep = []
    for entry in data["artifacts"]:
        if _run_of(entry) not in old or not _prunable(entry):
            keep.append(entry)
            continue
        parts = entry_parts(entry["path"])
        assert parts is not None  # _manifest_at kept only valid paths
        try:
            _remove_if_old(fd, parts, float("inf"))
        except OSError:
            keep.append(entry)
    data["artifacts"] = keep
    _drop_empty_generated(fd)
    return old_runs


def clean_artifacts(project: Path, older_than_s: float, now: float | None = None,
                    warnings: list[str] | None = None) -> list[str]:
    """Remove artifacts older than ``older_than_s``; returns removed relative
    paths. Only what a valid manifest entry names is removed, through the
    folders' descriptors (nothing outside the artifacts folder, no link
    followed); ``warnings`` gets a line per entry ignored."""
    root = artifacts_root(project)
    now = now or time.time()
    removed: list[str] = []
    with _locked_manifest(root, create=False) as fd:
        if fd is None:
            return []
        data = _manifest_at(fd, warnings)
        keep = []
        for entry in data["artifacts"]:
            parts = entry_parts(entry["path"])
            assert parts is not None
            try:
                gone = _remove_if_old(fd, parts, now - older_than_s)
            except OSError as e:
                if warnings is not None:
                    warnings.append(f"{entry['path']}: left ({e.strerror or e})")
                keep.append(entry)
                continue
            if gone is None:
                continue
            if gone:
                removed.append(entry["path"])
            else:
                keep.append(entry)
        data["artifacts"] = keep
        _write_manifest(fd, data)
        _drop_empty_generated(fd)
    return removed


def _remove_if_old(fd: int, parts: tuple[str, ...], cutoff: float) -> bool | None:
    """True: removed; False: young, kept; None: not there (any more)."""
    sub = open_dir_at(fd, parts[:-1])
    if sub is None:
        return None
    try:
        try:
            st = os.stat(parts[-1], dir_fd=sub, follow_symlinks=False)
        except FileNotFoundError:
            return None
        if st.st_mtime >= cutoff:
            return False
        remove_at(sub, parts[-1])
        return True
    finally:
        os.close(sub)


def _drop_empty_generated(fd: int) -> None:
    gen = open_dir_at(fd, ("generated-tests",))
    if gen is None:
        return
    try:
        for name in names_at(gen):
            if kind_at(gen, name) == "d":
                try:
                    os.rmdir(name, dir_fd=gen)
                except OSError:  # not empty
                    pass
    finally:
        os.close(gen)
