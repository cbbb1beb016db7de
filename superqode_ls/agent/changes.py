"""The agent's edits as a patch that applies to the project.

With an ``IsolatedSession`` the session's change tracker (``changes()``) is the
source; on a bare folder a checkpoint copy taken when the agent starts is
compared with the sandbox. Either way, build debris (``__pycache__``, caches)
is left out and the patch can be narrowed to the files the agent names.
"""

from __future__ import annotations

import difflib
import shutil
import tempfile
from collections.abc import Iterable
from pathlib import Path, PurePosixPath
from typing import Any

from unidiff import PatchSet

from .confine import Refused, read_inside

NOISE_DIRS = frozenset(
    {
        ".git",
        "__pycache__",
        ".pytest_cache",
        ".mypy_cache",
        ".ruff_cache",
        ".superqode",
        ".hypothesis",
        "node_modules",
        ".venv",
        ".tox",
    }
)
NOISE_SUFFIXES = (".pyc", ".pyo")


def is_noise(rel: str) -> bool:
    p = PurePosixPath(rel)
    return any(part in NOISE_DIRS for part in p.parts) or p.name.endswith(NOISE_SUFFIXES)


def _patched_path(pf: Any) -> str:
    path = pf.target_file if pf.target_file != "/dev/null" else pf.source_file
    return path[2:] if path[:2] in ("a/", "b/") else path


def filter_diff(diff: str, keep: Iterable[str] | None = None) -> tuple[str, list[str]]:
    """``diff`` without debris and, when ``keep`` is given, only those paths."""
    if not diff.strip():
        return "", []
    wanted = {PurePosixPath(k).as_posix().removeprefix("./") for k in keep} if keep else None
    out: list[str] = []
    files: list[str] = []
    for pf in PatchSet(diff):
        path = _patched_path(pf)
        if is_noise(path) or (wanted is not None and path not in wanted):
            continue
        out.append(str(pf))
        files.append(path)
    text = "".join(out)
    if text and not text.endswith("\n"):
        text += "\n"
    return text, files


class Checkpoint:
    """A copy of the sandbox when the agent started (no session available)."""

    def __init__(self, root: Path):
        self.root = root.resolve()
        self._dir = Path(tempfile.mkdtemp(prefix="superqode-agent-cp-"))
        self.copy = self._dir / "tree"
        shutil.copytree(
            self.root,
            self.copy,
            symlinks=True,
            ignore=shutil.ignore_patterns(*NOISE_DIRS, *(f"*{s}" for s in NOISE_SUFFIXES)),
        )

    def close(self) -> None:
        shutil.rmtree(self._dir, ignore_errors=True)

    def diff(self) -> str:
        before = _files(self.copy)
        after = _files(self.root)
        chunks: list[str] = []
        for rel in sorted(before | after):
            old = _read(self.copy, rel) if rel in before else None
            new = _read(self.root, rel) if rel in after else None
            if old == new:
                continue
            if old is False or new is False:
                chunks.append(f"Binary files a/{rel} and b/{rel} differ\n")
                continue
            chunks.append(_file_diff(rel, old, new))
        return "".join(chunks)


def _files(root: Path) -> set[str]:
    out: set[str] = set()
    for p in root.rglob("*"):
        rel = p.relative_to(root).as_posix()
        if is_noise(rel):
            continue
        if p.is_file() and not p.is_symlink():
            out.add(rel)
    return out


def _read(root: Path, rel: str) -> str | bool | None:
    """Text, False for binary, None when missing. Read by the confined walk
    (no link followed out of ``root``: the sandbox changes meanwhile)."""
    try:
        data = read_inside(root, rel)
    except (FileNotFoundError, NotADirectoryError):
        return None
    except Refused:
        return False
    if b"\x00" in data:
        return False
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError:
        return False


def _file_diff(rel: str, old: Any, new: Any) -> str:
    old_lines = old.splitlines(keepends=True) if isinstance(old, str) else []
    new_lines = new.splitlines(keepends=True) if isinstance(new, str) else []
    head = [f"diff --git a/{rel} b/{rel}\n"]
    if old is None:
        head.append("new file mode 100644\n")
    elif new is None:
        head.append("deleted file mode 100644\n")
    body = list(
        difflib.unified_diff(
            old_lines,
            new_lines,
            fromfile="/dev/null" if old is None else f"a/{rel}",
            tofile="/dev/null" if new is None else f"b/{rel}",
        )
    )
    fixed: list[str] = []
    for line in body:
        if not line.endswith("\n"):
            fixed.append(line + "\n")
            fixed.append("\\ No newline at end of file\n")
        else:
            fixed.append(line)
    return "".join(head + fixed)


class ChangeTracker:
    """What the agent changed so far, from the session or a checkpoint."""

    def __init__(self, root: Path, session: Any = None):
        self.root = root
        self.session = session
        self._checkpoint: Checkpoint | None = None

    def start(self) -> None:
        if self.session is None and self._checkpoint is None:
            self._checkpoint = Checkpoint(self.root)

    def close(self) -> None:
        if self._checkpoint is not None:
            self._checkpoint.close()
            self._checkpoint = None

    async def diff(self, keep: Iterable[str] | None = None) -> tuple[str, list[str]]:
        if self.session is not None:
            raw = (await self.session.changes()).diff
        else:
            self.start()
            assert self._checkpoint is not None
            raw = self._checkpoint.diff()
        return filter_diff(raw, keep)

    async def created(self) -> set[str]:
        """Files that exist now and did not when the agent started."""
        if self.session is not None:
            cs = await self.session.changes()
            return {c.path for c in cs.changes if c.kind in ("created", "renamed")}
        self.start()
        assert self._checkpoint is not None
        return _files(self.root) - _files(self._checkpoint.copy)
