"""``superqe worktree new|list|open|remove|promote|reap``: long-lived branch worktrees.

``new`` and ``open`` print only the worktree's path on stdout (so
``cd "$(superqe worktree new fix/login)"`` works); everything else goes to stderr.
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path
from typing import TYPE_CHECKING

from ..config import load_config
from ..engine import projects
from ..engine import worktrees as br
from . import EXIT_USAGE, UsageError

if TYPE_CHECKING:
    from ..engine.worktrees import WorktreeInfo


def register(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser(
        "worktree", help="long-lived worktrees for your own work",
        description="Isolated git worktrees under $SUPERQODE_HOME/working/<repo>/branches/.",
    )
    # Every worktree error exits 2 (worktrees.md), git's included.
    p.set_defaults(func=lambda a: _usage(p), errors_exit=EXIT_USAGE)
    wsub = p.add_subparsers(dest="worktree_command", metavar="ACTION", parser_class=type(p))

    n = wsub.add_parser("new", help="create a worktree (existing branch, new branch, --task, or detached)")
    n.add_argument("branch", nargs="?", help="branch to check out or create (none: detached exploration)")
    n.add_argument("--task", help="describe the work; the branch name is derived from it")
    n.add_argument("-b", "--new-branch", action="store_true",
                   help="the branch must be new (refuse if it exists)")
    n.add_argument("--from", dest="start", metavar="REF", help="start a new branch here (default: HEAD)")
    n.add_argument("--llm-name", action="store_true",
                   help="with --task: ask the configured provider for the name (falls back to the slug)")
    n.add_argument("-C", dest="cwd", default=".", metavar="DIR", help="repository (default: .)")
    n.add_argument("--json", action="store_true", help="print the record as JSON")
    n.set_defaults(func=cmd_new)

    ls = wsub.add_parser("list", help="worktrees with branch, age and dirty state")
    ls.add_argument("--all", action="store_true", help="of every repository")
    ls.add_argument("-C", dest="cwd", default=".", metavar="DIR")
    ls.add_argument("--json", action="store_true")
    ls.set_defaults(func=cmd_list)

    o = wsub.add_parser("open", help="print a worktree's path (and mark it used)")
    o.add_argument("name", help="folder name, branch or id")
    o.add_argument("-C", dest="cwd", default=".", metavar="DIR")
    o.set_defaults(func=cmd_open)

    r = wsub.add_parser("remove", help="remove a worktree (and the branch SuperQode created)")
    r.add_argument("name")
    r.add_argument("--force", action="store_true",
                   help="remove even with uncommitted work (saved as a patch first)")
    r.add_argument("--delete-branch", action="store_true",
                   help="also delete a created branch that has commits of its own (saved first)")
    r.add_argument("-C", dest="cwd", default=".", metavar="DIR")
    r.set_defaults(func=cmd_remove)

    pr = wsub.add_parser("promote", help="turn a QE session's changes into a branch worktree")
    pr.add_argument("session")
    pr.add_argument("branch")
    pr.add_argument("-C", dest="cwd", default=".", metavar="DIR",
                    help="repository whose saved patches to use when the session has ended")
    pr.set_defaults(func=cmd_promote)

    rp = wsub.add_parser("reap", help="remove idle and orphaned worktrees (work saved as patches)")
    rp.add_argument("--dry-run", action="store_true")
    rp.set_defaults(func=cmd_reap)


def _usage(p: argparse.ArgumentParser) -> int:
    p.print_help(sys.stderr)
    return EXIT_USAGE


def _repo(cwd: str) -> Path:
    p = Path(cwd).expanduser()
    if not p.is_dir():
        raise UsageError(f"{cwd}: no such directory")
    return br.main_repo(p)


def cmd_new(args: argparse.Namespace) -> int:
    repo = _repo(args.cwd)
    namer = None
    if args.llm_name:
        if args.task is None:
            raise UsageError("--llm-name works with --task")
        namer = br.llm_namer(load_config(repo))
        if namer is None:
            print("superqe: no provider configured; naming from the task text", file=sys.stderr)
    rec = br.new_worktree(
        Path(args.cwd), args.branch, task=args.task, new_branch=args.new_branch,
        start=args.start, namer=namer,
    )
    what = {
        "existing": f"checked out branch {rec.branch}",
        "remote": f"new branch {rec.branch} tracking the remote one",
        "new": f"new branch {rec.branch} at {rec.base_commit[:12]}",
        "task": f"new branch {rec.branch} at {rec.base_commit[:12]}",
        "exploration": f"detached at {rec.base_commit[:12]}",
        "promote": f"new branch {rec.branch}",
    }[rec.origin]
    print(f"worktree {rec.name}: {what}", file=sys.stderr)
    if args.json:
        print(rec.model_dump_json(indent=2))
    else:
        print(rec.sandbox)
    return 0


def _ago(seconds: float) -> str:
    s = max(0, int(seconds))
    for unit, size in (("d", 86400), ("h", 3600), ("m", 60)):
        if s >= size:
            return f"{s // size}{unit}"
    return f"{s}s"


def _state(info: WorktreeInfo) -> str:
    if info.orphan:
        return "orphan"
    if not info.exists:
        return "missing"
    if info.dirty is None:
        return "unknown"
    state = f"dirty ({info.dirty})" if info.dirty else "clean"
    return state + (", locked" if info.locked else "")


def cmd_list(args: argparse.Namespace) -> int:
    infos = br.list_worktrees(None if args.all else _repo(args.cwd))
    now = time.time()
    if args.json:
        rows = [
            {
                "name": i.name,
                "branch": i.branch,
                "detached": i.branch is None,
                "path": i.record.sandbox,
                "repo": i.record.repo,
                "created": i.record.created.isoformat(),
                "last_activity": i.last_activity,
                "dirty": i.dirty,
                "state": _state(i),
                "origin": i.record.origin,
            }
            for i in infos
        ]
        print(json.dumps(rows, indent=2))
        return 0
    if not infos:
        print("no worktrees", file=sys.stderr)
        return 0
    table = [("NAME", "BRANCH", "AGE", "IDLE", "STATE", "PATH")]
    for i in infos:
        branch = i.branch or f"(detached {i.record.base_commit[:8]})"
        table.append((
            i.name, branch, _ago(now - i.record.created.timestamp()),
            _ago(now - i.last_activity), _state(i), i.record.sandbox,
        ))
    widths = [max(len(row[c]) for row in table) for c in range(5)]
    for row in table:
        print("  ".join(cell.ljust(widths[c]) for c, cell in enumerate(row[:5])) + "  " + row[5])
    return 0


def cmd_open(args: argparse.Namespace) -> int:
    path = br.open_worktree(_repo(args.cwd), args.name)
    print(path)
    return 0


def cmd_remove(args: argparse.Namespace) -> int:
    res = br.remove_worktree(
        _repo(args.cwd), args.name, force=args.force, delete_branch=args.delete_branch
    )
    for p in res.patches:
        print(f"saved: {p}", file=sys.stderr)
    print(f"removed worktree {res.name}", file=sys.stderr)
    if res.branch_deleted:
        print(f"deleted branch {res.branch} (nothing on it was only there)", file=sys.stderr)
    elif res.branch_kept_reason:
        print(f"kept branch {res.branch}: {res.branch_kept_reason}", file=sys.stderr)
    return 0


def cmd_promote(args: argparse.Namespace) -> int:
    here = Path(args.cwd).expanduser()
    project = projects.repo_root(here) if here.is_dir() else None
    rec = br.promote_session(args.session, args.branch, project=project)
    print(f"worktree {rec.name}: branch {rec.branch} with the changes of {args.session}",
          file=sys.stderr)
    print(rec.sandbox)
    return 0


def cmd_reap(args: argparse.Namespace) -> int:
    results = br.reap(dry_run=args.dry_run)
    for r in results:
        line = f"{r.action}: {r.name} ({r.kind}; {r.reason})"
        if r.patches:
            line += " saved " + ", ".join(str(p) for p in r.patches)
        if r.message:
            line += f"; {r.message}"
        print(line)
    return 1 if any(r.action == "failed" for r in results) else 0
