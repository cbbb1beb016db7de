"""``superqe suggestions list | show ID | apply ID``: the fixes QE sessions
suggested, read from the Quality Reports under
``<project>/.superqode/qe-artifacts/qr/`` (newest first).

``apply`` is the one write to the user's files that SuperQode makes, and only
on this explicit request. ``apply ID...`` and ``apply --all`` (every verified
or tool-verified fix of the newest report that ruff does not call unsafe) take
the fixes that go together and refuse each other one with a line saying why
(``qe/applying.py``): a fix lands on all its files or none, each file is
written atomically, and a file that changed meanwhile stops the whole write.
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path

from ..engine import suggestions as fixes
from ..engine.suggestions import (  # the API's names, used by this module's callers too
    Suggestion,
    check_sealed,
    find_project,
    lookup,
    suggestions,
)
from ..models import Finding
from . import EXIT_FINDINGS, EXIT_OK, UsageError


def register(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("suggestions", help="list, show or apply suggested fixes",
                       description="Fixes suggested by QE sessions (newest report first).")
    p.add_argument("-C", "--project", default=".", metavar="PATH",
                   help="project folder (default: the current folder or the nearest above it "
                        "with QE artifacts)")
    actions = p.add_subparsers(dest="action", metavar="ACTION", parser_class=type(p))
    def action(name: str, help: str) -> argparse.ArgumentParser:
        a = actions.add_parser(name, help=help)
        # -C is accepted after the action too; SUPPRESS keeps the one given before.
        a.add_argument("-C", "--project", default=argparse.SUPPRESS, metavar="PATH",
                       help="project folder")
        return a

    a = action("list", "fixes from the newest report")
    a.add_argument("--all", action="store_true", help="fixes from every stored report")
    a.add_argument("--json", action="store_true", help="machine-readable output")
    a.set_defaults(func=cmd_list)
    a = action("show", "a fix's diff and what it fixes")
    a.add_argument("id", help="fix id (or a unique prefix, or the id of a finding it fixes)")
    a.set_defaults(func=cmd_show)
    a = action("apply", "apply fixes to the project (checked first)")
    a.add_argument("id", nargs="*", help="fix id (or a unique prefix, or the id of a finding it fixes)")
    a.add_argument("--all", action="store_true",
                   help="every verified or tool-verified fix of the newest report (not those ruff "
                        "calls unsafe, nor suppressions)")
    a.add_argument("--unsafe", action="store_true",
                   help="with --all: also the fixes ruff calls unsafe (they may change what the code does)")
    a.add_argument("--dry-run", action="store_true", help="only check that they apply")
    a.set_defaults(func=cmd_apply)
    p.set_defaults(func=lambda args: _no_action(p))


def _no_action(p: argparse.ArgumentParser) -> int:
    raise UsageError("suggestions needs an action: list, show ID or apply ID")


def _where(f: Finding) -> str:
    return f"{f.file}:{f.range.start_line}" if f.file and f.range else (f.file or "-")


def cmd_list(args: argparse.Namespace) -> int:
    project = find_project(Path(args.project))
    items = suggestions(project, newest_only=not args.all)
    if args.json:
        print(json.dumps([
            {"id": s.patch.id, "session_id": s.session_id, "description": s.patch.description,
             "files": s.patch.files, "verified": s.patch.verified, "label": s.patch.label,
             "findings": [f.id for f in s.findings]}
            for s in items
        ], indent=2))
        return EXIT_OK
    if not items:
        print("no suggested fixes")
        return EXIT_OK
    for s in items:
        mark = s.patch.label
        where = ", ".join(_where(f) for f in s.findings) or ", ".join(s.patch.files)
        print(f"{s.patch.id}  [{mark}]  {where}  {s.patch.description}")
    return EXIT_OK


def cmd_show(args: argparse.Namespace) -> int:
    project = find_project(Path(args.project))
    s = lookup(project, args.id)
    print(f"fix {s.patch.id} (session {s.session_id})")
    print(f"  {s.patch.description}")
    for f in s.findings:
        print(f"  fixes {f.id}: {_where(f)} {f.severity.value} {f.rule_id} {f.title}")
    print(f"  {s.patch.verification or ('verified' if s.patch.verified else 'not verified')}")
    print()
    print(s.patch.diff, end="" if s.patch.diff.endswith("\n") else "\n")
    return EXIT_OK


def _is_unsafe(s: Suggestion) -> bool:
    return any(t in ("fix:unsafe", "fix:display-only") for f in s.findings for t in f.tags)


def _chosen(project: Path, args: argparse.Namespace) -> tuple[list[Suggestion], list[str]]:
    """The suggestions to apply, and a line for what ``--all`` left out."""
    if args.all and args.id:
        raise UsageError("apply takes fix ids or --all, not both")
    if not args.all:
        if not args.id:
            raise UsageError("apply needs a fix id (or several) or --all")
        if args.unsafe:
            raise UsageError("--unsafe goes with --all (a fix named by its id is applied as asked)")
        return [lookup(project, i) for i in args.id], []
    every = [s for s in suggestions(project, newest_only=True) if s.patch.kind == "fix"]
    unverified = [s for s in every if s.patch.verified_by is None and not _is_unsafe(s)]
    unsafe = [s for s in every if _is_unsafe(s)]
    take = [s for s in every if s.patch.verified_by is not None and not _is_unsafe(s)]
    if args.unsafe:
        take += unsafe
    take.sort(key=lambda s: (-max((f.severity.rank for f in s.findings), default=0),
                             s.patch.files[0] if s.patch.files else "", _line(s)))
    left = []
    if unverified:
        left.append(f"{len(unverified)} not verified")
    if unsafe and not args.unsafe:
        left.append(f"{len(unsafe)} unsafe (--unsafe to include)")
    return take, ([f"left out: {', '.join(left)}; name a fix's id to apply it"] if left else [])


def _line(s: Suggestion) -> int:
    return min((f.range.start_line for f in s.findings if f.range), default=0)


def cmd_apply(args: argparse.Namespace) -> int:
    import sys

    project = find_project(Path(args.project))
    chosen, notes = _chosen(project, args)
    for s in chosen:
        check_sealed(project, s)  # every one, before any is applied
    if not chosen:
        print("no fixes to apply" + (f" ({notes[0]})" if notes else ""))
        return EXIT_OK
    session_of = {s.patch.id: s.session_id for s in chosen}
    out = fixes.apply(project, chosen, dry_run=args.dry_run)
    for pid, why in out.refused:
        print(f"superqe: not applied: {pid}: {why} (session {session_of.get(pid, '?')}; "
              "run `superqe run` again for a fresh fix)", file=sys.stderr)
    for pid in out.already:
        print(f"{pid} is in the code already")
    files = ", ".join(out.files)
    if out.applied:
        what = out.applied[0] if len(out.applied) == 1 else f"{len(out.applied)} fixes"
        print(f"{what} applies cleanly to {files}" if args.dry_run else f"applied {what} to {files}")
    for line in notes:
        print(line)
    return EXIT_FINDINGS if out.refused else EXIT_OK
