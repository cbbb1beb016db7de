"""Git reads a session's making shares instead of repeating: one ``git
config`` read serves the three questions asked of the user's configuration
(their repository's entries, what SuperQode's own git dir keeps, the filter
drivers), each answer the one its own git call gives, includes and scopes
included; a tree's listing is read once per tree id."""

from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path

from superqode_ls.workspace import carry, owngit
from superqode_ls.workspace import git as gitmod
from superqode_ls.workspace.git import config_listing, tree_listing

from ..conftest import run_git


def test_one_listing_answers_as_the_three_calls_did(make_repo, tmp_path):
    repo = make_repo({"app.py": "x = 1\n", "big.bin": "data\n"})
    home = Path(os.environ["HOME"])
    with open(home / ".gitconfig", "a") as f:  # the user's global scope
        f.write('[filter "lfs"]\n\tclean = git-lfs clean -- %f\n\tsmudge = git-lfs smudge -- %f\n'
                "[core]\n\tprecomposeunicode = true\n\tpager = less\n")
    included = tmp_path / "included.cfg"  # an include of the repository's config
    included.write_text('[filter "crypt"]\n\tprocess = git-crypt filter\n[core]\n\tignorecase = false\n'
                        "[superqode]\n\tfromInclude = yes\n")
    run_git(repo, "config", "include.path", str(included))
    run_git(repo, "config", "superqode.bare-value", "")
    with open(repo / ".git" / "config", "a") as f:
        f.write("[superqode]\n\tbare\n")  # a key without a value
    run_git(repo, "config", "core.sshCommand", "ssh -i key")  # a program: never kept

    listing = config_listing(repo)
    scopes = {scope for scope, _, _ in listing}
    assert {"global", "local"} <= scopes and "command" not in scopes

    assert owngit.user_config(repo, listing) == owngit.user_config(repo)
    assert ("superqode.fromInclude".lower(), "yes") in owngit.user_config(repo, listing)
    assert ("superqode.bare", None) in owngit.user_config(repo, listing)
    assert owngit.own_config(repo, listing) == owngit.own_config(repo)
    kept = dict(owngit.own_config(repo, listing))
    assert kept["core.ignorecase"] == "false" and kept["core.precomposeunicode"] == "true"
    assert "core.sshcommand" not in kept and "core.pager" not in kept
    assert carry.filter_names(repo, listing) == carry.filter_names(repo) == ["crypt", "lfs"]


def test_an_unreadable_configuration_lists_nothing(make_repo):
    repo = make_repo({"app.py": "x = 1\n"})
    with open(repo / ".git" / "config", "a") as f:
        f.write("[broken\n")
    assert config_listing(repo) == []


def test_a_tree_is_listed_once_by_id_and_a_name_always(make_repo, monkeypatch):
    repo = make_repo({"a.py": "x = 1\n", "pkg/b.py": "y = 2\n"})
    tree = run_git(repo, "rev-parse", "HEAD^{tree}").strip()
    calls = []
    real = gitmod.git

    def counting(args, *a, **kw):
        calls.append(list(args))
        return real(args, *a, **kw)

    monkeypatch.setattr(gitmod, "git", counting)
    monkeypatch.setattr(gitmod, "_LISTINGS", {})  # another test may have listed the same tree
    first = tree_listing(tree, repo)
    assert first == subprocess.run(["git", "ls-tree", "-r", "-z", tree], cwd=repo,
                                   capture_output=True, check=True).stdout
    assert b"pkg/b.py" in first
    assert tree_listing(tree, repo) == first and len(calls) == 1
    # A name moves: asked every time.
    tree_listing("HEAD", repo)
    tree_listing("HEAD", repo)
    assert len(calls) == 3


def _two_calls(folder: Path) -> tuple[Path | None, str | None]:
    root = gitmod.repo_root(folder)
    return root, (gitmod.head_commit(root) if root is not None else None)


