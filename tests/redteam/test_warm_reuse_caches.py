"""What a session leaves in the ignored caches it was lent never reaches the next.

``workspace.keep_gitignored`` lends a sandbox the user's ignored caches
(``.venv``, ``node_modules``...). With warm sandboxes, the next session of
the same project gets the parked tree reset to the new state; the reset
used to spare those caches, so what the old session wrote there (a ``.pth``
that runs at every interpreter start, a replaced tool) was the next
session's. The reset removes them too and they are carried afresh from the
user's tree. The reset is SuperQode's own: this holds at every protection
level.
"""

from __future__ import annotations

from superqode_ls.config import Config
from superqode_ls.workspace.session import IsolatedSession

from .test_git_deputy import as_session

PLANT = ("echo 'import os; os.system(\"echo PWNED\")' > .venv/evil.pth; "
         "echo planted > .venv/marker; mkdir -p .venv/bin; echo planted > .venv/bin/tool")


async def test_a_cache_kept_by_config_is_the_users_again_in_a_reused_sandbox(make_repo):
    repo = make_repo({"app.py": "x = 1\n", ".gitignore": ".venv/\n"}, name="warm caches")
    (repo / ".venv" / "bin").mkdir(parents=True)
    (repo / ".venv" / "marker").write_text("the user's\n")
    (repo / ".venv" / "bin" / "tool").write_text("#!/bin/sh\n")
    cfg = Config.model_validate({"workspace": {"warm_sandboxes": True,
                                               "keep_gitignored": [".venv"]}})
    async with await IsolatedSession.create(repo, config=cfg) as first:
        as_session(first, PLANT)
        assert (first.sandbox / ".venv" / "evil.pth").exists()
    async with await IsolatedSession.create(repo, config=cfg) as second:
        assert second.reused, "the test needs a warm reuse"
        venv = second.sandbox / ".venv"
        assert not (venv / "evil.pth").exists(), "the old session's .pth survived the reset"
        assert (venv / "marker").read_text() == "the user's\n"
        assert (venv / "bin" / "tool").read_text() == "#!/bin/sh\n"
    assert not (repo / ".venv" / "evil.pth").exists()
