"""Directory-copy sandboxes, for folders that are not git repositories (or
``--snapshot``). ``.superqodeignore`` (gitignore syntax) and
``workspace.exclude_patterns`` decide what is left out; in a git repository
git's own ignore rules apply too. The copy refuses to start above
``workspace.max_size_mb``.
"""

from __future__ import annotations

import os
import stat
from pathlib import Path

import pathspec

from .errors import WorkspaceError
from .git import git
from .holes import copy_with_mode

ALWAYS_EXCLUDED = (".git", ".superqode")
IGNORE_FILE = ".superqodeignore"


def _spec(root: Path, patterns: list[str]) -> pathspec.GitIgnoreSpec:
    lines = list(patterns)
    f = root / IGNORE_FILE
    if f.is_file():
        try:
            lines += f.read_text(encoding="utf-8").splitlines()
        except UnicodeDecodeError:
            raise WorkspaceError(f"{f}: not valid UTF-8") from None
    return pathspec.GitIgnoreSpec.from_lines(lines)


def list_files(root: Path, exclude_patterns: list[str], use_git: bool) -> list[str]:
    spec = _spec(root, exclude_patterns)
    files: list[str] = []
    if use_git:
        out = git(["ls-files", "-z", "--cached", "--others", "--exclude-standard"], root).stdout
        seen = set()
        for raw in out.split(b"\0"):
            if not raw:
                continue
            rel = raw.decode("utf-8", "surrogateescape")
            if rel in seen:
                continue
            seen.add(rel)
            p = root / rel
            if p.is_symlink() or p.is_file():
                files.append(rel)
    else:
        for dirpath, dirnames, filenames in os.walk(root):
            rel_dir = os.path.relpath(dirpath, root)
            rel_dir = "" if rel_dir == "." else rel_dir.replace(os.sep, "/") + "/"
            keep = []
            for d in dirnames:
                full = os.path.join(dirpath, d)
                if not rel_dir and d in ALWAYS_EXCLUDED:
                    continue
                if os.path.islink(full):
                    filenames.append(d)  # a symlink to a dir is copied as a link
                    continue
                if spec.match_file(rel_dir + d + "/"):
                    continue
                keep.append(d)
            dirnames[:] = keep
            for name in filenames:
                files.append(rel_dir + name)
    return [f for f in files if f.split("/", 1)[0] not in ALWAYS_EXCLUDED and not spec.match_file(f)]


def copy_tree(root: Path, dest: Path, files: list[str], max_size_mb: float) -> int:
    total = 0
    kept = []
    for rel in files:
        p = root / rel
        try:
            st = p.lstat()
        except FileNotFoundError:
            continue
        # Named pipes, sockets and devices are not content: copying would block or fail.
        if not (stat.S_ISREG(st.st_mode) or stat.S_ISLNK(st.st_mode)):
            continue
        kept.append(rel)
        total += st.st_size
    files = kept
    limit = max_size_mb * 1024 * 1024
    if total > limit:
        raise WorkspaceError(
            f"{root}: {total / 1048576:.1f} MB to copy, above workspace.max_size_mb="
            f"{max_size_mb:g}; exclude more in {IGNORE_FILE} or raise the limit"
        )
    dest.mkdir(parents=True, exist_ok=True)
    for rel in files:
        src = root / rel
        out = dest / rel
        out.parent.mkdir(parents=True, exist_ok=True)
        try:
            if src.is_symlink():
                os.symlink(os.readlink(src), out)
            else:
                copy_with_mode(src, out)
        except FileNotFoundError:
            continue  # deleted while we copied; the fingerprint tells the user
        except OSError as e:
            raise WorkspaceError(f"{src}: cannot copy into the sandbox ({e.strerror or e})") from None
    return total