def test_root_and_head_in_one_process_answer_as_the_two_calls(make_repo, tmp_path, monkeypatch):
    born = make_repo({"a.py": "x = 1\n", "pkg/b.py": "y = 2\n"}, name="born")
    unborn = tmp_path / "unborn"
    unborn.mkdir()
    run_git(unborn, "init", "-q")
    odd = tmp_path / "odd\nname"  # a newline in the top's path
    odd.mkdir()
    run_git(odd, "init", "-q")
    (odd / "f").write_text("1\n")
    run_git(odd, "add", "f")
    run_git(odd, "-c", "user.name=t", "-c", "user.email=t@t", "commit", "-q", "-m", "x")
    odd_unborn = tmp_path / "odd\nunborn"
    odd_unborn.mkdir()
    run_git(odd_unborn, "init", "-q")
    sha256 = tmp_path / "sha256"
    sha256.mkdir()
    run_git(sha256, "init", "-q", "--object-format=sha256")
    (sha256 / "f").write_text("1\n")
    run_git(sha256, "add", "f")
    run_git(sha256, "-c", "user.name=t", "-c", "user.email=t@t", "commit", "-q", "-m", "x")
    detached = make_repo({"a.py": "x = 1\n"}, name="detached")
    run_git(detached, "checkout", "-q", "--detach", "HEAD")
    damaged = make_repo({"a.py": "x = 1\n"}, name="damaged")  # HEAD names a missing object
    run_git(damaged, "update-ref", "--no-deref", "HEAD", "1" * 40, check=False)
    (damaged / ".git" / "HEAD").write_text("1" * 40 + "\n")
    plain = tmp_path / "plain"
    plain.mkdir()

    folders = [born, born / "pkg", born / ".git", unborn, odd, odd_unborn, sha256, detached,
               damaged, plain]
    calls: list[list[str]] = []
    real = gitmod.git

    def counting(args, *a, **kw):
        calls.append(list(args))
        return real(args, *a, **kw)

    monkeypatch.setattr(gitmod, "git", counting)
    answers = {}
    for folder in folders:
        calls.clear()
        got = gitmod.repo_root_head(folder)
        one = len(calls)
        answers[folder] = got
        assert got == _two_calls(folder), folder
        if folder in (born, born / "pkg", unborn, odd, odd_unborn, sha256, detached):
            assert one == 1, (folder, calls)  # the common cases: one git process
    assert answers[born] == (born, run_git(born, "rev-parse", "HEAD").strip())
    assert answers[born / "pkg"] == answers[born]
    assert answers[unborn] == (unborn, None)
    assert answers[odd][0] == odd and answers[odd_unborn] == (odd_unborn, None)
    assert len(answers[sha256][1] or "") == 64
    assert answers[damaged] == (damaged, None)
    assert answers[born / ".git"][0] is None


def test_the_seal_s_refs_from_the_fingerprint_s_listing_equal_git_s(make_repo):
    from superqode_ls.workspace.fingerprint import Fingerprint, git_part
    from superqode_ls.workspace.gitstate import refs_listing

    repo = make_repo({"a.py": "x = 1\n"}, name="refs")
    run_git(repo, "branch", "feature/é-name")
    run_git(repo, "tag", "light")
    run_git(repo, "-c", "user.name=t", "-c", "user.email=t@t", "tag", "-a", "annotated", "-m", "t")
    run_git(repo, "update-ref", "refs/remotes/origin/main", "HEAD")
    run_git(repo, "symbolic-ref", "refs/remotes/origin/HEAD", "refs/remotes/origin/main")
    run_git(repo, "stash", "list")  # no stash: its ref stays absent

    fp = git_part(repo, None)
    assert fp.refs is not None and "refs/remotes/origin/HEAD refs/remotes/origin/main" in fp.refs
    want = gitmod.git_out(["for-each-ref", "--format=%(objectname) %(refname)"], repo)
    assert refs_listing(fp.refs) == want
    assert "refs/tags/annotated" in want and "feature/é-name" in want
    # The listing rides beside the fingerprint: never stored, never compared.
    assert "refs" not in json.loads(fp.to_json())
    again = Fingerprint.from_json(fp.to_json())
    assert again.refs is None and again == fp
    empty = make_repo({"b.py": "y = 1\n"}, name="no-refs")
    run_git(empty, "update-ref", "-d", "HEAD")
    fp = git_part(empty, None)
    assert refs_listing(fp.refs or "") == "" == gitmod.git_out(["for-each-ref"], empty)
