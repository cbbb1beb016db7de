"""Private copies of a sandbox's Python tree for roles that break code.

The sandbox is shared with roles running at the same time, so the mutation
tester and the test generator never write in it: they copy it into scratch
directories outside the sandbox tree (one per worker) and work there.
"""

from __future__ import annotations

import fnmatch
import hashlib
import os
import shutil
import tempfile
from collections.abc import Iterable
from pathlib import Path, PurePosixPath

from ...workspace.paths import SessionPaths, ensure_dir
from ...workspace.pyisolate import isolated_env, source_roots, write_isolation

# Never copied: VCS data, SuperQode's own folder, environments, caches (a stale
# __pycache__ could even hide a mutant of the same size written in the same second).
SKIP_DIRS = {
    ".git",
    ".hg",
    ".svn",
    ".superqode",
    "__pycache__",
    ".venv",
    "venv",
    "env",
    ".env",
    "node_modules",
    ".tox",
    ".nox",
    ".mypy_cache",
    ".pytest_cache",
    ".ruff_cache",
    ".hypothesis",
    "build",
    "dist",
    "site-packages",
}
TEST_CONFIG_FILES = ("pyproject.toml", "setup.cfg", "pytest.ini", "tox.ini", "conftest.py")


def _skip_dir(name: str) -> bool:
    return name in SKIP_DIRS or name.endswith(".egg-info")


def python_files(root: Path) -> list[str]:
    """Project-relative POSIX paths of every ``.py`` file worth looking at."""
    out: list[str] = []
    for dirpath, dirnames, filenames in os.walk(root):
        dirnames[:] = sorted(d for d in dirnames if not _skip_dir(d))
        rel_dir = Path(dirpath).relative_to(root)
        for name in sorted(filenames):
            if name.endswith(".py"):
                out.append((rel_dir / name).as_posix())
    return out


def is_test_file(rel: str) -> bool:
    parts = rel.split("/")
    name = parts[-1]
    return (
        name == "conftest.py"
        or fnmatch.fnmatch(name, "test_*.py")
        or fnmatch.fnmatch(name, "*_test.py")
        or any(p in ("tests", "test", "testing") for p in parts[:-1])
    )


def is_source_file(rel: str) -> bool:
    """Code under test: not a test, not packaging or docs glue."""
    if is_test_file(rel):
        return False
    parts = rel.split("/")
    if parts[-1] in ("setup.py", "noxfile.py", "manage.py", "conftest.py"):
        return False
    return not any(
        p in ("docs", "doc", "examples", "scripts", "bench", "benchmarks") for p in parts[:-1]
    )


def tests_fingerprint(root: Path, files: Iterable[str]) -> str:
    """Hash of every test file and test configuration: a change to any of them
    can change which mutants the tests notice."""
    h = hashlib.sha256()
    for rel in sorted(files):
        if is_test_file(rel):
            h.update(rel.encode("utf-8", "surrogateescape") + b"\0")
            h.update((root / rel).read_bytes() + b"\0")
    for name in TEST_CONFIG_FILES:
        p = root / name
        if p.is_file():
            h.update(name.encode() + b"\0" + p.read_bytes() + b"\0")
    return h.hexdigest()


def scratch_root(project: Path, session_id: str, purpose: str) -> Path:
    """A fresh private directory for this session's scratch copies: the
    session's private folder (beside the sandbox, never inside it)."""
    base = ensure_dir(SessionPaths(project, session_id).private / "scratch")
    return Path(tempfile.mkdtemp(prefix=f"{purpose}-", dir=base))


def pycache_dir(scratch: Path) -> Path:
    """Bytecode cache (``PYTHONPYCACHEPREFIX``) for the copies in ``scratch``
    (a :func:`scratch_root`): one per session, in its private scratch folder
    beside the roles' scratch dirs, shared by that session's runs only (test
    runners' plugins compile once per session, not once per run). Never
    shared between sessions: the session's processes write it, and its
    entries mirror absolute paths (the standard library's, the environment's
    packages'), so a prefix a later session or another project also used
    would load bytecode this one planted. Entries mirror absolute paths."""
    return Path(scratch).parent / "pycache"


def _mirror(scratch: Path, path: Path) -> Path:
    return pycache_dir(scratch) / Path(os.path.realpath(path)).relative_to("/")


def copy_root(copy: Path, sub: str = "") -> Path:
    """The scratch copy ``copy`` (a project's copy_within) belongs to: its
    folder in the role's scratch dir (``copy`` itself for the repository's)."""
    return copy.parents[len(PurePosixPath(sub).parts) - 1] if sub else copy


