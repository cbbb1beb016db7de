"""Diagnostics without a button, from the user's seat in each real editor,
beside ruff's own server (``ruff server``) where the editor can run it.

Each round runs the editor test's own scenario (tests/editors/*/live.*) on a
fresh git copy of examples/shop with two planted files (an unused import and a
``shell=True`` call) and a home of its own, and reads the times it recorded:

- open: the first file shows both problems, counted from the server attached
  (Neovim, Emacs: the server is up) or from the file opened (VS Code: the
  extension and the server start with it); Neovim's and Emacs's "open (with
  start)" counts from the file shown, before the server started (the plugin
  starts it with the first Python file: its start and ``initialize`` are in it);
- open 2: a second file opened while the server runs, until both show;
- save: a saved ``import sys`` line, from the save to its F401;
- Neovim only: type (an unsaved line, to its F401: 0.5 s of it is the pause
  SuperQode waits for), and ``:SuperQodeRun file`` in a folder not yet trusted
  (the project's quick roles include unit_tester; the answer is "Trust
  folder"): to the run's first finding in the buffer, and to its end.

ruff server gets the same scenario with ``extendSelect = ["S602"]`` so it has
both problems; VS Code has no ruff extension here (offline), so only
SuperQode is timed there.

    .venv/bin/python bench/editors.py [--rounds 3] [--editors nvim,emacs,vscode,vscode-ready,vscode-trace] [--no-ruff]

``vscode-ready`` opens the first file once the extension's server is up
(it starts with a Python workspace), as a user does a moment after opening
the window; ``vscode`` opens it as soon as the window shows. VS Code's open
counts from the Enter in Quick Open, so it holds VS Code's own opening of
the file ("text shown": until the tab shows its text; Neovim's and Emacs's
open counts from a buffer already shown); "from text shown" is the rest.
``vscode-trace`` is ``vscode-ready`` with the server's debug log and the
extension's stamps (``superqode.trace.server``), and the open's steps from
them: didOpen sent, read by the server, the pull refresh that brought both
problems, both at the extension, both on the screen (the logging costs a
little itself).

Each time is the page's clock when the squiggles first showed (checked at
every frame in the page), not when a poll from this side next saw them.

``--cold``: no server code cache of an earlier start in the rounds' homes
(server/codecache.py; by default each home gets the one this checkout makes).

``--baseline DIR``: an older checkout (``git worktree add DIR main``; put it
under this checkout, e.g. ``build/``, not under /tmp: the same code from /tmp
came out 0.2-0.3 s faster at the first open in Emacs) timed
beside this one, round by round in turn (ABBA), each server started from its
own source through the same launcher (``PYTHONPATH``), with this
environment's packages; ruff server is then left out.

Needs what scripts/setup-editors.sh installs (as the editor tests do).
"""

from __future__ import annotations

import argparse
import json
import os
import re
import shutil
import statistics
import subprocess
import sys
import tempfile
from datetime import UTC, datetime
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
BIN = Path(sys.executable).parent
TESTS = ROOT / "tests" / "editors"
PLANTED = "import os\nimport subprocess\n\n\ndef run(cmd):\n    return subprocess.run(cmd, shell=True)\n"
RUFF_INIT = json.dumps({"settings": {"lint": {"extendSelect": ["S602"]}}})


# The superqode-ls an editor starts (``--baseline``: a launcher per source).
SERVERS: dict[str, Path] = {}


def launcher(source: Path, folder: Path) -> Path:
    """A superqode-ls that runs ``source``'s package."""
    script = folder / f"superqode-ls-{len(SERVERS)}"
    code = (f"import sys; sys.path.insert(0, {str(source)!r}); "
            "from superqode_ls.server.__main__ import main; sys.exit(main())")
    script.write_text(f'#!/bin/sh\nPYTHONPATH={source} exec {sys.executable} -c "{code}" "$@"\n')
    script.chmod(0o755)
    return script


