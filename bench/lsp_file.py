"""``bench/lsp.py --file-run``: "Run QE on this file" in the 20,000-file bench
repository (bench/sandbox.py's tree), from a real client over stdio.

Ten ``superqode.runQE {uri, roles: lint + security}`` in a row on one file
with a planted problem; each is timed from the request to the file's first
diagnostic, against ruff + bandit run directly on that file. Targets: the
first diagnostic <= 1.5x the analyzers, the tenth run no slower than the
first. Where the time goes is read from the client's side (the request to the
roles' start: resolve + sandbox; the roles' start to the first diagnostic)
and from each session's report (isolation, ``timings``).

    .venv/bin/python bench/lsp.py --file-run [--files 20000] [--runs 10] [--write-doc]
"""

from __future__ import annotations

import asyncio
import glob
import json
import os
import shlex
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from lsp import Bench, say  # bench/lsp.py
from perfdoc import replace_section  # bench/perfdoc.py
from sandbox import make_repo  # bench/sandbox.py

SECTION = "## Run QE on this file in a 20,000-file repository (bench/lsp.py --file-run)"
TARGET = "pkg0100/mod005.py"
IDLE_S = 2.0
PLANTED = "import subprocess\n\n\ndef run(cmd):\n    return subprocess.call(cmd, shell=True)\n"


async def measure(files: int, runs: int) -> dict:
    from pygls.uris import from_fs_path

    work = Path(tempfile.mkdtemp(prefix="sq-bench-file-"))
    home = work / "home"
    (home / ".superqode").mkdir(parents=True)
    env = {**os.environ, "HOME": str(home), "SUPERQODE_HOME": str(home / ".superqode"),
           "XDG_CACHE_HOME": str(home / ".cache"), "GIT_CONFIG_NOSYSTEM": "1"}
    out: dict = {"files": files, "load_start": round(os.getloadavg()[0], 1)}
    try:
        say(f"making the {files}-file repository")
        repo = make_repo(work, files)
        (repo / TARGET).write_text(PLANTED)
        uri = from_fs_path(str(repo / TARGET))
        # Both sides start with the tools in the page cache: the first thing
        # to start bandit after the repository was made would otherwise pay
        # for reading it from disk, whichever side that is.
        analyzers(repo)
        bench = Bench(env)
        client, _ = await bench.start(repo, "visual-studio-code", pull=False, settings={})
        # A person opens the editor and then asks for a run: the server
        # imports its engine in the background once the client is up
        # (server/lifecycle.py's prewarm, ~0.3 s); the first run is timed
        # after that, not racing it.
        await asyncio.sleep(IDLE_S)
        firsts, totals, preps, reports, direct, lowered = [], [], [], [], [], []
        for n in range(runs):
            client.publish_times.clear()
            client.progress_times.clear()
            t0 = time.perf_counter()
            sid = (await bench.command(client, "superqode.runQE",
                                       {"uri": uri, "roles": ["lint_tester", "security_tester"]}))["sessionId"]
            deadline = time.monotonic() + 300
            while uri not in client.publish_times:
                if time.monotonic() > deadline:
                    raise SystemExit("no diagnostic for the file within 300 s")
                await asyncio.sleep(0.005)
            firsts.append(client.publish_times[uri] - t0)
            await bench.wait_end(client, sid)
            totals.append(time.perf_counter() - t0)
            started = [t for t, _, v in client.progress_times
                       if " started" in str(v.get("message"))]
            preps.append(min(started) - t0 if started else float("nan"))
            reports.append(_report(repo, sid))
            # Side by side: the analyzers right after each run, under the same load.
            direct.append(analyzers(repo))
            lowered.append(analyzers(repo, lowered=True))
            say(f"run {n + 1}: first diagnostic {firsts[-1]:.2f} s (roles started at "
                f"{preps[-1]:.2f} s), session {totals[-1]:.2f} s, "
                f"{reports[-1].get('isolation')}; ruff + bandit {direct[-1]:.2f} s "
                f"({lowered[-1]:.2f} s at the server's tool priority)")
        await bench.stop(client)
        out.update(firsts=[round(x, 3) for x in firsts], totals=[round(x, 3) for x in totals],
                   preps=[round(x, 3) for x in preps],
                   isolation=sorted({str(r.get("isolation")) for r in reports}),
                   timings=_median_timings([r.get("timings") or {} for r in reports]),
                   direct=[round(x, 3) for x in direct], lowered=[round(x, 3) for x in lowered],
                   direct_s=round(statistics.median(direct), 3),
                   lowered_s=round(statistics.median(lowered), 3),
                   load_end=round(os.getloadavg()[0], 1))
    finally:
        shutil.rmtree(work, ignore_errors=True)
    return out


def _lower() -> None:
    """In the child: the priority and CPUs the language server gives its tools
    (workspace/proc.py): nice +10, off the CPU kept for the editor, in a
    session of its own whose scheduler group is lowered to nice 10 too."""
    os.setsid()
    os.nice(10)
    try:
        with open("/proc/self/autogroup", "w", encoding="ascii") as fh:
            fh.write("10")
    except OSError:
        pass  # no autogroup scheduling here
    cpus = sorted(os.sched_getaffinity(0))
    if len(cpus) > 1:
        os.sched_setaffinity(0, cpus[:-1])


