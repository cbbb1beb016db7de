"""The ``superqode`` pre-commit hook (.pre-commit-hooks.yaml), run by the real
``pre-commit try-repo`` on a test repository: pre-commit installs SuperQode
LS from this repository into its own environment, passes the staged file
names, and the commit fails on a planted high finding."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from tests.conftest import ROOT, run_git, write_files

PRE_COMMIT = Path(sys.executable).parent / "pre-commit"
# A name that raises when the line runs: high, and worth acting on in the
# default view (bandit's shell=True over a parameter is an advisory there).
VULNERABLE = "import subprocess\n\n\ndef run(cmd):\n    return subproces.call(cmd)\n"
CLEAN = "import subprocess\n\n\ndef run(cmd):\n    return subprocess.call(cmd)\n"


def _try_repo(repo: Path, home: Path, *files: str) -> subprocess.CompletedProcess:
    env = dict(os.environ, PRE_COMMIT_HOME=str(home), PRE_COMMIT_COLOR="never")
    args = [str(PRE_COMMIT), "try-repo", str(ROOT), "superqode", "--verbose"]
    if files:
        args += ["--files", *files]
    return subprocess.run(args, cwd=repo, env=env, capture_output=True, text=True, timeout=1200,
                          check=False)


@pytest.mark.slow
def test_hook_fails_the_commit_on_a_planted_high_finding(make_repo, tmp_path):
    if not PRE_COMMIT.exists():  # pyproject's dev extras install it
        pytest.fail(f"pre-commit is not installed in {PRE_COMMIT.parent} (pip install -e '.[dev]')")
    if shutil.which("git") is None:
        pytest.skip("git is not installed")
    repo = make_repo({"README.md": "test repo\n", "lib.py": "X = 1\n"})
    write_files(repo, {"app.py": VULNERABLE, "notes.txt": "shell=True is only text here\n"})
    run_git(repo, "add", "app.py", "notes.txt")
    home = tmp_path / "pre-commit-home"

    failed = _try_repo(repo, home)  # the staged files, as on `git commit`
    out = failed.stdout + failed.stderr
    assert failed.returncode == 1, out
    assert "SuperQode QE (quick mode)" in out and "Failed" in out
    assert "app.py:5:12: high F821" in out
    assert "sandbox ready (sparse" in out  # the staged files only, no checkout of the tree
    assert "verdict: fail" in out and "Verified: the project is exactly as before" in out
    assert "lib.py" not in out.split("Failed", 1)[1]  # only the staged file was looked at
    assert run_git(repo, "diff", "--cached", "--name-only").split() == ["app.py", "notes.txt"]

    write_files(repo, {"app.py": CLEAN})
    run_git(repo, "add", "app.py")
    passed = _try_repo(repo, home)  # the environment is reused: no second install
    assert passed.returncode == 0, passed.stdout + passed.stderr
    assert "SuperQode QE (quick mode)" in passed.stdout and "Passed" in passed.stdout
