"""The sparse sandbox: a run scoped to a few files whose roles only read
those files (static analyzers) gets a sandbox holding just them, plus the
files that configure the analyzers on the way from the repository root down
to each of them.

A full sandbox of a 20,000-file repository costs a checkout (or a warm
reset that hashes the whole tree); linting one file does not need it. The
sparse sandbox lives where every sandbox lives, runs behind the same guard
and kernel barrier, has a session record, is removed at the end, and the
user's tree is verified unchanged the same way. Paths inside it are the
project's relative paths, so findings map back as they are.

What it is not for: roles that run the project's code or read other files
of it (tests, types, mutation, agents) need the whole tree and never get
one (``Role.file_local`` decides, in the pipeline).
"""

from __future__ import annotations

import ast
import os
import tomllib
from pathlib import Path, PurePosixPath

from .pyast import parse as parse_python
from .snapshot import copy_tree

# Files the analyzers read to decide what to report (ruff's hierarchical
# configuration, bandit's, flake8-style sections, the project's own
# SuperQode files); .gitignore for tools that honour it.
CONFIG_NAMES = (
    "pyproject.toml", "ruff.toml", ".ruff.toml", "setup.cfg", "tox.ini", ".flake8", ".bandit",
    ".gitignore", "superqode.yaml", ".superqodeignore",
)  # fmt: skip
# A package's ``__init__.py`` on the way down: ruff places a file in its
# package by them (INP001, relative-import and first-party rules).
PACKAGE_MARKERS = ("__init__.py",)
# Above this many files a full sandbox is as cheap as copying them one by one
# (a warm reset touches only what changed) and keeps every cross-file rule.
MAX_FILES = 200
# Folders ruff looks at to tell first-party imports (its default ``src``):
# their sub-folders are mirrored empty, so isort's grouping does not change.
_SRC_ROOTS = ("", "src")


def eligible(project: Path, files: list[str] | None, overlays: dict[str, bytes]) -> bool:
    """Whether a run of ``files`` can use a sparse sandbox: a short list of
    files (a folder would need its content listed first: not sparse)."""
    if files is None or not files or len(files) > MAX_FILES:
        return False
    for rel in files:
        if rel in overlays:
            continue
        p = project / rel
        if p.is_dir() and not p.is_symlink():
            return False
    return True


def _ancestors(rel: str) -> list[str]:
    parts = PurePosixPath(rel).parts[:-1]
    return ["/".join(parts[:i]) for i in range(len(parts) + 1)]


def config_files(project: Path, files: list[str], overlays: dict[str, bytes]) -> list[str]:
    """The analyzers' configuration files (and package markers) from the
    root down to each of ``files``."""
    dirs = sorted({d for rel in files for d in _ancestors(rel)})
    out: list[str] = []
    for d in dirs:
        for name in (*CONFIG_NAMES, *PACKAGE_MARKERS):
            rel = f"{d}/{name}" if d else name
            if rel in overlays or (project / rel).is_file():
                out.append(rel)
    # ruff's ``extend`` points at another configuration file (a shared base):
    # without it the project's rules would silently change.
    seen = set(out)
    queue = list(out)
    while queue:
        rel = queue.pop()
        base = _ruff_extend(project, rel, overlays)
        if base is not None and base not in seen:
            seen.add(base)
            out.append(base)
            queue.append(base)
    return out


def _ruff_extend(project: Path, rel: str, overlays: dict[str, bytes]) -> str | None:
    name = PurePosixPath(rel).name
    if name not in ("pyproject.toml", "ruff.toml", ".ruff.toml"):
        return None
    try:
        data = overlays.get(rel)
        text = data.decode("utf-8") if data is not None else (project / rel).read_text("utf-8")
        doc = tomllib.loads(text)
    except (OSError, UnicodeDecodeError, tomllib.TOMLDecodeError):
        return None  # ruff reports a broken configuration itself
    section = doc.get("tool", {}).get("ruff", {}) if name == "pyproject.toml" else doc
    target = section.get("extend") if isinstance(section, dict) else None
    if not isinstance(target, str) or not target:
        return None
    here = PurePosixPath(rel).parent
    joined = os.path.normpath(os.path.join(str(here), os.path.expanduser(target)))
    if os.path.isabs(joined) or joined.startswith(".."):
        return None  # outside the project: ruff reads it where it is
    return PurePosixPath(joined).as_posix()


def layout(project: Path, files: list[str], overlays: dict[str, bytes]) -> list[str]:
    """Every file a sparse sandbox of ``files`` holds (relative, sorted)."""
    return sorted(set(files) | set(config_files(project, files, overlays)))


def lay_out(project: Path, sandbox: Path, files: list[str], overlays: dict[str, bytes],
            max_size_mb: float) -> list[str]:
    """Fill ``sandbox`` with the layout of ``files`` (the user's current bytes,
    unsaved buffers over them); returns the layout. Symlinks are copied as
    links (the roles skip them, as in a full sandbox)."""
    from .worktree import retarget_links, write_overlays

    rels = layout(project, files, overlays)
    sandbox.mkdir(parents=True, exist_ok=True)
    copy_tree(project, sandbox, rels, max_size_mb)
    retarget_links(sandbox, project, [r for r in rels if (sandbox / r).is_symlink()])
    wanted = set(rels)
    buffers = {rel: data for rel, data in overlays.items() if rel in wanted}
    if buffers:
        write_overlays(sandbox, buffers)
    _mirror_packages(project, sandbox, rels, overlays)
    return rels


def _mirror_packages(project: Path, sandbox: Path, files: list[str],
                     overlays: dict[str, bytes]) -> None:
    """Empty folders named like the project's packages the files import: ruff
    tells first-party imports by the folders (or modules) it finds under its
    ``src`` roots. Only the imported names: a folder costs milliseconds on a
    busy disk, and empty folders are not content (no tree hash, no role reads
    them)."""
    names: set[str] = set()
    for rel in files:
        if rel.endswith((".py", ".pyi")):
            names |= _imported(project, rel, overlays)
    for base in _SRC_ROOTS:
        for name in sorted(names):
            here = project / base / name
            if here.is_dir() or here.with_name(name + ".py").is_file():
                try:
                    (sandbox / base / name).mkdir(parents=True, exist_ok=True)
                except OSError:
                    continue  # a file of the layout has that name: nothing to mirror


def _imported(project: Path, rel: str, overlays: dict[str, bytes]) -> set[str]:
    """The top-level names a file imports (absolute imports only)."""
    try:
        data = overlays.get(rel)
        tree = parse_python(data if data is not None else (project / rel).read_bytes())
    except (OSError, SyntaxError, ValueError):
        return set()  # the analyzers report a file they cannot parse
    out: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            out.update(a.name.split(".")[0] for a in node.names)
        elif isinstance(node, ast.ImportFrom) and not node.level and node.module:
            out.add(node.module.split(".")[0])
    return {n for n in out if n and n.isidentifier()}


def listing(sandbox: Path) -> list[str]:
    """The files in a sandbox (relative, sorted): what tests count."""
    out = []
    for dirpath, _dirs, names in os.walk(sandbox):
        for n in names:
            out.append(Path(dirpath, n).relative_to(sandbox).as_posix())
    return sorted(out)
