"""The lint role's CPU against ``ruff check`` alone, side by side.

For each tree: ``ruff check`` with exactly the role's arguments
(``lint.ruff_command``), and the whole role (ruff, reading its JSON, the
findings, a patch per fix), each in a fresh child process so that the two
pay for the same things; CPU time (user + system, children included) of the
measured part only, interpreter start and imports left out. Runs alternate
(ruff, role, [baseline role]) and the medians are compared.

Each side's own CPU (the bench process's, ruff's apart) is printed too: the
role's own work, which the ratio's spread (ruff's CPU varies most under
load) can hide.

``--floor`` also times the role making no patch (the findings alone): the
fixes' diffs and ids are the difference.

``--baseline REV`` also runs the role of commit REV (its ``superqode_ls``
from ``git archive``; or of a checkout, given its folder) in the same
rounds: before/after under one load; the two roles' findings and patches
(as JSON) must then be identical but for the ids (fix and finding ids; the
links between them are compared), or the bench says so and exits 1. This
checkout's ids must be the same in every round and unique (exit 1
otherwise).

    .venv/bin/python bench/lint.py [TREE ...] [--rounds 7] [--baseline REV|DIR] [--json]

With no TREE it makes one: tests/large_helpers.py's generated project (500
modules). A tree is any folder; it is linted where it is and left unchanged.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tarfile
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]

# Run in a child: import the package found first on sys.path, time one thing.
CHILD = r"""
import asyncio, hashlib, json, os, resource, subprocess, sys
from pathlib import Path
sys.path.insert(0, sys.argv[1])
from superqode_ls.config import Config
from superqode_ls.qe.roles import lint
from superqode_ls.qe.roles.base import RoleContext
from superqode_ls.workspace.artifacts import Artifacts

def cpu():
    s, c = resource.getrusage(resource.RUSAGE_SELF), resource.getrusage(resource.RUSAGE_CHILDREN)
    return s.ru_utime + s.ru_stime + c.ru_utime + c.ru_stime

def own():  # this process's alone: ruff's CPU, which varies most with load, apart
    s = resource.getrusage(resource.RUSAGE_SELF)
    return s.ru_utime + s.ru_stime

what, tree, scratch = sys.argv[2], Path(sys.argv[3]), Path(sys.argv[4])
if what == "ruff":
    ruff = lint.tool_path("ruff")
    cmd = lint.ruff_command(ruff, tree, ["."])  # always this checkout's (sides["ruff"])
    t, o = cpu(), own()
    out = subprocess.run(cmd, cwd=tree, capture_output=True, check=True).stdout
    used, mine = cpu() - t, own() - o
    print(json.dumps({"cpu": used, "own": mine, "findings": len(json.loads(out)), "patches": None,
                      "output": None}))
else:
    ctx = RoleContext(session_id="qe-20260101-000000-abcdef", project=scratch, sandbox=tree,
                      config=Config(), mode="quick", env=os.environ.copy(),
                      artifacts=Artifacts(scratch, "qe-20260101-000000-abcdef"))

    got = []

    async def go():
        if what == "floor":  # the same run with no patch made: what the fixes cost
            out = await lint.LintTester()._check(ctx, None, with_patches=False)
        else:
            out = await lint.LintTester().run(ctx)
        assert out.status == "ok", out.reason
        got.append(out)  # not returned: asyncio.run's end may repr the main task's result

    t, o = cpu(), own()
    asyncio.run(go())
    used, mine = cpu() - t, own() - o
    out = got[0]
    # What the role gave, as the session serialises it (after the timing),
    # but for the fix ids (each fix named by its place in the list, so the
    # findings' links to them still count): the sides must agree byte for
    # byte. The ids apart: stable from run to run, unique.
    h = hashlib.sha256(repr((out.status, out.reason, out.tool)).encode())
    place = {p.id: f"fix#{n}" for n, p in enumerate(out.patches)}
    # Finding ids too: a finding that shares its line with another's fix is
    # anchored otherwise since 2026-11-27 (the links still compared).
    spot = {m.id: f"finding#{n}" for n, m in enumerate(out.findings)}
    for m in out.findings:
        link = place.get(m.fix_patch_id, m.fix_patch_id and "?")
        h.update(m.model_dump_json(exclude={"fix_patch_id", "id"}).encode() + repr(link).encode())
        h.update(repr(sorted(m.model_fields_set)).encode())
    for n, m in enumerate(out.patches):
        h.update(m.model_dump_json(exclude={"id", "finding_ids"}).encode() + f"fix#{n}".encode()
                 + repr([spot.get(i, "?") for i in m.finding_ids]).encode())
        h.update(repr(sorted(m.model_fields_set)).encode())
    ids = [p.id for p in out.patches] + [m.id for m in out.findings]
    print(json.dumps({"cpu": used, "own": mine, "findings": len(out.findings), "patches": len(out.patches),
                      "output": h.hexdigest(), "ids": hashlib.sha256("\n".join(ids).encode()).hexdigest(),
                      "unique_ids": len(set(ids)) == len(ids)}))
