"""``superqe``: parses, calls the engine, prints. Exit codes: 0 ok; 1 findings
at/above --fail-on; 2 usage or configuration error; 3 session failed (or a
role crashed).

A reader that goes away (``superqe run . | head -1``) ends nothing: the rest
of the output goes to /dev/null and the command ends with its own exit code
(Python's "Note on SIGPIPE"). Log records of the package (a crashed role's
traceback) go to ``$SUPERQODE_HOME/logs/superqe.log``, not to the terminal.

Errors follow the package's one model (``superqode_ls.errors``): a handler
raises, ``main`` prints the one line and returns the error's exit code. No
command translates errors itself."""

from __future__ import annotations

import argparse
import importlib
import logging
import os
import sys

from ..errors import (
    EXIT_FAILED,
    EXIT_FINDINGS,
    EXIT_INTERRUPTED,
    EXIT_OK,
    EXIT_USAGE,
    SuperQodeError,
    UsageError,
)

# Each module defines register(subparsers); handlers return the exit code.
COMMAND_MODULES = (
    "run",
    "merge",
    "exec_",
    "sessions",
    "guard",
    "suggestions",
    "worktree",
    "warm",
)
# The module that registers each command: a command line naming one imports
# that module alone (``superqe run`` does not pay for exec's, the worktree
# commands' or the guard's imports). tests/test_cli_lazy.py keeps it in step
# with what the modules register.
COMMAND_MODULE = {
    "run": "run", "roles": "run", "merge": "merge", "exec": "exec_",
    "status": "sessions", "revert": "sessions", "recover": "sessions", "clean": "sessions",
    "artifacts": "sessions", "guard": "guard", "suggestions": "suggestions",
    "worktree": "worktree", "warm": "warm",
}

__all__ = [
    "EXIT_FAILED",
    "EXIT_FINDINGS",
    "EXIT_OK",
    "EXIT_USAGE",
    "UsageError",
    "build_parser",
    "error_exit",
    "main",
]


class _Parser(argparse.ArgumentParser):
    def error(self, message: str) -> None:  # one clear line, exit 2
        self.exit(EXIT_USAGE, f"superqe: {message}\n")


def build_parser(command: str | None = None) -> argparse.ArgumentParser:
    """All commands; with ``command`` (the first word of the command line)
    only its module's, when it names one (help and errors still list all)."""
    parser = _Parser(prog="superqe", description="Quality-engineering sessions in sandboxes.")
    from .. import __version__

    parser.add_argument("--version", action="version", version=f"superqe {__version__}")
    # A command group whose every error exits 2 (``worktree``: worktrees.md)
    # sets this to EXIT_USAGE; None keeps each error's own code.
    parser.set_defaults(errors_exit=None)
    sub = parser.add_subparsers(dest="command", metavar="COMMAND", parser_class=_Parser)
    only = COMMAND_MODULE.get(command or "")
    for name in (only,) if only else COMMAND_MODULES:
        importlib.import_module(f"{__name__}.{name}").register(sub)
    return parser


def positive(unit: str):
    """An argparse type: a number of ``unit`` above 0 (``--timeout``, ``--idle``)."""

    def parse(text: str) -> float:
        try:
            value = float(text)
        except ValueError:
            raise argparse.ArgumentTypeError(f"not a number of {unit}: {text!r}") from None
        if not value > 0:
            raise argparse.ArgumentTypeError(f"must be more than 0 {unit} (got {text})")
        return value

    return parse


class QuietPipe:
    """``sys.stdout`` while a command runs: when the reader has gone
    (BrokenPipeError), the stream is pointed at /dev/null and every later
    write is dropped, so the command finishes (a run still reverts, writes
    its report and returns its exit code) and nothing complains at exit."""

    def __init__(self, stream):
        self._stream = stream
        self.gone = False

    def write(self, text: str) -> int:
        if not self.gone:
            try:
                return self._stream.write(text)
            except BrokenPipeError:
                self._to_devnull()
        return len(text)

    def flush(self) -> None:
        if not self.gone:
            try:
                self._stream.flush()
            except BrokenPipeError:
                self._to_devnull()

    def _to_devnull(self) -> None:
        self.gone = True
        try:
            fd = self._stream.fileno()
        except (OSError, ValueError, AttributeError):
            return  # not a file (a test's capture): dropping the writes is enough
        devnull = os.open(os.devnull, os.O_WRONLY)
        try:
            # What the stream still buffers is flushed there at exit.
            os.dup2(devnull, fd)
        finally:
            os.close(devnull)

    def __getattr__(self, name: str):
        return getattr(self._stream, name)


