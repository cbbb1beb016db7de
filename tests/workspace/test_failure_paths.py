"""Every failure path of `superqe exec` ends in plain lines (no traceback),
the documented exit code, the user's repository unchanged, and no
registration, lock or sandbox left behind: a full disk at creation and in the
middle of a session, a home that turns read-only, a sandbox removed under a
running session. The disk cases use a real small tmpfs as $SUPERQODE_HOME."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from superqode_ls.workspace.fingerprint import compare, take_fingerprint
from superqode_ls.workspace.paths import repo_key

from ..conftest import run_git, write_files
from ..safety_helpers import registrations
from ..waiting import wait_for

SUPERQE = [sys.executable, "-m", "superqode_ls"]


def _mount(where: Path, size: str) -> None:
    where.mkdir(parents=True, exist_ok=True)
    proc = subprocess.run(["mount", "-t", "tmpfs", "-o", f"size={size}", "tmpfs", str(where)],
                          capture_output=True, text=True, check=False)
    if proc.returncode != 0:
        pytest.skip(f"cannot mount a tmpfs here ({proc.stderr.strip() or 'not root'}): "
                    "the full-disk and read-only cases need one")


@pytest.fixture
def small_home(tmp_path):
    mounted: list[Path] = []

    def make(size: str) -> Path:
        home = tmp_path / f"home-{len(mounted)}"
        _mount(home, size)
        mounted.append(home)
        return home

    yield make
    for home in mounted:
        subprocess.run(["umount", "-l", str(home)], check=False, capture_output=True)


def _exec(home: Path, repo: Path, script: str) -> subprocess.CompletedProcess:
    env = dict(os.environ, SUPERQODE_HOME=str(home))
    return subprocess.run([*SUPERQE, "exec", str(repo), "--", "sh", "-c", script], env=env,
                          capture_output=True, text=True, timeout=180, check=False)


def _no_traceback(proc: subprocess.CompletedProcess) -> None:
    assert "Traceback" not in proc.stderr, proc.stderr
    for line in proc.stderr.splitlines():
        assert not line.startswith("  File "), proc.stderr


def _nothing_left(home: Path, repo: Path) -> None:
    assert registrations(repo) == []
    assert run_git(repo, "worktree", "list", "--porcelain", "-z").count("\0worktree ") == 0
    for base in (home / "working").glob("*"):
        qe = base / "qe"
        assert not qe.is_dir() or os.listdir(qe) == [], os.listdir(qe)
        state = base / "locks" / "state.json"
        assert not state.exists() or '"session_id"' not in state.read_text()


@pytest.fixture
def repo(make_repo):
    return make_repo({"a.txt": "a\n", "src/app.py": "x = 1\n"})


def test_disk_full_at_creation(small_home, repo):
    home = small_home("1m")
    for i in range(12):  # 1.6 MB of content: the checkout cannot fit
        (repo / f"big{i}.txt").write_text(os.urandom(100_000).hex()[:130_000])
    run_git(repo, "add", "-A")
    run_git(repo, "commit", "-qm", "big")
    (repo / "a.txt").write_text("dirty\n")
    before = take_fingerprint(repo)
    proc = _exec(home, repo, "true")
    assert proc.returncode == 3, proc.stderr
    _no_traceback(proc)
    assert len([ln for ln in proc.stderr.splitlines() if ln.strip()]) == 1, proc.stderr
    assert compare(before, take_fingerprint(repo)) == []
    _nothing_left(home, repo)


def test_disk_full_in_the_middle_of_a_session(small_home, repo):
    home = small_home("3m")
    (repo / "a.txt").write_text("dirty\n")
    before = take_fingerprint(repo)
    proc = _exec(home, repo, "echo changed > a.txt; head -c 5000000 /dev/zero > fill.bin 2>/dev/null;"
                 " exit 0")
    assert proc.returncode == 3, proc.stderr
    _no_traceback(proc)
    assert "patch: none (the command's changes could not be saved" in proc.stderr
    assert "Verified: the project is exactly as before" in proc.stderr
    assert compare(before, take_fingerprint(repo)) == []
    _nothing_left(home, repo)


def _exec_and_meanwhile(home: Path, repo: Path, meanwhile) -> subprocess.CompletedProcess:
    """`superqe exec` of a command that edits a file, says it started (a
    marker in its session's own tools' cache, one of the few places it may
    write) and sleeps; ``meanwhile()`` runs then, while the session is in
    the middle."""
    qe = home / "working" / repo_key(repo) / "qe"

    def started() -> bool:
        return any(qe.glob(".*.d/xdg/go"))

    env = dict(os.environ, SUPERQODE_HOME=str(home))
    p = subprocess.Popen([*SUPERQE, "exec", str(repo), "--", "sh", "-c",
                          'echo changed > a.txt; touch "$XDG_CACHE_HOME/go"; sleep 2'],
                         env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        wait_for(lambda: started() or p.poll() is not None, 60, "the command to start")
        assert started(), "the command did not start"
        meanwhile()
        out, err = p.communicate(timeout=120)
    finally:
        if p.poll() is None:
            p.kill()
            p.wait()
    return subprocess.CompletedProcess(p.args, p.returncode, out, err)


def test_home_turned_read_only_in_the_middle_of_a_session(small_home, repo):
    home = small_home("20m")
    before = take_fingerprint(repo)
    proc = _exec_and_meanwhile(home, repo, lambda: subprocess.run(
        ["mount", "-o", "remount,ro", str(home)], check=True))
    err = proc.stderr
    assert proc.returncode == 3, err
    _no_traceback(proc)
    assert "Verified: the project is exactly as before" in err
    assert compare(before, take_fingerprint(repo)) == []
    # The user's repository holds nothing of the session; its sandbox stays in
    # the read-only home until `superqe clean` can remove it.
    assert registrations(repo) == []
    subprocess.run(["mount", "-o", "remount,rw", str(home)], check=True)
    clean = subprocess.run([*SUPERQE, "clean", "--force"], capture_output=True,
                           env=dict(os.environ, SUPERQODE_HOME=str(home)),
                           text=True, check=False)
    assert clean.returncode == 0, clean.stderr
    _nothing_left(home, repo)


def test_sandbox_removed_under_a_running_session(repo, tmp_path):
    home = Path(os.environ["SUPERQODE_HOME"])
    before = take_fingerprint(repo)

    def remove_sandboxes() -> None:  # what another session's `superqe clean --force` does
        for sandbox in (home / "working").glob("*/qe/qe-*"):
            if sandbox.is_dir() and not sandbox.name.endswith(".d"):
                shutil.rmtree(sandbox)
    proc = _exec_and_meanwhile(home, repo, remove_sandboxes)
    err = proc.stderr
    assert proc.returncode == 3, err
    _no_traceback(proc)
    assert "the sandbox was removed during the session" in err
    assert "Verified: the project is exactly as before" in err
    assert compare(before, take_fingerprint(repo)) == []
    _nothing_left(home, repo)


def test_repository_path_with_a_newline_runs_and_leaves_nothing(tmp_path):
    repo = tmp_path / "two\nlines"
    write_files(repo, {"a.txt": "a\n"})
    run_git(repo, "init", "-q")
    run_git(repo, "add", "-A")
    run_git(repo, "commit", "-qm", "i")
    (repo / "a.txt").write_text("dirty\n")
    before = take_fingerprint(repo)
    home = Path(os.environ["SUPERQODE_HOME"])
    proc = _exec(home, repo, "echo more >> a.txt")
    assert proc.returncode == 0, proc.stderr
    _no_traceback(proc)
    assert "patch: " in proc.stderr and "1 file(s) changed" in proc.stderr
    assert compare(before, take_fingerprint(repo)) == []
    _nothing_left(home, repo)
