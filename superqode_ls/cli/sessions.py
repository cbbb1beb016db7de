"""Session management: ``superqe status | revert | recover | clean | artifacts``.

``status [--all] [--json]``         sessions of this project (or of every project)
``revert [--force] [ID]``            remove a session's sandbox (or every finished or
                                     interrupted one of this project) and verify the tree
``recover ID [--resume] [--keep]``   save an interrupted session's changes as
                                     <ID>-recovered.patch and remove it; --resume (or
                                     --keep) saves them and keeps the sandbox for you
``clean [--force] [--older-than D]`` remove sandboxes of every project, our git worktree
                                     registrations and stale locks
``artifacts [-C PATH] list [--json]``          list this project's artifacts
``artifacts [-C PATH] clean [--older-than D]``  prune old artifacts (default 7d)
``artifacts [PATH] [--clean --older-than D]``   the same, older spelling
"""

from __future__ import annotations

import argparse
import json
import os
import re
import sys
import time
from pathlib import Path
from typing import TYPE_CHECKING

from ..config import load_config
from ..engine import projects, protection, recovery, sessions
from ..errors import SuperQodeError
from . import EXIT_FAILED, UsageError

if TYPE_CHECKING:
    from ..engine.sessions import CleanReport, SessionInfo

_DURATION = re.compile(r"^\s*(\d+(?:\.\d+)?)\s*([smhdw])\s*$")
# Counting a dead session's changes hashes its sandbox; do it for this many.
_COUNT_LIMIT = 20
_UNIT_S = {"s": 1, "m": 60, "h": 3600, "d": 86400, "w": 7 * 86400}


def parse_duration(text: str) -> float:
    """``30m``, ``12h``, ``7d`` (also ``s``, ``w``) -> seconds."""
    m = _DURATION.match(text or "")
    if not m:
        raise ValueError(f"invalid duration {text!r}: use a number and a unit, e.g. 30m, 12h, 7d")
    return float(m.group(1)) * _UNIT_S[m.group(2)]


def _duration_arg(text: str) -> float:
    try:
        return parse_duration(text)
    except ValueError as e:
        raise argparse.ArgumentTypeError(str(e)) from None