def server() -> Path:
    return SERVERS.get("current", BIN / "superqode-ls")


def say(msg: str) -> None:
    print(f"[bench/editors] {msg}", file=sys.stderr, flush=True)


# The protocol's compiled code (server/codecache.py) as a user's second
# start finds it: each round's home is new, so it is made once and copied in.
CODE_CACHE: dict[str, Path] = {}
COLD = False


def code_cache() -> Path | None:
    """This checkout's code cache, made once in a home of its own."""
    if "file" not in CODE_CACHE:
        home = Path(tempfile.mkdtemp(prefix="sqe-bench-code-"))
        env = {**os.environ, "SUPERQODE_HOME": str(home), "PYTHONPATH": str(ROOT)}
        code = ("from superqode_ls.server import codecache; codecache.begin(); "
                "import superqode_ls.server.setup as s; s.create_server(); codecache.save()")
        subprocess.run([sys.executable, "-c", code],
                       env=env, check=False, capture_output=True, timeout=120)
        made = list((home / "run").glob("code-*.marshal"))
        CODE_CACHE["file"] = made[0] if made else home / "none"
    return CODE_CACHE["file"] if CODE_CACHE["file"].is_file() else None


def workspace() -> tuple[Path, Path, dict[str, str]]:
    """A git copy of examples/shop with the two planted files, and the
    environment of an editor that never touches the real home (with the
    server's code cache of an earlier start: ``--cold`` leaves it out)."""
    work = Path(tempfile.mkdtemp(prefix="sqe-bench-"))
    home = work / "home"
    env = {**os.environ, "HOME": str(home), "SUPERQODE_HOME": str(home / ".superqode"),
           "XDG_CONFIG_HOME": str(home / ".config"), "XDG_CACHE_HOME": str(home / ".cache"),
           "XDG_STATE_HOME": str(home / ".state"), "XDG_DATA_HOME": str(home / ".data"),
           "GIT_CONFIG_NOSYSTEM": "1", "TMPDIR": str(work), "PATH": f"{BIN}{os.pathsep}{os.environ['PATH']}",
           "GIT_AUTHOR_NAME": "b", "GIT_AUTHOR_EMAIL": "b@b", "GIT_COMMITTER_NAME": "b",
           "GIT_COMMITTER_EMAIL": "b@b"}
    for sub in (".superqode", ".config", ".cache", ".state", ".data"):
        (home / sub).mkdir(parents=True)
    if not COLD and (cache := code_cache()) is not None:
        run = home / ".superqode" / "run"
        run.mkdir(mode=0o700)
        shutil.copy2(cache, run / cache.name)
    repo = work / "shop"
    shutil.copytree(ROOT / "examples" / "shop", repo,
                    ignore=shutil.ignore_patterns(".superqode", "__pycache__", ".pytest_cache"))
    for args in (["init", "-q"], ["add", "-A"], ["commit", "-q", "-m", "bench"]):
        subprocess.run(["git", *args], cwd=repo, check=True, env=env)
    for name in ("live_planted.py", "live_second.py"):
        (repo / "shop" / name).write_text(PLANTED)
    return work, repo, env


def other_server(env: dict[str, str]) -> dict[str, str]:
    return {**env, "SQ_LSP_CMD": f"{BIN / 'ruff'} server", "SQ_LSP_INIT": RUFF_INIT, "SQ_SHELL": "S602"}


