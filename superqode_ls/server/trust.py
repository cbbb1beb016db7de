"""Folder trust, fail-closed: roles that execute repository code run only in a
folder the user trusted (``superqode.trustedFolders``, the ``trusted_folders``
of the user configuration, or a one-time prompt remembered in
``$SUPERQODE_HOME/trusted-folders.json``). Anything unclear means untrusted.
"""

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


# ---- server side: settings + one-time prompt --------------------------------
TRUST = "Trust folder"
NOT_NOW = "Not now"
DISMISSED = "dismissed"
DECLINED = "declined before"
PROMPT_TIMEOUT_S = 300.0


def is_trusted_folder(ls, folder: str) -> bool:
    return is_trusted(folder, ls.settings_for(folder).trustedFolders)


async def ask_trust(ls, folder: str, roles: list[str]) -> bool:
    return await ask_trust_answer(ls, folder, roles) == TRUST


async def ask_trust_answer(ls, folder: str, roles: list[str]) -> str:
    """Ask once per server lifetime; 'Trust folder' is remembered on disk.
    Returns TRUST, NOT_NOW, DISMISSED (no answer, an error) or DECLINED (asked
    before): anything but TRUST means untrusted. A run started while the
    question is open waits for the same answer rather than asking twice."""
    import asyncio

    if folder in ls.trust_declined:
        return DECLINED
    pending = ls.trust_questions.get(folder)
    if pending is None:
        pending = asyncio.get_running_loop().create_task(_ask(ls, folder, roles))
        ls.trust_questions[folder] = pending
        pending.add_done_callback(lambda _t: ls.trust_questions.pop(folder, None))
    return await asyncio.shield(pending)


async def _ask(ls, folder: str, roles: list[str]) -> str:
    import asyncio

    from lsprotocol import types

    verb = "runs" if len(roles) == 1 else "run"
    params = types.ShowMessageRequestParams(
        type=types.MessageType.Warning,
        message=(
            f"SuperQode: {', '.join(roles)} {verb} this repository's code (tests, agents). "
            f"Trust {folder}?"
        ),
        actions=[types.MessageActionItem(title=TRUST), types.MessageActionItem(title=NOT_NOW)],
    )
    try:
        answer = await asyncio.wait_for(
            ls.window_show_message_request_async(params), PROMPT_TIMEOUT_S
        )
    except Exception as e:
        log.info("trust prompt not answered: %s", e)
        answer = None
    title = getattr(answer, "title", None)
    if title == TRUST:
        try:
            remember(folder)
        except OSError as e:
            ls.log(f"SuperQode: could not remember trust for {folder}: {e}")
        return TRUST
    ls.trust_declined.add(folder)
    return NOT_NOW if title == NOT_NOW else DISMISSED


# Why a role that runs the project's code was skipped, per answer.
SKIP_REASON = {
    NOT_NOW: "you answered Not now",
    DISMISSED: "the trust question was dismissed",
    DECLINED: "trust was declined earlier",
}
