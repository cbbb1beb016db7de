"""Quick-mode QE vs running bandit and ruff directly, on a medium real-world repo.

The repository is assembled from Python packages installed in this
environment (their sources copied into a temporary git repository, ~300-500
files), so the bench needs no network. Three runs on the same files:

1. ``superqe run --mode quick -r security_tester -r lint_tester`` in-process
   (sandbox, both roles, fix verification, noise filter, report, revert);
2. ``bandit`` then ``ruff check`` run directly, one after the other, with the
   same arguments the roles use;
3. the same two tools started together (the best a hand-written script does).

It prints wall times, the ratio and whether the "true" findings match: every
ruff diagnostic plus every bandit result of medium or high confidence (what
the default confidence threshold of 0.7 keeps), compared as (rule, file, line).

    .venv/bin/python bench/qe.py [--repeat N] [--write-doc]

``--write-doc`` replaces the "QE quick mode vs bandit + ruff" section of
docs/performance.md with the figures.
"""

from __future__ import annotations

import argparse
import contextlib
import io
import json
import os
import platform
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

PACKAGES = (
    "rich", "httpx", "httpcore", "jsonschema", "pygls", "yaml", "pathspec",
    "_pytest", "pluggy", "bandit", "click", "attr", "watchdog",
)  # fmt: skip
SECTION = "## QE quick mode vs bandit + ruff (bench/qe.py)"


def site_packages() -> Path:
    import yaml  # any installed pure-Python package tells where they live

    return Path(yaml.__file__).resolve().parents[1]


def build_repo(dest: Path) -> int:
    """Copy installed package sources into ``dest`` (a fresh git repo)."""
    sp = site_packages()
    count = 0
    for name in PACKAGES:
        src = sp / name
        if not src.is_dir():
            continue
        for path in src.rglob("*.py"):
            rel = path.relative_to(sp)
            if "__pycache__" in rel.parts:
                continue
            target = dest / "src" / rel
            target.parent.mkdir(parents=True, exist_ok=True)
            shutil.copyfile(path, target)
            count += 1
    # One config both ways (ruff otherwise looks for one above the folder,
    # and the sandbox lives elsewhere than the repository): ruff's classic
    # default rule set, as many projects pin it.
    (dest / "pyproject.toml").write_text(
        '[project]\nname = "bench"\nversion = "0"\n\n[tool.ruff]\nline-length = 100\n\n'
        '[tool.ruff.lint]\nselect = ["E4", "E7", "E9", "F"]\n'
    )
    env = {**os.environ, "GIT_AUTHOR_NAME": "bench", "GIT_AUTHOR_EMAIL": "b@localhost",
           "GIT_COMMITTER_NAME": "bench", "GIT_COMMITTER_EMAIL": "b@localhost"}
    for cmd in (["git", "init", "-q"], ["git", "add", "-A"], ["git", "commit", "-qm", "bench"]):
        subprocess.run(cmd, cwd=dest, check=True, env=env, capture_output=True)
    return count


def tool(name: str) -> str:
    local = Path(sys.executable).parent / name
    return str(local) if local.exists() else (shutil.which(name) or name)


def direct_commands(repo: Path) -> tuple[list[str], list[str]]:
    from superqode_ls.qe.roles._common import SKIP_DIRS

    excludes = ",".join(f"*/{d}/*" for d in sorted(SKIP_DIRS)) + ",*.egg-info/*"
    bandit = [tool("bandit"), "-f", "json", "-q", "-x", excludes, "-r", "."]
    ruff = [tool("ruff"), "check", "--no-cache", "--output-format", "json", "--exit-zero",
            "--force-exclude", "--", "."]
    return bandit, ruff


def run_direct(repo: Path, parallel: bool) -> tuple[float, list, list]:
    bandit, ruff = direct_commands(repo)

    def go(cmd: list[str]) -> str:
        return subprocess.run(cmd, cwd=repo, capture_output=True, text=True, check=False).stdout

    t0 = time.perf_counter()
    if parallel:
        with ThreadPoolExecutor(2) as pool:
            b_out, r_out = pool.map(go, (bandit, ruff))
    else:
        b_out, r_out = go(bandit), go(ruff)
    wall = time.perf_counter() - t0
    return wall, json.loads(b_out)["results"], json.loads(r_out)


def run_superqe(repo: Path) -> tuple[float, dict]:
    from superqode_ls.cli import main

    out = io.StringIO()
    t0 = time.perf_counter()
    with contextlib.redirect_stdout(out):
        # A generous budget: the bench measures the whole run, not the cap.
        code = main(["run", str(repo), "--mode", "quick", "-r", "security_tester", "-r",
                     "lint_tester", "--jsonl", "--fail-on", "never", "--timeout", "1800"])
    wall = time.perf_counter() - t0
    if code != 0:
        raise SystemExit(f"superqe run exited {code}")
    events = [json.loads(line) for line in out.getvalue().splitlines()]
    report = json.loads(Path(events[-1]["data"]["report"]).read_text())
    for r in report["roles"]:
        if r["status"] != "ok":
            print(f"warning: role {r['role']} {r['status']}: {r.get('reason')}", file=sys.stderr)
    return wall, report


