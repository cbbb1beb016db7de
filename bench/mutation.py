"""Mutation testing speed: mutants per second, and what caching and
parallelism buy.

    .venv/bin/python bench/mutation.py [PATH] [--files 2] [--max-mutants N] [--workers N]

PATH is a Python project with pytest tests (for example an unpacked sdist
that ships its tests). Without PATH a synthetic medium project is generated
(16 modules, ~600 lines of code and tests). The project is copied; nothing
in PATH is written. Each scenario runs the mutation_tester role as the
pipeline would, on the same mutants:

  fresh-1     1 worker, a fresh `python -m pytest` per mutant
  warm-1      1 worker, the warm forking launcher
  warm-N      N workers (default: all cores), warm launcher
  cached      the same run again: every result from the content-hash cache
  one-change  one source file edited: only its mutants run again

Only the first ``--files`` source files are mutated, every mutant of them
(no cap), so the cached and one-change runs redo exactly the same work.

"mutants/s" counts mutant test runs over the time spent running mutants;
"total" includes mapping tests to lines (in the warm workers).

    .venv/bin/python bench/mutation.py --vs-mutmut toolz|inflection --workers 2 [--write-doc]

runs SuperQode, SuperQode with a separate coverage pass mapping lines (the
side-by-side baseline for that step), then mutmut on the same module, and
prints mutants/s (mutant phase and whole run), wall, CPU per mutant,
verdicts and the scores on the mutants both generate; --write-doc puts those
rows into docs/performance.md.

    .venv/bin/python bench/mutation.py --phases --workers 1 2 4 16 [--code DIR] [--json F]

runs SuperQode alone, cold, on the same module at each forced count (a cap:
the role uses fewer workers where more would not repay their start, and
never more than the CPUs) and prints wall and CPU (this process and every
process under it) per phase of the run, the workers used, and a digest of
the verdicts, which must be the same at every count. --code DIR measures
another checkout's superqode_ls (the code before a change) with this bench,
so old and new can be run alternately under the same load.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import random
import resource
import shutil
import subprocess
import sys
import tarfile
import tempfile
import time
from collections import Counter
from pathlib import Path

# --code DIR: measure the superqode_ls of another checkout (the code before a
# change) with this bench, alternating with this one's.
_CODE = next((sys.argv[i + 1] for i, a in enumerate(sys.argv[:-1]) if a == "--code"), None)
sys.path.insert(0, str(Path(_CODE).resolve() if _CODE else Path(__file__).resolve().parents[1]))

from superqode_ls.config import Config
from superqode_ls.qe.roles import _scratch
from superqode_ls.qe.roles.base import RoleContext
from superqode_ls.qe.roles.mutation import MutationTester, cache_dir
from superqode_ls.workspace.artifacts import Artifacts
from superqode_ls.workspace.pyenv_build import resolve_python

SID = "qe-20260101-000000-b0b0b0"


def synthetic(root: Path, modules: int = 16, funcs: int = 2, seed: int = 7) -> Path:
    """A project shaped like ordinary code: small functions with branches,
    comparisons and arithmetic, and tests that check most but not all of it."""
    rnd = random.Random(seed)
    pkg = root / "medium"
    (pkg / "medium").mkdir(parents=True)
    (pkg / "tests").mkdir()
    (pkg / "medium" / "__init__.py").write_text("")
    for m in range(modules):
        src, tests = [f'"""Module {m}."""\n'], [f"from medium.mod{m} import *\n"]
        for f in range(funcs):
            a, b = rnd.randint(2, 9), rnd.randint(10, 99)
            src.append(
                f"\n\ndef f{f}(x, y=0):\n"
                f"    if x > {b} and y >= 0:\n"
                f"        return x * {a} - y\n"
                f"    total = 0\n"
                f"    for i in range(x % {a} + 1):\n"
                f"        if i % 2 == 0 or y < 0:\n"
                f"            total += i + y\n"
                f"    return total if total != {b} else -1\n"
            )
            checks = [
                f"    assert f{f}({b + 5}, 1) == {(b + 5) * a - 1}\n",
                f"    assert f{f}(3) == f{f}(3, 0)\n",
            ]
            if rnd.random() < 0.7:  # some functions get a stronger test than others
                x = rnd.randint(0, b)
                want = sum(i for i in range(x % a + 1) if i % 2 == 0)
                want = -1 if want == b else want
                checks.append(f"    assert f{f}({x}) == {want}\n")
            tests.append(f"\n\ndef test_f{f}():\n" + "".join(checks))
        (pkg / "medium" / f"mod{m}.py").write_text("".join(src))
        (pkg / "tests" / f"test_mod{m}.py").write_text("".join(tests))
    return pkg


def ctx_for(project: Path, max_mutants: int, files: list[str]) -> RoleContext:
    cfg = Config()
    cfg.roles.mutation_max_mutants = max_mutants
    return RoleContext(
        files=files,
        session_id=SID,
        project=project,
        sandbox=project,
        config=cfg,
        mode="deep",
        env=os.environ.copy(),
        artifacts=Artifacts(project, SID),
        trusted=True,
    )


def cpu_s() -> float:
    """CPU seconds of this process and its finished children: what a run
    costs, whatever else the machine is doing (wall time follows the load)."""
    me, kids = resource.getrusage(resource.RUSAGE_SELF), resource.getrusage(resource.RUSAGE_CHILDREN)
    return me.ru_utime + me.ru_stime + kids.ru_utime + kids.ru_stime


def tree_cpu_s() -> float:
    """CPU seconds of this process and every process under it, live or
    reaped: read at each phase's end, while the workers still run."""
    import psutil

    total = cpu_s()
    for p in psutil.Process().children(recursive=True):
        try:
            t = p.cpu_times()
        except psutil.Error:
            continue
        # Its own, and its reaped children's (a worker's forked mutants).
        total += t.user + t.system + t.children_user + t.children_system
    return total


