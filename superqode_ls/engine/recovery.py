"""The one recovery of a session whose owner died, the same in the CLI
(``superqe recover``) and the editor (``superqode.recover`` and the prompt
at start): each action is one function here, named the same in both.

- ``save_changes``: what the session changed, to ``<id>-recovered.patch``
  under the project's ``.superqode/qe-artifacts/patches``; the session stays.
  The editor's "View changes" opens that file.
- ``resume``: the changes saved the same way, and the sandbox adopted
  (state ``kept``) to go on working there; ``superqe revert ID`` removes it.
- ``recover``: the changes saved, then the session removed and the project
  verified (``keep``: kept instead).
- discarding without saving is ``sessions.revert``.

A change that cannot be read raises WorkspaceError (one line); nothing is
ever written into a patch but the changes themselves.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from ..workspace.recovery import RecoverResult as Recovered
    from ..workspace.recovery import SessionInfo

__all__ = ["PATCH_NAME", "Recovered", "recover", "resume", "save_changes"]

PATCH_NAME = "recovered"  # <session-id>-recovered.patch (workspace.recovery.PATCH_NAME)


def __getattr__(name: str) -> Any:
    if name == "Recovered":
        from ..workspace.recovery import RecoverResult

        return RecoverResult
    raise AttributeError(name)


def _info(session: str | SessionInfo) -> SessionInfo:
    from ..workspace import recovery

    return recovery.find_session(session) if isinstance(session, str) else session


def save_changes(session: str | SessionInfo) -> Recovered:
    """Save the session's changes (``Recovered.patch`` is None when it
    changed nothing); the session is left as it is."""
    from ..workspace import recovery

    return recovery.recover(_info(session), "save")


def resume(session: str | SessionInfo) -> Recovered:
    """Save the session's changes and adopt its sandbox (state ``kept``)."""
    from ..workspace import recovery

    return recovery.recover(_info(session), "resume")


def recover(session: str | SessionInfo, *, keep: bool = False) -> Recovered:
    """Save the session's changes, then remove it and verify the project
    (``Recovered.verified``/``line``); with ``keep`` it is kept instead."""
    from ..workspace import recovery

    return recovery.recover(_info(session), "extract", keep=keep)
