"""Sandbox create+revert against raw ``git worktree add --detach`` + ``git worktree remove``.

    .venv/bin/python bench/sandbox.py [--files 20000] [--rounds 5]

Both run side by side, interleaved, in this process, on one generated
repository with a dirty state (staged, unstaged, untracked, deleted files).
Prints medians and the ratios the project tracks, with the default
configuration: the first session of a repository (an empty pool: a cold
checkout, then parked) <= 1.2x, the next one (a warm sandbox reset to the new
state) <= 0.1x; fingerprint of 20k files < 0.5 s. The raw baseline is timed
twice: as is (add+remove: ext4 may drop the files before they reach the disk)
and with the checkout written to disk before the remove, as a sandbox that
lives through a session always is, and once more with git's parallel
checkout (``checkout.workers=4``), which SuperQode's own checkouts use: the
ratios against that say what is SuperQode's and what is git's. Also the kernel barrier's cost per spawned
process (the same command with and without a session's supervisor + Landlock).
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import resource
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from superqode_ls.config import Config  # noqa: E402
from superqode_ls.workspace import namespaces, pool  # noqa: E402
from superqode_ls.workspace.fingerprint import take_fingerprint  # noqa: E402
from superqode_ls.workspace.proc import BARRIER_ENV, run_command  # noqa: E402
from superqode_ls.workspace.session import IsolatedSession  # noqa: E402


def sh(args: list[str], cwd: Path) -> None:
    subprocess.run(args, cwd=cwd, check=True, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)


def make_repo(root: Path, n: int) -> Path:
    repo = root / "big repo"
    repo.mkdir()
    sh(["git", "init", "-q"], repo)
    sh(["git", "config", "user.email", "b@example.com"], repo)
    sh(["git", "config", "user.name", "bench"], repo)
    per_dir = 100
    for i in range(n):
        d = repo / f"pkg{i // per_dir:04d}"
        if i % per_dir == 0:
            d.mkdir()
        (d / f"mod{i % per_dir:03d}.py").write_text(f"# module {i}\nVALUE = {i}\n\ndef f(x):\n    return x + {i}\n")
    sh(["git", "config", "gc.auto", "0"], repo)  # no background gc racing the rounds
    sh(["git", "add", "-A"], repo)
    sh(["git", "commit", "-q", "-m", "generated"], repo)
    sh(["git", "gc", "-q"], repo)  # packed, like a real repository
    # the dirty state
    for i in range(0, 500, 10):
        (repo / f"pkg{i // per_dir:04d}" / f"mod{i % per_dir:03d}.py").write_text(f"CHANGED = {i}\n")
    sh(["git", "add", "pkg0000"], repo)
    for i in range(30):
        (repo / f"untracked_{i}.py").write_text(f"u = {i}\n")
    for i in range(501, 511):
        (repo / f"pkg{i // per_dir:04d}" / f"mod{i % per_dir:03d}.py").unlink()
    return repo


def raw_round(repo: Path, dest: Path, durable: bool = False, workers: int = 0) -> float:
    """``durable``: the checkout reaches the disk before it is removed, as
    any checkout that lives through a session does (the kernel writes dirty
    pages back after 30 s, vm.dirty_expire_centisecs); without it ext4's
    delayed allocation lets add+remove finish without writing the files at
    all, which no sandbox that runs anything gets. ``workers``: git's
    parallel checkout, as SuperQode's own checkouts use it (0: git's
    default, what a user's ``git worktree add`` does)."""
    par = ["-c", f"checkout.workers={workers}"] if workers else []
    t = time.perf_counter()
    sh(["git", *par, "worktree", "add", "--detach", "-q", str(dest), "HEAD"], repo)
    if durable:
        os.sync()
    sh(["git", "worktree", "remove", "--force", str(dest)], repo)
    os.sync()  # each step pays for its own writes and deletes, not the next one
    return time.perf_counter() - t


def _busy_ms(dev: int) -> int | None:
    """Milliseconds the block device holding ``dev`` has been busy (io_ticks)."""
    try:
        fields = Path(f"/sys/dev/block/{os.major(dev)}:{os.minor(dev)}/stat").read_text().split()
        return int(fields[9])
    except (OSError, IndexError, ValueError):
        return None


SETTLE_MAX_S = 60.0  # --settle-max