def scenario(name: str, project: Path, role: MutationTester, opts: argparse.Namespace) -> dict:
    ctx = ctx_for(project, opts.max_mutants, opts.targets)
    if getattr(opts, "python", None) is None:
        # The project's environment is found (or built) once per project and
        # cached; that one-time cost is not the mutation run's.
        opts.python = asyncio.run(resolve_python(project, project, ctx.config))
    ctx.python = opts.python
    started, cpu0 = time.monotonic(), cpu_s()
    out = asyncio.run(role.run(ctx))
    total = time.monotonic() - started
    cpu = cpu_s() - cpu0
    r = role.report
    row = {
        "name": name,
        "workers": r.workers,
        "mutants": r.mutants_run,
        "cached": r.mutants_cached,
        "mutants_s": r.mutants_s,
        "rate": r.mutants_per_s,
        "coverage_s": r.coverage_s,
        "total": total,
        "findings": len(out.findings),
        "status": out.status,
        "cpu": cpu,
    }
    print(
        f"{name:<11} workers={row['workers']:<2} run={row['mutants']:<4} cached={row['cached']:<4}"
        f" mutants/s={row['rate']:6.2f}  map={row['coverage_s']:6.1f}s"
        f"  total={total:6.1f}s  findings={row['findings']}  [{out.status}]"
        + (f"  {r.score()}" if r.score() else ""),
        flush=True,
    )
    return row



# -- side by side with mutmut ---------------------------------------------------

