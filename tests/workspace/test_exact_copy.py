"""The sandbox holds the user's *working-tree bytes* whatever git's index,
attributes, filters or nesting say, and a session that changes nothing makes
no patch. Each case is a real repository set up the way people have them."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from superqode_ls.workspace.fingerprint import compare, take_fingerprint
from superqode_ls.workspace.session import IsolatedSession

from ..conftest import run_git, write_files

SUPERQE = [sys.executable, "-m", "superqode_ls"]


def files_on_disk(root: Path) -> dict[str, bytes | str]:
    """Every file below ``root`` by content (links by target), leaving out
    any ``.git`` (a file or folder, at any depth) and SuperQode's folder."""
    state: dict[str, bytes | str] = {}
    for dirpath, dirnames, filenames in os.walk(root):
        rel_dir = os.path.relpath(dirpath, root)
        dirnames[:] = [d for d in dirnames if d != ".git"
                       and not (rel_dir == "." and d == ".superqode")]
        for name in filenames + [d for d in dirnames if os.path.islink(os.path.join(dirpath, d))]:
            if name == ".git":
                continue
            p = Path(dirpath) / name
            rel = os.path.normpath(os.path.join(rel_dir, name))
            state[rel] = os.readlink(p) if p.is_symlink() else p.read_bytes()
    return state


def ls_v(root: Path) -> str:
    return run_git(root, "ls-files", "-v")


async def assert_exact_and_noop(repo: Path, **kw) -> IsolatedSession:
    before = take_fingerprint(repo)
    async with await IsolatedSession.create(repo, **kw) as s:
        assert files_on_disk(s.sandbox) == files_on_disk(repo)
        changes = await s.changes()
        assert changes.empty, changes.diff
    assert s.verification.verified, s.verification.differences
    assert compare(before, take_fingerprint(repo)) == []
    return s


async def test_crlf_attributes_carry_the_users_bytes(make_repo):
    repo = make_repo({".gitattributes": "*.txt eol=crlf\n", "a.txt": "l1\nl2\n",
                      "b.txt": "same\n"})
    for f in ("a.txt", "b.txt"):
        (repo / f).unlink()
    run_git(repo, "checkout", "HEAD", "--", "a.txt", "b.txt")
    assert (repo / "b.txt").read_bytes() == b"same\r\n"
    (repo / "a.txt").write_bytes(b"l1\r\nl2\r\nl3\r\n")  # unstaged edit, CRLF as checked out
    (repo / "new.txt").write_bytes(b"n1\r\nn2\r\n")  # untracked
    s = await assert_exact_and_noop(repo)
    assert s.verification.verified


async def test_core_autocrlf_carries_the_users_bytes(make_repo):
    repo = make_repo({"a.py": "x = 1\ny = 2\n"})
    run_git(repo, "config", "core.autocrlf", "true")
    (repo / "a.py").unlink()
    run_git(repo, "checkout", "--", "a.py")
    assert (repo / "a.py").read_bytes() == b"x = 1\r\ny = 2\r\n"
    (repo / "a.py").write_bytes(b"x = 1\r\ny = 3\r\n")
    await assert_exact_and_noop(repo)


def _rot_filter(repo: Path, marker: Path) -> None:
    # A clean/smudge pair of the git-crypt/lfs kind; the smudge side leaves a
    # mark so the test sees whether SuperQode ran it.
    run_git(repo, "config", "filter.rot.clean", "tr a-z n-za-m")
    run_git(repo, "config", "filter.rot.smudge", f"sh -c 'echo ran >> {marker}; tr n-za-m a-z'")
    run_git(repo, "config", "filter.rot.required", "true")


async def test_smudge_filter_files_are_the_users_bytes_and_the_filter_is_not_run(make_repo, tmp_path):
    marker = tmp_path / "smudged"
    repo = make_repo({"README.md": "r\n"})
    _rot_filter(repo, marker)
    write_files(repo, {".gitattributes": "*.sec filter=rot\n", "k.sec": "secret\n",
                       "j.sec": "plain\n"})
    run_git(repo, "add", "-A")
    run_git(repo, "commit", "-q", "-m", "filtered")
    assert run_git(repo, "cat-file", "-p", "HEAD:k.sec") == "frperg\n"  # stored clean
    (repo / "k.sec").write_text("secret edited\n")
    marker.unlink(missing_ok=True)
    await assert_exact_and_noop(repo)
    assert not marker.exists(), "the user's smudge command ran during the checkout"


async def test_skip_worktree_and_assume_unchanged_edits_are_carried(make_repo):
    repo = make_repo({"skip.cfg": "committed\n", "assumed.cfg": "committed\n",
                      "sparse/gone.txt": "absent on disk\n", "plain.py": "x = 1\n"})
    run_git(repo, "update-index", "--skip-worktree", "skip.cfg", "sparse/gone.txt")
    run_git(repo, "update-index", "--assume-unchanged", "assumed.cfg")
    (repo / "skip.cfg").write_text("local override\n")
    (repo / "assumed.cfg").write_text("local too\n")
    (repo / "sparse/gone.txt").unlink()  # a sparse checkout leaves it out
    assert run_git(repo, "status", "--porcelain") == ""  # git itself does not see them
    before = ls_v(repo)
    async with await IsolatedSession.create(repo) as s:
        assert (s.sandbox / "skip.cfg").read_text() == "local override\n"
        assert (s.sandbox / "assumed.cfg").read_text() == "local too\n"
        assert not (s.sandbox / "sparse/gone.txt").exists()
        assert files_on_disk(s.sandbox) == files_on_disk(repo)
        assert ls_v(s.sandbox) == before  # the same bits inside
        assert run_git(s.sandbox, "status", "--porcelain") == ""
        assert (await s.changes()).empty
        (s.sandbox / "skip.cfg").write_text("changed by a role\n")
        ch = await s.changes()
        assert [c.path for c in ch.changes] == ["skip.cfg"]  # a change to it still shows
    assert s.verification.verified
    assert (repo / "skip.cfg").read_text() == "local override\n"
    assert ls_v(repo) == before


