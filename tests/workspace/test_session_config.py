"""The session's git config: the guard's settings win over the user's, for a
fresh sandbox and a reused one, with the user's other settings carried."""

from __future__ import annotations

import subprocess

from superqode_ls.workspace.session import IsolatedSession

from ..conftest import run_git


def _values(config, key: str) -> list[str]:
    out = subprocess.run(["git", "config", "--file", str(config), "--get-all", key],
                         capture_output=True, text=True, check=False)
    return out.stdout.splitlines()


async def test_the_guards_settings_replace_the_users_in_every_sandbox(make_repo):
    repo = make_repo({"app.py": "x = 1\n"})
    run_git(repo, "config", "protocol.ext.allow", "always")
    run_git(repo, "config", "--add", "protocol.ext.allow", "user")
    run_git(repo, "config", "receive.denycurrentbranch", "ignore")  # keys are case-blind
    run_git(repo, "config", "superqode.test", "kept")
    for _ in range(2):  # a cold sandbox, then the warm one reset
        async with await IsolatedSession.create(repo) as s:
            config = s.private / "git" / "common" / "config"
            assert _values(config, "protocol.ext.allow") == ["never"]
            assert _values(config, "receive.denyCurrentBranch") == ["refuse"]
            assert _values(config, "core.fsmonitor") == ["false"]
            assert _values(config, "gc.auto") == ["0"]
            assert _values(config, "core.hooksPath") == [dict(s.guard.config_entries)["core.hooksPath"]]
            assert _values(config, "superqode.test") == ["kept"]
            # git, run in the sandbox, reads the same
            got = subprocess.run(["git", "config", "protocol.ext.allow"], cwd=s.sandbox,
                                 capture_output=True, text=True, check=False).stdout.strip()
            assert got == "never"
        assert s.verification.verified


def test_the_git_dirs_of_a_repository_whose_path_holds_newlines(tmp_path):
    from superqode_ls.workspace import worktree as wt

    for name in ("plain", "two\nlines", "ends in newline\n"):
        repo = tmp_path / name
        repo.mkdir()
        run_git(repo, "init", "-q")
        gd, common = wt.user_git_dirs(repo)
        assert gd == (repo / ".git").resolve() and common == (repo / ".git").resolve()
