"""Overhead of the sandbox git shim against calling git directly.

    .venv/bin/python bench/guard_shim.py [--rounds 30]

Runs, interleaved, the real git and the shim on a small repository for a
fast-path commands (`status`, `branch --list`), a command that needs the Python check
and a blocked one (`commit`), and prints medians in milliseconds.
"""

from __future__ import annotations

import argparse
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from superqode_ls.workspace.guard_env import install_guard


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--rounds", type=int, default=30)
    args = ap.parse_args()
    tmp = Path(tempfile.mkdtemp(prefix="guard-bench-"))
    try:
        repo = tmp / "repo"
        repo.mkdir()
        git = shutil.which("git")
        for cmd in (["init", "-q"], ["commit", "-q", "--allow-empty", "-m", "x"]):
            subprocess.run(
                [git, "-c", "user.name=b", "-c", "user.email=b@b", *cmd], cwd=repo, check=True
            )
        g = install_guard(tmp / "private")
        env = g.env()
        shim = str(g.bin_dir / "git")
        cases = {
            "status (sh fast path)": ["status", "--short"],
            "branch --list (sh fast path)": ["branch", "--list"],
            "branch -d x (Python check)": ["branch", "-d", "nonexistent"],
            "commit (blocked)": ["commit", "-m", "x"],
        }
        times: dict[tuple[str, str], list[float]] = {}
        for _ in range(args.rounds):
            for name, argv in cases.items():
                for who, exe in (("git", g.real_git), ("shim", shim)):
                    t = time.perf_counter()
                    subprocess.run(
                        [exe, *argv], cwd=repo, env=env, capture_output=True, check=False
                    )
                    times.setdefault((name, who), []).append(time.perf_counter() - t)
        for name in cases:
            real = statistics.median(times[(name, "git")]) * 1000
            shimmed = statistics.median(times[(name, "shim")]) * 1000
            print(f"{name:32s} git {real:6.1f} ms   shim {shimmed:6.1f} ms   +{shimmed - real:.1f}")
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


if __name__ == "__main__":
    main()
