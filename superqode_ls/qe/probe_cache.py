"""The suite probe's verdict (covering.SuiteProbe: can the project's pytest
start at all?), kept between sessions.

The probe is a pytest start with the test folders' conftests loaded: on two
CPUs it takes the CPU of one analyzer for half a second in every quick run,
and its answer rarely changes. What decides it is the key: the interpreter
and the state of its installed packages (a site-packages folder's mtime
moves when anything is installed or removed), pytest's configuration files,
every conftest.py on the way down to the test folders, the test folders and
the command. A change the key does not see (a project module a conftest
imports) can make a kept verdict stale; either way is safe: a suite kept as
"cannot start" gets fixes checked by the tool only (and said so), a suite kept
as "starts" is tried as before when a fix needs it.
"""

from __future__ import annotations

import hashlib
import json
import os
from pathlib import Path, PurePosixPath

from ..workspace.artifacts import atomic_write
from ..workspace.paths import home
from .roles._common import SKIP_DIRS

CONFIG_FILES = ("pytest.ini", ".pytest.ini", "pyproject.toml", "tox.ini", "setup.cfg")
# 2: verdicts kept before the verification step waited for the probe may
# be of a tree the first fixes had already changed (a conftest they broke).
VERSION = 2
KEEP = 64  # verdicts kept; the oldest go first


def cache_dir() -> Path:
    # Not under $SUPERQODE_HOME/cache, which every session may write: a
    # project's own code must not plant a verdict for the next session.
    return home() / "suite-probe"


def site_dirs(prefix: str) -> list[Path]:
    lib = Path(prefix) / "lib"
    found = [*lib.glob("python*/site-packages"), *lib.glob("python*/dist-packages")]
    return sorted(p for p in found if p.is_dir())


def key(sandbox: Path, folders: list[str], python: str, prefix: str, command: list[str]
        ) -> str | None:
    """None when the interpreter's packages cannot be told apart (no
    site-packages found): then nothing is kept."""
    sites = site_dirs(prefix) if prefix else []
    if not sites:
        return None
    h = hashlib.sha256(f"v{VERSION}\0{python}\0{json.dumps(command)}\0".encode())
    try:
        st = os.stat(python)
        h.update(f"{os.path.realpath(python)}\0{st.st_mtime_ns}\0".encode())
        for site in sites:
            h.update(f"{site}\0{site.stat().st_mtime_ns}\0".encode())
    except OSError:
        return None
    files = set(CONFIG_FILES) | {"conftest.py"}
    for folder in folders:
        h.update(f"folder\0{folder}\0".encode())
        parts = PurePosixPath(folder).parts
        for i in range(1, len(parts) + 1):  # the conftests above the folder
            files.add(str(PurePosixPath(*parts[:i], "conftest.py")))
        files.update(_conftests_below(sandbox, folder))
    for rel in sorted(files):
        try:
            data = (sandbox / rel).read_bytes()
        except OSError:
            data = None
        h.update(f"file\0{rel}\0".encode())
        h.update(hashlib.sha256(data).digest() if data is not None else b"-")
    return h.hexdigest()


def _conftests_below(sandbox: Path, folder: str) -> list[str]:
    out = []
    for dirpath, dirnames, filenames in os.walk(sandbox / folder):
        dirnames[:] = [d for d in dirnames if d not in SKIP_DIRS and not d.startswith(".")]
        if "conftest.py" in filenames:
            out.append(Path(dirpath, "conftest.py").relative_to(sandbox).as_posix())
    return out


def load(k: str) -> tuple[bool, str | None]:
    """(found, why the suite cannot start or None)."""
    try:
        data = json.loads((cache_dir() / f"{k}.json").read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return False, None
    if not isinstance(data, dict) or data.get("version") != VERSION:
        return False, None
    broken = data.get("broken")
    return True, broken if isinstance(broken, str) else None


def store(k: str, broken: str | None) -> None:
    """Keep a verdict; a failure to write only means the next run probes."""
    d = cache_dir()
    try:
        d.mkdir(parents=True, exist_ok=True)
        atomic_write(d / f"{k}.json", json.dumps({"version": VERSION, "broken": broken}))
        kept = sorted(d.glob("*.json"), key=lambda p: p.stat().st_mtime_ns)
        for old in kept[:-KEEP]:
            old.unlink(missing_ok=True)
    except OSError:
        pass
