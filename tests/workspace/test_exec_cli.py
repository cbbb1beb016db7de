"""`superqe exec`: the real CLI in a subprocess, as a user runs it."""

from __future__ import annotations

import base64
import io
import os
import re
import shutil
import subprocess
import sys
import tarfile
from pathlib import Path

import pytest

from superqode_ls.workspace.fingerprint import compare, take_fingerprint

from ..conftest import run_git
from .helpers import disk_state, worktree_paths

SUPERQE = [sys.executable, "-m", "superqode_ls"]


def superqe(*args: str, cwd: Path | None = None) -> subprocess.CompletedProcess:
    return subprocess.run([*SUPERQE, *args], cwd=cwd, capture_output=True, text=True, timeout=120)


def test_exec_patch_applies_and_reproduces_the_change(make_repo, tmp_path):
    repo = make_repo({"app.py": "x = 1\n", "keep.txt": "k\n", "gone.txt": "g\n"})
    (repo / "app.py").write_text("x = 1\ny = 2\n")  # unstaged, carried in
    (repo / "notes ü.txt").write_text("untracked\n")
    before = take_fingerprint(repo)
    # The command may write only its sandbox and its session's private
    # folders (the kernel barrier), all removed with it: it hands its copy
    # of the sandbox out on stdout.
    expected = tmp_path / "expected"
    script = (
        "printf 'x = 10\\ny = 2\\n' > app.py && rm gone.txt && printf 'new' > 'brand new.txt' "
        "&& chmod +x keep.txt && tar -cf - . | base64"
    )
    proc = superqe("exec", str(repo), "--", "sh", "-c", script)
    assert proc.returncode == 0, proc.stderr
    with tarfile.open(fileobj=io.BytesIO(base64.b64decode(proc.stdout))) as tar:
        tar.extractall(expected, filter="tar")
    sid = re.search(r"^session: (qe-\S+)$", proc.stderr, re.M).group(1)
    patch = Path(re.search(r"^patch: (\S+\.patch)", proc.stderr, re.M).group(1))
    assert sid in patch.name and patch.parent == repo / ".superqode/qe-artifacts/patches"
    assert "Verified" in proc.stderr
    assert compare(before, take_fingerprint(repo)) == []
    assert worktree_paths(repo) == [str(repo)]
    # Apply on a copy of the user's tree: it must reproduce the sandbox.
    copy = tmp_path / "copy"
    shutil.copytree(repo, copy, symlinks=True)
    run_git(copy, "apply", "--check", str(patch))
    run_git(copy, "apply", str(patch))
    assert disk_state(copy) == disk_state(expected)


def test_exec_exit_status_is_the_commands(make_repo):
    repo = make_repo()
    proc = superqe("exec", str(repo), "--", "sh", "-c", "exit 7")
    assert proc.returncode == 7
    assert "patch: none" in proc.stderr


def test_exec_keep_leaves_the_sandbox_for_later(make_repo):
    repo = make_repo()
    proc = superqe("exec", "--keep", str(repo), "--", "sh", "-c", "echo hi > made.txt")
    assert proc.returncode == 0, proc.stderr
    sandbox = Path(re.search(r"^sandbox: (.+)$", proc.stderr, re.M).group(1))
    assert (sandbox / "made.txt").read_text() == "hi\n"
    assert str(sandbox) in worktree_paths(repo)
    assert not (repo / "made.txt").exists()


def test_exec_usage_errors_are_one_line(tmp_path):
    proc = superqe("exec", str(tmp_path / "missing"), "--", "true")
    assert proc.returncode == 2
    assert proc.stderr.strip().count("\n") == 0 and "no such directory" in proc.stderr
    proc = superqe("exec", str(tmp_path))
    assert proc.returncode == 2 and "needs a command" in proc.stderr


def test_exec_snapshot_of_a_plain_folder(tmp_path):
    proj = tmp_path / "plain"
    proj.mkdir()
    (proj / "a.txt").write_text("a\n")
    proc = superqe("exec", "--snapshot", str(proj), "--", "sh", "-c", "echo b >> a.txt")
    assert proc.returncode == 0, proc.stderr
    patch = Path(re.search(r"^patch: (\S+\.patch)", proc.stderr, re.M).group(1))
    assert "+b" in patch.read_text()
    assert (proj / "a.txt").read_text() == "a\n"


def test_bad_config_is_one_line_naming_file_key_and_allowed(make_repo):
    repo = make_repo()
    (repo / "superqode.yaml").write_text("workspace:\n  isolaton: worktree\n")
    proc = superqe("exec", str(repo), "--", "true")
    assert proc.returncode == 2
    line = proc.stderr.strip()
    assert "\n" not in line
    assert "superqode.yaml" in line and "workspace.isolaton" in line and "isolation" in line
    (repo / "superqode.yaml").write_text("qe:\n  confidence_threshold: 3\n")
    proc = superqe("exec", str(repo), "--", "true")
    assert proc.returncode == 2 and "qe.confidence_threshold" in proc.stderr
    assert "\n" not in proc.stderr.strip()
    assert not list(Path(os.environ["SUPERQODE_HOME"]).glob("working/*/qe/qe-*"))


def test_exec_on_a_repository_whose_path_holds_a_newline(tmp_path):
    repo = tmp_path / "repo\nname"
    repo.mkdir()
    run_git(repo, "init", "-q")
    (repo / "a.txt").write_text("x\n")
    run_git(repo, "add", "-A")
    run_git(repo, "commit", "-qm", "i")
    before = take_fingerprint(repo)
    proc = superqe("exec", str(repo), "--", "sh", "-c", "echo y >> a.txt")
    assert proc.returncode == 0, proc.stderr
    assert "Traceback" not in proc.stderr and "Verified" in proc.stderr
    assert compare(before, take_fingerprint(repo)) == []
    wts = repo / ".git" / "worktrees"
    assert not wts.exists() or os.listdir(wts) == []  # (porcelain output splits the path)


@pytest.mark.parametrize("isolation", ["--worktree", "--snapshot"])
def test_absolute_links_into_the_project_point_into_the_sandbox(make_repo, isolation):
    repo = make_repo({"data.txt": "data\n", "sub/keep.txt": "k\n"})
    os.symlink(repo / "data.txt", repo / "tracked-link")
    run_git(repo, "add", "tracked-link")
    run_git(repo, "commit", "-qm", "link")
    os.symlink(repo / "sub", repo / "untracked-dir-link")
    os.symlink("/etc/hostname", repo / "outside-link")
    before = take_fingerprint(repo)
    script = ('echo one >> tracked-link && echo two > untracked-dir-link/new.txt && '
              'readlink tracked-link untracked-dir-link outside-link')
    proc = superqe("exec", isolation, str(repo), "--", "sh", "-c", script)
    assert proc.returncode == 0, proc.stderr
    sandbox = re.search(r"^sandbox: (.+)$", proc.stderr, re.M).group(1)
    out = proc.stdout.splitlines()
    assert out[:3] == [f"{sandbox}/data.txt", f"{sandbox}/sub", "/etc/hostname"]
    patch = Path(re.search(r"^patch: (\S+\.patch)", proc.stderr, re.M).group(1)).read_text()
    assert "+one" in patch and "sub/new.txt" in patch
    assert "link" not in patch  # the retargeting is not the command's change
    assert compare(before, take_fingerprint(repo)) == []
    assert (repo / "data.txt").read_text() == "data\n" and not (repo / "sub/new.txt").exists()
