"""``bench/lsp.py --live``: diagnostics without a button, from the user's seat,
beside ruff's own language server (``ruff server``) on the same file.

For each server, ``--rounds`` fresh starts on a copy of examples/shop with a
planted file (an unused import and a ``shell=True`` call), timed over stdio:

- start: the server spawned to its ``initialize`` answer; open from start:
  spawned to both F401 and B602 shown, with ``didOpen`` sent as soon as the
  server is initialized (a window restored with the file open: nothing is
  warm yet);
- open: ``didOpen`` to the first publishDiagnostics that shows F401;
- type: an ``import json`` typed at the top (one ``didChange``) to the first
  publishDiagnostics that shows F401 on ``json`` (SuperQode waits for a
  pause in typing first: ``live.TYPE_DEBOUNCE``, 0.5 s);
- save: that line again (``import sys``), written and saved (``didChange``
  then ``didSave`` right away), from ``didSave`` to F401 on ``sys``.
  ruff's server lints on change, so its figure is the change's own.

SuperQode also shows bandit's B602 (``shell=True``); its time is given too,
and the CPU seconds its process tree (the server, its tools, the warm bandit,
the sandbox's processes) spent from the spawn until both were shown ("cpu to
both": on a loaded machine the wall times move with the load, the CPU less),
and what its child processes (the warm bandit) had spent by the ``initialize``
answer: work done beside the server's own start, on another CPU when one is
free.

``--baseline DIR``: a checkout of an older SuperQode LS (``git worktree add
DIR main``) started the same way beside this one, rounds alternating, both
from its own source (``PYTHONPATH``), with this environment's packages.

    .venv/bin/python bench/lsp.py --live [--rounds 5] [--baseline DIR] [--no-ruff]
"""

from __future__ import annotations

import asyncio
import os
import shutil
import statistics
import subprocess
import sys
import time
from pathlib import Path

import psutil
from lsp import ROOT, RawClient, bench_home, git_init, say  # bench/lsp.py

PLANTED = "import os\nimport subprocess\n\n\ndef run(cmd):\n    return subprocess.run(cmd, shell=True)\n"
TARGET = "shop/live_planted.py"


def shows(client: RawClient, uri: str, since: float, code: str, word: str | None = None):
    """The arrival time of the first publish after ``since`` for ``uri`` with
    ``code`` (whose message names ``word``), else None."""
    for at, method, params in client.events:
        if at < since or method != "textDocument/publishDiagnostics" or params.get("uri") != uri:
            continue
        for d in params.get("diagnostics", []):
            if str(d.get("code")) == code and (word is None or word in d.get("message", "")):
                return at
    return None


async def until(client: RawClient, uri: str, since: float, code: str, word: str | None = None,
                timeout: float = 60) -> float:
    await client.wait(lambda: shows(client, uri, since, code, word) is not None, timeout)
    return shows(client, uri, since, code, word) - since


def tree_cpu(pid: int, own: bool = True) -> float:
    """CPU seconds of ``pid`` (``own``: itself too) and its descendants, the reaped ones included."""
    total = 0.0
    try:
        root = psutil.Process(pid)
        procs = root.children(recursive=True)
        t = root.cpu_times()
    except psutil.Error:
        return total
    total = t.children_user + t.children_system + (t.user + t.system if own else 0.0)
    for proc in procs:
        try:
            t = proc.cpu_times()
        except psutil.Error:
            continue
        total += t.user + t.system + t.children_user + t.children_system
    return total


def launcher(source: Path) -> list[str]:
    """The server from ``source``'s package, as its entry point starts it."""
    code = (f"import sys; sys.path.insert(0, {str(source)!r}); "
            "from superqode_ls.server.__main__ import main; sys.exit(main())")
    return [sys.executable, "-c", code]


async def one_round(cmd: list[str], folder: Path, env: dict[str, str], security: bool) -> dict:
    from pygls.uris import from_fs_path

    target = folder / TARGET
    target.write_text(PLANTED, encoding="utf-8")
    uri = from_fs_path(str(target))
    spawned = time.perf_counter()
    client = await RawClient.start(folder, env, cmd)
    out: dict[str, float] = {"start": time.perf_counter() - spawned}
    # What the server's own processes did beside its start (on another CPU when one is free).
    out["cpu of children by initialize"] = tree_cpu(client.proc.pid, own=False)
    out["cpu by initialize"] = tree_cpu(client.proc.pid)  # the server's own start with it
    try:
        t0 = time.perf_counter()
        client.notify("textDocument/didOpen", {"textDocument": {
            "uri": uri, "languageId": "python", "version": 1, "text": PLANTED}})
        out["open"] = await until(client, uri, t0, "F401", "os")
        out["open_from_start"] = out["open"] + t0 - spawned
        if security:
            out["open_b602"] = await until(client, uri, t0, "B602")
            out["open_from_start"] = max(out["open"], out["open_b602"]) + t0 - spawned
        out["cpu to both"] = tree_cpu(client.proc.pid)
        await asyncio.sleep(1.5)  # the open's run has ended: each figure its own
        text = "import json\n" + PLANTED
        t1 = time.perf_counter()
        client.notify("textDocument/didChange", {
            "textDocument": {"uri": uri, "version": 2},
            "contentChanges": [{"range": {"start": {"line": 0, "character": 0},
                                          "end": {"line": 0, "character": 0}},
                                "text": "import json\n"}]})
        out["type"] = await until(client, uri, t1, "F401", "json")
        await asyncio.sleep(1.5)
        text = "import sys\n" + text
        target.write_text(text, encoding="utf-8")
        client.notify("textDocument/didChange", {
            "textDocument": {"uri": uri, "version": 3},
            "contentChanges": [{"range": {"start": {"line": 0, "character": 0},
                                          "end": {"line": 0, "character": 0}},
                                "text": "import sys\n"}]})
        t2 = time.perf_counter()
        client.notify("textDocument/didSave", {"textDocument": {"uri": uri}})
        seen = shows(client, uri, t2 - 5, "F401", "sys")
        out["save"] = max(0.0, seen - t2) if seen is not None else await until(client, uri, t2, "F401", "sys")
    finally:
        await client.stop()
    return out


