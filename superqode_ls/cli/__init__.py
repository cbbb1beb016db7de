"""``superqe``: parses, calls the engine, prints. Exit codes: 0 ok; 1 findings
at/above --fail-on; 2 usage or configuration error; 3 session failed."""

from __future__ import annotations

import argparse
import importlib
import sys

from ..config import ConfigError
from ..workspace.errors import WorkspaceError
from ..workspace.git import GitError

# Each module defines register(subparsers); handlers return the exit code.
COMMAND_MODULES = (
    "run",
    "exec_",
    "sessions",
    "guard",
    "suggestions",
    "worktree",
)

EXIT_OK, EXIT_FINDINGS, EXIT_USAGE, EXIT_FAILED = 0, 1, 2, 3


class UsageError(Exception):
    """One-line user error: printed as ``superqe: <message>``, exit 2."""


class _Parser(argparse.ArgumentParser):
    def error(self, message: str) -> None:  # one clear line, exit 2
        self.exit(EXIT_USAGE, f"superqe: {message}\n")


def build_parser() -> argparse.ArgumentParser:
    parser = _Parser(prog="superqe", description="Quality-engineering sessions in sandboxes.")
    from .. import __version__

    parser.add_argument("--version", action="version", version=f"superqe {__version__}")
    sub = parser.add_subparsers(dest="command", metavar="COMMAND", parser_class=_Parser)
    for name in COMMAND_MODULES:
        try:
            module = importlib.import_module(f"{__name__}.{name}")
        except ModuleNotFoundError as e:
            if e.name == f"{__name__}.{name}":
                continue
            raise
        module.register(sub)
    return parser


def main(argv: list[str] | None = None) -> int:
    parser = build_parser()
    argv = list(sys.argv[1:] if argv is None else argv)
    after: list[str] | None = None
    if argv[:1] == ["exec"] and "--" in argv:
        # The command after ``--`` is not superqe's to parse: argparse would
        # take its first word for PATH (``superqe exec -- sh -c ...``).
        cut = argv.index("--")
        argv, after = argv[:cut], argv[cut:]
    args = parser.parse_args(argv)
    if after is not None:
        args.cmd = [*getattr(args, "cmd", []), *after]
    if not getattr(args, "func", None):
        parser.print_help(sys.stderr)
        return EXIT_USAGE
    try:
        if args.command in ("run", "exec"):
            from ..workspace.paths import check_home

            try:
                check_home()
            except WorkspaceError as e:
                raise UsageError(str(e)) from None
            _reap_quietly()
        return int(args.func(args) or 0)
    except (UsageError, ConfigError, WorkspaceError) as e:
        print(f"superqe: {e}", file=sys.stderr)
        return EXIT_USAGE
    except GitError as e:  # git refused something the session needed: it did not run
        print(f"superqe: {e}", file=sys.stderr)
        return EXIT_FAILED
    except KeyboardInterrupt:
        print("superqe: interrupted", file=sys.stderr)
        return 130


def _reap_quietly() -> None:
    """Sandboxes idle past workspace.cleanup_after_hours and orphans go at start
    (at most hourly, one process at a time); a failure here stops nothing."""
    try:
        from ..config import load_config
        from ..workspace.reaper import maybe_reap

        maybe_reap(load_config(None))
    except ConfigError:
        return  # the command loads the same file and says what is wrong, once
    except Exception as e:  # noqa: BLE001
        print(f"superqe: reaper skipped: {e}", file=sys.stderr)


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