def _git_sub(repo: Path, *args: str) -> None:
    subprocess.run(["git", "-c", "protocol.file.allow=always", *args], cwd=repo, check=True,
                   capture_output=True)


async def test_initialised_submodule_is_carried_with_its_local_edit(make_repo):
    lib = make_repo({"lib.py": "def f():\n    return 1\n", "data.txt": "d\n"}, name="lib")
    repo = make_repo({"app.py": "import lib\n"}, name="app")
    _git_sub(repo, "submodule", "add", "-q", str(lib), "vendor/lib")
    run_git(repo, "commit", "-q", "-m", "submodule")
    (repo / "vendor/lib/lib.py").write_text("def f():\n    return 2  # local edit\n")
    (repo / "vendor/lib/untracked.txt").write_text("u\n")
    s = await assert_exact_and_noop(repo)
    assert s.verification.verified


async def test_nested_repositories_are_carried_as_folders(make_repo):
    repo = make_repo({"app.py": "x = 1\n"})
    clone = repo / "third_party/clone"
    clone.mkdir(parents=True)
    run_git(clone, "init", "-q")
    write_files(clone, {"c.py": "c = 1\n", "sub/d.txt": "d\n"})
    run_git(clone, "add", "-A")
    run_git(clone, "commit", "-q", "-m", "c")
    (clone / "c.py").write_text("c = 2\n")  # dirty inside the nested clone
    fresh = repo / "scratch"
    fresh.mkdir()
    run_git(fresh, "init", "-q")  # no commit
    (fresh / "notes.txt").write_text("n\n")
    deep = repo / "vendor/libs/deep"  # below an untracked folder of plain files
    deep.mkdir(parents=True)
    (repo / "vendor/README").write_text("vendored\n")
    run_git(deep, "init", "-q")
    (deep / "d.py").write_text("d = 1\n")
    await assert_exact_and_noop(repo)


def test_noop_exec_on_a_repository_with_everything_makes_no_patch(make_repo, tmp_path):
    lib = make_repo({"lib.py": "v = 1\n"}, name="lib2")
    repo = make_repo({"app.py": "x = 1\n", ".gitattributes": "*.txt eol=crlf\n",
                      "t.txt": "a\n"}, name="all")
    _git_sub(repo, "submodule", "add", "-q", str(lib), "sub")
    run_git(repo, "commit", "-q", "-m", "sub")
    (repo / "sub/lib.py").write_text("v = 2\n")
    (repo / "nested").mkdir()
    run_git(repo / "nested", "init", "-q")
    (repo / "nested/x.txt").write_text("x\n")
    os.symlink(repo / "app.py", repo / "abs-link")
    before = take_fingerprint(repo)
    proc = subprocess.run([*SUPERQE, "exec", str(repo), "--", "true"], check=False, capture_output=True,
                          text=True, timeout=120)
    assert proc.returncode == 0, proc.stderr
    assert "no changes" in (proc.stdout + proc.stderr).lower(), proc.stdout + proc.stderr
    assert compare(before, take_fingerprint(repo)) == []


@pytest.mark.parametrize("clean", ["false", "nosuch-lfs clean"])
def test_a_failing_or_missing_filter_is_one_line_naming_filter_and_file(make_repo, clean):
    repo = make_repo({"README.md": "r\n"})
    write_files(repo, {".gitattributes": "*.bin filter=lfs\n", "big.bin": "payload\n"})
    run_git(repo, "add", "-A")
    run_git(repo, "commit", "-q", "-m", "lfs")
    run_git(repo, "config", "filter.lfs.clean", clean)
    run_git(repo, "config", "filter.lfs.required", "true")
    (repo / "big.bin").write_text("payload edited\n")  # git must run the clean filter
    before = take_fingerprint(repo)
    proc = subprocess.run([*SUPERQE, "exec", str(repo), "--", "true"], check=False, capture_output=True,
                          text=True, timeout=120)
    assert proc.returncode == 3, proc.stdout + proc.stderr
    lines = [ln for ln in proc.stderr.splitlines() if ln.strip()]
    assert len(lines) == 1 and "Traceback" not in proc.stderr, proc.stderr
    assert "lfs" in lines[0] and "big.bin" in lines[0], lines[0]
    assert compare(before, take_fingerprint(repo)) == []
    assert run_git(repo, "worktree", "list", "--porcelain").count("worktree ") == 1
    assert not list((Path(os.environ["SUPERQODE_HOME"]) / "working").glob("*/*/sandbox"))