def analyzers(repo: Path, lowered: bool = False) -> float:
    """ruff + bandit on the file, one after the other, as a user runs them."""
    venv = Path(sys.executable).parent
    ruff = [str(venv / "ruff"), "check", "--no-cache", "--output-format", "json", "--exit-zero",
            TARGET]
    bandit = [str(venv / "bandit"), "-f", "json", "-q", TARGET]
    t0 = time.perf_counter()
    if lowered:  # one shell in one lowered session, as the server starts a tool
        line = " && ".join(" ".join(shlex.quote(a) for a in cmd) for cmd in (ruff, bandit))
        subprocess.run(["sh", "-c", line + " >/dev/null"], cwd=repo, capture_output=True,
                       check=False, preexec_fn=_lower)
    else:
        subprocess.run(ruff, cwd=repo, capture_output=True, check=False)
        subprocess.run(bandit, cwd=repo, capture_output=True, check=False)
    return time.perf_counter() - t0


def _report(repo: Path, sid: str) -> dict:
    """The session's JSON report (isolation, timings); {} when not found."""
    for path in glob.glob(str(repo / ".superqode" / "qe-artifacts" / "**" / f"*{sid}*.json"),
                          recursive=True):
        try:
            data = json.loads(Path(path).read_text(encoding="utf-8"))
        except (OSError, ValueError):
            continue
        if isinstance(data, dict) and "timings" in data:
            return data
    return {}


def _median_timings(all_timings: list[dict]) -> dict:
    keys = sorted({k for t in all_timings for k in t})
    return {k: round(statistics.median(t.get(k, 0.0) for t in all_timings), 3) for k in keys}


def render(r: dict) -> str:
    first, tenth = r["firsts"][0], r["firsts"][-1]
    med = statistics.median(r["firsts"])
    prep = statistics.median(r["preps"])
    low, d, n = r["lowered_s"], r["direct_s"], len(r["firsts"])
    steps = ", ".join(f"{k} {v:.2f}" for k, v in r["timings"].items()
                      if k != "total" and v >= 0.005)
    return "\n".join([
        SECTION, "",
        f"`superqode.runQE {{uri, roles: [lint_tester, security_tester]}}` on one file of a "
        f"{r['files']:,}-file git repository, {len(r['firsts'])} runs in a row from a real "
        "client over stdio, timed from the request to the file's first diagnostic; against "
        "ruff + bandit run directly on the file right after each run (median of the runs), at "
        "the bench's priority and at the one the server gives its tools (nice +10 in a "
        "scheduler group lowered to nice 10, off the editor's CPU). The analyzers run once "
        "before anything is timed (both sides start with them in the page cache), and the "
        f"first run is asked {IDLE_S:.0f} s after the server is up, as a person opens the "
        "editor and then asks (the server imports its engine in the background meanwhile). "
        f"Load average {r['load_start']} at the start, {r['load_end']} at the end.", "",
        "| | seconds | x analyzers | x analyzers at the tools' priority |", "|---|---:|---:|---:|",
        f"| ruff + bandit on the file | {r['direct_s']:.2f} | 1.00 | |",
        f"| the same at nice +10, off the editor's CPU | {low:.2f} | {low / d:.2f}x | 1.00 |",
        f"| first run: first diagnostic | {first:.2f} | **{first / d:.2f}x** "
        f"| {first / low:.2f}x |",
        f"| median run: first diagnostic | {med:.2f} | {med / d:.2f}x | {med / low:.2f}x |",
        f"| run {n}: first diagnostic | {tenth:.2f} | **{tenth / d:.2f}x** | {tenth / low:.2f}x |",
        "",
        f"All runs (first diagnostic, s): {r['firsts']}; whole sessions: {r['totals']}; "
        f"ruff + bandit beside them: {r['direct']} (at the tools' priority: {r['lowered']}).",
        f"Tenth run / first run: {tenth / first:.2f} (target <= 1). Target for the first "
        "diagnostic: <= 1.5x the analyzers.", "",
        f"Sandbox: {', '.join(r['isolation'])}. Where the time goes (medians): request to the "
        f"roles' start {prep:.2f} s (the server's preparation, the request's resolution and the "
        f"sandbox), roles' start to the first diagnostic {med - prep:.2f} s (bandit's run: ruff "
        "has nothing to say about this file, so bandit's findings are the first diagnostic); "
        f"the session's own steps (s): {steps}. The first diagnostic does not wait for fix "
        "verification, the report or the revert and its verification: each role's findings "
        "are published as the role ends.", "",
        "A run on one file whose roles only read it (lint, security) gets a sparse sandbox "
        "(workspace/sparse.py): the file and the analyzers' configuration on the way down to "
        "it, not a checkout of the 20,000 files; the fingerprint of the user's tree is taken "
        "beside the roles where the kernel barrier is active. The server runs its tools at "
        "nice +10, in a lowered scheduler group and off one CPU (kept for the editor), while "
        "ruff + bandit run directly here at the bench's own priority: on a loaded machine "
        "that gap is most of the ratio (the third column).", "",
        "bandit is warm in the server (qe/roles/_bandit_server.py): started once at the "
        "server's prewarm with its imports and plugins loaded, it forks one child per run, "
        "which applies the session's kernel barrier itself and runs bandit's own command "
        "line in the sandbox. The analyzers' side starts bandit from nothing each time "
        "(about 0.12 s of its time), as the `bandit` command does; a CLI run, a single "
        "process either way, does not start a warm one.", "",
        "Reproduce: `.venv/bin/python bench/lsp.py --file-run [--files 20000] [--runs 10] "
        "[--write-doc]`.", "",
    ])


def main_file(argv: list[str]) -> int:
    import argparse

    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--file-run", action="store_true")
    ap.add_argument("--files", type=int, default=20000)
    ap.add_argument("--runs", type=int, default=10)
    ap.add_argument("--write-doc", action="store_true")
    args = ap.parse_args(argv)
    r = asyncio.run(measure(args.files, args.runs))
    text = render(r)
    print(text)
    if args.write_doc:
        replace_section(SECTION, text)
    first, last = r["firsts"][0], r["firsts"][-1]
    return 0 if first <= 1.5 * r["direct_s"] and last <= first else 1