def log_file() -> str:
    # Imported here: config brings pydantic, which a hand-off to the warm
    # helper (main) never needs.
    from ..config import superqode_home

    return str(superqode_home() / "logs" / "superqe.log")


class _HomeLog(logging.Handler):
    """Appends each record to ``log_file()`` as it is when the record comes:
    nothing is created until something is logged (a run that logs nothing
    leaves no folder in SuperQode's home), and a process that changes
    SUPERQODE_HOME (tests, embedders) logs to the new one."""

    _superqe = True

    def emit(self, record: logging.LogRecord) -> None:
        try:
            path = log_file()
            os.makedirs(os.path.dirname(path), exist_ok=True)
            with open(path, "a", encoding="utf-8") as fh:
                fh.write(self.format(record) + "\n")
        except Exception:  # noqa: BLE001, S110 - a log that cannot be written
            pass  # (a read-only or full home) must not break the run or print


def _log_to_file() -> None:
    """The package's log records go to a file: with no handler at all,
    Python prints warnings and tracebacks (a crashed role's) on stderr, in
    the middle of the user's output. Once per process."""
    logger = logging.getLogger("superqode_ls")
    if any(getattr(h, "_superqe", False) for h in logger.handlers):
        return
    handler = _HomeLog()
    handler.setFormatter(logging.Formatter("%(asctime)s %(name)s %(levelname)s %(message)s"))
    logger.addHandler(handler)


def main(argv: list[str] | None = None) -> int:
    """The ``superqe`` command. Without ``argv`` it is the process's entry
    point (the console script, ``python -m superqode_ls``) and ends the
    process itself (ending.py); with it, it returns the exit code."""
    code = _command(argv)
    if argv is None:
        from .ending import end_process

        end_process(code)
    return code


def _command(argv: list[str] | None) -> int:
    # A warm helper that is up runs the command (same code, same output);
    # None: it is not up or may not be used, and the command runs here.
    from .warm_client import handoff

    code = handoff(list(sys.argv[1:] if argv is None else argv))
    if code is not None:
        return code
    stdout = sys.stdout
    quiet = sys.stdout = QuietPipe(stdout)
    try:
        return _main(argv)
    except BrokenPipeError:
        # Written past the wrapper (a stream taken before it was put in):
        # the same ending, without the command's own code.
        quiet._to_devnull()
        return EXIT_FAILED
    finally:
        if sys.stdout is quiet:
            sys.stdout = stdout


def _main(argv: list[str] | None) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    parser = build_parser(argv[0] if argv else None)
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
            from ..engine.projects import check_home

            check_home()
            _log_to_file()
            _reap_quietly()
        return int(args.func(args) or 0)
    except SuperQodeError as e:
        return error_exit(e, args.errors_exit)
    except KeyboardInterrupt:
        print("superqe: interrupted", file=sys.stderr)
        return EXIT_INTERRUPTED


def error_exit(e: SuperQodeError, override: int | None = None) -> int:
    """The one place an error becomes what the user sees: its line on stderr
    and its exit code (or the command group's ``override``)."""
    print(e.cli_line(), file=sys.stderr)
    return e.exit_code if override is None else override


def _reap_quietly() -> None:
    """Sandboxes idle past workspace.cleanup_after_hours and orphans go at start
    (at most hourly, one process at a time); a failure here stops nothing."""
    from ..config import ConfigError, load_config

    try:
        from ..engine.sessions import reap_if_due

        reap_if_due(load_config(None))
    except ConfigError:
        return  # the command loads the same file and says what is wrong, once
    except Exception as e:  # noqa: BLE001
        print(f"superqe: reaper skipped: {e}", file=sys.stderr)


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