def settle(where: Path | None = None) -> None:
    """Let the disk finish the previous step's writes and discards before the
    next timed step starts: sync, then wait until the device has been idle
    for a second (up to ``--settle-max``, 60 s). Deleting 20,000-40,000 files on a disk mounted
    with online discard keeps it busy for seconds after sync() returns, and
    whichever step came next paid for that."""
    os.sync()
    dev = os.stat(where or tempfile.gettempdir()).st_dev
    last = _busy_ms(dev)
    if last is None:
        time.sleep(1.0)
        return
    idle, deadline = 0, time.monotonic() + SETTLE_MAX_S
    while idle < 4 and time.monotonic() < deadline:
        time.sleep(0.25)
        now = _busy_ms(dev)
        idle = idle + 1 if now == last else 0
        last = now


GIT_STARTS = [0]  # git processes started by this process (counted around a session)
_popen_init = subprocess.Popen.__init__


def _counting_init(self, args, *a, **kw):  # type: ignore[no-untyped-def]
    if isinstance(args, (list, tuple)) and args and os.path.basename(str(args[0])) == "git":
        GIT_STARTS[0] += 1
    _popen_init(self, args, *a, **kw)


subprocess.Popen.__init__ = _counting_init  # type: ignore[method-assign]
SESSION_STATS: dict[str, list[float]] = {}  # per kind: git processes, CPU seconds


def _cpu() -> float:
    """CPU seconds of this process and its waited-for children (git), in
    microseconds: ``os.times`` counts 10 ms ticks, a tenth of what one
    change to a next session saves."""
    me, kids = resource.getrusage(resource.RUSAGE_SELF), resource.getrusage(resource.RUSAGE_CHILDREN)
    return me.ru_utime + me.ru_stime + kids.ru_utime + kids.ru_stime


def session_round(repo: Path, cfg: Config, reused: bool | None = None) -> float:
    starts, cpu = GIT_STARTS[0], _cpu()
    t = time.perf_counter()
    s = IsolatedSession.create_sync(repo, config=cfg)
    made = time.perf_counter() - t
    if reused is not None and s.reused != reused:
        raise SystemExit(f"expected a {'warm' if reused else 'cold'} sandbox")
    v = s.close_sync()
    closed = time.perf_counter() - t
    os.sync()
    elapsed = time.perf_counter() - t
    if not v.verified:
        raise SystemExit(f"verification failed: {v.differences[:5]}")
    kind = "warm" if s.reused else "cold"
    SESSION_STATS.setdefault(f"{kind}_git", []).append(GIT_STARTS[0] - starts)
    SESSION_STATS.setdefault(f"{kind}_cpu", []).append(_cpu() - cpu)
    # Where the wall time went: making the sandbox, ending it (the
    # verification's walk), the sync of what both wrote.
    SESSION_STATS.setdefault(f"{kind}_create_s", []).append(made)
    SESSION_STATS.setdefault(f"{kind}_close_s", []).append(closed - made)
    SESSION_STATS.setdefault(f"{kind}_sync_s", []).append(elapsed - closed)
    return elapsed


def spawn_round(cmd: list[str], cwd: Path, env: dict[str, str], n: int) -> float:
    """Median seconds to start and finish ``cmd`` through proc.run_command."""
    times = []
    for _ in range(n):
        t = time.perf_counter()
        res = asyncio.run(run_command(cmd, cwd, env=env))
        times.append(time.perf_counter() - t)
        if res.returncode != 0:
            raise SystemExit(f"{cmd} failed: {res.stderr}")
    return statistics.median(times)


def barrier_cost(repo: Path, n: int) -> dict[str, float]:
    """The barrier's own cost per spawned process: the same tool started
    with a session's environment (supervisor + Landlock) and without it,
    interleaved in rounds."""
    s = IsolatedSession.create_sync(repo)
    try:
        barred = s.env()
        plain = {k: v for k, v in barred.items() if k != BARRIER_ENV}
        out = {}
        for name, cmd in (("true", ["true"]), ("python", [sys.executable, "-c", "pass"])):
            a, b = [], []
            for _ in range(5):
                a.append(spawn_round(cmd, s.sandbox, plain, n))
                b.append(spawn_round(cmd, s.sandbox, barred, n))
            out[f"{name}_plain_s"] = statistics.median(a)
            out[f"{name}_barrier_s"] = statistics.median(b)
    finally:
        s.close_sync()
    return out


