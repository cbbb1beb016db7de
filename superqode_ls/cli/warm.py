"""``superqe warm start|stop|status``: the per-user warm helper
(warm_server), which lets ``superqe run`` (exec, roles, status, merge) skip
the interpreter's start-up and imports. Exit codes: 0 done (``status``: it
is up); 1 ``status``: it is not up; 2 usage, or it could not start."""

from __future__ import annotations

import argparse
import os
import select
import subprocess
import sys
import time

from . import EXIT_FINDINGS, EXIT_OK, UsageError, positive
from . import warm_client as wc

START_TIMEOUT_S = 120.0  # the imports, on a loaded machine
STOP_WAIT_S = 10.0


def register(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser(
        "warm", help="start, stop or show the warm helper (faster superqe run)",
        description="A per-user helper with SuperQode loaded: superqe run, exec, roles, status "
                    "and merge hand their work to it while it is up (docs/cli.md).")
    verbs = p.add_subparsers(dest="verb", metavar="VERB", required=True)
    start = verbs.add_parser("start", help="start the helper (nothing if it is up)")
    start.add_argument("--idle", type=positive("minutes"), default=15.0, metavar="MINUTES",
                       help="exit after this many minutes without a command (default 15)")
    start.set_defaults(func=cmd_start)
    verbs.add_parser("stop", help="stop the helper (runs under way finish)").set_defaults(
        func=cmd_stop)
    verbs.add_parser("status", help="is it up, since when, how many runs").set_defaults(
        func=cmd_status)


def ask(msg: dict) -> dict | None:
    """The helper's answer to ``msg``, or None when none is up."""
    try:
        sock = wc.connect(timeout=STOP_WAIT_S)
    except wc.WarmError:
        return None
    with sock:
        try:
            wc.send(sock, msg)
            return wc.receive(sock)
        except (OSError, ValueError):
            return None


def cmd_start(args: argparse.Namespace) -> int:
    state = ask({"ping": True})
    if state and state.get("ok"):
        print(f"warm helper already up (pid {state['pid']})")
        return EXIT_OK
    r, w = os.pipe()
    try:
        # Its own session: it outlives this command and its terminal.
        subprocess.Popen(
            [sys.executable, "-m", "superqode_ls.cli.warm_server",
             "--idle", str(args.idle * 60), "--ready-fd", str(w)],
            stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
            pass_fds=(w,), start_new_session=True, close_fds=True)
    finally:
        os.close(w)
    with os.fdopen(r, "rb") as ready:
        if not select.select([ready], [], [], START_TIMEOUT_S)[0]:
            raise UsageError("the warm helper did not start in time")
        line = ready.readline().decode(errors="replace").strip()
    if not line.startswith("ok "):
        raise UsageError(f"the warm helper did not start: {line.removeprefix('error: ') or 'it ended'}")
    print(f"warm helper up (pid {line.split()[1]}, exits after {args.idle:g} min idle): "
          f"{wc.folder()}")
    return EXIT_OK


def cmd_stop(_args: argparse.Namespace) -> int:
    answer = ask({"stop": True})
    if not answer or not answer.get("ok"):
        why = (answer or {}).get("why")
        print(f"warm helper not stopped: {why}" if why else "no warm helper up")
        return EXIT_OK if not why else EXIT_FINDINGS
    pid = int(answer["pid"])
    try:
        pidfd = os.pidfd_open(pid)
    except ProcessLookupError:
        print("warm helper stopped")
        return EXIT_OK
    try:
        ended = select.select([pidfd], [], [], STOP_WAIT_S)[0]
    finally:
        os.close(pidfd)
    print("warm helper stopped" if ended else
          f"warm helper (pid {pid}) stopping: it ends when its runs under way end")
    return EXIT_OK


def cmd_status(_args: argparse.Namespace) -> int:
    state = ask({"ping": True})
    if not state or not state.get("ok"):
        why = (state or {}).get("why")
        print(f"warm helper refused this process: {why}" if why else "no warm helper up")
        return EXIT_FINDINGS
    since = time.strftime("%Y-%m-%d %H:%M:%S", time.localtime(state["since"]))
    print(f"warm helper up: pid {state['pid']}, since {since}, {state['runs']} run(s) served, "
          f"{state['running']} running, exits after {state['idle_left_s'] / 60:.1f} more min idle")
    return EXIT_OK