BUILD = Path(__file__).resolve().parents[1] / "build"
# name -> (PyPI sdist, module to mutate, mutmut source path, test selection,
# more of mutmut's [mutmut] settings: a test that fails when the sdist is not
# installed, which SuperQode leaves out by itself as failing on the unchanged
# code, and the sibling package toolz's tests import)
PROJECTS = {
    "toolz": ("toolz==1.2.0", "toolz/dicttoolz.py", "toolz/", "toolz/tests/",
              ("pytest_add_cli_args = --deselect=toolz/tests/test_package.py::test_has_version\n"
               "also_copy = tlz/\n")),
    "inflection": ("inflection==0.5.1", "inflection/__init__.py", "inflection/",
                   "test_inflection.py", ""),
}
MUTMUT = "mutmut==3.8.1"
# Run inside mutmut's venv, in the project after `mutmut run`: every mutant's
# status and the one changed line (original -> mutated) of its function.
MUTMUT_EXPORT = r"""
import difflib, json, sys
from mutmut.utils.file_utils import walk_mutatable_files
from mutmut.mutation.data import SourceFileMutationData
from mutmut.mutation.diff_apply import get_diff_for_mutant
from mutmut.stats import status_by_exit_code
out = []
for path in walk_mutatable_files():
    m = SourceFileMutationData(path=path)
    m.load()
    for name, code in m.exit_code_by_key.items():
        diff = get_diff_for_mutant(name, path=m.path)
        minus = [l[1:] for l in diff.splitlines() if l.startswith("-") and not l.startswith("---")]
        plus = [l[1:] for l in diff.splitlines() if l.startswith("+") and not l.startswith("+++")]
        out.append({"name": name, "file": str(path), "status": status_by_exit_code[code],
                    "old": minus, "new": plus})
json.dump(out, sys.stdout)
"""


def _sh(cmd: list[str], cwd: Path | None = None, env: dict | None = None) -> subprocess.CompletedProcess:
    return subprocess.run(cmd, check=False, cwd=cwd, env=env, capture_output=True, text=True)


def ensure_mutmut() -> Path:
    venv = BUILD / "mutmut-venv"
    py = venv / "bin" / "python"
    if not (venv / ".complete").is_file():
        _sh([sys.executable, "-m", "venv", "--clear", str(venv)])
        r = _sh([str(py), "-m", "pip", "install", "-q", MUTMUT])
        if r.returncode:
            sys.exit(f"could not install {MUTMUT}: {r.stderr[-500:]}")
        (venv / ".complete").write_text("")
    return venv


def ensure_sdist(spec: str) -> Path:
    name, version = spec.split("==")
    root = BUILD / "bench-src" / f"{name}-{version}"
    if not root.is_dir():
        (BUILD / "bench-src").mkdir(parents=True, exist_ok=True)
        r = _sh([sys.executable, "-m", "pip", "download", "-q", "--no-deps", "--no-binary", ":all:",
                 "-d", str(BUILD / "bench-src"), spec])
        if r.returncode:
            sys.exit(f"could not download {spec}: {r.stderr[-500:]}")
        with tarfile.open(BUILD / "bench-src" / f"{name}-{version}.tar.gz") as tf:
            tf.extractall(BUILD / "bench-src", filter="data")
    return root


def run_mutmut(venv: Path, project: Path, spec: tuple, workers: int) -> dict:
    _, module, source, tests, extra = spec
    with open(project / "setup.cfg", "a", encoding="utf-8") as fh:
        fh.write(f"\n[mutmut]\nsource_paths = {source}\nonly_mutate = {module}\n"
                 f"pytest_add_cli_args_test_selection = {tests}\n")
        fh.write(extra)
    env = dict(os.environ, PATH=f"{venv / 'bin'}:{os.environ['PATH']}")
    env.pop("PYTHONPATH", None)
    times, cpu0 = [], cpu_s()
    for _ in range(2):  # cold, then the unchanged re-run
        started = time.monotonic()
        r = _sh([str(venv / "bin" / "mutmut"), "run", "--max-children", str(workers)], project, env)
        times.append(time.monotonic() - started)
        if not len(times) - 1:
            cpu = cpu_s() - cpu0
        if r.returncode:
            print(f"mutmut run failed ({r.returncode}): {(r.stdout + r.stderr)[-800:]}")
    r = _sh([str(venv / "bin" / "python"), "-c", MUTMUT_EXPORT], project, env)
    mutants = json.loads(r.stdout) if r.returncode == 0 else []
    if r.returncode:
        print(f"mutmut export failed: {r.stderr[-800:]}")
    return {"wall": times[0], "cached": times[1], "mutants": mutants, "cpu": cpu}


