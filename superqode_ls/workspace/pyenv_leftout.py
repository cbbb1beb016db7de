"""What a built environment lacks of what the project declares (pyenv_build):
the packages, requirement files or the project itself left out of the
build and said in one note, and the project's own metadata lent to its
tests when its own build failed."""

from __future__ import annotations

import re
from pathlib import Path

from packaging.utils import canonicalize_name as _canonical

from ..config import superqode_home
from .pyenv_plan import Plan, scm_version, static_metadata
from .pyenv_read import read_pyproject


def metadata_dir(name: str, version: str) -> str | None:
    """A folder with a minimal dist-info of ``name`` ``version``, made by
    SuperQode (outside the folders sessions may write)."""
    dist = re.sub(r"[-_.]+", "_", name)
    folder = superqode_home() / "project-meta" / f"{dist}-{version}"
    info = folder / f"{dist}-{version}.dist-info"
    try:
        if not (info / "METADATA").is_file():
            info.mkdir(parents=True, exist_ok=True)
            text = f"Metadata-Version: 2.1\nName: {name}\nVersion: {version}\n"
            (info / "METADATA").write_text(text, encoding="utf-8")
    except OSError:
        return None
    return str(folder)


MAX_LEFT_OUT = 3
LEFT_OUT = "superqode-left-out.txt"  # in the environment: its manifest covers it
UNBUILDABLE = re.compile(r"Failed to build `([A-Za-z0-9][A-Za-z0-9._-]*)")
UNREADABLE = re.compile(r"Couldn't parse requirement in `([^`]+)`")


def left_out(target: Path) -> list[tuple[str, str]]:
    """(name, what) of each thing left out: a package (""), the project
    itself ("project") or a requirements file uv cannot read ("file")."""
    try:
        lines = (target / LEFT_OUT).read_text(encoding="utf-8").splitlines()
    except OSError:
        return []
    return [(ln.split()[0], " ".join(ln.split()[1:2])) for ln in lines if ln.strip()]


def left_out_note(target: Path) -> str:
    """What the environment at ``target`` lacks of the declared packages."""
    left = left_out(target)
    others = [name for name, what in left if not what]
    files = [name for name, what in left if what == "file"]
    parts = []
    if any(what == "project" for _, what in left):
        parts.append("the project itself could not be built here (its build backend failed); its "
                     "declared dependencies are installed and its code runs from the sandbox")
    if others:
        parts.append(f"left out {', '.join(others)}: could not be built here (a source build "
                     "needing system libraries or a download this machine lacks)")
    if files:
        parts.append(f"left out {', '.join(files)}: uv cannot read it (a requirement it cannot "
                     "parse, such as a source archive URL with no file extension)")
    for line in _lines(target):
        name, what, rest = (line.split(" ", 2) + ["", ""])[:3]
        if what == "conflict" and rest:
            parts.append(f"left out {name.replace(',', ', ')}: the requirement files conflict "
                         f"({rest}); built from the files the tests use")
        elif what == "failed" and rest:
            parts.append(f"left out {name.replace(',', ', ')}: installing every requirement file "
                         f"failed ({rest}); built from the files the tests use")
    return "; ".join(parts)


def _lines(target: Path) -> list[str]:
    try:
        return (target / LEFT_OUT).read_text(encoding="utf-8").splitlines()
    except OSError:
        return []


def own_metadata(target: Path, folder: Path, owner: Path) -> str | None:
    """The project's metadata lent to its tests when its own build failed
    (its tests may read their version): name and version as declared,
    else as its VCS says."""
    if not any(what == "project" for _, what in left_out(target)):
        return None
    name = declared_name(folder)
    if name is None:
        return None
    meta = static_metadata(folder)
    version = meta[1] if meta is not None else (scm_version(owner) or "0")
    return metadata_dir(name, version)


def project_dropped(target: Path, root: Path, plan: Plan) -> bool:
    name = declared_name(root / plan.folder) if plan.deps_without_project else None
    return name is not None and any(_canonical(n) == _canonical(name) and not what
                                    for n, what in left_out(target))


def declared_name(folder: Path) -> str | None:
    project = read_pyproject(folder).get("project")
    name = project.get("name") if isinstance(project, dict) else None
    return name.strip() if isinstance(name, str) and name.strip() else None