def nvim(ruff: bool) -> dict[str, float]:
    work, repo, env = workspace()
    try:
        result = work / "r.json"
        env = {**env, "SQ_PLUGIN": str(ROOT / "editors" / "nvim"), "SQ_HARNESS": str(TESTS / "nvim" / "harness.lua"),
               "SQ_SERVER": str(server()), "SQ_RESULT": str(result),
               "SQ_SECOND": "shop/live_second.py", "SQ_RUN_QE": "1"}
        if ruff:
            env = other_server(env)
        subprocess.run([str(BIN / "nvim"), "--headless", "--clean", "-n", "-S", str(TESTS / "nvim" / "live.lua"),
                        "shop/live_planted.py"], cwd=repo, env=env, capture_output=True, timeout=600)
        data = json.loads(result.read_text())
        if data.get("exit") != 0:
            raise RuntimeError(data.get("error"))
        at = data["at"]
        out = {"open": at["on_open"] - at["attached"], "open (with start)": at["on_open"],
               "open 2": at["on_open_second"] - at["open_second"],
               "save": at["after_save"] - at["save"], "type": at["after_typing"] - at["type"]}
        if "run_end" in at:
            out["Run QE: first"] = at["run_first_diagnostic"] - at["run_qe"]
            out["Run QE: end"] = at["run_end"] - at["run_qe"]
        return out
    finally:
        shutil.rmtree(work, ignore_errors=True)


def emacs(ruff: bool) -> dict[str, float]:
    work, repo, env = workspace()
    try:
        result = work / "r.json"
        env = {**env, "SQ_PACKAGE": str(ROOT / "editors" / "emacs"), "SQ_SERVER": str(server()),
               "SQ_RESULT": str(result), "SQ_FILE": str(repo / "shop" / "live_planted.py"),
               "SQ_SECOND": str(repo / "shop" / "live_second.py")}
        if ruff:
            env = other_server(env)
        subprocess.run(["emacs", "--batch", "-l", str(TESTS / "emacs" / "live.el")], cwd=repo, env=env,
                       capture_output=True, timeout=600)
        data = json.loads(result.read_text())
        if data.get("exit") != 0:
            raise RuntimeError(data.get("error"))
        at = data["at"]
        return {"open": at["on_open"] - at["attached"], "open (with start)": at["on_open"],
                "open 2": at["on_open_second"] - at["open_second"],
                "save": at["after_save"] - at["save"]}
    finally:
        shutil.rmtree(work, ignore_errors=True)


def vscode(ruff: bool, ready_first: bool = False, trace: bool = False) -> dict[str, float]:
    """The VS Code editor test itself (code-server + Playwright); its times.
    ``ready_first``: the file is opened once the extension's server is up
    (the window a moment after it opened), not as soon as the window shows.
    ``trace``: the server's debug log and the extension's stamps too, and
    where the first open's time went (``trace_steps``)."""
    assert not ruff
    base = Path(tempfile.mkdtemp(prefix="sqe-bench-vs-"))
    logs = Path(tempfile.mkdtemp(prefix="sqe-bench-vs-trace-"))  # pytest empties its --basetemp
    env = {**os.environ, **({"SQ_READY_FIRST": "1"} if ready_first else {}),
           **({"SQ_VSCODE_TRACE": str(logs)} if trace else {}),
           **({"SQ_BENCH_SERVER": str(SERVERS["current"])} if "current" in SERVERS else {}),
           **({"SQ_BENCH_CODE_CACHE": str(cache)} if not COLD and (cache := code_cache()) is not None else {})}
    try:
        proc = subprocess.run(
            [sys.executable, "-m", "pytest", "-p", "no:cacheprovider", "-n", "0", "-q", "--basetemp", str(base),
             str(TESTS / "test_vscode.py"), "-k", "open_and_save"],
            cwd=ROOT, capture_output=True, text=True, timeout=600, env=env)
        found = list(base.rglob("vscode.json"))
        if proc.returncode != 0 or not found:
            raise RuntimeError(proc.stdout[-2000:])
        data = json.loads(found[0].read_text())
        at = data["at"]
        first = "open (server up)" if ready_first else "open (with start)"
        out = {first: at["on_open"], "  text shown": at["text_shown"],
               "  from text shown": at["on_open"] - at["text_shown"],
               "open 2": at["on_open_second"] - at["open_second"], "save": at["after_save"] - at["save"]}
        if trace:
            out.update(trace_steps(logs, data))
        return out
    finally:
        shutil.rmtree(base, ignore_errors=True)
        shutil.rmtree(logs, ignore_errors=True)