def ours_by_line(project: Path, module: str, results: dict) -> dict[tuple[int, str], dict]:
    """Our results keyed by (line, the mutated line's text): how mutmut's
    mutants (which show whole changed lines) are matched with ours."""
    from superqode_ls.qe.roles._mutators import find_mutants, mutated_line

    text = (project / module).read_text(encoding="utf-8")
    out = {}
    for m in find_mutants(text, module, validate=False):
        if m.key in results:
            out[(m.line, mutated_line(text, m).strip())] = {
                **results[m.key], "kind": m.kind, "key": m.key, "equivalent": m.equivalent}
    return out


def compare(project: Path, module: str, ours: dict, theirs: list[dict]) -> dict:
    text = (project / module).read_text(encoding="utf-8").splitlines()
    index: dict[str, list[int]] = {}
    for i, line in enumerate(text, 1):
        index.setdefault(line.strip(), []).append(i)
    shared, missing = [], []
    for mm in theirs:
        if len(mm["old"]) != 1 or len(mm["new"]) != 1:
            missing.append((mm, "changes more than one line"))
            continue
        hit = None
        for line in index.get(mm["old"][0].strip(), []):
            hit = ours.get((line, mm["new"][0].strip())) or hit
        covered = any(line == ln for ln in index.get(mm["old"][0].strip(), [])
                      for line, _ in ours)
        if hit is None and not covered:
            # mutmut mutates whole functions; SuperQode only lines a passing
            # test runs (code run only at import time is not): no test could
            # have killed these, so mutmut's "survived" says "not covered".
            missing.append((mm, "line no passing test covers: not mutated by SuperQode"))
        elif hit is None:
            missing.append((mm, "a kind SuperQode does not generate"))
        else:
            shared.append((mm, hit))
    killed = ("killed", "timeout")
    n = len(shared)
    return {
        "shared": n,
        "ours_score": sum(o["status"] in killed for _, o in shared) / n if n else 0.0,
        "their_score": sum(m["status"] in killed for m, _ in shared) / n if n else 0.0,
        "their_survivors_shared": [(m, o) for m, o in shared if m["status"] == "survived"],
        "their_survivors_other": [(m, why) for m, why in missing if m["status"] == "survived"],
    }


def phases(args: argparse.Namespace) -> None:
    """--phases: SuperQode alone on the --vs-mutmut project's module at each
    --workers count (forced), cold: wall and CPU per phase, and a digest of
    the verdicts (the same at every count, and before and after a change)."""
    user_priority()
    spec = PROJECTS[args.vs_mutmut or "toolz"]
    src = ensure_sdist(spec[0])
    tmp = Path(tempfile.mkdtemp(prefix="mutation-phases-"))
    os.environ["SUPERQODE_HOME"] = str(tmp / "home")
    out = {}
    try:
        project = tmp / src.name
        shutil.copytree(src, project)
        args.targets = [spec[1]]
        for n in args.workers:
            shutil.rmtree(cache_dir(), ignore_errors=True)
            role = MutationTester(n)
            role.cpu_clock = tree_cpu_s
            load = os.getloadavg()[0]
            row = scenario(f"N={n}", project, role, args)
            results = json.loads(next(cache_dir().glob("*.json")).read_text())["results"]
            verdicts = {k: v["status"] for k, v in sorted(results.items())}
            r = role.report
            parts = "  ".join(
                f"{name} {wall:.2f}" + (f"/{cpu:.2f}" if cpu is not None else "")
                for name, (wall, cpu) in getattr(r, "phases", {}).items())
            print(f"  N={n}: used {r.workers} worker(s), wall {row['total']:.2f} s, CPU "
                  f"{row['cpu']:.2f} s, {row['mutants']} mutants, "
                  f"{row['mutants'] / row['total']:.1f} mutants/s whole run, load {load:.1f}; "
                  f"verdicts {content_digest(verdicts)}")
            if parts:
                print(f"    phases (wall/CPU s): {parts}")
            split = getattr(r, "map_split", {})
            if split:
                print("    map split (wall s): "
                      + "  ".join(f"{k} {v:.2f}" for k, v in split.items()))
            out[str(n)] = {"verdicts": verdicts, "wall": row["total"], "cpu": row["cpu"],
                           "workers": r.workers, "load": load,
                           "phases": getattr(r, "phases", {}),
                           "map_split": getattr(r, "map_split", {})}
        if args.json:
            args.json.write_text(json.dumps(out, indent=1))
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


