"""``superqe guard check [--project PATH] -- GIT-COMMAND...``

Prints the git guard's verdict for a git command (or a shell command line that
runs git, given as one quoted argument) under the project's ``qe.git_guard``
settings:

    allowed: <command> (<why>)
    blocked: <reason>
      suggestion: <what to do instead>
      command: <the git invocation>

Exit status: 0 when every git invocation is allowed (or none is found),
1 when any is blocked, 2 on a usage or configuration error.
"""

from __future__ import annotations

import argparse
from pathlib import Path

from ..config import load_config
from ..engine import guard
from . import EXIT_FINDINGS, EXIT_OK, UsageError


def register(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser(
        "guard",
        help="the git guard for sandboxes",
        description="The git guard decides which git commands may run inside a QE sandbox.",
    )
    actions = p.add_subparsers(dest="guard_action", metavar="ACTION", parser_class=type(p))
    c = actions.add_parser(
        "check",
        help="print whether a git command would be allowed in a sandbox",
        description="Print the guard's verdict for GIT-COMMAND. Exit 0 if allowed, "
        "1 if blocked, 2 on a usage or configuration error.",
    )
    c.add_argument(
        "--project",
        type=Path,
        default=None,
        help="project whose superqode.yaml (qe.git_guard) applies (default: .)",
    )
    c.add_argument("command", nargs=argparse.REMAINDER, help="-- GIT-COMMAND [ARG...]")
    c.set_defaults(func=run_check)
    p.set_defaults(func=_needs_action)


def _needs_action(args: argparse.Namespace) -> int:
    raise UsageError("guard needs an action: superqe guard check -- GIT-COMMAND...")


def run_check(args: argparse.Namespace) -> int:
    words = list(args.command)
    if words and words[0] == "--":
        words = words[1:]
    if not words:
        raise UsageError("guard check needs a git command after --")
    project = args.project if args.project is not None else Path.cwd()
    if args.project is not None and not project.is_dir():
        raise UsageError(f"{project}: not a directory")
    cfg = load_config(project).qe.git_guard
    verdicts = guard.check(words, cfg)  # a shell line, or an argv (`-- commit -m x` too)
    if not verdicts:
        print("allowed: no git command found")
        return EXIT_OK
    for v in verdicts:
        if v.allowed:
            print(f"allowed: {v.command} ({v.reason})")
        else:
            print(f"blocked: {v.reason}\n  suggestion: {v.suggestion}\n  command: {v.command}")
    return EXIT_FINDINGS if any(not v.allowed for v in verdicts) else EXIT_OK