async def measure(rounds: int, baseline: Path | None = None, ruff_too: bool = True) -> dict:
    work, env = bench_home("sq-live-")
    try:
        folder = work / "shop"
        shutil.copytree(ROOT / "examples" / "shop", folder,
                        ignore=shutil.ignore_patterns(".superqode", "__pycache__", ".pytest_cache"))
        git_init(folder)
        # The installed entry point, as an editor starts it (its imports are the start's).
        ours = [str(Path(sys.executable).parent / "superqode-ls")]
        ruff = shutil.which("ruff", path=str(Path(sys.executable).parent)) or shutil.which("ruff")
        servers = {"superqode": (ours, True)}
        if baseline is not None:  # both from source, alternating round by round
            servers = {"superqode": (launcher(ROOT), True, ROOT),
                       "superqode (baseline)": (launcher(baseline), True, baseline)}
        if ruff and ruff_too:
            servers["ruff server"] = ([ruff, "server"], False)
        ruff_version = (await asyncio.to_thread(subprocess.run, [ruff, "--version"], capture_output=True,
                                                text=True, check=False)).stdout.strip() if ruff else None
        results: dict[str, dict[str, list[float]]] = {}
        names = list(servers)
        # In turn, ABBA: the first start of all (colder caches) is not always the same one's.
        order = [(name, n) for n in range(rounds) for name in (names if n % 2 == 0 else names[::-1])] \
            if baseline is not None else [(name, n) for name in names for n in range(rounds)]
        for name, n in order:
            cmd, security, *source = servers[name]
            round_env = {**env, "PYTHONPATH": str(source[0])} if source else env
            say(f"load {os.getloadavg()[0]:.1f}")
            r = await one_round(cmd, folder, round_env, security)
            say(f"{name} round {n + 1}: " + ", ".join(f"{k} {v:.3f}s" for k, v in r.items()))
            for k, v in r.items():
                results.setdefault(name, {}).setdefault(k, []).append(v)
            await asyncio.to_thread(subprocess.run, ["git", "-C", str(folder), "checkout", "-q", "--", "."],
                                    check=False)
        return {"rounds": rounds, "results": results, "ruff": ruff_version}
    finally:
        shutil.rmtree(work, ignore_errors=True)


def render(r: dict) -> str:
    rows = [("| server | start | open -> first diagnostic | typed change -> diagnostic | save -> diagnostic "
             "| open -> bandit B602 | start -> both on open | CPU, start -> both | CPU by initialize "
             "| CPU of its children by initialize |"),
            "|---|---|---|---|---|---|---|---|---|---|"]

    def cell(values: list[float] | None) -> str:
        if not values:
            return "-"
        return f"{statistics.median(values):.2f} s (max {max(values):.2f})"

    for name, res in r["results"].items():
        rows.append(f"| {name} | {cell(res.get('start'))} | {cell(res.get('open'))} | {cell(res.get('type'))} | "
                    f"{cell(res.get('save'))} | {cell(res.get('open_b602'))} | {cell(res.get('open_from_start'))} | "
                    f"{cell(res.get('cpu to both'))} | {cell(res.get('cpu by initialize'))} | "
                    f"{cell(res.get('cpu of children by initialize'))} |")
    return (f"Median of {r['rounds']} fresh server starts each ({r['ruff'] or 'ruff not found'}); "
            "SuperQode's typed change includes its 0.5 s pause-in-typing wait.\n\n" + "\n".join(rows))


def main_live(argv: list[str]) -> int:
    import argparse

    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--live", action="store_true")
    ap.add_argument("--rounds", type=int, default=5)
    ap.add_argument("--baseline", type=Path, help="an older checkout, timed alternating with this one")
    ap.add_argument("--no-ruff", action="store_true", help="leave ruff's server out")
    args = ap.parse_args(argv)
    print(f"load {os.getloadavg()[0]:.1f} at start")
    print(render(asyncio.run(measure(args.rounds, args.baseline, not args.no_ruff))))
    print(f"load {os.getloadavg()[0]:.1f} at the end")
    return 0