def content_digest(obj: object) -> str:
    import hashlib

    return hashlib.sha256(json.dumps(obj, sort_keys=True).encode()).hexdigest()[:12]


def user_priority() -> None:
    """SuperQode's tools at the priority ``superqe run`` gives them (the
    user's, unless SUPERQODE_NICE says otherwise), as mutmut's run: with the
    language server's background priority (nice +10, a lowered CPU group)
    they lose the CPU to every other process on a loaded machine, and the
    comparison would measure the load."""
    # The bench's contexts take the default runtime, which reads this.
    os.environ.setdefault("SUPERQODE_NICE", "0")


def versus(args: argparse.Namespace) -> None:
    user_priority()
    spec = PROJECTS[args.vs_mutmut]
    src = ensure_sdist(spec[0])
    venv = ensure_mutmut()
    tmp = Path(tempfile.mkdtemp(prefix="mutation-vs-"))
    os.environ["SUPERQODE_HOME"] = str(tmp / "home")
    try:
        ours_dir, theirs_dir = tmp / "ours" / src.name, tmp / "mutmut" / src.name
        for d in (ours_dir, theirs_dir):
            shutil.copytree(src, d)
        module = spec[1]
        role = MutationTester(args.workers)
        args.targets = [module]
        cold = scenario("superqode", ours_dir, role, args)
        results = json.loads(next(cache_dir().glob("*.json")).read_text())["results"]
        again = scenario("sq-cached", ours_dir, MutationTester(args.workers), args)
        # Side by side: the same run with lines mapped by a separate coverage
        # pass of the suite (before the warm workers did it themselves).
        shutil.rmtree(cache_dir(), ignore_errors=True)
        base_role = MutationTester(args.workers, map_in_workers=False)
        base = scenario("sq-cov-map", ours_dir, base_role, args)
        base_results = json.loads(next(cache_dir().glob("*.json")).read_text())["results"]
        same = ({k: v["status"] for k, v in results.items()}
                == {k: v["status"] for k, v in base_results.items()})
        mm = run_mutmut(venv, theirs_dir, spec, args.workers)
        theirs = mm["mutants"]
        c = compare(ours_dir, module, ours_by_line(ours_dir, module, results), theirs)
        t_killed = sum(m["status"] in ("killed", "timeout") for m in theirs)
        t_surv = sum(m["status"] == "survived" for m in theirs)
        o = role.report
        print(f"\n{args.vs_mutmut} {module}, {args.workers} workers each")
        print("| tool | mutants | mutants/s (mutant phase) | mutants/s (whole run) | wall | "
              "CPU s per mutant (whole run) | killed / survived | cached re-run |")
        print("|---|---|---|---|---|---|---|---|")
        b = base_role.report
        rows = {
            "SuperQode": (
                f"{o.mutants_run} | {o.mutants_per_s:.1f} | {o.mutants_run / cold['total']:.1f} | "
                f"{cold['total']:.1f} s | {cold['cpu'] / max(o.mutants_run, 1):.3f} | "
                f"{o.statuses['killed'] + o.statuses['timeout']} / {o.statuses['survived']} | "
                f"{again['total']:.2f} s |"),
            "SuperQode, coverage pass": (
                f"{b.mutants_run} | {b.mutants_per_s:.1f} | {b.mutants_run / base['total']:.1f} | "
                f"{base['total']:.1f} s | {base['cpu'] / max(b.mutants_run, 1):.3f} | "
                f"{b.statuses['killed'] + b.statuses['timeout']} / {b.statuses['survived']} | - |"),
            MUTMUT.replace("==", " "): (
                f"{len(theirs)} | - | {len(theirs) / mm['wall']:.1f} | "
                f"{mm['wall']:.1f} s | {mm['cpu'] / max(len(theirs), 1):.3f} | "
                f"{t_killed} / {t_surv} | {mm['cached']:.2f} s |"),
        }
        for tool, row in rows.items():
            print(f"| {tool} | {row}")
        load = os.getloadavg()
        print(f"SuperQode: tests mapped to lines by {o.line_map} in {o.coverage_s:.1f} s "
              f"(coverage pass: {b.coverage_s:.1f} s); mutant phase {o.mutants_s:.1f} s "
              f"(coverage-pass run: {b.mutants_s:.1f} s); warm switches {o.fork_runs}, "
              f"fresh runs {o.fresh_runs}, retried {o.retried}; CPU whole run {cold['cpu']:.1f} s "
              f"vs {base['cpu']:.1f} s with the coverage pass; same verdicts: {same}; "
              f"load average {load[0]:.1f} {load[1]:.1f} {load[2]:.1f}")
        print(f"\nshared mutants: {c['shared']}; score on them: SuperQode "
              f"{100 * c['ours_score']:.1f}%, mutmut {100 * c['their_score']:.1f}%")
        print(f"mutmut survivors on shared mutants: {len(c['their_survivors_shared'])}")
        for m, ours in c["their_survivors_shared"]:
            verdict = ours["status"] + (f" (marked equivalent: {ours['equivalent']})"
                                        if ours["equivalent"] else "")
            print(f"  {ours['key']}: SuperQode {verdict}")
        other = c["their_survivors_other"]
        print(f"mutmut survivors SuperQode does not generate: {len(other)}")
        for why, n in Counter(why for _, why in other).most_common():
            print(f"  {n}: {why}")
        for m, why in other:
            if not why.startswith("line no passing"):
                print(f"  {m['name']}: {' / '.join(m['old'])!r} -> {' / '.join(m['new'])!r} ({why})")
        print("SuperQode survivors:", ", ".join(
            k for k, v in sorted(results.items()) if v["status"] == "survived"))
        if args.write_doc:
            equiv = sum(bool(ours["equivalent"]) for _, ours in c["their_survivors_shared"])
            also = sum(ours["status"] == "survived" for _, ours in c["their_survivors_shared"])
            shared_row = (
                f"{c['shared']} | {100 * c['ours_score']:.1f} % | {100 * c['their_score']:.1f} % | "
                f"{len(c['their_survivors_shared'])} | {also}"
                + (f" ({equiv} marked likely equivalent)" if equiv else "") + " |")
            write_doc(args.vs_mutmut, rows, shared_row, load[0])
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


