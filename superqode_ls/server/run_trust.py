"""Which roles an editor run takes, and when: the trust question for roles
that run the project's code (asked alongside the static roles, never in
their way), and the sparse first phase of a run on a few files."""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import TYPE_CHECKING

from lsprotocol import types

from ..engine import roles, runs
from .registry import Run
from .server import SuperQodeServer
from .trust import SKIP_REASON, TRUST, ask_trust_answer, is_trusted_folder

if TYPE_CHECKING:
    from ..config import Config


async def resolve_roles(ls: SuperQodeServer, run: Run,
                        cfg: Config) -> tuple[list[str] | None, bool]:
    """Roles to run and whether the folder is trusted.

    Static roles never wait for the trust question: when some roles run the
    project's code and the folder is not trusted, this run goes on at once
    with the others and the question is asked alongside (``_trust_later``);
    only a run of nothing but such roles waits for the answer."""
    names = run.roles if run.roles is not None else roles.defaults(cfg, run.mode)
    needs_trust = roles.running_code(names)  # one that cannot be loaded counts (fail closed)
    trusted = is_trusted_folder(ls, run.folder)
    if trusted or not needs_trust:
        return run.roles, trusted
    static = [n for n in names if n not in needs_trust]
    if static and run.folder not in ls.trust_declined:
        run.only_roles = set(static)
        run.trust_note = f"{', '.join(needs_trust)} wait(s) for the trust answer"
        run.next_roles = asyncio.get_running_loop().create_future()
        ls.background(_trust_later(ls, run, needs_trust), f"trust question for {run.id}")
        return run.roles, False
    answer = await ask_trust_answer(ls, run.folder, needs_trust)
    if answer == TRUST:
        return run.roles, True
    _say_skipped(ls, run.folder, needs_trust, SKIP_REASON[answer])
    return run.roles, False


def sparse_first(ls: SuperQodeServer, run: Run, cfg: Config, chosen: list[str] | None,
                 trusted: bool) -> list[str] | None:
    """A run on a few files whose roles mix file-local ones (lint, security)
    with ones that need the whole tree (tests): the file-local ones run now,
    in a sparse sandbox at the analyzers' speed, and the others follow in a
    session of their own once this one has ended (the trust split's way).
    Returns the roles this run runs."""
    if run.files is None or run.only_roles is not None or run.since or not trusted:
        return chosen
    names = chosen if chosen is not None else roles.defaults(cfg, run.mode)
    plan = runs.sparse_split(Path(run.folder), run.files, run.overlays, cfg, names,
                             isolation=ls.settings_for(run.folder).isolation)
    if plan is None:
        return chosen
    local, rest = plan
    run.only_roles = set(local)
    run.trust_note = f"{', '.join(rest)} run(s) next, in a full sandbox"
    run.next_roles = asyncio.get_running_loop().create_future()
    run.next_roles.set_result(rest)
    return local


def _say_skipped(ls: SuperQodeServer, folder: str, skipped: list[str], reason: str) -> None:
    ls.log(
        f"SuperQode: {folder} is not trusted ({reason}); skipping {', '.join(skipped)} "
        "(they run the project's code)",
        types.MessageType.Warning,
    )


async def _trust_later(ls: SuperQodeServer, run: Run, waiting: list[str]) -> None:
    """Ask while the static roles run; on "Trust folder" the roles that run
    code are the run's next phase (after the static one: one sandbox at a time
    per folder), else they are skipped with the reason shown. Either way the
    run ends once, after the answer."""
    answer = None
    try:
        answer = await ask_trust_answer(ls, run.folder, waiting)
    finally:
        trusted = answer == TRUST
        if run.next_roles is not None and not run.next_roles.done():
            run.next_roles.set_result(waiting if trusted else None)
    names = ", ".join(waiting)
    if not trusted:
        run.trust_note = f"{names} skipped ({SKIP_REASON[answer]})"
        _say_skipped(ls, run.folder, waiting, SKIP_REASON[answer])
        ls.notify_user(f"SuperQode: skipped {names}: the folder is not trusted "
                       f"({SKIP_REASON[answer]})", types.MessageType.Warning)
        return
    run.trust_note = f"{names} run(s) next"
    ls.log(f"SuperQode: {run.folder} trusted; session {run.id} runs {names} next")
