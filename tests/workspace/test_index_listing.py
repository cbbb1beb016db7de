"""The user's index is listed for the fingerprint once while its file stays
as it was (gitstate._LISTED): a session's end and the next session's start
read the listing again only when the index file was written since."""

from __future__ import annotations

import pytest

from superqode_ls.workspace import gitstate
from superqode_ls.workspace.fingerprint import compare, git_part, take_fingerprint
from superqode_ls.workspace.verification import verify_state

from ..conftest import run_git


@pytest.fixture
def listings(monkeypatch):
    """The ``ls-files`` processes the git section runs (real git, counted)."""
    seen: list[list[str]] = []
    real = gitstate.git

    def counting(args, cwd, **kw):
        if args[:1] == ["ls-files"]:
            seen.append(list(args))
        return real(args, cwd, **kw)

    monkeypatch.setattr(gitstate, "git", counting)
    monkeypatch.setattr(gitstate, "_LISTED", {})
    return seen


def test_an_unchanged_index_is_listed_once(make_repo, listings, monkeypatch):
    monkeypatch.setattr(gitstate, "_RACY_NS", 0)
    repo = make_repo({"a.py": "a = 1\n", "b.py": "b = 1\n"})
    first = git_part(repo, None)
    second = git_part(repo, None)
    assert len(listings) == 1
    assert first.git["index"] == second.git["index"]
    # A session's end against its start: verified, no listing more.
    before = take_fingerprint(repo)
    assert verify_state(before, repo, None).verified
    assert len(listings) == 1


def test_a_written_index_is_listed_again_and_its_change_seen(make_repo, listings, monkeypatch):
    monkeypatch.setattr(gitstate, "_RACY_NS", 0)
    repo = make_repo({"a.py": "a = 1\n", "b.py": "b = 1\n"})
    before = git_part(repo, None)
    (repo / "a.py").write_text("a = 2\n")
    run_git(repo, "add", "a.py")
    after = git_part(repo, None)
    assert len(listings) == 2
    assert any(d.startswith("staged: index a.py") for d in compare(before, after))
    # The same bytes written again (a status refreshing the index) are read
    # again too, and are no change.
    run_git(repo, "update-index", "--really-refresh")
    assert compare(after, git_part(repo, None)) == []


def test_a_fresh_or_split_index_is_always_listed(make_repo, listings, monkeypatch):
    repo = make_repo({"a.py": "a = 1\n"})
    git_part(repo, None)
    git_part(repo, None)
    assert len(listings) == 2  # written in the last seconds: git's racy rule
    monkeypatch.setattr(gitstate, "_RACY_NS", 0)
    run_git(repo, "config", "core.splitIndex", "true")
    run_git(repo, "update-index", "--split-index")
    git_part(repo, None)
    git_part(repo, None)
    assert len(listings) == 4
