"""A skip-worktree or assume-unchanged file's edit reaches the sandbox even
where the index's stat data still matches it: git never compares a flagged
entry with the disk (nor marks it racy when it writes the index), and it
compares stat data in whole seconds, so clearing the bit alone leaves an
edit of the same size, made in the second the entry was recorded, unseen.
Here ``core.trustctime=false`` and a file's mtime set back stand for that
second, so that the case does not depend on the clock."""

from __future__ import annotations

import os
import time

import pytest

from superqode_ls.workspace.session import IsolatedSession

from ..conftest import run_git


@pytest.mark.parametrize("flag", ["--assume-unchanged", "--skip-worktree"])
async def test_a_flagged_files_edit_with_matching_stat_data_is_carried(make_repo, flag):
    repo = make_repo({"plain.py": "x = 1\n"})
    run_git(repo, "config", "core.trustctime", "false")
    cfg = repo / "local.cfg"
    past = time.time_ns() - 100 * 10**9  # long before the index: never racy
    cfg.write_text("committed\n")
    os.utime(cfg, ns=(past, past))
    run_git(repo, "add", "local.cfg")
    run_git(repo, "commit", "-q", "-m", "config")
    run_git(repo, "update-index", flag, "local.cfg")
    ino = cfg.stat().st_ino
    cfg.write_text("local too\n")  # the same size, in place
    os.utime(cfg, ns=(past, past))
    assert cfg.stat().st_ino == ino
    assert run_git(repo, "status", "--porcelain") == ""
    # Without the bit git itself takes the file for unchanged: the stat data
    # matches, which is the case this test is about.
    run_git(repo, "update-index", flag.replace("--", "--no-", 1), "local.cfg")
    assert run_git(repo, "status", "--porcelain") == ""
    run_git(repo, "diff", "--quiet", "--no-ext-diff")  # exit 1 (an AssertionError) on a difference
    run_git(repo, "update-index", flag, "local.cfg")
    index_before = (repo / ".git" / "index").read_bytes()
    async with await IsolatedSession.create(repo) as s:
        assert (s.sandbox / "local.cfg").read_text() == "local too\n"
        assert run_git(s.sandbox, "ls-files", "-v", "local.cfg")[0] in "hS"  # the bit inside too
    assert s.verification.verified
    assert cfg.read_text() == "local too\n"
    assert (repo / ".git" / "index").read_bytes() == index_before
