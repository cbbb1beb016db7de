"""What each protection layer costs: per started process and per session.

    .venv/bin/python bench/sandbox_layers.py [--runs 50] [--sessions 5] [--json]

Per process: ``true`` started 50 times (interleaved) with a session's
environment at each level — plain (no supervisor), Landlock only (the
supervisor, which applies the barrier and execs), namespaces + Landlock
(bwrap around the supervisor; and SuperQode's own launcher, unshare.py,
where it can run) — median and p90 of one start-to-exit.
Per session: ``superqe exec . -- true`` end to end at each level
(``SUPERQODE_NAMESPACES=off`` for Landlock only), and the once-per-process
detection of the namespace sandbox (bwrap's probe).
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from superqode_ls.workspace import landlock, namespaces
from superqode_ls.workspace.proc import BARRIER_ENV, supervise
from superqode_ls.workspace.session import IsolatedSession


def _repo(root: Path) -> Path:
    repo = root / "repo"
    repo.mkdir()
    (repo / "a.py").write_text("x = 1\n")
    for args in (["init", "-q"], ["add", "-A"],
                 ["-c", "user.email=b@example.com", "-c", "user.name=b", "commit", "-qm", "i"]):
        subprocess.run(["git", *args], cwd=repo, check=True, capture_output=True)
    return repo


def _once(cmd: list[str], cwd: Path, env: dict[str, str]) -> float:
    t0 = time.perf_counter()
    subprocess.run(cmd, cwd=cwd, env=env, check=True, stdin=subprocess.DEVNULL,
                   stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    return time.perf_counter() - t0


def per_process(repo: Path, runs: int) -> dict[str, dict[str, float]]:
    s = IsolatedSession.create_sync(repo)
    try:
        env = s.env()
        plain_env = {k: v for k, v in env.items() if k != BARRIER_ENV}
        detected = namespaces._state()
        levels: dict[str, tuple[list[str], dict[str, str]]] = {"plain": (["true"], plain_env)}
        if landlock.abi() is not None:
            namespaces._detected = (None, "off for the bench")
            levels["landlock"] = (supervise(["true"], env), env)
            namespaces._detected = detected
            if namespaces.active():
                levels["namespaces+landlock"] = (supervise(["true"], env), env)
            if namespaces._probe(namespaces._direct([])) is None:
                namespaces._detected = (namespaces.DIRECT, None)
                levels["namespaces+landlock direct"] = (supervise(["true"], env), env)
                namespaces._detected = detected
        times: dict[str, list[float]] = {k: [] for k in levels}
        for _ in range(runs):
            for name, (cmd, e) in levels.items():
                times[name].append(_once(cmd, s.sandbox, e))
    finally:
        s.close_sync()
    return {k: {"median_ms": round(statistics.median(v) * 1000, 2),
                "p90_ms": round(statistics.quantiles(v, n=10)[-1] * 1000, 2)}
            for k, v in times.items()}


def per_session(repo: Path, rounds: int) -> dict[str, float]:
    superqe = [sys.executable, "-m", "superqode_ls", "exec", str(repo), "--", "true"]
    levels = {"landlock": {**os.environ, "SUPERQODE_NAMESPACES": "off"}}
    if namespaces.active():
        levels["namespaces+landlock"] = dict(os.environ)
    if namespaces._probe(namespaces._direct([])) is None:
        levels["namespaces+landlock_direct"] = {**os.environ, namespaces.BWRAP_ENV: "off"}
    times: dict[str, list[float]] = {k: [] for k in levels}
    for _ in range(rounds):
        for name, env in levels.items():
            times[name].append(_once(superqe, repo, env))
    out = {f"exec_{k}_s": round(statistics.median(v), 3) for k, v in times.items()}
    namespaces._detected = None
    t0 = time.perf_counter()
    namespaces.backend()
    out["detection_ms"] = round((time.perf_counter() - t0) * 1000, 1)
    return out


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--runs", type=int, default=50)
    ap.add_argument("--sessions", type=int, default=5)
    ap.add_argument("--json", action="store_true")
    a = ap.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp)
        os.environ.setdefault("SUPERQODE_HOME", str(root / "sq"))
        repo = _repo(root)
        result = {"protection": namespaces.protection_level(),
                  "per_process": per_process(repo, a.runs),
                  "per_session": per_session(repo, a.sessions)}
    if a.json:
        print(json.dumps(result, indent=2))
        return
    print(f"protection here: {result['protection']}")
    for name, v in result["per_process"].items():
        print(f"  true, {name:>20}: median {v['median_ms']:7.2f} ms  p90 {v['p90_ms']:7.2f} ms")
    for name, v in result["per_session"].items():
        print(f"  {name:>28}: {v}")


if __name__ == "__main__":
    main()