FIRST = "shop/live_planted.py"
TIMING = re.compile(r"^\[timing (\S+)Z\] (.*)$")
SERVER_LINE = re.compile(r"^(\d{4}-\d\d-\d\d \d\d:\d\d:\d\d),(\d{3}) \S+ \S+ (.*)$")


def _epoch_ms(stamp: str, utc: bool = True) -> float:
    """``stamp`` in ms since the epoch: the extension's are UTC, the server
    log's local time (naive: ``timestamp`` reads it so)."""
    when = datetime.fromisoformat(stamp)
    return (when.replace(tzinfo=UTC) if utc else when).timestamp() * 1000


# The start's steps in both logs (extension.ts stamp(), the server's -v log).
EXT_STEPS = {"activate": "  ext: activated", "server starting": "  ext: server spawned",
             "server started": "  ext: server up (initialized)"}
SERVER_STEPS = {"superqode-ls main": "  server: main", "Request 'initialize' received": "  server: initialize read",
                "first imports done": "  server: first imports done", "event session_start": "  server: first run began",
                "event role_complete": "  server: first role done"}


def trace_steps(logs: Path, data: dict) -> dict[str, float]:
    """Where the first file's open went, each step in ms since Enter (the
    page's, the extension's and the server's clocks are the machine's): the
    extension sends didOpen, the server reads it, the server asks VS Code to
    pull (the last refresh before both problems reached the extension), the
    extension has both (3 items: F401, B602, B404), the page shows both."""
    opened = data["epoch"]["opened"]
    steps: dict[str, float] = {}
    ext = "\n".join(p.read_text(errors="replace") for p in sorted(logs.glob("extension-*.log")))
    for line in ext.splitlines():
        m = TIMING.match(line)
        if m and m.group(2) in EXT_STEPS and EXT_STEPS[m.group(2)] not in steps:
            steps[EXT_STEPS[m.group(2)]] = _epoch_ms(m.group(1)) - opened
        if not m or FIRST not in m.group(2):
            continue
        t = _epoch_ms(m.group(1)) - opened
        if m.group(2).startswith("didOpen sending") and "  ext: didOpen sent" not in steps:
            steps["  ext: didOpen sent"] = t
        got = re.search(r": (\d+) item", m.group(2))
        if got and int(got.group(1)) >= 3 and "  ext: both received" not in steps:
            steps["  ext: both received"] = t
    server = (logs / "server.log").read_text(errors="replace") if (logs / "server.log").exists() else ""
    refreshes = []
    for line in server.splitlines():
        m = SERVER_LINE.match(line)
        if not m:
            continue
        t = _epoch_ms(f"{m.group(1).replace(' ', 'T')}.{m.group(2)}", utc=False) - opened
        for said, step in SERVER_STEPS.items():
            if said in m.group(3) and step not in steps:
                steps[step] = t
        if "Notification 'textDocument/didOpen' received" in m.group(3) and "  server: didOpen read" not in steps:
            steps["  server: didOpen read"] = t
        elif "workspace/diagnostic/refresh None" in m.group(3):
            refreshes.append(t)
    both = steps.get("  ext: both received")
    before = [t for t in refreshes if both is not None and t <= both]
    if before:
        steps["  server: refresh sent"] = before[-1]
    steps["  page: both shown"] = data["at"]["on_open"]
    order = [*EXT_STEPS.values(), *SERVER_STEPS.values(), "  ext: didOpen sent", "  server: didOpen read",
             "  server: refresh sent", "  ext: both received", "  page: both shown"]
    order.sort(key=lambda k: steps.get(k, 0))
    return {k: steps[k] for k in order if k in steps}


