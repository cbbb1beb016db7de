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

from perfdoc import replace_section  # bench/perfdoc.py
from qe import LAST_EVENTS, ROOT, run_direct, run_superqe  # bench/qe.py

SDISTS = ("flask==3.0.3", "requests==2.32.3")
SECTION = "## QE quick mode on small real projects (bench/qe.py --small)"
CACHE = ROOT / "build" / "bench-sdists"


# The prose under the table: what each step is and why verification is cheap.
WHERE = """
Where the time goes (the report's `timings`, `superqe run --timings`): the roles
take what bandit and ruff take, or less: bandit, most of the time, is split by
size among the CPUs the tools may use when the tree has enough source to repay
a second start (flask and requests: two processes of 34-82 files); ruff, the
secrets scan and the pattern scan run beside it. The secrets scan matches a
rule's regex only on lines holding one of its literal hints, and the pattern
scan parses only sources that name what it looks for (on flask 0.46 s of CPU
became 0.13 s; `tests/test_security_speed.py` proves both find what the long
way finds). Beside them, in trusted folders, the suite probe (can the project's
pytest start at all) runs in a CPU group lowered below the analyzers' (a nice
value inside a session of its own did not hold it back: each tool's session
shared the CPU as an equal), and its verdict is kept between sessions, keyed
by the interpreter, its installed packages, pytest's configuration and the
conftests (`qe/probe_cache.py`): the first run of a project pays for it, the
runs after it in this table do not. Then fix verification, the sandbox and the
revert with its check that the project is unchanged. superqe's wall time less
the session total is the CLI around it (configuration, the summary); the bench
runs it in-process, so no interpreter start or imports are in it.

How verification stays near a constant (`qe/verifier.py`, `qe/verify_copies.py`):
where tests can run, one optimistic round applies every fix whose hunks do not
touch another's and re-runs the tool once, then the tests importing the changed
files once; the fixes it leaves, and where no test can run all fixes, are merged
into copies of their files (a file's fixes whose changed lines do not touch share
a copy), one copy of every file written per round and the tool re-run once over
all of them; a copy with a fix not cleared is split (the fix nearest each new
finding alone, the rest together), and a fix with a new finding on the very
lines it writes is rejected there (the other fixes of a copy change no line next
to them; a rejection never counts in a fix's favour). On requests 75 ruff fixes,
twenty-four of them to two import blocks of one file, which cannot all go
together (emptied, the import is a syntax error), take a handful of rounds.
"Verified" is unchanged: the tool re-run shows the fix's finding gone and
nothing new in the file (with the fix alone or among others of its copy), and
tests importing the changed module pass where the suite can run; otherwise
"tool-verified only" (requests' conftest needs test dependencies that are not
installed, so its fixes are). `tests/test_verify_copies.py` and
`tests/test_verify_rounds.py` hold the round counts (re-runs are counted,
never timed).

What is left: the ratio is of two wall times on two CPUs, so it follows the
CPU both sides need: bandit alone on one CPU against SuperQode's bandit split
in two plus everything beside it (the scans, the sandbox, verification's ruff
re-runs, the report). On requests, where verification's rounds add 0.2 s to
a 0.8 s baseline, that leaves the least margin.
"""


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
        "load": os.getloadavg()[0], "fixes": fix_counts(report, LAST_EVENTS),
    }


def fix_counts(report: dict, events: list[dict]) -> dict:
    """The last run's fixes and the tool re-runs that verified them (each
    role's own run is one tool call; every further one is a re-run)."""
    fixes = [p for p in report.get("patches", []) if p.get("kind") == "fix"]
    # a tool split among processes (bandit's shards) is one call
    calls = [e["data"].get("tool") for e in events if e.get("type") == "tool_call"
             and str(e["data"].get("shard") or "1/").startswith("1/")]
    return {
        "fixes": len(fixes),
        "verified": sum(1 for p in fixes if p.get("verified")),
        "tool_only": sum(1 for p in fixes if p.get("verified_by") == "tool"),
        "reruns": max(0, len(calls) - len(report.get("roles", []))),
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
                      + ", ".join(f"{k} {v:.2f}" for k, v in t.items())
                      + f"; fixes {m['fixes']['fixes']} ({m['fixes']['verified']} verified, "
                      f"{m['fixes']['tool_only']} tool-verified only) in {m['fixes']['reruns']} "
                      "tool re-run(s)", flush=True)
    if args.write_doc:
        write_doc(rows, args)
    return 0 if all(m["sq"] / m["seq"] <= 1.5 for *_, m in rows) else 1


def write_doc(rows, args) -> None:
    loads = [m["load"] for *_, m in rows]
    lines = [
        SECTION, "",
        "`superqe run --mode quick -r security_tester -r lint_tester` in-process against `bandit`",
        ("then `ruff check` run directly with the roles' arguments, side by side in one run "
        f"(medians of {args.repeat}), on two real projects from PyPI sdists; \"loaded\" adds "
        f"{args.burners} busy processes at normal priority. Load averages while measured: "
        f"{min(loads):.1f}-{max(loads):.1f} (2 CPUs); the ratios, not the seconds, are the figures."),
        "",
        ("| project | .py files | case | load | bandit + ruff s | together s | superqe s | ratio | "
        "sandbox | roles | verify | revert | session total | fixes (tool re-runs) |"),
        "|---|---:|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|",
    ]
    for spec, nfiles, case, m in rows:
        t, f = m["timings"], m["fixes"]
        lines.append(
            f"| {spec} | {nfiles} | {case} | {m['load']:.1f} | {m['seq']:.2f} | {m['par']:.2f} | "
            f"{m['sq']:.2f} | **{m['sq'] / m['seq']:.2f}x** | {t.get('sandbox', 0):.2f} | "
            f"{t.get('roles', 0):.2f} | {t.get('verify', 0):.2f} | {t.get('revert', 0):.2f} | "
            f"{t.get('total', 0):.2f} | {f['fixes']} ({f['reruns']}) |")
    lines += ["", *WHERE.strip("\n").splitlines(), "", ""]
    replace_section(SECTION, "\n".join(lines))
