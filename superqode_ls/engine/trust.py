"""Folder trust, fail-closed: roles that execute repository code run only in
a folder the user trusted (the editor's ``superqode.trustedFolders``, the
``trusted_folders`` of the user configuration, or an answer remembered in
``$SUPERQODE_HOME/trusted-folders.json``). Anything unclear means untrusted.
The question itself is the front end's (``server/trust.py``); ``superqe run``
trusts the project it is pointed at unless ``--untrusted``."""

from __future__ import annotations

import json
import logging
import os
from collections.abc import Iterable
from pathlib import Path

from ..config import superqode_home

log = logging.getLogger(__name__)
STORE = "trusted-folders.json"


def _real(p: str | Path) -> Path:
    return Path(os.path.realpath(os.path.expanduser(str(p))))


def _inside(path: Path, root: Path) -> bool:
    return path == root or root in path.parents


def store_path() -> Path:
    return superqode_home() / STORE


def remembered() -> list[str]:
    try:
        data = json.loads(store_path().read_text(encoding="utf-8"))
        folders = data.get("folders", [])
        return [f for f in folders if isinstance(f, str)]
    except (OSError, ValueError, AttributeError):
        return []


def remember(folder: str | Path) -> None:
    folders = remembered()
    real = str(_real(folder))
    if real in folders:
        return
    folders.append(real)
    path = store_path()
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_suffix(".tmp")
    tmp.write_text(json.dumps({"folders": folders}, indent=2), encoding="utf-8")
    os.replace(tmp, path)


def is_trusted(folder: str | Path, extra: Iterable[str] = ()) -> bool:
    """True only if ``folder`` is inside a folder trusted by setting or by the store."""
    try:
        target = _real(folder)
        roots = [*extra, *remembered(), *_config_trusted()]
        return any(_inside(target, _real(r)) for r in roots if r)
    except Exception:  # fail closed
        log.exception("trust check failed")
        return False


def _config_trusted() -> list[str]:
    try:
        from ..config import load_config

        return list(load_config(None).trusted_folders)
    except Exception:
        return []
