"""``bench/qe.py --small``: quick mode on small real projects (PyPI sdists,
tens of files) against bandit + ruff run directly, side by side in one run,
on the machine as it is ("quiet") and with CPU burners beside it ("loaded").

    .venv/bin/python bench/qe.py --small [--repeat N] [--burners K] [--write-doc]

The sdists are downloaded once with pip into build/bench-sdists/ (git-ignored).
Each run of superqe is ``superqe run --mode quick -r security_tester -r
lint_tester --timings`` in-process; its report's ``timings`` say where the
time went (sandbox, roles, verify, revert, report).
"""

from __future__ import annotations

import os
import statistics
import subprocess
import sys
import tarfile
import tempfile
from pathlib import Path

from qe import ROOT, run_direct, run_superqe  # bench/qe.py

SDISTS = ("flask==3.0.3", "requests==2.32.3")
SECTION = "## QE quick mode on small real projects (bench/qe.py --small)"
CACHE = ROOT / "build" / "bench-sdists"


def sdist(spec: str) -> Path:
    name, version = spec.split("==")
    CACHE.mkdir(parents=True, exist_ok=True)
    found = sorted(CACHE.glob(f"{name}-{version}.tar.gz"))
    if not found:
        subprocess.run([sys.executable, "-m", "pip", "download", "-q", "--no-deps", "--no-binary",
                        ":all:", spec, "-d", str(CACHE)], check=True)
        found = sorted(CACHE.glob(f"{name}-{version}.tar.gz"))
    return found[0]


def unpack(archive: Path, dest: Path) -> int:
    with tarfile.open(archive) as tar:
        top = tar.getnames()[0].split("/")[0]
        tar.extractall(dest.parent, filter="data")
    (dest.parent / top).rename(dest)
    env = {**os.environ, "GIT_AUTHOR_NAME": "bench", "GIT_AUTHOR_EMAIL": "b@localhost",
           "GIT_COMMITTER_NAME": "bench", "GIT_COMMITTER_EMAIL": "b@localhost"}
    for cmd in (["git", "init", "-q"], ["git", "add", "-A"], ["git", "commit", "-qm", "bench"]):
        subprocess.run(cmd, cwd=dest, check=True, env=env, capture_output=True)
    return sum(1 for _ in dest.rglob("*.py"))


class Burners:
    """K busy processes at normal priority: the "loaded machine" case."""

    def __init__(self, k: int):
        self.procs = [subprocess.Popen([sys.executable, "-c", "while True: pass"])
                      for _ in range(k)]

    def close(self) -> None:
        for p in self.procs:
            p.kill()
            p.wait()


def measure(repo: Path, repeat: int) -> dict:
    run_direct(repo, False)  # warm the file cache and the tools' imports
    seq, par, sq, timings = [], [], [], []
    for _ in range(repeat):
        seq.append(run_direct(repo, False)[0])
        par.append(run_direct(repo, True)[0])
        wall, _, report = run_superqe(repo)
        sq.append(wall)
        # The saved report's timings end with the report; its duration is the session's.
        timings.append({**report.get("timings", {}), "total": report["duration_s"]})
    steps = sorted({k for t in timings for k in t})
    return {
        "seq": statistics.median(seq), "par": statistics.median(par), "sq": statistics.median(sq),
        "timings": {k: statistics.median(t.get(k, 0.0) for t in timings) for k in steps},
        "load": os.getloadavg()[0],
    }


def main_small(argv: list[str]) -> int:
    import argparse

    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--small", action="store_true")
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--burners", type=int, default=2, help="busy processes for the loaded case")
    ap.add_argument("--write-doc", action="store_true")
    args = ap.parse_args(argv)
    rows = []
    with tempfile.TemporaryDirectory(prefix="sq-bench-small-") as tmp:
        os.environ["SUPERQODE_HOME"] = str(Path(tmp) / "home")
        for spec in SDISTS:
            repo = Path(tmp) / spec.split("==")[0]
            nfiles = unpack(sdist(spec), repo)
            for case in ("quiet", "loaded"):
                burners = Burners(args.burners) if case == "loaded" else None
                try:
                    m = measure(repo, args.repeat)
                finally:
                    if burners is not None:
                        burners.close()
                rows.append((spec, nfiles, case, m))
                t = m["timings"]
                print(f"{spec} ({nfiles} files), {case} (load {m['load']:.1f}): bandit+ruff "
                      f"{m['seq']:.2f} s (together {m['par']:.2f} s), superqe {m['sq']:.2f} s: "
                      f"{m['sq'] / m['seq']:.2f}x; in the session: "
                      + ", ".join(f"{k} {v:.2f}" for k, v in t.items()), flush=True)
    if args.write_doc:
        write_doc(rows, args)
    return 0 if all(m["sq"] / m["seq"] <= 1.5 for *_, m in rows) else 1


def write_doc(rows, args) -> None:
    lines = [
        SECTION, "",
        "`superqe run --mode quick -r security_tester -r lint_tester` in-process against `bandit`",
        "then `ruff check` run directly with the roles' arguments, side by side in one run "
        f"(medians of {args.repeat}); \"loaded\" adds {args.burners} busy processes at normal "
        "priority. The machine was shared with other work while this was measured (its load "
        "average is given): the ratios, not the seconds, are the figures.", "",
        "| project | files | case | load | bandit + ruff s | together s | superqe s | ratio | "
        "sandbox | roles | verify | revert | report + save | session total |",
        "|---|---:|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|",
    ]
    for spec, nfiles, case, m in rows:
        t = m["timings"]
        lines.append(
            f"| {spec} | {nfiles} | {case} | {m['load']:.1f} | {m['seq']:.2f} | {m['par']:.2f} | "
            f"{m['sq']:.2f} | **{m['sq'] / m['seq']:.2f}x** | {t.get('sandbox', 0):.2f} | "
            f"{t.get('roles', 0):.2f} | {t.get('verify', 0):.2f} | {t.get('revert', 0):.2f} | "
            f"{t.get('report', 0) + t.get('save', 0):.2f} | {t.get('total', 0):.2f} |")
    lines += ["", "superqe's wall time less its session total is the CLI around the session "
              "(configuration, the reaper's check, the summary); the bench runs it in-process, "
              "so no interpreter start or imports are in it.", ""]
    doc = ROOT / "docs" / "performance.md"
    text = doc.read_text(encoding="utf-8")
    start = text.find(SECTION)
    if start >= 0:
        end = text.find("\n## ", start + len(SECTION))
        text = text[:start] + "\n".join(lines) + (text[end + 1:] if end >= 0 else "")
    else:
        text = text.rstrip("\n") + "\n\n" + "\n".join(lines)
    doc.write_text(text, encoding="utf-8")