def next_only(args: argparse.Namespace) -> None:
    tmp = Path(tempfile.mkdtemp(prefix="sq-bench-"))
    os.environ["SUPERQODE_HOME"] = str(tmp / "home")
    try:
        if args.repo is not None:
            if not (args.repo / "big repo").is_dir():
                args.repo.mkdir(parents=True, exist_ok=True)
                make_repo(args.repo, args.files)
            repo = args.repo / "big repo"
        else:
            repo = make_repo(tmp, args.files)
        load = [os.getloadavg()[0]]
        session_round(repo, Config(), reused=False)
        SESSION_STATS.clear()
        times = []
        for i in range(args.rounds):
            (repo / "pkg0000" / "mod000.py").write_text(f"# the user edits, {time.time()}\n")
            times.append(session_round(repo, Config(), reused=True))
        (repo / "pkg0000" / "mod000.py").write_text("CHANGED = 0\n")
        load.append(os.getloadavg()[0])
        result = {"next_session_s": statistics.median(times), "rounds_s": times,
                  "git_processes": statistics.median(SESSION_STATS["warm_git"]),
                  "cpu_s": statistics.median(SESSION_STATS["warm_cpu"]),
                  **{f"{part}_s": statistics.median(SESSION_STATS[f"warm_{part}_s"])
                     for part in ("create", "close", "sync")},
                  "load_1min": [round(x, 2) for x in load]}
        if args.json:
            print(json.dumps(result, indent=2))
        else:
            print(f"next session create+revert: {result['next_session_s']:.3f} s (median of "
                  f"{args.rounds}: {', '.join(f'{t:.2f}' for t in times)}); CPU "
                  f"{result['cpu_s']:.2f} s; create / close / sync {result['create_s']:.3f} / "
                  f"{result['close_s']:.3f} / {result['sync_s']:.3f} s (medians); "
                  f"{result['git_processes']:.0f} git processes; "
                  f"load {load[0]:.1f} -> {load[1]:.1f}")
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


