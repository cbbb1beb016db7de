"""``superqe suggestions list | show ID | apply ID``: the fixes QE sessions
suggested, read from the Quality Reports under
``<project>/.superqode/qe-artifacts/qr/`` (newest first).

``apply`` is the one write to the user's files that SuperQode makes, and only
on this explicit request: it checks first (``git apply --check``; git works as a
plain patch tool outside a repository) and refuses with the reason when the
code has moved on since the session, so nothing is ever half-applied.
"""

from __future__ import annotations

import argparse
import asyncio
import json
from dataclasses import dataclass
from pathlib import Path

from ..errors import SuperQodeError
from ..models import Finding, Patch, QualityReport
from ..workspace import ownfolder, patchseal
from ..workspace.artifacts import read_artifact
from ..workspace.paths import ARTIFACTS_DIR
from . import EXIT_FINDINGS, EXIT_OK, UsageError


class PatchNotSealed(SuperQodeError):
    """The patch is not the one SuperQode stored (changed, or never its own)."""

    exit_code = 2


@dataclass
class Suggestion:
    patch: Patch
    findings: list[Finding]
    session_id: str
    report_path: Path


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
    a = action("apply", "apply a fix to the project (checked first)")
    a.add_argument("id", help="fix id (or a unique prefix, or the id of a finding it fixes)")
    a.add_argument("--dry-run", action="store_true", help="only check that it applies")
    a.set_defaults(func=cmd_apply)
    p.set_defaults(func=lambda args: _no_action(p))


def _no_action(p: argparse.ArgumentParser) -> int:
    raise UsageError("suggestions needs an action: list, show ID or apply ID")


def find_project(start: Path) -> Path:
    start = start.expanduser()
    if not start.is_dir():
        raise UsageError(f"not a folder: {start}")
    start = start.resolve()
    for folder in (start, *start.parents):
        if report_names(folder):
            return folder
    raise UsageError(f"no QE reports found in {start} or above it (run `superqe run` first)")


def report_names(project: Path) -> list[str]:
    """Report JSON file names, newest first (names sort by date and session
    id), listed without following a link the project planted."""
    try:
        with ownfolder.folder(project, (*ARTIFACTS_DIR.parts, "qr")) as fd:
            names = ownfolder.names_at(fd) if fd is not None else []
    except OSError:
        return []
    names = [n for n in names if n.startswith("qr-") and n.endswith(".json")]
    return sorted(names, key=lambda n: n.split("-", 2)[-1], reverse=True)


def load_reports(project: Path, newest_only: bool) -> list[tuple[Path, QualityReport]]:
    out = []
    root = project / ARTIFACTS_DIR
    for name in report_names(project):
        raw = read_artifact(root, f"qr/{name}")
        try:
            report = QualityReport.model_validate_json(raw or b"")
        except ValueError:
            continue  # a half-written or foreign file is not a reason to fail
        out.append((root / "qr" / name, report))
        if newest_only:
            break
    return out


def suggestions(project: Path, newest_only: bool = False) -> list[Suggestion]:
    seen: set[str] = set()
    out: list[Suggestion] = []
    for path, report in load_reports(project, newest_only):
        for patch in report.patches:
            if patch.id in seen:
                continue
            seen.add(patch.id)
            fixes = [f for f in report.findings if f.fix_patch_id == patch.id or f.id in patch.finding_ids]
            out.append(Suggestion(patch, fixes, report.session_id, path))
    return out


def lookup(project: Path, ident: str) -> Suggestion:
    every = suggestions(project)
    exact = [s for s in every if s.patch.id == ident]
    if exact:
        return exact[0]
    by_finding = [s for s in every if any(f.id == ident for f in s.findings)]
    if by_finding:
        return by_finding[0]
    prefixed = {s.patch.id: s for s in every if s.patch.id.startswith(ident)}
    if len(prefixed) == 1:
        return next(iter(prefixed.values()))
    if len(prefixed) > 1:
        raise UsageError(f"{ident!r} is ambiguous: {', '.join(sorted(prefixed)[:5])}")
    raise UsageError(f"no suggestion {ident!r} (see `superqe suggestions list --all`)")


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


def check_sealed(project: Path, s: Suggestion) -> None:
    """Refuse (one line, nothing changed) a patch whose bytes are not the ones
    its session wrote: the reports live in the project, which anything may
    rewrite; the seal lives in $SUPERQODE_HOME. Every way of applying a
    suggestion goes through here."""
    why = patchseal.check(project, s.session_id, s.patch.id, s.patch.diff)
    if why is not None:
        raise PatchNotSealed(f"not applied: {why}")


def cmd_apply(args: argparse.Namespace) -> int:
    from ..qe.verifier import git_apply

    project = find_project(Path(args.project))
    s = lookup(project, args.id)
    check_sealed(project, s)
    ok, err = asyncio.run(git_apply(project, s.patch.diff, check_only=True))
    if not ok:
        import sys

        print(
            f"superqe: not applied: {s.patch.id} no longer fits the code (it changed since session "
            f"{s.session_id}): {err or 'patch does not apply'}; run `superqe run` again",
            file=sys.stderr,
        )
        return EXIT_FINDINGS
    if args.dry_run:
        print(f"{s.patch.id} applies cleanly to {', '.join(s.patch.files)}")
        return EXIT_OK
    ok, err = asyncio.run(git_apply(project, s.patch.diff))
    if not ok:  # checked a moment ago: the files changed in between
        raise UsageError(f"not applied: {err}")
    print(f"applied {s.patch.id} to {', '.join(s.patch.files)}")
    return EXIT_OK
