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
"total" includes the coverage run that maps lines to tests.
"""

from __future__ import annotations

import argparse
import asyncio
import os
import random
import shutil
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from superqode_ls.config import Config
from superqode_ls.qe.roles import _scratch
from superqode_ls.qe.roles.base import RoleContext
from superqode_ls.qe.roles.mutation import MutationTester, cache_dir
from superqode_ls.workspace.artifacts import Artifacts

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


def scenario(name: str, project: Path, role: MutationTester, opts: argparse.Namespace) -> dict:
    started = time.monotonic()
    out = asyncio.run(role.run(ctx_for(project, opts.max_mutants, opts.targets)))
    total = time.monotonic() - started
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
    }
    print(
        f"{name:<11} workers={row['workers']:<2} run={row['mutants']:<4} cached={row['cached']:<4}"
        f" mutants/s={row['rate']:6.2f}  coverage={row['coverage_s']:6.1f}s"
        f"  total={total:6.1f}s  findings={row['findings']}  [{out.status}]",
        flush=True,
    )
    return row


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("path", nargs="?", type=Path)
    ap.add_argument("--files", type=int, default=2, help="mutate the first N source files")
    ap.add_argument("--max-mutants", type=int, default=100_000)
    ap.add_argument("--workers", type=int, default=os.cpu_count() or 1)
    args = ap.parse_args()

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
            if line.endswith(("(complete)", "(cached)")) and ".py: {'" in line:
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
            print(
                f"re-run: {cached['mutants']} further mutant(s) ran: --max-mutants left the "
                "file incomplete, so the re-run continued instead of answering from the cache"
            )
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