EDITORS = {"nvim": (nvim, True), "emacs": (emacs, True), "vscode": (vscode, False),
           "vscode-ready": (lambda ruff: vscode(ruff, ready_first=True), False),
           "vscode-trace": (lambda ruff: vscode(ruff, ready_first=True, trace=True), False),
           "vscode-open-trace": (lambda ruff: vscode(ruff, trace=True), False)}


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--editors", default="nvim,emacs,vscode")
    ap.add_argument("--no-ruff", action="store_true", help="time SuperQode only (ruff server's figures change little)")
    ap.add_argument("--baseline", type=Path, help="an older checkout, timed in turn with this one")
    ap.add_argument("--cold", action="store_true",
                    help="a server's first start ever: no code cache of an earlier start (server/codecache.py)")
    args = ap.parse_args()
    global COLD
    COLD = args.cold
    say(f"load {os.getloadavg()[0]:.1f} at start")
    if args.baseline is not None:
        return compare(args.editors.split(","), args.rounds, args.baseline)
    rows = []
    for name in args.editors.split(","):
        run, has_ruff = EDITORS[name]
        for ruff in ([False, True] if has_ruff and not args.no_ruff else [False]):
            server = "ruff server" if ruff else "superqode-ls"
            samples: dict[str, list[float]] = {}
            for n in range(args.rounds):
                say(f"{name} / {server}: round {n + 1} of {args.rounds}")
                for key, ms in run(ruff).items():
                    samples.setdefault(key, []).append(ms)
            for key, values in samples.items():
                rows.append((name, server, key, statistics.median(values), values))
    print(f"{'editor':7} {'server':12} {'step':18} {'median ms':>10}  samples")
    for name, server, key, median, values in rows:
        print(f"{name:7} {server:12} {key:18} {median:10.0f}  {', '.join(f'{v:.0f}' for v in values)}")
    print(f"load {os.getloadavg()[0]:.1f} at the end")
    return 0


def compare(editors: list[str], rounds: int, baseline: Path) -> int:
    """This checkout and ``baseline`` in turn (ABBA...), each round's load kept."""
    folder = Path(tempfile.mkdtemp(prefix="sqe-bench-servers-"))
    sources = {"new": launcher(ROOT, folder), "old": launcher(baseline.resolve(), folder)}
    rows = []
    try:
        for name in editors:
            run, _ = EDITORS[name]
            samples: dict[tuple[str, str], list[tuple[float, float]]] = {}
            for n in range(rounds):
                for which in (("new", "old") if n % 2 == 0 else ("old", "new")):
                    SERVERS["current"] = sources[which]
                    load = os.getloadavg()[0]
                    say(f"{name} / {which}: round {n + 1} of {rounds} (load {load:.1f})")
                    try:
                        got = run(False)
                    except Exception as e:  # noqa: BLE001 - one failed round: said, the others kept
                        say(f"{name} / {which}: round {n + 1} failed: {str(e).strip().splitlines()[-1:]}")
                        continue
                    say(f"{name} / {which}: " + ", ".join(f"{k.strip()} {v:.0f}" for k, v in got.items()))
                    for key, ms in got.items():
                        samples.setdefault((key, which), []).append((ms, load))
            for (key, which), values in samples.items():
                rows.append((name, which, key, statistics.median(v for v, _ in values), values))
    finally:
        SERVERS.pop("current", None)
        shutil.rmtree(folder, ignore_errors=True)
    print(f"{'editor':12} {'code':4} {'step':18} {'median ms':>10}  samples (load)")
    for name, which, key, median, values in sorted(rows, key=lambda r: (r[0], r[2], r[1])):
        print(f"{name:12} {which:4} {key:18} {median:10.0f}  {', '.join(f'{v:.0f} ({load:.1f})' for v, load in values)}")
    print(f"load {os.getloadavg()[0]:.1f} at the end")
    return 0


if __name__ == "__main__":
    sys.exit(main())
