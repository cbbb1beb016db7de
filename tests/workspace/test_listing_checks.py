"""The checks that read git's whole listings in Python (warmreset's odd-record
test, carry's flagged entries) against a plain record-by-record reading, on
real git output: the odd or flagged record first, in the middle, last, and
paths that look like records."""

from __future__ import annotations

import re
import subprocess

import pytest

from superqode_ls.workspace import carry, warmreset

from ..conftest import run_git

# Record by record, as the checks read before they searched the whole listing.
_GOOD_INDEX = re.compile(rb"[HSsh] (?:100644|100755|120000) [0-9a-f]+ 0\t")
_GOOD_TREE = re.compile(rb"(?:100644|100755|120000) blob ")
SHA = "e69de29bb2d1d6434b8b29ae775ad8c2e48c5391"  # the empty blob

# Names sorted so that the odd entry is the first, a middle or the last record;
# the others look like records of their own ("H 160000 ...", a tab, a space).
FILES = {"b.py": "", "m m.py": "x\n", "H 160000 x 1\tq.py": "y\n", "y.py": "z\n"}


def _index_odd(listing: bytes) -> bool:
    return any(r and not _GOOD_INDEX.match(r) for r in listing.split(b"\0"))


def _tree_odd(listing: bytes) -> bool:
    return any(r and not _GOOD_TREE.match(r) for r in listing.split(b"\0"))


def _flagged(listing: bytes) -> tuple[list[str], list[str]]:
    skip, assume = [], []
    for r in listing.split(b"\0"):
        tag, path = r[:1], r[2:].decode("utf-8", "surrogateescape")
        if tag in (b"S", b"s"):
            skip.append(path)
        if tag.islower():
            assume.append(path)
    return skip, assume


def _out(repo, *args: str) -> bytes:
    return subprocess.run(["git", *args], cwd=repo, capture_output=True, check=True).stdout


def _repo(make_repo, name):
    return make_repo(FILES, name=name)


@pytest.mark.parametrize("odd", ["a", "n", "zz"])  # first, middle, last record
def test_a_gitlink_anywhere_in_the_index_or_tree_is_odd(make_repo, odd):
    repo = _repo(make_repo, f"gitlink-{odd}")
    plain_index, plain_tree = _out(repo, "ls-files", "-s", "-v", "-z"), _out(repo, "ls-tree", "-r", "-z", "HEAD")
    assert not warmreset._odd(warmreset._ODD_INDEX, plain_index) and not _index_odd(plain_index)
    assert not warmreset._odd(warmreset._ODD_TREE, plain_tree) and not _tree_odd(plain_tree)
    run_git(repo, "update-index", "--add", "--cacheinfo", f"160000,{'1' * 40},{odd}")
    run_git(repo, "commit", "-q", "-m", "gitlink")
    index, tree = _out(repo, "ls-files", "-s", "-v", "-z"), _out(repo, "ls-tree", "-r", "-z", "HEAD")
    assert _index_odd(index) and warmreset._odd(warmreset._ODD_INDEX, index)
    assert _tree_odd(tree) and warmreset._odd(warmreset._ODD_TREE, tree)


@pytest.mark.parametrize("odd", ["a", "n", "zz"])
def test_an_unmerged_entry_anywhere_in_the_index_is_odd(make_repo, odd):
    repo = _repo(make_repo, f"unmerged-{odd}")
    stages = "".join(f"100644 {SHA} {n}\t{odd}\n" for n in (1, 2, 3))
    subprocess.run(["git", "update-index", "--index-info"], cwd=repo, input=stages.encode(),
                   check=True)
    index = _out(repo, "ls-files", "-s", "-v", "-z")
    assert b" 2\t" in index  # git lists the stages
    assert _index_odd(index) and warmreset._odd(warmreset._ODD_INDEX, index)


def test_empty_listings_are_not_odd():
    for pattern in (warmreset._ODD_INDEX, warmreset._ODD_TREE):
        assert not warmreset._odd(pattern, b"")
        assert not warmreset._odd(pattern, b"\0")