"""


def child(src: Path, what: str, tree: Path, scratch: Path) -> dict:
    out = subprocess.run([sys.executable, "-c", CHILD, str(src), what, str(tree), str(scratch)],
                         capture_output=True, text=True, check=False)
    if out.returncode != 0:
        raise SystemExit(f"{what} on {tree} failed: {out.stderr.strip()[-800:]}")
    return json.loads(out.stdout.strip().splitlines()[-1])


def archive(rev: str, into: Path) -> Path:
    """``superqode_ls`` of commit ``rev`` under ``into``."""
    data = subprocess.run(["git", "archive", rev, "superqode_ls"], cwd=ROOT,
                          capture_output=True, check=True).stdout
    tar = into / "src.tar"
    tar.write_bytes(data)
    with tarfile.open(tar) as tf:
        tf.extractall(into, filter="data")
    return into


def generated(into: Path) -> Path:
    sys.path.insert(0, str(ROOT))
    from tests.large_helpers import make_large_project

    return make_large_project(into / "generated")


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("trees", nargs="*", type=Path, help="folders to lint (default: a generated one)")
    ap.add_argument("--rounds", type=int, default=7, help="alternating rounds (median)")
    ap.add_argument("--baseline", metavar="REV", help="also time the role of this commit (or checkout folder)")
    ap.add_argument("--floor", action="store_true",
                    help="also time this checkout's role making no patches (the fixes' share)")
    ap.add_argument("--json", action="store_true", help="print the figures as JSON")
    args = ap.parse_args()
    with tempfile.TemporaryDirectory(prefix="bench-lint-") as tmp:
        tmpd = Path(tmp)
        scratch = tmpd / "project"
        scratch.mkdir()
        trees = [t.resolve() for t in args.trees] or [generated(tmpd)]
        sides = {"ruff": ROOT, "role": ROOT}
        if args.floor:
            sides["floor"] = ROOT
        if args.baseline:
            if (Path(args.baseline) / "superqode_ls").is_dir():  # a checkout (a worktree of main)
                sides["baseline"] = Path(args.baseline).resolve()
            else:
                base = tmpd / "baseline"
                base.mkdir()
                sides["baseline"] = archive(args.baseline, base)
        results = []
        for tree in trees:
            runs: dict[str, list[dict]] = {k: [] for k in sides}
            for n in range(args.rounds):
                # which role goes first alternates, so neither always follows ruff
                order = list(sides) if n % 2 == 0 else ["ruff", *reversed(list(sides)[1:])]
                for name in order:
                    src = sides[name]
                    what = name if name in ("ruff", "floor") else "role"
                    runs[name].append(child(src, what, tree, scratch))
            med = {k: statistics.median(r["cpu"] for r in v) for k, v in runs.items()}
            row = {
                "tree": str(tree),
                "files": sum(1 for _ in _py_files(tree)),
                "diagnostics": runs["ruff"][0]["findings"],
                "findings": runs["role"][0]["findings"],
                "patches": runs["role"][0]["patches"],
                "cpu": {k: round(v, 3) for k, v in med.items()},
                "every": {k: [round(r["cpu"], 2) for r in v] for k, v in runs.items()},
                # The bench process's own CPU (ruff's apart): what the role's
                # own work costs, which ruff's spread under load hides in
                # the ratios (the ruff side's is its pipe read).
                "own": {k: round(statistics.median(r["own"] for r in v), 3) for k, v in runs.items()},
                "ratio": {k: round(med[k] / med["ruff"], 2) for k in med if k != "ruff"},
            }
            # This checkout's fix ids: the same every round, none twice.
            row["ids_stable"] = len({r["ids"] for r in runs["role"]}) == 1
            row["ids_unique"] = all(r["unique_ids"] for r in runs["role"])
            if "baseline" in runs:
                row["baseline_findings"] = runs["baseline"][0]["findings"]
                row["baseline_patches"] = runs["baseline"][0]["patches"]
                # everything but the fix ids (a baseline may name them otherwise)
                outputs = {r["output"] for k in ("role", "baseline") for r in runs[k]}
                row["same_output"] = len(outputs) == 1
            results.append(row)
    load = os.getloadavg()
    same = all(r.get("same_output", True) and r["ids_stable"] and r["ids_unique"] for r in results)
    if args.json:
        print(json.dumps({"load": load, "results": results}, indent=1))
        return 0 if same else 1
    print(f"CPU seconds, medians of {args.rounds} alternating rounds; load {load[0]:.1f} at the end")
    head = "| tree | files | findings / patches | ruff | role | x ruff |"
    line = "| --- | ---: | ---: | ---: | ---: | ---: |"
    if args.baseline:
        head += f" role at {args.baseline} | x ruff |"
        line += " ---: | ---: |"
    if args.floor:
        head += " role, no patches | x ruff |"
        line += " ---: | ---: |"
    print(head)
    print(line)
    for r in results:
        cells = [Path(r["tree"]).name, str(r["files"]), f"{r['findings']} / {r['patches']}",
                 f"{r['cpu']['ruff']:.2f}", f"{r['cpu']['role']:.2f}", f"{r['ratio']['role']:.2f}x"]
        if "baseline" in r["cpu"]:
            cells += [f"{r['cpu']['baseline']:.2f}", f"{r['ratio']['baseline']:.2f}x"]
        if "floor" in r["cpu"]:
            cells += [f"{r['cpu']['floor']:.2f}", f"{r['ratio']['floor']:.2f}x"]
        print("| " + " | ".join(cells) + " |")
    for r in results:
        print(f"{Path(r['tree']).name}: every round {r['every']}")
        print(f"{Path(r['tree']).name}: own CPU, ruff's apart (medians) {r['own']}")
        if "same_output" in r:
            print(f"{Path(r['tree']).name}: findings and patches (but for the ids) "
                  + ("identical to the baseline's" if r["same_output"] else "DIFFER from the baseline's"))
        print(f"{Path(r['tree']).name}: fix ids "
              + ("stable across rounds" if r["ids_stable"] else "CHANGE between rounds") + ", "
              + ("unique" if r["ids_unique"] else "NOT unique"))
    return 0 if same else 1


def _py_files(tree: Path):
    for dirpath, dirnames, filenames in os.walk(tree):
        dirnames[:] = [d for d in dirnames if d != ".git"]
        yield from (f for f in filenames if f.endswith((".py", ".pyi")))


if __name__ == "__main__":
    sys.exit(main())