def main() -> None:
    global SETTLE_MAX_S
    ap = argparse.ArgumentParser()
    ap.add_argument("--files", type=int, default=20000)
    ap.add_argument("--rounds", type=int, default=5)
    ap.add_argument("--json", action="store_true")
    ap.add_argument("--spawns", type=int, default=20, help="processes per barrier-cost round")
    ap.add_argument("--settle-max", type=float, default=60.0, metavar="S",
                    help="longest wait for the disk to go idle between steps (a disk other "
                         "work keeps busy never does: each step would wait this long)")
    ap.add_argument("--next-only", action="store_true",
                    help="only next sessions: one untimed first session, then --rounds next "
                         "ones, each after a user edit (wall, CPU, git processes); for "
                         "comparing two versions of SuperQode run one after the other")
    ap.add_argument("--repo", type=Path, metavar="DIR",
                    help="with --next-only: this generated repository (made there when "
                         "missing and kept), so that runs of two versions share it")
    args = ap.parse_args()
    SETTLE_MAX_S = args.settle_max
    if args.next_only:
        next_only(args)
        return
    tmp = Path(tempfile.mkdtemp(prefix="sq-bench-"))
    os.environ["SUPERQODE_HOME"] = str(tmp / "home")
    load_before = os.getloadavg()[0]
    try:
        repo = make_repo(tmp, args.files)
        defaults = Config()
        raw, durable, parallel, cold, warm, fps = [], [], [], [], [], []
        for i in range(args.rounds):
            pool.discard_all(repo)  # the first session of the repository
            settle()
            # Alternate which goes first: a step that follows another's
            # 20,000 deletions pays for them on this disk (online discard).
            if i % 2 == 0:
                raw.append(raw_round(repo, tmp / f"raw-{i}"))
                settle()
                durable.append(raw_round(repo, tmp / f"durable-{i}", durable=True))
                settle()
                parallel.append(raw_round(repo, tmp / f"par-{i}", durable=True, workers=4))
                settle()
                cold.append(session_round(repo, defaults, reused=False))
            else:
                cold.append(session_round(repo, defaults, reused=False))
                settle()
                parallel.append(raw_round(repo, tmp / f"par-{i}", durable=True, workers=4))
                settle()
                durable.append(raw_round(repo, tmp / f"durable-{i}", durable=True))
                settle()
                raw.append(raw_round(repo, tmp / f"raw-{i}"))
            settle()
            (repo / "pkg0000" / "mod000.py").write_text(f"# the user edits, round {i}\n")
            warm.append(session_round(repo, defaults, reused=True))  # the next one
            t = time.perf_counter()
            take_fingerprint(repo)
            fps.append(time.perf_counter() - t)
        result = {
            "files": args.files,
            "rounds": args.rounds,
            "raw_worktree_s": statistics.median(raw),
            "raw_durable_s": statistics.median(durable),
            "raw_parallel_s": statistics.median(parallel),
            "cold_session_s": statistics.median(cold),
            "warm_session_s": statistics.median(warm),
            "fingerprint_s": statistics.median(fps),
            "rounds_s": {"raw": raw, "durable": durable, "par": parallel, "cold": cold,
                         "warm": warm},
        }
        result.update({f"{k}_median": statistics.median(v) for k, v in SESSION_STATS.items()})
        result["load_1min"] = [round(load_before, 2), round(os.getloadavg()[0], 2)]
        result["protection"] = namespaces.protection_level()
        result.update(barrier_cost(repo, args.spawns))
        result["cold_ratio"] = result["cold_session_s"] / result["raw_worktree_s"]
        result["warm_ratio"] = result["warm_session_s"] / result["raw_worktree_s"]
        result["cold_ratio_durable"] = result["cold_session_s"] / result["raw_durable_s"]
        result["warm_ratio_durable"] = result["warm_session_s"] / result["raw_durable_s"]
        result["cold_ratio_parallel"] = result["cold_session_s"] / result["raw_parallel_s"]
        result["warm_ratio_parallel"] = result["warm_session_s"] / result["raw_parallel_s"]
        if args.json:
            print(json.dumps(result, indent=2))
        else:
            print(f"repository: {args.files} files, dirty; {args.rounds} interleaved rounds (medians)")
            print(f"raw git worktree add+remove : {result['raw_worktree_s']:.3f} s")
            print(f"  the same, checkout on disk: {result['raw_durable_s']:.3f} s")
            print(f"  on disk, 4 checkout workers: {result['raw_parallel_s']:.3f} s "
                  "(git's parallel checkout, as SuperQode's sandboxes use it)")
            print(f"first session create+revert : {result['cold_session_s']:.3f} s  "
                  f"ratio {result['cold_ratio']:.2f}x (target <= 1.2), "
                  f"{result['cold_ratio_durable']:.2f}x against the checkout on disk")
            print(f"next session create+revert  : {result['warm_session_s']:.3f} s  "
                  f"ratio {result['warm_ratio']:.2f}x (target <= 0.1), "
                  f"{result['warm_ratio_durable']:.2f}x against the checkout on disk")
            print(f"against raw git with 4 checkout workers, on disk: first "
                  f"{result['cold_ratio_parallel']:.2f}x, next {result['warm_ratio_parallel']:.2f}x")
            print(f"fingerprint                 : {result['fingerprint_s']:.3f} s (target < 0.5)")
            for kind in ("cold", "warm"):
                if f"{kind}_git_median" in result:
                    print(f"{'first' if kind == 'cold' else 'next'} session, git processes / CPU s "
                          f"(this process and its children): {result[f'{kind}_git_median']:.0f} / "
                          f"{result[f'{kind}_cpu_median']:.2f}")
            for name, values in result["rounds_s"].items():
                print(f"  {name:<5} rounds: {', '.join(f'{v:.2f}' for v in values)}")
            print(f"protection                  : {result['protection']}")
            print(f"load (1 min) before / after : {result['load_1min'][0]} / {result['load_1min'][1]} "
                  f"on {os.cpu_count()} CPUs")
            for name in ("true", "python"):
                plain, barred = result[f"{name}_plain_s"], result[f"{name}_barrier_s"]
                print(f"spawn {name:<6} plain / barrier : {plain * 1000:.1f} / {barred * 1000:.1f} ms"
                      f"  (+{(barred - plain) * 1000:.1f} ms per process)")
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


if __name__ == "__main__":
    main()