def register(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("status", help="list sessions and their state",
                       description="List sessions of this project (--all: every project).")
    p.add_argument("--all", action="store_true", help="sessions of every project")
    p.add_argument("--json", action="store_true", help="machine-readable output")
    p.set_defaults(func=cmd_status)

    p = sub.add_parser("revert", help="remove a session's sandbox and verify the project",
                       description="Remove the sandbox of SESSION (default: every finished or "
                                   "interrupted session of this project) and verify the project.")
    p.add_argument("session", nargs="?", help="session id (default: all of this project)")
    p.add_argument("--force", action="store_true",
                   help="also sessions whose owner process is still running")
    p.set_defaults(func=cmd_revert)

    p = sub.add_parser("recover", help="save an interrupted session's changes, or resume it",
                       description="Save SESSION's changes as <ID>-recovered.patch under "
                                   ".superqode/qe-artifacts/patches and remove it; with --resume "
                                   "save them and keep its sandbox to continue working there "
                                   "(the editor's Resume does the same).")
    p.add_argument("session", help="session id (see superqe status)")
    g = p.add_mutually_exclusive_group()
    g.add_argument("--resume", action="store_true",
                   help="save the changes and adopt the sandbox instead of removing it "
                        "(state: kept)")
    g.add_argument("--keep", action="store_true", help="save the patch but keep the sandbox")
    p.set_defaults(func=cmd_recover)

    p = sub.add_parser("clean", help="remove leftover sandboxes of every project",
                       description="Remove sandboxes whose owner is gone, SuperQode's git "
                                   "worktree registrations and stale locks, in every project.")
    p.add_argument("--force", action="store_true",
                   help="also sessions whose owner is running or that are still starting")
    p.add_argument("--older-than", type=_duration_arg, metavar="DURATION",
                   help="only sessions idle for longer than this (30m, 12h, 7d)")
    p.add_argument("--json", action="store_true", help="machine-readable output")
    p.set_defaults(func=cmd_clean)

    p = sub.add_parser("artifacts", help="list or prune session artifacts",
                       usage="superqe artifacts [-C PATH] {list,clean} [PATH] [--json] "
                             "[--older-than DURATION]",
                       description="List artifacts under .superqode/qe-artifacts (list), or "
                                   "remove old ones (clean). `superqe artifacts [PATH] --clean` "
                                   "still works; a folder named list or clean is ./list.")
    p.add_argument("words", nargs="*", metavar="ACTION/PATH",
                   help="list (default) or clean, then the project (default: .)")
    p.add_argument("-C", "--project", default=None, metavar="PATH", help="project folder")
    p.add_argument("--clean", action="store_true", help="same as the clean action")
    p.add_argument("--older-than", type=_duration_arg, default=None, metavar="DURATION",
                   help="age limit for clean (default 7d)")
    p.add_argument("--json", action="store_true", help="machine-readable output (list)")
    p.set_defaults(func=cmd_artifacts)


# -- helpers ----------------------------------------------------------------

def _project(path: str | Path = ".") -> Path:
    return projects.project_root(path)


def _protection(args: argparse.Namespace) -> str:
    """The level here, with this project's network opt-in (not for --all)."""
    config = None
    if not args.all:
        try:
            config = load_config(_project("."))
        except SuperQodeError:
            config = None  # a broken superqode.yaml is said by the commands that use it
    return protection.protection(config).level


def _find(session_id: str) -> SessionInfo:
    return sessions.find(session_id)


def _age(info: SessionInfo, now: float) -> str:
    return sessions.age_text(info.age_s(now))


def _repo_label(info: SessionInfo) -> str:
    if info.repo is None:
        return info.repo_key
    home = os.path.expanduser("~")
    text = str(info.repo)
    return "~" + text[len(home):] if home != "/" and text.startswith(home + os.sep) else text


# -- status -----------------------------------------------------------------

def cmd_status(args: argparse.Namespace) -> int:
    now = time.time()
    found = sessions.list_sessions(None if args.all else _project("."))
    counted = {s.id: sessions.changes_of(s) if i < _COUNT_LIMIT else s.changes
               for i, s in enumerate(found)}
    if args.json:
        print(json.dumps([{**s.to_json(now), "changes": counted[s.id]} for s in found],
                         indent=2))
        return 0
    level = f"protection: {_protection(args)}"
    if not found:
        where = "" if args.all else " for this project (superqe status --all: every project)"
        print(f"no sessions{where}")
        print(level)
        return 0
    rows = [("ID", "REPO", "MODE", "STATE", "AGE", "CHANGES")]
    for s in found:
        rows.append((s.id, _repo_label(s), s.mode, s.state, _age(s, now),
                     "-" if counted[s.id] is None else str(counted[s.id])))
    widths = [max(len(r[i]) for r in rows) for i in range(len(rows[0]))]
    for r in rows:
        print("  ".join(c.ljust(w) for c, w in zip(r, widths)).rstrip())
    print(level)
    interrupted = [s for s in found if s.state == "interrupted"]
    if interrupted:
        print(f"\n{len(interrupted)} interrupted: superqe recover ID saves its changes; "
              "superqe revert ID removes it", file=sys.stderr)
    return 0


# -- revert -----------------------------------------------------------------

def _print_report(report: CleanReport, verb: str) -> None:
    for info in report.removed:
        print(f"{verb} {info.id} ({_repo_label(info)})")
    for info, why in report.skipped:
        print(f"kept {info.id}: {why}", file=sys.stderr)
    for what, err in report.errors:
        print(f"superqe: {what}: {err}", file=sys.stderr)
    for sid, _ok, line in report.verifications:
        print(f"{sid}: {line}")


def cmd_revert(args: argparse.Namespace) -> int:
    if args.session:
        chosen = [_find(args.session)]
    else:
        chosen = sessions.list_sessions(_project("."))
        if not chosen:
            print("no sessions to revert for this project")
            return 0
    if args.session and not args.force:
        why = sessions.removable(chosen[0])
        if why and chosen[0].alive:
            raise UsageError(f"{args.session}: {why}; use --force to revert it anyway")
    report = sessions.revert(chosen, force=args.force)
    _print_report(report, "reverted")
    if report.pruned:
        print(f"removed {len(report.pruned)} git worktree registration(s)")
    if report.errors or any(ok is False for _, ok, _ in report.verifications):
        return EXIT_FAILED
    if args.session and not report.removed:
        return EXIT_FAILED
    return 0


# -- recover ----------------------------------------------------------------

def cmd_recover(args: argparse.Namespace) -> int:
    info = _find(args.session)
    if args.resume:
        result = recovery.resume(info)
    else:
        result = recovery.recover(info, keep=args.keep)
    if result.patch is not None:
        print(f"patch: {result.patch} ({result.files} file(s))")
        print(f"apply it with: git apply {result.patch}")
    else:
        print(f"{info.id}: no changes to recover")
    if args.resume:
        print(f"resumed {info.id}: the sandbox is yours at {info.sandbox}")
        print(f"superqe recover {info.id} saves its changes again; superqe revert {info.id} "
              "removes it")
        return 0
    if result.kept:
        print(f"kept: {info.sandbox}")
        return 0
    print(f"removed {info.id}")
    if result.line:
        print(f"{info.id}: {result.line}")
    return EXIT_FAILED if result.verified is False else 0


# -- clean ------------------------------------------------------------------

def cmd_clean(args: argparse.Namespace) -> int:
    result = sessions.clean(force=args.force, older_than_s=args.older_than)
    report, gone, warm = result.sessions, result.repo_dirs, result.warm
    if result.unstuck:
        print(f"cleared the immutable/append-only flag of {result.unstuck} of SuperQode's own "
              "file(s) (set by a session)", file=sys.stderr)
    if args.json:
        print(json.dumps({
            "removed": [s.id for s in report.removed],
            "skipped": [{"id": s.id, "reason": why} for s, why in report.skipped],
            "errors": [{"what": w, "error": e} for w, e in report.errors],
            "worktree_registrations_removed": report.pruned,
            "stale_locks_cleared": report.locks_cleared,
            "repo_dirs_removed": gone,
            "warm_sandboxes_removed": warm,
        }, indent=2))
    else:
        _print_report(report, "removed")
        print(f"removed {len(report.removed)} session(s) with their sandboxes and git worktree "
              f"registrations; cleared {len(report.pruned)} left-over registration(s) and "
              f"{report.locks_cleared} stale lock(s)"
              + (f"; removed {len(gone)} folder(s) of deleted projects" if gone else "")
              + (f"; removed {warm} warm sandbox(es)" if warm else ""))
        running = [s for s, why in report.skipped if s.alive]
        if running and not args.force:
            print(f"{len(running)} running session(s) left alone (--force removes them too)",
                  file=sys.stderr)
    return EXIT_FAILED if report.errors else 0


# -- artifacts --------------------------------------------------------------

_ARTIFACT_ACTIONS = ("list", "clean")


def _artifacts_action(args: argparse.Namespace) -> tuple[str, str]:
    """(action, path) from ``artifacts [ACTION] [PATH]``, ``-C`` and ``--clean``.
    A first word naming an action is the action: `superqe artifacts list`
    read ``list`` as a folder before there were actions."""
    words = list(args.words)
    action = None
    if words and words[0] in _ARTIFACT_ACTIONS:
        action = words.pop(0)
    if len(words) > 1 or (words and args.project is not None):
        raise UsageError(f"artifacts: one project only (got {' '.join(args.words)})")
    if args.clean:
        if action == "list":
            raise UsageError("artifacts list does not take --clean (use: artifacts clean)")
        action = "clean"
    action = action or "list"
    if args.older_than is not None and action != "clean":
        raise UsageError("--older-than goes with --clean (or: artifacts clean --older-than D)")
    if args.json and action != "list":
        raise UsageError("--json goes with artifacts list")
    return action, (words[0] if words else args.project or ".")


def cmd_artifacts(args: argparse.Namespace) -> int:
    action, path = _artifacts_action(args)
    project = Path(path).expanduser()
    if not project.is_dir():
        raise UsageError(f"{path}: no such directory")
    project = _project(project)
    if action == "clean":
        limit = args.older_than if args.older_than is not None else parse_duration("7d")
        warnings: list[str] = []
        removed = projects.clean_artifacts(project, limit, warnings=warnings)
        for line in warnings:
            print(f"superqe: warning: {line}", file=sys.stderr)
        for rel in removed:
            print(f"removed {rel}")
        print(f"removed {len(removed)} artifact(s) older than {sessions.age_text(limit)}")
        return 0
    warnings = []
    entries = projects.artifacts(project, warnings)
    for line in warnings:
        print(f"superqe: warning: {line}", file=sys.stderr)
    if args.json:
        print(json.dumps({"project": str(project), "artifacts": entries}, indent=2))
        return 0
    if not entries:
        print("no artifacts")
        return 0
    for e in entries:
        print(f"{e.get('created', '?')[:19]}  {e.get('session_id', '?')}  {e.get('kind', '?'):<14}"
              f"  {e.get('path', '?')}")
    return 0
