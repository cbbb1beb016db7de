"""Language server soak: ``runOnSave`` on a file with hundreds of findings,
saved again and again from a real stdio client.

Each round edits the open buffer (one comment line appended), writes it to disk
and sends ``didSave``; the server starts a quick session on the file
(lint_tester + security_tester) and the round ends when that session's
progress ends. Recorded per save: the server's RSS after the result, the time
from ``didSave`` to the end of the session (the save debounce included), and
how many diagnostics the file has. At the end: whether any sandbox is left
under ``$SUPERQODE_HOME/working``.

Pass criteria (issue 15): RSS plateaus (the last quarter of the saves grows
by less than a tenth of what the first quarter did, or by under 5 MB), the
median save-to-result time of the last 10 saves is within 2x of the first 10,
and no sandbox is left.

    .venv/bin/python bench/soak.py [--saves 100] [--findings 300] [--json FILE] [--write-doc]

``--write-doc`` replaces the "Language server soak (bench/soak.py)" section of
docs/performance.md with the figures.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import platform
import shutil
import statistics
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "bench"))
from perfdoc import replace_section  # noqa: E402 - bench/perfdoc.py

SECTION = "## Language server soak (bench/soak.py)"
ROLES = ["lint_tester", "security_tester"]


def say(msg: str) -> None:
    print(f"[bench/soak] {msg}", file=sys.stderr, flush=True)


def make_project(dest: Path, findings: int, fixes: int) -> Path:
    """A repository whose ``pkg/many.py`` has about ``findings`` findings: a
    few unused imports (ruff F401, each with a fix to verify), then a third
    undefined names (ruff F821), a third ``eval`` calls (bandit B307) and a
    third asserts (bandit B101), none with a fix: the session's time is the
    server's and the analyzers', not that of verifying hundreds of fixes."""
    from lsp import git_init

    per = max(1, findings // 3)
    lines = [f"import json as json_{i}\n" for i in range(fixes)]
    lines += [f"print(undefined_{i})\n" for i in range(per)]
    lines += [f"value_{i} = eval('{i}')\n" for i in range(per)]
    lines += [f"assert value_{i} == {i}\n" for i in range(per)]
    (dest / "pkg").mkdir(parents=True)
    (dest / "pkg" / "__init__.py").write_text("", encoding="utf-8")
    target = dest / "pkg" / "many.py"
    target.write_text("".join(lines), encoding="utf-8")
    git_init(dest)
    return target


def sandboxes_left(home: Path) -> list[str]:
    """Session sandboxes (and their private folders) still under working/."""
    working = home / "working"
    if not working.is_dir():
        return []
    left = []
    for repo in working.iterdir():
        qe = repo / "qe"
        if qe.is_dir():
            left += [str(p) for p in qe.iterdir() if p.is_dir()]
    return left


def parked_left(home: Path) -> int:
    """Warm sandboxes parked for reuse (a bounded pool, kept by design)."""
    working = home / "working"
    if not working.is_dir():
        return 0
    return sum(1 for repo in working.iterdir() if (repo / "parked").is_dir()
               for p in (repo / "parked").iterdir() if not p.name.startswith("."))


def tokens_ended(client) -> set[str]:
    return {tok for _, tok, v in client.progress_times if v.get("kind") == "end"}


async def soak(saves: int, findings: int, fixes: int, pause_s: float, trace: bool = False) -> dict:
    import psutil
    from lsp import Bench, bench_home
    from lsprotocol import types
    from pygls.uris import from_fs_path

    work, env = bench_home("sq-bench-soak-")
    out: dict = {"machine": f"{platform.machine()}, {os.cpu_count()} cpu(s), "
                            f"load {os.getloadavg()[0]:.1f} at start",
                 "saves": saves, "roles": ROLES,
                 "measured": time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime())}
    try:
        project = work / "proj"
        target = make_project(project, findings, fixes)
        bench = Bench(env)
        client, _ = await bench.start(project, "neovim", pull=False,
                                      settings={"runOnSave": True, "roles": ROLES})
        server = psutil.Process(client._server.pid)
        uri = from_fs_path(str(target))
        text = target.read_text(encoding="utf-8")
        version = 1
        client.text_document_did_open(types.DidOpenTextDocumentParams(
            text_document=types.TextDocumentItem(uri=uri, language_id="python", version=1, text=text)))
        out["rss_start_mb"] = round(server.memory_info().rss / 2**20, 1)
        rss: list[float] = []
        took: list[float] = []
        diags: list[int] = []
        for n in range(saves):
            ended_before = tokens_ended(client)
            line_count = text.count("\n")
            new_line = f"# save {n}\n"
            text += new_line
            version += 1
            client.text_document_did_change(types.DidChangeTextDocumentParams(
                text_document=types.VersionedTextDocumentIdentifier(uri=uri, version=version),
                content_changes=[types.TextDocumentContentChangePartial(
                    range=types.Range(start=types.Position(line_count, 0),
                                      end=types.Position(line_count, 0)),
                    text=new_line)]))
            target.write_text(text, encoding="utf-8")
            t0 = time.perf_counter()
            client.text_document_did_save(types.DidSaveTextDocumentParams(
                text_document=types.TextDocumentIdentifier(uri=uri)))
            deadline = time.monotonic() + 600
            while True:
                new = tokens_ended(client) - ended_before
                if new:
                    break
                if time.monotonic() > deadline:
                    raise SystemExit(f"save {n}: no session ended within 600 s")
                await asyncio.sleep(0.02)
            took.append(time.perf_counter() - t0)
            if trace:
                for t, tok, v in client.progress_times:
                    if tok in new and t >= t0:
                        say(f"  {t - t0:7.2f} s {v.get('kind')}: {v.get('message')}")
            rss.append(server.memory_info().rss / 2**20)
            diags.append(len(client.diagnostics.get(uri, [])))
            if n % 10 == 0 or n == saves - 1:
                say(f"save {n}: {took[-1]:.2f} s, RSS {rss[-1]:.1f} MB, {diags[-1]} diagnostics")
            await asyncio.sleep(pause_s)
        await bench.stop(client)
        # The server reverts and removes its sandboxes before it exits.
        out["sandboxes_left"] = sandboxes_left(Path(env["SUPERQODE_HOME"]))
        out["parked"] = parked_left(Path(env["SUPERQODE_HOME"]))
        q = max(1, saves // 4)
        out["rss_mb"] = [round(x, 1) for x in rss]
        out["save_to_result_s"] = [round(x, 2) for x in took]
        out["diagnostics"] = diags
        out["rss_after_first_mb"] = round(rss[0], 1)
        out["rss_after_last_mb"] = round(rss[-1], 1)
        out["rss_growth_first_quarter_mb"] = round(rss[q - 1] - rss[0], 1)
        out["rss_growth_last_quarter_mb"] = round(rss[-1] - rss[-q], 1)
        out["first10_median_s"] = round(statistics.median(took[:10]), 2)
        out["last10_median_s"] = round(statistics.median(took[-10:]), 2)
        out["last_vs_first"] = round(out["last10_median_s"] / out["first10_median_s"], 2)
        growth_last = out["rss_growth_last_quarter_mb"]
        out["plateau"] = growth_last < 5 or growth_last < 0.1 * max(out["rss_growth_first_quarter_mb"], 0.1)
        out["pass"] = bool(out["plateau"] and out["last_vs_first"] <= 2 and not out["sandboxes_left"])
    finally:
        shutil.rmtree(work, ignore_errors=True)
    return out


def render(r: dict, before: dict | None = None) -> str:
    when = r.get("measured") or time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime())
    rows = [("this code", r)] + ([("before (issue 15)", before)] if before else [])
    intro = (f"Measured {when} on {r['machine']}: `runOnSave` on one file with "
             f"{max(r['diagnostics'])} findings ({', '.join(r['roles'])}), saved {r['saves']} times "
             "from a real stdio client; each save waits for its session's end.")
    header = ("| code | RSS after save 1 | after the last | growth, first quarter | growth, last quarter "
              "| save-to-result, first 10 (median) | last 10 | last/first | sandboxes left (warm, parked) |")
    lines = [SECTION, "", intro, "", header, "|---|---:|---:|---:|---:|---:|---:|---:|---:|"]
    for name, x in rows:
        lines.append(
            f"| {name} ({x['saves']} saves) | {x['rss_after_first_mb']} MB | {x['rss_after_last_mb']} MB "
            f"| {x['rss_growth_first_quarter_mb']} MB | {x['rss_growth_last_quarter_mb']} MB "
            f"| {x['first10_median_s']} s | {x['last10_median_s']} s | {x['last_vs_first']}x "
            f"| {len(x['sandboxes_left'])} ({x.get('parked', 0)} parked) |")
    lines += ["", "RSS after every 10th save (MB): "
              + ", ".join(str(v) for v in r["rss_mb"][::10]) + ".", ""]
    if before:
        lines += ["Before: " + ", ".join(str(v) for v in before["rss_mb"][::10])
                  + f" (measured {before.get('measured', 'earlier')} on {before['machine']}).", ""]
    lines += [NOTES]
    return "\n".join(lines)


NOTES = """Reproduce: `.venv/bin/python bench/soak.py [--saves 100] [--findings 300]`.
A run keeps its unsaved buffers, report and patches for fixes and reports;
the server's run registry keeps finished runs up to a count and a size (the
latest run of each folder always), and the findings the editor shows carry
their own fix, so dropping a run never drops a quick fix."""


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--saves", type=int, default=100)
    ap.add_argument("--findings", type=int, default=300)
    ap.add_argument("--fixes", type=int, default=5, help="findings with a fix (unused imports)")
    ap.add_argument("--pause", type=float, default=0.5, help="seconds between a result and the next save")
    ap.add_argument("--trace", action="store_true", help="print each session's progress messages")
    ap.add_argument("--json", help="also write the figures here")
    ap.add_argument("--before", help="figures of a run on the old code (--json output) to show beside")
    ap.add_argument("--from-json", help="render figures saved earlier (--json) instead of measuring")
    ap.add_argument("--write-doc", action="store_true")
    args = ap.parse_args()
    if args.from_json:
        results = json.loads(Path(args.from_json).read_text(encoding="utf-8"))
    else:
        results = asyncio.run(soak(args.saves, args.findings, args.fixes, args.pause, args.trace))
    before = json.loads(Path(args.before).read_text(encoding="utf-8")) if args.before else None
    text = render(results, before)
    print(text)
    if args.json:
        Path(args.json).write_text(json.dumps(results, indent=2), encoding="utf-8")
    if args.write_doc:
        replace_section(SECTION, text)
    return 0 if results["pass"] else 1


if __name__ == "__main__":
    sys.exit(main())
