"""``superqe exec [PATH] [--keep] [--worktree|--snapshot] -- CMD [ARG...]``

Runs any command in a fresh sandbox of PATH, saves what it changed as a patch
artifact, reverts, verifies, and exits with the command's status.
"""

from __future__ import annotations

import argparse
import signal
import subprocess
import sys
from pathlib import Path

from ..engine.exec_ import open_sandbox
from . import EXIT_FAILED, UsageError


def register(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("exec", help="run a command in a sandbox of PATH",
                       description="Run CMD in a fresh sandbox; save its changes as a patch; "
                                   "revert and verify.")
    p.add_argument("path", nargs="?", default=".", help="project (default: .)")
    _add_options(p)
    p.add_argument("cmd", nargs=argparse.REMAINDER, help="-- CMD [ARG...]")
    p.set_defaults(func=run_exec)


def _add_options(p: argparse.ArgumentParser) -> None:
    p.add_argument("--keep", action="store_true", help="keep the sandbox after the command")
    iso = p.add_mutually_exclusive_group()
    iso.add_argument("--worktree", dest="isolation", action="store_const", const="worktree")
    iso.add_argument("--snapshot", dest="isolation", action="store_const", const="snapshot")
    p.add_argument("--base-ref", help="sandbox at this commit, without the uncommitted state")


def _split_command(args: argparse.Namespace) -> list[str]:
    """The command after ``--``. Options written after PATH land in the
    remainder (argparse stops at the positional): parse them here rather than
    run ``--worktree`` as a program."""
    tokens = list(args.cmd)
    if not tokens or not tokens[0].startswith("-"):
        return tokens  # a command given without ``--``
    if "--" in tokens:
        cut = tokens.index("--")
        leading, cmd = tokens[:cut], tokens[cut + 1:]
    else:
        leading, cmd = tokens, []
    if leading:
        from . import _Parser

        late = _Parser(prog="superqe exec", add_help=False)
        _add_options(late)
        given = late.parse_args(leading)
        if given.isolation and args.isolation and given.isolation != args.isolation:
            raise UsageError("--worktree and --snapshot exclude each other")
        args.keep = args.keep or given.keep
        args.isolation = given.isolation or args.isolation
        args.base_ref = given.base_ref or args.base_ref
    return cmd


class _Terminated(Exception):
    pass


def _on_term(signum, frame):  # SIGTERM/SIGHUP: leave through the revert path
    raise _Terminated()


def run_exec(args: argparse.Namespace) -> int:
    cmd = _split_command(args)
    if not cmd:
        raise UsageError("exec needs a command after --")
    box = open_sandbox(Path(args.path), isolation=args.isolation, base_ref=args.base_ref)
    old = {s: signal.signal(s, _on_term) for s in (signal.SIGTERM, signal.SIGHUP)}
    status = EXIT_FAILED
    try:
        print(f"session: {box.id}", file=sys.stderr)
        print(f"sandbox: {box.sandbox}", file=sys.stderr)
        try:
            argv, env = box.command(cmd)
            proc = subprocess.Popen(argv, cwd=box.sandbox, env=env)
        except OSError as e:
            print(f"superqe: cannot run {cmd[0]}: {e.strerror}", file=sys.stderr)
            status = 127
        else:
            try:
                status = proc.wait()
            except (KeyboardInterrupt, _Terminated):
                proc.terminate()
                try:
                    proc.wait(5)
                except subprocess.TimeoutExpired:
                    proc.kill()
                    proc.wait()
                status = 130
        patch_line, saved = box.save_changes()
        if not saved:
            status = EXIT_FAILED
        print(patch_line, file=sys.stderr)
    finally:
        verification = box.close(keep=args.keep)
        for s, h in old.items():
            signal.signal(s, h)
    if args.keep:
        print(f"kept: {box.sandbox} (superqe revert {box.id} removes it)", file=sys.stderr)
    print(verification.line, file=sys.stderr)
    if not verification.verified:
        return EXIT_FAILED
    return status if status >= 0 else 128 - status

