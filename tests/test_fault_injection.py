"""Fault injection: `superqe exec` killed with SIGKILL at random points.

For generated dirty states of a repository, a `superqe exec` child is killed
during sandbox creation, during the command (which does its worst with git),
or during the revert. Afterwards `superqe clean --force` must leave no
sandbox, no `.git/worktrees` entry, no stale lock, and the user's repository
must be exactly as before (stat fingerprint and content fingerprint).

Seeded: SUPERQODE_FAULT_SEED reproduces a run; SUPERQODE_FAULT_SCENARIOS
changes how many scenarios run (default 30).
"""

from __future__ import annotations

import os
import random
import signal
import subprocess
import sys
import time
from collections import Counter
from pathlib import Path

import pytest

from superqode_ls.cli import main
from superqode_ls.workspace.fingerprint import compare, take_fingerprint
from superqode_ls.workspace.paths import working_root
from superqode_ls.workspace.records import read_record
from tests.conftest import run_git
from tests.safety_helpers import content_fingerprint, leftovers, lock_holders, registrations
from tests.waiting import WaitTimeout, wait_for

SEED = int(os.environ.get("SUPERQODE_FAULT_SEED", "20261121"))
SCENARIOS = int(os.environ.get("SUPERQODE_FAULT_SCENARIOS", "30"))
PHASES = ("create", "command", "revert")

BASE_FILES = {
    "README.md": "# project\n",
    "src/app.py": "def main():\n    return 1\n",
    "src/util.py": "X = 1\n",
    "docs/naïve notes.md": "unicode and a space\n",
    "bin/run.sh": "#!/bin/sh\necho run\n",
    ".gitignore": "*.log\nbuild/\n",
}

# What the agent does inside the sandbox: everything a careless tool could.
AGENT = r"""
echo agent > README.md
rm -f src/util.py
mkdir -p gen && echo 'def test_x(): pass' > gen/test_x.py
chmod +x src/app.py
git add -A >/dev/null 2>&1
git commit -qm agent >/dev/null 2>&1
git checkout -q -b agent-branch >/dev/null 2>&1
git push --force origin HEAD >/dev/null 2>&1
git stash >/dev/null 2>&1
git config user.name evil >/dev/null 2>&1
git reset --hard HEAD~1 >/dev/null 2>&1
git tag agent-tag >/dev/null 2>&1
echo more > README.md
touch "$XDG_CACHE_HOME/$FAULT_MARKER"
if [ "$FAULT_PHASE" = command ]; then sleep 30; fi
"""


def _op_modify(repo, rng):
    (repo / "src" / "app.py").write_text(f"def main():\n    return {rng.randint(2, 99)}\n")


def _op_stage(repo, rng):
    (repo / "README.md").write_text(f"# staged {rng.random()}\n")
    run_git(repo, "add", "README.md")


def _op_partially_staged(repo, rng):
    (repo / "src" / "util.py").write_text("X = 2\n")
    run_git(repo, "add", "src/util.py")
    (repo / "src" / "util.py").write_text("X = 3\n")


def _op_untracked(repo, rng):
    name = rng.choice(["new file.txt", "ünïcode.py", "deep/er/path/n.txt"])
    p = repo / name
    p.parent.mkdir(parents=True, exist_ok=True)
    p.write_text("untracked\n")


def _op_delete(repo, rng):
    (repo / "docs" / "naïve notes.md").unlink()


def _op_staged_delete(repo, rng):
    run_git(repo, "rm", "-q", "-f", "--cached", "src/util.py")


def _op_chmod(repo, rng):
    os.chmod(repo / "bin" / "run.sh", 0o755 if rng.random() < 0.5 else 0o600)


def _op_symlink(repo, rng):
    os.symlink("src/app.py", repo / "link-to-app")


def _op_ignored(repo, rng):
    (repo / "build").mkdir(exist_ok=True)
    (repo / "build" / "out.o").write_bytes(bytes(rng.randrange(256) for _ in range(64)))
    (repo / "debug.log").write_text("ignored\n")


def _op_binary(repo, rng):
    (repo / "blob.bin").write_bytes(bytes(range(256)) * 4)


def _op_stash(repo, rng):
    (repo / "README.md").write_text("stashed\n")
    run_git(repo, "stash", "push", "-q", "-m", "user stash")


def _op_branch(repo, rng):
    run_git(repo, "checkout", "-q", "-b", f"feature-{rng.randint(0, 999)}")


OPS = [_op_modify, _op_stage, _op_partially_staged, _op_untracked, _op_delete,
       _op_staged_delete, _op_chmod, _op_symlink, _op_ignored, _op_binary, _op_stash, _op_branch]


def _dirty(repo: Path, rng: random.Random) -> list[str]:
    chosen = rng.sample(OPS, rng.randint(1, 4))
    # Order matters for some (stash before edits); apply in list order.
    chosen.sort(key=OPS.index)
    for op in chosen:
        op(repo, rng)
    return [op.__name__[4:] for op in chosen]


def _records() -> list[Path]:
    return list(working_root().glob("*/qe/*.json"))


def _state() -> str:
    for path in _records():
        rec = read_record(path)
        if rec is not None:
            return rec.state
    return "none"


def _wait(cond, limit: float) -> bool:
    """Whether ``cond`` came true within ``limit`` (polled tightly: the kill
    that follows aims at a moment, not a state that lasts)."""
    try:
        return bool(wait_for(cond, limit, "the phase", poll=0.005))
    except WaitTimeout:
        return False


class _Marker:
    """The command's marker in its session's own XDG cache, wherever that is."""

    def __init__(self, name: str):
        self.name = name

    def __str__(self) -> str:
        return self.name

    def exists(self) -> bool:
        return any(working_root().glob(f"*/qe/.*.d/xdg/{self.name}"))


