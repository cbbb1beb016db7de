"""Saving a branch worktree's work as a patch runs no diff driver.

Before a worktree of ``superqe worktree`` goes, its uncommitted changes,
its commits on no other ref, and (orphaned) its every file are saved as
patches (workspace/branches/patches.py). Those worktrees hold what a session
promoted into them, and a ``.gitattributes`` there selects any diff driver the
user's configuration defines (``diff.<x>.textconv``, ``diff.<x>.command``,
``diff.external``). ``git diff`` would run it outside every barrier — and a
textconv'd patch would not even apply. Each driver here writes a marker; the
marker never appears and each patch is the real bytes, which apply back.
No barrier is involved: this holds at every protection level.
"""

from __future__ import annotations

import shlex
import subprocess
from pathlib import Path

from superqode_ls.workspace.branches.patches import (
    commits_patch,
    snapshot_patch,
    uncommitted_patch,
)

from ..conftest import run_git


def _armed(make_repo, tmp_path: Path, scope: str) -> tuple[Path, Path]:
    repo = make_repo({"app.py": "x = 1\n", "data.txt": "plain\n"},
                     name=f"branch repo{scope}")
    marker = tmp_path / "outside" / "ran"
    marker.parent.mkdir(parents=True)
    evil = f"echo ran >> {shlex.quote(str(marker))}"
    for key, value in (("diff.u.textconv", "sh -c " + shlex.quote(evil + '; echo CONVERTED')),
                       ("diff.u.command", "sh -c " + shlex.quote(evil)),
                       ("diff.external", "sh -c " + shlex.quote(evil))):
        subprocess.run(["git", "config", scope, key, value], cwd=repo, check=True)
    return repo, marker


def _applies(repo: Path, patch: str, *extra: str) -> None:
    proc = subprocess.run(["git", "apply", "--check", *extra, "-"], cwd=repo,
                          input=patch.encode(), capture_output=True, check=False)
    assert proc.returncode == 0, proc.stderr.decode()


def test_uncommitted_and_commit_patches_run_no_driver(make_repo, tmp_path, isolated_home):
    for scope in ("--local", "--global"):
        main, marker = _armed(make_repo, tmp_path / scope.strip("-"), scope)
        repo = main.parent / f"wt{scope}"
        run_git(main, "worktree", "add", "-q", "--detach", str(repo))
        (repo / ".gitattributes").write_text("* diff=u\n")
        (repo / "app.py").write_text("x = 2\n")
        (repo / "new.txt").write_text("new\n")
        # Shown live: the user's own `git diff` runs the driver here.
        subprocess.run(["git", "diff", "--cached", "HEAD"], cwd=repo, capture_output=True, check=False)
        subprocess.run(["git", "add", "-N", "app.py"], cwd=repo, check=False)
        subprocess.run(["git", "diff"], cwd=repo, capture_output=True, check=False)
        assert marker.exists(), "the plant is not live: git ran no driver"
        marker.unlink()

        patch = uncommitted_patch(repo)
        assert not marker.exists(), "a diff driver ran while saving uncommitted work"
        assert "CONVERTED" not in patch and "+x = 2" in patch and "+new" in patch

        run_git(repo, "add", "-A")
        run_git(repo, "commit", "-q", "-m", "work")
        head = run_git(repo, "rev-parse", "HEAD").strip()
        patch = commits_patch(main, head, None)
        assert not marker.exists(), "a diff driver ran while saving commits"
        assert "CONVERTED" not in patch and "+x = 2" in patch
        run_git(repo, "checkout", "-q", "HEAD~1")
        _applies(repo, patch)


def test_orphan_snapshot_patch_runs_no_driver(make_repo, tmp_path, isolated_home):
    _repo, marker = _armed(make_repo, tmp_path, "--global")
    folder = tmp_path / "orphan"
    folder.mkdir()
    (folder / ".gitattributes").write_text("* diff=u\n")
    (folder / "kept.py").write_text("y = 1\n")
    patch = snapshot_patch(folder)
    assert not marker.exists(), "a diff driver ran while saving an orphan's files"
    assert "CONVERTED" not in patch and "+y = 1" in patch
    empty = tmp_path / "empty"
    empty.mkdir()
    run_git(empty, "init", "-q")
    _applies(empty, patch)
