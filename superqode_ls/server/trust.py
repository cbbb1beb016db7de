"""Folder trust, fail-closed, in the editor: the ``superqode.trustedFolders``
setting and the one-time question, answered once per server lifetime. The
store and the rule (inside a trusted folder, anything unclear untrusted) are
``engine.trust``'s.
"""

from __future__ import annotations

import logging

# remembered and store_path: the store, for the editor tests that read it.
from ..engine.trust import is_trusted, remember, remembered, store_path  # noqa: F401

log = logging.getLogger(__name__)


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
        # "Not now" first: eglot pre-fills the first action, and a bare Enter
        # must not let the repository's code run (fail closed).
        actions=[types.MessageActionItem(title=NOT_NOW), types.MessageActionItem(title=TRUST)],
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