def _calibrate(repo: Path, marker: _Marker) -> tuple[float, float]:
    """(seconds to the session's record, seconds it stays "creating") of one
    whole `superqe exec` here: the create phase's kills are aimed inside that
    window, so that they land in it on a fast machine as on a slow one."""
    env = dict(os.environ, FAULT_MARKER=str(marker), FAULT_PHASE="revert")
    t0 = time.monotonic()
    proc = subprocess.Popen(
        [sys.executable, "-m", "superqode_ls", "exec", str(repo), "--", "sh", "-c", AGENT],
        env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, start_new_session=True,
    )
    try:
        _wait(lambda: bool(_records()) or proc.poll() is not None, 30)
        t_record = time.monotonic() - t0
        _wait(lambda: _state() not in ("none", "creating") or proc.poll() is not None, 30)
        t_created = time.monotonic() - t0
    finally:
        proc.wait(60)
    return t_record, max(t_created - t_record, 0.01)


def _run_scenario(repo: Path, phase: str, rng: random.Random, marker: _Marker,
                  in_close: bool = False, window: tuple[float, float] = (0.4, 0.25)) -> str:
    """Start `superqe exec`, SIGKILL it in ``phase``; returns the state the
    session record was in at the kill ("none" if there was no record).
    ``in_close``: in the revert phase, wait for close() itself rather than
    kill at a random moment after the command (alternated by the caller, so
    a short run does not depend on luck to reach inside close())."""
    env = dict(os.environ, FAULT_MARKER=str(marker), FAULT_PHASE=phase)
    proc = subprocess.Popen(
        [sys.executable, "-m", "superqode_ls", "exec", str(repo), "--", "sh", "-c", AGENT],
        env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, start_new_session=True,
    )
    try:
        # The random sleeps below are the behaviour tested: a SIGKILL at an
        # unforeseen moment of each phase, not a wait for something.
        if phase == "create":
            # Somewhere between "nothing yet" and "sandbox nearly ready".
            # ``window``: this machine's time to the record and in "creating".
            if rng.random() < 0.3:
                time.sleep(rng.uniform(0.0, window[0]))
            else:
                _wait(lambda: bool(_records()), 20)
                time.sleep(rng.uniform(0.0, 0.9 * window[1]))
        elif phase == "command":
            _wait(marker.exists, 30)
            time.sleep(rng.uniform(0.0, 0.3))
        else:
            _wait(marker.exists, 30)
            rng.random()  # kept: the seeded sequence of the other choices stays the same
            if not in_close:  # while the changes are collected and saved
                time.sleep(rng.uniform(0.0, 0.15))
            else:  # inside close(): sandbox being removed, tree being verified
                _wait(lambda: proc.poll() is not None or _state() == "reverting", 20)
                time.sleep(rng.uniform(0.0, 0.03))
        state = _state()
        os.kill(proc.pid, signal.SIGKILL)
        if proc.poll() is not None and proc.returncode != -9:
            state = "finished"
        return state
    finally:
        # The whole tree dies: the command (sleep) as well as superqe.
        try:
            os.killpg(proc.pid, signal.SIGKILL)
        except ProcessLookupError:
            pass
        proc.wait()


@pytest.mark.slow
def test_sigkill_at_random_points_leaves_nothing_behind(make_repo, tmp_path, capsys):
    rng = random.Random(SEED)
    observed: Counter[str] = Counter()
    calib = make_repo(BASE_FILES, name="calibration")
    window = _calibrate(calib, _Marker("marker-calibration"))
    assert main(["clean", "--force"]) == 0
    capsys.readouterr()
    for n in range(SCENARIOS):
        phase = PHASES[n % len(PHASES)]
        repo = make_repo(BASE_FILES, name=f"r{n}")
        os.chmod(repo / "bin" / "run.sh", 0o755)
        run_git(repo, "add", "-A")
        run_git(repo, "commit", "-q", "-m", "exec bit")
        ops = _dirty(repo, rng)
        before_stat = take_fingerprint(repo)
        before_content = content_fingerprint(repo)
        before_refs = run_git(repo, "for-each-ref")
        # The command may write only its sandbox and its session's private
        # folders (the kernel barrier): its "I am running" marker goes to its
        # XDG cache there (the session's id is not known beforehand).
        marker = _Marker(f"marker-{n}")
        state = _run_scenario(repo, phase, rng, marker, in_close=(n // len(PHASES)) % 2 == 1,
                              window=window)
        observed[f"{phase}:{state}"] += 1
        where = f"scenario {n} (seed {SEED}, phase {phase}, state {state}, ops {ops})"

        code = main(["clean", "--force"])
        capsys.readouterr()
        assert code == 0, where
        assert leftovers() == [], where
        assert registrations(repo) == [], where
        assert lock_holders() == [], where
        assert run_git(repo, "worktree", "list").count("\n") == 1, where
        assert compare(before_stat, take_fingerprint(repo)) == [], where
        assert content_fingerprint(repo) == before_content, where
        assert run_git(repo, "for-each-ref") == before_refs, where
    with capsys.disabled():
        print(f"\nfault injection: {SCENARIOS} scenarios (seed {SEED}; to the record "
              f"{window[0]:.2f} s, creating {window[1]:.2f} s); "
              f"phase:state at kill = {dict(sorted(observed.items()))}")
    # The kills must really have landed inside sessions, in every phase.
    assert sum(v for k, v in observed.items() if k.startswith("create:") and
               k.split(":")[1] in ("creating", "none")) >= SCENARIOS // 6
    assert observed["command:running"] >= SCENARIOS // 6
    assert observed["revert:reverting"] >= 1