def true_direct(repo: Path, bandit: list, ruff: list) -> set[tuple[str, str, int]]:
    out = set()
    for r in bandit:
        if r.get("issue_confidence") in ("MEDIUM", "HIGH"):
            out.add((r["test_id"], os.path.normpath(r["filename"]), int(r["line_number"])))
    for d in ruff:
        rel = os.path.relpath(d["filename"], repo)
        out.add((d.get("code") or "syntax-error", rel, int(d["location"]["row"])))
    return out


def found_by_superqe(report: dict) -> set[tuple[str, str, int]]:
    return {
        (f["rule_id"], f["file"], f["range"]["start_line"])
        for f in report["findings"]
        if f["tool"] in ("bandit", "ruff") and f.get("range")
    }


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--repeat", type=int, default=3, help="runs of each (median is reported)")
    ap.add_argument("--write-doc", action="store_true", help="update docs/performance.md")
    args = ap.parse_args()
    with tempfile.TemporaryDirectory(prefix="sq-bench-") as tmp:
        os.environ["SUPERQODE_HOME"] = str(Path(tmp) / "home")  # never the real ~/.superqode
        repo = Path(tmp) / "medium-repo"
        repo.mkdir()
        nfiles = build_repo(repo)
        lines = sum(len(p.read_bytes().splitlines()) for p in repo.rglob("*.py"))
        print(f"repo: {nfiles} Python files, {lines} lines (from {', '.join(PACKAGES)})")
        run_direct(repo, False)  # warm the file cache and the tools' imports
        seq, par, sq = [], [], []
        report: dict = {}
        for _ in range(args.repeat):
            w, b_res, r_res = run_direct(repo, False)
            seq.append(w)
            w, _, _ = run_direct(repo, True)
            par.append(w)
            w, report = run_superqe(repo)
            sq.append(w)
        t_seq, t_par, t_sq = (statistics.median(x) for x in (seq, par, sq))
        direct = true_direct(repo, b_res, r_res)
        ours = found_by_superqe(report)
        missing = sorted(direct - ours)
        extra = sorted(ours - direct)
        roles = {r["role"]: r["duration_s"] for r in report["roles"]}
        verified = sum(1 for p in report["patches"] if p["verified"])
        rows = [
            ("bandit then ruff (direct, sequential)", t_seq),
            ("bandit and ruff together (direct, parallel)", t_par),
            ("superqe run --mode quick (sandbox+verify+report)", t_sq),
        ]
        print(f"{'run':<52} {'wall s':>8}")
        for name, t in rows:
            print(f"{name:<52} {t:>8.2f}")
        print(f"ratio superqe / direct sequential: {t_sq / t_seq:.2f}")
        print(f"ratio superqe / direct parallel:   {t_sq / t_par:.2f}")
        print(f"role durations: {roles}; fixes verified: {verified}/{len(report['patches'])}")
        print(f"true findings: direct {len(direct)}, superqe {len(ours)}, "
              f"missing {len(missing)}, extra {len(extra)}")
        for item in missing[:10]:
            print(f"  missing: {item}")
        for item in extra[:10]:
            print(f"  extra:   {item}")
        same = not missing and not extra
        print("same true findings:", "yes" if same else "NO")
        if args.write_doc:
            write_doc(nfiles, lines, rows, t_sq / t_seq, t_sq / t_par, len(direct), len(ours),
                      len(missing), len(extra), verified, len(report["patches"]), args.repeat)
    return 0 if same and t_sq / t_seq <= 1.5 else 1


def write_doc(nfiles, lines, rows, ratio_seq, ratio_par, n_direct, n_ours, n_missing, n_extra,
              verified, patches, repeat) -> None:
    doc = ROOT / "docs" / "performance.md"
    text = doc.read_text(encoding="utf-8") if doc.exists() else "# Performance\n"
    body = [
        SECTION,
        "",
        (f"Measured {time.strftime('%Y-%m-%d', time.gmtime())} on {platform.machine()}, "
        f"{os.cpu_count()} CPUs (shared), Python {platform.python_version()}; "
        f"median of {repeat} runs. Repository: {nfiles} Python files, {lines} lines, "
        "copied from installed packages into a fresh git repository."),
        "",
        "| run | wall (s) |",
        "| --- | ---: |",
        *[f"| {name} | {t:.2f} |" for name, t in rows],
        "",
        (f"Ratio superqe / direct sequential: **{ratio_seq:.2f}** (target <= 1.5); "
        f"superqe / direct parallel: {ratio_par:.2f}."),
        "",
        (f"True findings (every ruff diagnostic, bandit results of medium or high confidence, "
        f"as rule/file/line): direct {n_direct}, superqe {n_ours}, missing {n_missing}, "
        f"extra {n_extra}. Fixes verified: {verified} of {patches}."),
        "",
        "Reproduce: `.venv/bin/python bench/qe.py --repeat 3 --write-doc`.",
        "",
    ]
    start = text.find(SECTION)
    if start >= 0:
        end = text.find("\n## ", start + len(SECTION))
        text = text[:start] + "\n".join(body) + (text[end + 1:] if end >= 0 else "")
    else:
        text = text.rstrip("\n") + "\n\n" + "\n".join(body)
    doc.write_text(text, encoding="utf-8")


if __name__ == "__main__":
    sys.exit(main())
