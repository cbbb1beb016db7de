"""Overhead of the sandbox git shim against calling git directly.

    .venv/bin/python bench/guard_shim.py [--rounds 30] [--baseline REF]

Runs, interleaved, the real git and the shim on a small repository for a
fast-path commands (`status`, `branch --list`), a command that needs the Python check,
one whose `-c core.pager` value the shell reader judges, and a blocked one
(`commit`), and prints medians in milliseconds.

With ``--baseline REF`` the shim of that commit's ``superqode_ls`` (extracted
with ``git archive``) runs side by side, and each line ends with the ratio
shim/baseline-shim (e.g. ``--baseline 7a7aa66``, the last commit with the guard
in one file).
"""

from __future__ import annotations

import argparse
import json
import resource
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

ROOT = Path(__file__).resolve().parents[1]
_INSTALL = (
    "import json, sys; from pathlib import Path; sys.path.insert(0, sys.argv[1]);"
    "from superqode_ls.workspace.guard_env import install_guard;"
    "g = install_guard(Path(sys.argv[2]));"
    "print(json.dumps({'shim': str(g.bin_dir / 'git'), 'git': g.real_git, 'env': g.env()}))"
)


def _install(pkg_parent: Path, private: Path) -> dict:
    """A guard installed by the ``superqode_ls`` under ``pkg_parent`` (its shim
    imports that package)."""
    out = subprocess.run(
        [sys.executable, "-c", _INSTALL, str(pkg_parent), str(private)],
        capture_output=True,
        text=True,
        check=True,
    )
    return json.loads(out.stdout)


_LAST_CPU = [0.0]


def _children_cpu() -> float:
    """CPU seconds the children used since the previous call."""
    ru = resource.getrusage(resource.RUSAGE_CHILDREN)
    total = ru.ru_utime + ru.ru_stime
    delta, _LAST_CPU[0] = total - _LAST_CPU[0], total
    return delta


def _extract(ref: str, dest: Path) -> Path:
    dest.mkdir(parents=True)
    tar = subprocess.run(
        ["git", "-C", str(ROOT), "archive", ref, "superqode_ls"], capture_output=True, check=True
    ).stdout
    subprocess.run(["tar", "-x", "-C", str(dest)], input=tar, check=True)
    return dest


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--rounds", type=int, default=30)
    ap.add_argument("--baseline", help="a commit whose shim runs side by side")
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
        g = _install(ROOT, tmp / "private")
        # Each shim with its own guard's environment: the sh fast path checks it.
        exes = [("git", g["git"], g["env"]), ("shim", g["shim"], g["env"])]
        if args.baseline:
            base = _install(_extract(args.baseline, tmp / "base"), tmp / "private-base")
            exes.append(("base", base["shim"], base["env"]))
        cases = {
            "status (sh fast path)": ["status", "--short"],
            "branch --list (sh fast path)": ["branch", "--list"],
            "branch -d x (Python check)": ["branch", "-d", "nonexistent"],
            "-c core.pager=cat log (shell reader)": ["-c", "core.pager=cat", "log", "-1"],
            "commit (blocked)": ["commit", "-m", "x"],
        }
        times: dict[tuple[str, str], list[float]] = {}
        # CPU seconds of each run (user + system of the finished children): on a
        # shared machine far steadier than wall time, which waits for the CPU.
        cpu: dict[tuple[str, str], list[float]] = {}
        _children_cpu()
        for _ in range(args.rounds):
            for name, argv in cases.items():
                for who, exe, env in exes:
                    t = time.perf_counter()
                    subprocess.run(
                        [exe, *argv], cwd=repo, env=env, capture_output=True, check=False
                    )
                    times.setdefault((name, who), []).append(time.perf_counter() - t)
                    cpu.setdefault((name, who), []).append(_children_cpu())
        for name in cases:
            real = statistics.median(times[(name, "git")]) * 1000
            shimmed = statistics.median(times[(name, "shim")]) * 1000
            line = f"{name:38s} git {real:6.1f} ms   shim {shimmed:6.1f} ms   +{shimmed - real:.1f}"
            if args.baseline:
                based = statistics.median(times[(name, "base")]) * 1000
                line += f"   baseline shim {based:6.1f} ms   ratio {shimmed / based:.2f}"
                c_new = statistics.median(cpu[(name, "shim")])
                c_base = statistics.median(cpu[(name, "base")])
                line += f"   cpu ratio {c_new / c_base:.2f}" if c_base else ""
            print(line)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


if __name__ == "__main__":
    main()