def share_pycache(copies: list[Path], sub: str = "") -> None:
    """Let copies of one tree (children of one scratch dir) share its
    bytecode: each copy's mirror in the bytecode cache becomes a link to the
    first's, so a module (or an assertion-rewritten test) compiled in one
    copy is not compiled again in the others. Sound because copies keep
    their files' mtimes and sizes (what a .pyc is checked against), and
    every mutant written into a copy gets an mtime no other write in this
    process has (see _mutation_runner.Worker._write), so its .pyc never
    passes for another version of the file."""
    if len(copies) < 2:
        return
    scratch = copy_root(copies[0], sub).parent
    shared = ensure_dir(_mirror(scratch, copies[0]))
    for copy in copies[1:]:
        mirror = _mirror(scratch, copy)
        ensure_dir(mirror.parent)
        if not mirror.exists() and not mirror.is_symlink():
            mirror.symlink_to(shared, target_is_directory=True)


def drop_scratch(scratch: Path) -> None:
    """Remove a scratch dir and its mirror in the bytecode cache."""
    shutil.rmtree(scratch, ignore_errors=True)
    shutil.rmtree(_mirror(scratch, scratch), ignore_errors=True)


# Build outputs where packaging tools write them (the project's top); a
# ``build`` folder deeper down is often the project's own files (fastapi's
# template keeps its compiled e-mail templates in app/email-templates/build).
_TOP_ONLY = frozenset({"build", "dist"})


def copy_tree(src: Path, dst: Path) -> Path:
    """Copy ``src`` to ``dst`` leaving out SKIP_DIRS (``build``/``dist`` at
    its top only); symlinks stay links."""
    top = os.fspath(src)

    def ignore(dirpath: str, names: list[str]) -> list[str]:
        return [n for n in names if _skip_dir(n) and os.path.isdir(os.path.join(dirpath, n))
                and (n not in _TOP_ONLY or os.path.samefile(dirpath, top))]

    shutil.copytree(src, dst, symlinks=True, ignore=ignore)
    return dst


def copy_within(src: Path, sub: str, dst: Path) -> Path:
    """``src``, the project at ``sub`` below its repository's tree, copied
    to ``dst/sub`` with the plain files of each folder above it at their
    places (``../.env`` that fastapi's template reads from ``backend/``, a
    workspace's ``pyproject.toml``): what the project reads from its parents,
    run from its folder, it finds in the copy too. The project's copy is
    returned; ``sub`` "": ``dst`` itself."""
    parts = PurePosixPath(sub).parts if sub else ()
    here, out = src, dst
    for _ in parts:
        here = here.parent
    for part in parts:
        out.mkdir(parents=True, exist_ok=True)
        for f in here.iterdir():
            if f.is_file() and not f.is_symlink():
                shutil.copy2(f, out / f.name)
        here, out = here / part, out / part
    return copy_tree(src, out)


def reuse_or_copy(src: Path, dst: Path, sub: str = "") -> Path:
    """The project's copy in ``dst`` (copy_within): the one made earlier in
    this scratch dir, or a new one."""
    mine = dst / sub if sub else dst
    if mine.is_dir() and not mine.is_symlink():
        return mine
    return copy_within(src, sub, dst)


def python_env(
    base: dict[str, str],
    copy: Path,
    extra_paths: Iterable[Path] = (),
    pycache: Path | None = None,
    shadowed: Iterable[Path] = (),
    tool_paths: Iterable[Path] = (),
) -> dict[str, str]:
    """Environment for Python processes in a scratch copy: the copy (and its
    ``src/``) first on sys.path, ahead of editable installs of ``shadowed``
    trees (the user's project, the sandbox the copy came from): a
    sitecustomize beside the copies sees to that (workspace/pyisolate.py).

    Bytecode goes to ``pycache`` (a scratch dir) when given, never beside the
    sources. Without a bytecode cache every pytest start recompiles each
    module it assertion-rewrites (whole plugin distributions such as
    hypothesis): seconds per run, which is most of a mutant's cost.
    """
    iso = write_isolation(copy.parent / "isolation")
    env = isolated_env(base, iso, source_roots(copy), [Path(p) for p in shadowed],
                       extra_paths=list(extra_paths), tool_paths=list(tool_paths))
    if pycache is not None:
        env["PYTHONPYCACHEPREFIX"] = str(pycache)
        env.pop("PYTHONDONTWRITEBYTECODE", None)
    else:
        env["PYTHONDONTWRITEBYTECODE"] = "1"
    return env


def module_name(rel: str) -> str | None:
    """Import name of a project file (``src/`` layout aware), or None."""
    parts = rel[:-3].split("/") if rel.endswith(".py") else None
    if not parts:
        return None
    if parts[0] == "src" and len(parts) > 1:
        parts = parts[1:]
    if parts[-1] == "__init__":
        parts = parts[:-1]
    if not parts or not all(p.isidentifier() for p in parts):
        return None
    return ".".join(parts)
