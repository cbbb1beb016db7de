"""The shared cache of built project environments, and its protection.

Environments live in ``$SUPERQODE_HOME/envs/<key>``, outside
``$SUPERQODE_HOME/cache`` (which every session's processes may write): no
session can create or replace an environment's interpreter or plant a
``.pth``/``sitecustomize`` that a later session of another project would run.
An environment is built by its own confined step (``run_confined``: the
kernel barrier allows writes only to that environment's folder, a temporary
folder and its own package cache, :func:`package_cache`) and is read-only
to every session afterwards.

At build time a manifest is written to ``$SUPERQODE_HOME/env-manifests``
(outside the environment): the sha256 of the interpreter the environment's
``bin/python`` leads to, of ``pyvenv.cfg``, of every ``*.pth`` and
``sitecustomize``/``usercustomize`` file, and the size and mtime of every
other file. ``verify`` compares it before the environment is probed or run;
a mismatch discards the environment (it is rebuilt).
"""

from __future__ import annotations

import hashlib
import json
import os
import shutil
import tempfile
from collections.abc import Sequence
from pathlib import Path

from ..config import Config, SandboxConfig
from ..runtime import Runtime
from .artifacts import atomic_write
from .namespaces import SPEC_ENV, scrub_env, spec
from .paths import home
from .proc import BARRIER_ENV, ProcResult, run_command

MANIFEST_FORMAT = 1
NO_MANIFEST = "it has no manifest"
_HASHED_NAMES = ("sitecustomize.py", "usercustomize.py", "pyvenv.cfg")


def envs_dir() -> Path:
    return home() / "envs"


def manifests_dir() -> Path:
    return home() / "env-manifests"


def package_cache(target: Path) -> Path:
    """uv's cache for the builds of the environment at ``target``: one per key,
    never shared between keys (nor with the sessions' writable cache folder).
    A build runs the project's code (setup.py, a build backend of its own)
    with this cache writable, and uv trusts what it finds there: unpacked
    wheels are linked into environments as they are, built sdists and git
    checkouts are reused by name. Shared, one project's build could plant a
    package that the build of another project installs; per key, what a
    build can plant reaches only a rebuild of the same environment, which
    that same code builds anyway. The cost: a new key downloads again what
    another key already has (docs/safety.md, *Shared caches*)."""
    return home() / "uv-cache" / target.name


def manifest_path(target: Path) -> Path:
    return manifests_dir() / f"{target.name}.json"


def _sha(path: Path) -> str:
    h = hashlib.sha256()
    with open(path, "rb") as fh:
        for chunk in iter(lambda: fh.read(1 << 20), b""):
            h.update(chunk)
    return h.hexdigest()


def fingerprint(target: Path) -> dict:
    """What the manifest records for the environment at ``target``."""
    hashed: dict[str, str] = {}
    files: list[str] = []
    for rel in ("bin/python", "bin/python3"):
        p = target / rel
        if os.path.lexists(p):
            real = Path(os.path.realpath(p))
            link = os.readlink(p) if p.is_symlink() else ""
            hashed[rel] = f"{link}|{real}|{_sha(real) if real.is_file() else '-'}"
    for dirpath, dirnames, filenames in os.walk(target):
        dirnames.sort()
        for name in sorted(filenames):
            p = Path(dirpath) / name
            rel = p.relative_to(target).as_posix()
            try:
                st = p.lstat()
            except OSError:
                continue
            if name.endswith(".pth") or name in _HASHED_NAMES:
                hashed[rel] = _sha(p) if p.is_file() and not p.is_symlink() else f"link:{os.readlink(p)}"
            files.append(f"{rel}\0{st.st_mode:o}\0{st.st_size}\0{st.st_mtime_ns}")
    tree = hashlib.sha256("\n".join(files).encode("utf-8", "surrogateescape")).hexdigest()
    return {"format": MANIFEST_FORMAT, "hashed": hashed, "tree": tree, "files": len(files)}


def record(target: Path) -> None:
    """Write the manifest of a freshly built environment."""
    manifests_dir().mkdir(parents=True, exist_ok=True)
    atomic_write(manifest_path(target), json.dumps(fingerprint(target), sort_keys=True))


def verify(target: Path) -> str | None:
    """None when ``target`` is as built; else why not (one line). Nothing
    in the environment is run to find out."""
    try:
        kept = json.loads(manifest_path(target).read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return NO_MANIFEST
    now = fingerprint(target)
    if kept.get("format") != MANIFEST_FORMAT:
        return "its manifest is of another format"
    old, new = kept.get("hashed") or {}, now["hashed"]
    for rel in sorted(set(old) | set(new)):
        if old.get(rel) != new.get(rel):
            what = "added" if rel not in old else "removed" if rel not in new else "changed"
            return f"{rel} was {what} after it was built"
    if kept.get("tree") != now["tree"]:
        return f"its files changed after it was built ({kept.get('files')} -> {now['files']} files)"
    return None


def discard(target: Path) -> None:
    shutil.rmtree(target, ignore_errors=True)
    manifest_path(target).unlink(missing_ok=True)


async def run_confined(cmd: Sequence[str], cwd: Path, env: dict[str, str], allow: Sequence[Path],
                       timeout: float, runtime: Runtime | None = None,
                       hide: Sequence[str] = ()) -> ProcResult:
    """``cmd`` behind the write barrier, allowed to write only ``allow``; in
    the namespace sandbox where there is one, with the host's network (the
    build downloads from the package index) and secrets masked: the
    defaults and ``hide`` (the user's ``sandbox.hide``)."""
    for p in allow:
        # A folder to be bound writable must exist: inside, nothing can be
        # created under the read-only root.
        Path(p).mkdir(parents=True, exist_ok=True)
    confined = scrub_env(env)
    confined[BARRIER_ENV] = json.dumps([str(p) for p in allow])
    confined[SPEC_ENV] = spec(Config(sandbox=SandboxConfig(network="host", hide=list(hide))),
                              confined)
    return await run_command(list(cmd), cwd, env=confined, timeout=timeout, runtime=runtime)


def scratch() -> Path:
    """A private temporary folder for one build."""
    base = home() / "tmp"
    base.mkdir(parents=True, exist_ok=True)
    return Path(tempfile.mkdtemp(prefix="env-build-", dir=base))
