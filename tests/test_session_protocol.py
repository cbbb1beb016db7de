"""The session the pipeline and the roles see (``SandboxSession``) is what a
real ``IsolatedSession`` offers: every member is there, with the same kind
(plain or coroutine method, attribute) and the attribute types it promises."""

from __future__ import annotations

import asyncio
import inspect
from pathlib import Path

import pytest

from superqode_ls.qe.roles.base import SandboxSession
from superqode_ls.workspace.session import IsolatedSession

MEMBERS = set(SandboxSession.__annotations__) | {
    n for n, v in vars(SandboxSession).items() if callable(v) and not n.startswith("_")
}


def test_the_protocol_lists_what_the_pipeline_uses():
    assert {"sandbox", "project", "env", "changes", "checkpoint", "restore", "lock"} <= MEMBERS


@pytest.mark.parametrize("isolation", ["worktree", "snapshot"])
def test_a_real_session_has_every_member(make_repo, isolation):
    repo = make_repo({"a.py": "x = 1\n"})
    s = IsolatedSession.create_sync(repo, isolation=isolation)
    try:
        for name in sorted(MEMBERS):
            want = getattr(SandboxSession, name, None)
            got = getattr(s, name)  # AttributeError names the missing member
            if callable(want):
                assert inspect.iscoroutinefunction(got) == inspect.iscoroutinefunction(want), name
                assert (
                    list(inspect.signature(got).parameters)
                    == list(inspect.signature(want).parameters)[1:]
                ), name
        assert isinstance(s.sandbox, Path) and isinstance(s.project, Path)
        assert s.isolation == isolation and isinstance(s.id, str)
        assert isinstance(s.env(), dict)

        async def round_trip() -> bool:
            cp = await s.checkpoint()
            (s.sandbox / "a.py").write_text("x = 2\n")
            changed = not (await s.changes()).empty
            await s.restore(cp)
            return changed and (s.sandbox / "a.py").read_text() == "x = 1\n"

        assert asyncio.run(round_trip())
    finally:
        s.close_sync()
    assert s.verification is not None and s.verification.verified
