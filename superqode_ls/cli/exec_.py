"""``superqe exec [PATH] [--keep] [--worktree|--snapshot] -- CMD [ARG...]``

Runs any command in a fresh sandbox of PATH, saves what it changed as a patch
artifact, reverts, verifies, and exits with the command's status.
"""

from __future__ import annotations

import argparse
import os
import signal
import subprocess
import sys
from pathlib import Path

from ..config import load_config
from ..errors import SuperQodeError
from ..workspace.artifacts import Artifacts, check_superqode_dir
from ..workspace.errors import WorkspaceError
from ..workspace.git import GitError
from ..workspace.proc import supervise
from ..workspace.pyisolate import isolated_env, source_roots, write_isolation
from ..workspace.session import IsolatedSession, resolve_project
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
    project, _ = resolve_project(Path(args.path))
    config = load_config(project)
    check_superqode_dir(project)
    session = IsolatedSession.create_sync(project, config=config, isolation=args.isolation,
                                          base_ref=args.base_ref, kind="exec")
    old = {s: signal.signal(s, _on_term) for s in (signal.SIGTERM, signal.SIGHUP)}
    status = EXIT_FAILED
    patch_line = "patch: none (no changes)"
    try:
        print(f"session: {session.id}", file=sys.stderr)
        print(f"sandbox: {session.sandbox}", file=sys.stderr)
        try:
            # A Python the command starts (the project's .venv with the
            # project installed editable) imports the sandbox's code, not
            # the user's checkout (pyisolate).
            iso = write_isolation(session.private / "scratch" / "isolation")
            env = isolated_env(session.env(), iso, source_roots(session.sandbox), [project])
            proc = subprocess.Popen(supervise(cmd, env), cwd=session.sandbox, env=env)
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
        try:
            changes = session.changes_sync()
            if not changes.empty:
                arts = Artifacts(project, session.id).prepare()
                path = arts.write_patch("exec", changes.diff,
                                        files=[c.path for c in changes.changes])
                patch_line = f"patch: {path} ({len(changes.changes)} file(s) changed)"
        except (WorkspaceError, GitError, OSError) as e:
            # The sandbox was swapped or removed, the disk is full, the home
            # went read-only: no patch, and still the revert and its verdict.
            why = ("the sandbox was removed during the session"
                   if not os.path.lexists(session.sandbox)
                   else e.message if isinstance(e, SuperQodeError) else str(e))
            patch_line = f"patch: none (the command's changes could not be saved: {why})"
            status = EXIT_FAILED
        print(patch_line, file=sys.stderr)
    finally:
        verification = session.close_sync(keep=args.keep)
        for s, h in old.items():
            signal.signal(s, h)
    if args.keep:
        print(f"kept: {session.sandbox} (superqe revert {session.id} removes it)", file=sys.stderr)
    print(verification.line, file=sys.stderr)
    if not verification.verified:
        return EXIT_FAILED
    return status if status >= 0 else 128 - status