DOC = Path(__file__).resolve().parents[1] / "docs" / "performance.md"
# The rows of docs/performance.md's mutation tables that --write-doc refreshes.
DOC_LABELS = {
    "toolz": ("toolz 1.2.0 (dicttoolz)", "toolz (dicttoolz)"),
    "inflection": ("inflection 0.5.1 (`__init__`)", "inflection"),
}


def write_doc(project: str, rows: dict[str, str], shared_row: str, load: float) -> None:
    """Replace (or add, after the project's last row) its rows in the
    side-by-side table and the shared-mutant table."""
    label, short = DOC_LABELS[project]
    lines = DOC.read_text(encoding="utf-8").splitlines()
    for tool, row in rows.items():
        new = f"| {label} | {tool} | {row}"
        at = [i for i, ln in enumerate(lines) if ln.startswith(f"| {label} | ")]
        hit = [i for i in at if lines[i].startswith(f"| {label} | {tool} |")]
        if hit:
            lines[hit[0]] = new
        elif at:
            lines.insert(at[-1] + 1, new)
        else:
            sys.exit(f"{DOC}: no row for {label} to refresh")
    hit = [i for i, ln in enumerate(lines) if ln.startswith(f"| {short} | ")]
    if not hit:
        sys.exit(f"{DOC}: no shared-mutant row for {short}")
    lines[hit[0]] = f"| {short} | {shared_row}"
    DOC.write_text("\n".join(lines) + "\n", encoding="utf-8")
    print(f"wrote {project}'s rows to {DOC} (1-minute load average {load:.1f}; "
          "say when and under what load in the text above the table)")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("path", nargs="?", type=Path)
    ap.add_argument("--files", type=int, default=2, help="mutate the first N source files")
    ap.add_argument("--max-mutants", type=int, default=100_000)
    ap.add_argument("--workers", type=int, nargs="+", default=[os.cpu_count() or 1],
                    help="worker counts (forced; a cap: the role may use fewer "
                         "where more would not pay); --phases runs each, the others the first")
    ap.add_argument("--phases", action="store_true",
                    help="SuperQode alone at each --workers count: wall and CPU per phase")
    ap.add_argument("--json", type=Path, help="with --phases: write verdicts and times here")
    ap.add_argument("--code", type=Path,
                    help="measure the superqode_ls package of this checkout instead")
    ap.add_argument("--vs-mutmut", choices=sorted(PROJECTS),
                    help="side by side with mutmut on one module of a PyPI sdist")
    ap.add_argument("--write-doc", action="store_true",
                    help="with --vs-mutmut: refresh the project's rows in docs/performance.md")
    args = ap.parse_args()
    if args.phases:
        phases(args)
        return
    args.workers = args.workers[0]
    if args.vs_mutmut:
        versus(args)
        return

    user_priority()
    tmp = Path(tempfile.mkdtemp(prefix="mutation-bench-"))
    os.environ["SUPERQODE_HOME"] = str(tmp / "home")
    try:
        if args.path:
            project = tmp / args.path.resolve().name
            shutil.copytree(args.path, project, ignore=shutil.ignore_patterns(".git", ".superqode"))
        else:
            project = synthetic(tmp)
        py = [p for p in project.rglob("*.py") if ".superqode" not in p.parts]
        sources = [
            f
            for f in _scratch.python_files(project)
            if _scratch.is_source_file(f) and not f.endswith("__init__.py")
        ]
        args.targets = sources[: args.files]
        lines = sum(len(p.read_text(errors="replace").splitlines()) for p in py)
        print(
            f"project: {project.name}: {len(py)} Python files, {lines} lines; "
            f"mutating {', '.join(args.targets)}; {os.cpu_count()} core(s)"
        )

        def cold() -> None:
            shutil.rmtree(cache_dir(), ignore_errors=True)

        rows = []
        cold()
        rows.append(scenario("fresh-1", project, MutationTester(1, fork_server=False), args))
        cold()
        rows.append(scenario("warm-1", project, MutationTester(1), args))
        cold()
        rows.append(scenario(f"warm-{args.workers}", project, MutationTester(args.workers), args))
        rows.append(scenario("cached", project, MutationTester(args.workers), args))
        # Edit one source file that had mutants: only that file runs again.
        log = next((project / ".superqode" / "qe-artifacts" / "logs").glob("*mutation.log"))
        touched = None
        for line in log.read_text().splitlines():
            if line.endswith(("(complete)", "(complete, from cache)")) and ".py: {'" in line:
                touched = line.split(":", 1)[0]
                break
        if touched:
            with open(project / touched, "a", encoding="utf-8") as fh:
                fh.write("\n# edited\n")
            rows.append(scenario("one-change", project, MutationTester(args.workers), args))

        base, warm1, warmn, cached = rows[0], rows[1], rows[2], rows[3]
        print()
        if base["rate"] and warm1["rate"]:
            print(
                f"warm launcher vs fresh process (1 worker): "
                f"{warm1['rate'] / base['rate']:.2f}x mutants/s"
            )
        if warm1["rate"] and warmn["rate"]:
            print(
                f"{args.workers} workers vs 1 (warm launcher):          "
                f"{warmn['rate'] / warm1['rate']:.2f}x mutants/s"
            )
        if base["rate"] and warmn["rate"]:
            print(
                f"combined vs fresh-1:                        "
                f"{warmn['rate'] / base['rate']:.2f}x mutants/s"
            )
        if cached["mutants"]:
            print(f"re-run: {cached['mutants']} mutant(s) ran again (expected none)")
        else:
            print(
                f"cached re-run vs cold run (warm-{args.workers}):       "
                f"{warmn['total'] / max(cached['total'], 1e-3):.0f}x faster "
                f"({warmn['total']:.1f}s -> {cached['total']:.2f}s)"
            )
        if touched:
            one = rows[4]
            print(
                f"one file changed ({touched}): {one['mutants']} mutant(s) run again, "
                f"{one['cached']} from cache, {one['total']:.1f}s"
            )
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


if __name__ == "__main__":
    main()
