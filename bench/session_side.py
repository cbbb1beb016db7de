"""Sessions of two source trees side by side: this checkout and a baseline.

    .venv/bin/python bench/session_side.py --baseline DIR [--files 20000] [--rounds 3]
    .venv/bin/python bench/session_side.py --baseline DIR --project PATH

``DIR`` is another source tree of SuperQode LS (``git archive REV | tar -x
-C DIR``). Each round runs, in a fresh process per tree, the first session
of the repository (empty pool) and the next one (a warm sandbox, after a
one-file edit), and times raw ``git worktree add`` + ``remove`` beside them
(bench/sandbox.py's rounds, disk settled between steps); which tree goes
first alternates by round. Prints medians, the ratios against raw, and the
git processes each session started (counted where ``subprocess.Popen``
starts them) and each session's CPU time (its process and every child:
steadier than wall time on a shared machine). Same machine, same load, same repository: the two columns
can be compared where two separate runs of bench/sandbox.py could not.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent

CHILD = r'''
import json, os, resource, subprocess, sys, time
src, repo, edit = sys.argv[1], sys.argv[2], sys.argv[3]
sys.path.insert(0, src)
counts = {"git": 0}
_init = subprocess.Popen.__init__
def counting(self, args, *a, **kw):
    if os.path.basename(str(args[0] if isinstance(args, (list, tuple)) else args)) == "git":
        counts["git"] += 1
    return _init(self, args, *a, **kw)
subprocess.Popen.__init__ = counting
from pathlib import Path
from superqode_ls.config import Config
from superqode_ls.workspace import pool
from superqode_ls.workspace.session import IsolatedSession
repo, cfg, out = Path(repo), Config(), {}
def cpu():
    a, b = resource.getrusage(resource.RUSAGE_SELF), resource.getrusage(resource.RUSAGE_CHILDREN)
    return a.ru_utime + a.ru_stime + b.ru_utime + b.ru_stime
def one(kind, reused):
    counts["git"] = 0
    c = cpu()
    t = time.perf_counter()
    s = IsolatedSession.create_sync(repo, config=cfg)
    if s.reused != reused:
        raise SystemExit(f"{kind}: reused={s.reused}")
    v = s.close_sync()
    os.sync()
    out[kind] = time.perf_counter() - t
    out[kind + "_cpu"] = cpu() - c
    out[kind + "_git"] = counts["git"]
    if not v.verified:
        raise SystemExit(f"{kind}: not verified: {v.differences[:5]}")
pool.discard_all(repo)
one("cold", False)
(repo / edit).write_text(f"# edited {time.time()}\n")
one("warm", True)
print(json.dumps(out))
'''


def child(src: Path, repo: Path, edit: str, home: Path) -> dict:
    env = {**os.environ, "SUPERQODE_HOME": str(home), "PYTHONPATH": str(src)}
    proc = subprocess.run([sys.executable, "-c", CHILD, str(src), str(repo), edit],
                          env=env, capture_output=True, text=True, check=False)
    if proc.returncode != 0:
        raise SystemExit(f"{src}: {proc.stderr.strip()[-2000:]}")
    return json.loads(proc.stdout.strip().splitlines()[-1])


def main() -> None:
    sys.path.insert(0, str(HERE))
    import sandbox  # bench/sandbox.py: the repository, raw rounds, settling

    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--baseline", type=Path, required=True, metavar="DIR")
    ap.add_argument("--files", type=int, default=20000)
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--project", type=Path, metavar="PATH",
                    help="a git repository to copy instead of the generated one")
    ap.add_argument("--settle-max", type=float, default=10.0, metavar="S")
    args = ap.parse_args()
    sandbox.SETTLE_MAX_S = args.settle_max
    tmp = Path(tempfile.mkdtemp(prefix="sq-side-"))
    try:
        if args.project:
            repo = tmp / "project"
            shutil.copytree(args.project, repo, symlinks=True)
            edit = next(p for p in sorted(repo.rglob("*.py")) if ".git" not in p.parts)
            edit = edit.relative_to(repo).as_posix()
        else:
            repo = sandbox.make_repo(tmp, args.files)
            edit = "pkg0000/mod000.py"
        trees = {"this": ROOT, "baseline": args.baseline.resolve()}
        res: dict[str, dict[str, list]] = {k: {} for k in trees}
        raw: list[float] = []
        load = [os.getloadavg()[0]]
        for i in range(args.rounds):
            order = list(trees) if i % 2 == 0 else list(trees)[::-1]
            for name in order:
                sandbox.settle()
                got = child(trees[name], repo, edit, tmp / f"home-{name}")
                for k, v in got.items():
                    res[name].setdefault(k, []).append(v)
            sandbox.settle()
            raw.append(sandbox.raw_round(repo, tmp / f"raw-{i}"))
        load.append(os.getloadavg()[0])
        rawm = statistics.median(raw)
        out = {"raw_s": rawm, "raw_rounds": raw, "load_1min": load,
               "files": args.files if not args.project else str(args.project)}
        for name in trees:
            med = {k: statistics.median(v) for k, v in res[name].items()}
            out[name] = {**med, "cold_ratio": med["cold"] / rawm,
                         "warm_ratio": med["warm"] / rawm, "rounds": res[name]}
        print(json.dumps(out, indent=1))
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


if __name__ == "__main__":
    main()