@pytest.mark.parametrize("first", ["b.py", "m m.py", "y.py"])
def test_flagged_entries_are_found_wherever_they_are(make_repo, first):
    repo = _repo(make_repo, f"bits-{first.replace(' ', '_')}")
    assert carry.index_bits(repo).skip_worktree == []
    run_git(repo, "update-index", "--skip-worktree", first)
    run_git(repo, "update-index", "--assume-unchanged", "y.py", "H 160000 x 1\tq.py")
    listing = _out(repo, "ls-files", "-v", "-z")
    bits = carry.index_bits(repo)
    skip, assume = _flagged(listing)
    assert (bits.skip_worktree, bits.assume_unchanged) == (skip, assume)
    assert first in bits.skip_worktree and "H 160000 x 1\tq.py" in bits.assume_unchanged


def _flagged_staged(listing: bytes) -> tuple[list[str], list[str]]:
    skip, assume = [], []
    for r in listing.split(b"\0"):
        tag, path = r[:1], r.partition(b"\t")[2].decode("utf-8", "surrogateescape")
        if tag in (b"S", b"s"):
            skip.append(path)
        if tag.islower():
            assume.append(path)
    return skip, assume


@pytest.mark.parametrize("first", ["b.py", "m m.py", "y.py"])
def test_the_parked_index_flags_are_found_wherever_they_are(make_repo, first):
    repo = _repo(make_repo, f"parked-{first.replace(' ', '_')}")
    assert warmreset.flagged(_out(repo, "ls-files", "-s", "-v", "-z")) == ([], [])
    run_git(repo, "update-index", "--skip-worktree", first, "H 160000 x 1\tq.py")
    run_git(repo, "update-index", "--assume-unchanged", "y.py")
    listing = _out(repo, "ls-files", "-s", "-v", "-z")
    skip, assume = warmreset.flagged(listing)
    assert (skip, assume) == _flagged_staged(listing)
    assert first in skip and "H 160000 x 1\tq.py" in skip and assume == ["y.py"]


def _user_env(repo, index):
    return {"GIT_INDEX_FILE": str(index), "GIT_DIR": str(repo / ".git"), "GIT_WORK_TREE": str(repo)}


def test_bits_and_nested_from_one_listing_equal_the_two_listings(make_repo, tmp_path):
    """The user's state read by one ``ls-files --cached --others`` gives the
    flagged entries and the nested repositories the two calls gave: ignored
    files and repositories, nested ones deeper in untracked folders, a
    submodule, links, empty folders, names that look like records."""
    repo = _repo(make_repo, "both")
    sub = make_repo({"s.py": "s = 1\n"}, name="sub-origin")
    run_git(repo, "-c", "protocol.file.allow=always", "submodule", "add", "-q", str(sub), "mods/sub")
    run_git(repo, "-c", "user.name=t", "-c", "user.email=t@t", "commit", "-q", "-m", "sub")
    run_git(repo, "update-index", "--skip-worktree", "b.py")
    run_git(repo, "update-index", "--assume-unchanged", "y.py", "H 160000 x 1\tq.py")
    run_git(repo, "update-index", "--skip-worktree", "y.py")
    (repo / ".gitignore").write_text("ignored/\n*.log\n")
    for rel in ("clone", "ignored/repo", "untracked/deep/inner", "? x/repo"):
        (repo / rel).mkdir(parents=True)
        run_git(repo / rel, "init", "-q")
    (repo / "untracked" / "plain.txt").write_text("u\n")
    (repo / "empty" / "folder").mkdir(parents=True)
    (repo / "a.log").write_text("ignored\n")
    (repo / "? u.py").write_text("looks like a record\n")
    (repo / "new\nline.py").write_text("odd name\n")
    (repo / "link").symlink_to("untracked")
    (repo / "dangling").symlink_to("nowhere")
    index = tmp_path / "user-index"
    subprocess.run(["cp", "-p", str(repo / ".git" / "index"), str(index)], check=True)
    env = _user_env(repo, index)

    bits, nested = carry.bits_and_nested(repo, env)
    old_bits, old_nested = carry.index_bits(repo, env), carry.nested_repos(repo, env)
    assert (bits.skip_worktree, bits.assume_unchanged) == (old_bits.skip_worktree,
                                                           old_bits.assume_unchanged)
    assert nested == old_nested
    assert sorted(nested) == ["? x/repo", "clone", "untracked/deep/inner"]
    assert sorted(bits.skip_worktree) == ["b.py", "y.py"]
    assert sorted(bits.assume_unchanged) == ["H 160000 x 1\tq.py", "y.py"]

    index.unlink()  # no index yet: no bit, the same nested repositories
    bits, nested = carry.bits_and_nested(repo, env)
    assert not bits and nested == carry.nested_repos(repo, env)
