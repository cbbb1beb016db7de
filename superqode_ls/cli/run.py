"""``superqe run`` (a QE session on a project) and ``superqe roles``.

Exit codes of ``run``: 0 ok; 1 findings at/above ``--fail-on``; 2 usage or
configuration error (nothing created); 3 session failed, timed out, a role
crashed or the project could not be verified unchanged (artifacts kept,
revert done);
130 interrupted (Ctrl-C: partial results saved, revert done).
"""

from __future__ import annotations

import argparse
import asyncio
import concurrent.futures
import dataclasses
import gc
import json
import os
import signal
import sys
import threading
import time
from pathlib import Path

from ..config import ConfigError, load_config
from ..engine import reports, roles, runs
from ..engine.errors import WorkspaceError
from ..engine.projects import files_under, repo_root, write_file
from ..engine.reports import DEFAULT_NEVER_FAIL, did_not_work, fails
from ..events import EventBus
from ..models import QualityReport
from ..runtime import Runtime
from . import EXIT_FAILED, EXIT_FINDINGS, EXIT_OK, UsageError, log_file, positive

SEVERITIES = ("critical", "high", "medium", "low", "info", "never")
EXIT_INTERRUPTED = 130


async def _into(box: list, coro) -> None:
    """Put ``coro``'s result in ``box`` and return None: asyncio.run (3.11)
    builds the repr of its main task, result included, when it restores
    SIGINT: the whole report's (0.2 s of CPU per 5,000 findings)."""
    box.append(await coro)


_positive = positive("seconds")


def register(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser(
        "run", help="run a QE session on a project",
        description="Run QE roles on PATH in a sandbox, verify their fixes, write the Quality "
                    "Report to .superqode/qe-artifacts/ and leave PATH unchanged.",
    )
    p.add_argument("paths", nargs="*", metavar="PATH",
                   help="project folder (default: .), or files/folders inside one git repository "
                        "(the run looks at those only, as pre-commit passes them)")
    p.add_argument("--since", metavar="REF",
                   help="report only findings introduced since the merge-base of REF and HEAD")
    p.add_argument("--shard", metavar="K/N", type=_shard,
                   help="do the K-th of N shares of the work (combine with superqe merge)")
    p.add_argument("--timings", action="store_true",
                   help="print where the session's time went")
    p.add_argument("--mode", choices=("quick", "deep"), default=None,
                   help="quick (default; budget 60 s) or deep (budget 1800 s)")
    p.add_argument("-r", "--role", dest="roles", action="append", metavar="ROLE",
                   help="run this role (repeatable; default: the mode's roles, see superqe roles)")
    iso = p.add_mutually_exclusive_group()
    iso.add_argument("--worktree", dest="isolation", action="store_const", const="worktree",
                     help="sandbox as a git worktree")
    iso.add_argument("--snapshot", dest="isolation", action="store_const", const="snapshot",
                     help="sandbox as a directory copy")
    p.add_argument("--base-ref", metavar="REF", help="sandbox at this commit (no uncommitted state)")
    p.add_argument("--jsonl", action="store_true", help="print events as JSON lines on stdout")
    p.add_argument("--show-noise", action="store_true",
                   help="also list the findings marked as noise (after the others)")
    p.add_argument("--sarif", metavar="FILE", help="also write the findings as SARIF 2.1.0")
    p.add_argument("--fail-on", choices=SEVERITIES, default=None,
                   help="exit 1 when a finding is at/above this severity (default: qe.fail_on, high)")
    p.add_argument("--timeout", type=_positive, metavar="S", help="session budget in seconds")
    p.add_argument("--fail-on-error", action="store_true", default=None,
                   help="exit 3 when a role errored or was ineffective, e.g. an unreachable "
                        "model server (for CI; default: qe.fail_on_error)")
    p.add_argument("--baseline", metavar="FILE",
                   help="hide findings recorded in FILE (default: qe.baseline from the config)")
    p.add_argument("--update-baseline", action="store_true",
                   help="write the current findings to the baseline file "
                        "(--baseline, qe.baseline or .superqode/baseline.json)")
    p.add_argument("--untrusted", action="store_true",
                   help="skip roles that run the project's code")
    p.add_argument("--python", metavar="PATH",
                   help="the interpreter (or environment folder) the project's code runs with "
                        "(default: roles.python, $VIRTUAL_ENV, .venv, poetry/hatch/pdm, conda)")
    p.set_defaults(func=cmd_run)

    p = sub.add_parser("roles", help="list the QE roles",
                       description="List the QE roles, their tools and whether they can run here.")
    p.add_argument("path", nargs="?", default=".", help="project whose configuration to use")
    p.add_argument("--json", action="store_true", help="machine-readable output")
    p.set_defaults(func=cmd_roles)


def _shard(text: str) -> tuple[int, int]:
    try:
        return runs.parse_shard(text)
    except ValueError as e:
        raise argparse.ArgumentTypeError(str(e)) from None


def since_line(report: QualityReport) -> str:
    s = report.since
    assert s is not None
    done = "" if s.base_complete else " (the base run did not finish: some may be older)"
    return (f"since {s.ref} (merge-base {s.merge_base[:12]}): {s.introduced} finding(s) introduced "
            f"in {s.files} changed file(s){done}")


def timings_line(report: QualityReport) -> str:
    steps = {k: v for k, v in report.timings.items() if k != "total"}
    steps.update({f"role:{r.role}": r.duration_s for r in report.roles if r.status != "skipped"})
    parts = ", ".join(f"{k} {v:.1f}s" for k, v in steps.items())
    return f"timings: total {report.timings.get('total', report.duration_s):.1f}s: {parts}"


def targets(paths: list[str]) -> tuple[Path, list[str] | None]:
    """``superqe run [PATH...]``: one folder is the project; files (or several
    paths) are a selection inside the git repository that holds them."""
    if not paths:
        return Path("."), None
    given = [Path(p).expanduser() for p in paths]
    if len(given) == 1 and not given[0].is_file():
        return given[0], None  # a folder (or a missing path: the session says so)
    for p in given:
        if not p.exists():
            raise UsageError(f"no such file or folder: {p}")
    first = given[0] if given[0].is_dir() else given[0].parent
    root = repo_root(Path.cwd())
    if root is None or not all(_inside(p, root) for p in given):
        root = repo_root(first)
    if root is None:
        raise UsageError(f"{paths[0]}: files or several paths need a git repository "
                         "(or give one folder)")
    root = root.resolve()
    files: list[str] = []
    for p in given:
        if not _inside(p, root):
            raise UsageError(f"{p}: not inside the repository {root}")
        rel = p.resolve().relative_to(root)
        if p.is_dir():
            files.extend((rel / f).as_posix() for f in files_under(p.resolve()))
        else:
            files.append(rel.as_posix())
    return root, list(dict.fromkeys(files))


def _inside(p: Path, root: Path) -> bool:
    try:
        p.resolve().relative_to(root.resolve())
        return True
    except ValueError:
        return False


def _check_sarif_target(path: str) -> Path:
    target = Path(path).expanduser()
    if target.is_dir():
        raise UsageError(f"--sarif {path}: is a directory")
    if not target.parent.is_dir():
        raise UsageError(f"--sarif {path}: folder {target.parent} does not exist")
    return target



def exit_code(report: QualityReport, fail_on: str, never_fail=DEFAULT_NEVER_FAIL,
              fail_on_error: bool = False) -> int:
    if report.verification is not None and not report.verification.verified:
        return EXIT_FAILED
    if report.timed_out:
        return EXIT_FAILED
    if report.cancelled:
        return EXIT_INTERRUPTED
    if any(r.crashed for r in report.roles):
        return EXIT_FAILED  # no verdict stands on a role that crashed
    if fail_on_error and any(did_not_work(r) for r in report.roles):
        return EXIT_FAILED
    # The verdict's own rule, so exit 1 and "verdict: fail" always agree.
    if fails(report.findings, fail_on, never_fail):
        return EXIT_FINDINGS
    return EXIT_OK


def cmd_run(args: argparse.Namespace) -> int:
    overrides: dict = {}
    if args.fail_on:
        overrides.setdefault("qe", {})["fail_on"] = args.fail_on
    if args.fail_on_error:
        overrides.setdefault("qe", {})["fail_on_error"] = True
    sarif = _check_sarif_target(args.sarif) if args.sarif else None
    project, files = targets(args.paths)
    if args.python:
        chosen = Path(args.python).expanduser()
        if not chosen.is_absolute():
            chosen = Path.cwd() / chosen
        if not chosen.exists():
            raise UsageError(f"--python {args.python}: no such file or folder")
        overrides.setdefault("roles", {})["python"] = str(chosen)
    config = load_config(project if project.is_dir() else None, overrides or None)
    runtime = Runtime.foreground(asker=_terminal_asker())
    analyzer = _warm_bandit(runtime, args.roles or roles.defaults(config, args.mode or config.mode))
    if analyzer is not None:
        runtime = dataclasses.replace(runtime, analyzer=analyzer)
    try:
        return _run(args, project, files, overrides, config, sarif, runtime)
    finally:
        if analyzer is not None:
            analyzer.stop()


def _run(args: argparse.Namespace, project: Path, files, overrides: dict, config, sarif,
         runtime: Runtime) -> int:
    from ..engine.runs import SessionFailed

    request = runs.request(
        project,
        files=files,
        since=args.since,
        shard=args.shard,
        mode=args.mode or config.mode,
        roles=args.roles,
        isolation=args.isolation,
        base_ref=args.base_ref,
        config_overrides=overrides,
        trusted=not args.untrusted,
        baseline=Path(args.baseline) if args.baseline else None,
        update_baseline=args.update_baseline,
        timeout=args.timeout,
        started=_process_started(),
        # Tools at the user's own priority, agents' questions on the terminal.
        runtime=runtime,
    )
    bus = EventBus()
    analyzer = runtime.analyzer  # (only ever _warm_bandit's here)
    if analyzer is not None:  # its request checked: started beside the sandbox
        bus.subscribe(lambda e: analyzer.begin() if e.type == "session_start" else None)
    session = runs.session(request, bus=bus)
    display = reports.display(jsonl=args.jsonl)
    held = _HoldStart(display, blocked_lines=args.jsonl)
    unsubscribe = bus.subscribe(held)
    failure: SessionFailed | None = None
    report: QualityReport | None = None
    try:
        box: list[QualityReport] = []
        asyncio.run(_into(box, _run_with_signals(session)))
        report = box[0]
    except (ConfigError, WorkspaceError):
        held.drop()  # bad input: the error line alone (main prints it), no session banner
        raise
    except SessionFailed as e:
        failure = e
        report = e.report
    finally:
        unsubscribe()
        held.flush()
        display.close()
    if report is not None and sarif is not None:
        write_file(sarif, json.dumps(reports.sarif(report), indent=2) + "\n")
    if report is not None and not args.jsonl:
        for line in reports.summary_lines(report, show_noise=getattr(args, "show_noise", False)):
            print(line)
        if report.artifacts.get("baseline") and args.update_baseline:
            print(f"baseline written: {report.artifacts['baseline']}")
        if report.since is not None:
            print(since_line(report))
    if report is not None and args.timings:
        print(timings_line(report), file=sys.stderr if args.jsonl else sys.stdout)
    if failure is not None:
        # After the partial report, not through main: the report comes first.
        # The error's own line, as main (and the editor) would say it.
        print(failure.cli_line(), file=sys.stderr)
        return failure.exit_code
    assert report is not None
    if report.timed_out:
        print(f"superqe: session ran out of time; partial report: {report.artifacts.get('json')}",
              file=sys.stderr)
    if report.verification is not None and not report.verification.verified:
        print(f"superqe: {report.verification.line}", file=sys.stderr)
    if held.blocked:
        print(f"superqe: {held.blocked} git command(s) blocked in the sandbox (run by the "
              f"project's code): {report.artifacts.get('guard_log', 'see the session log')}",
              file=sys.stderr)
    for r in report.roles:
        if r.crashed:
            print(f"superqe: role {r.role} crashed: {r.reason} (traceback in {log_file()})",
                  file=sys.stderr)
    fail_on = args.fail_on or config.qe.fail_on
    if report.cancelled:
        gc.freeze()  # see _stop: the exit's collection is skipped too
    return exit_code(report, fail_on, config.qe.never_fail, config.qe.fail_on_error)


class _HoldStart:
    """Passes events to the display, holding ``session_start`` back until the
    sandbox exists: a sandbox that cannot be made (bad input) then prints one
    line, not a session banner and then the error."""

    def __init__(self, display, *, blocked_lines: bool = True):
        self.display = display
        self.held = None
        # git.blocked events: on a terminal only their count (the commands,
        # most often the project's own tests running git, are in the
        # session's guard log); --jsonl streams every event.
        self.blocked_lines = blocked_lines
        self.blocked = 0

    def __call__(self, event) -> None:
        if event.type == "session_start" and self.held is None:
            self.held = event
            return
        if event.type == "git.blocked" and not self.blocked_lines:
            self.blocked += 1
            return
        self.flush()
        self.display(event)

    def flush(self) -> None:
        held, self.held = self.held, None
        if held is not None:
            self.display(held)

    def drop(self) -> None:
        self.held = None


def _warm_bandit(runtime: Runtime, names: list[str]):
    """The run's own warm bandit (the language server's kind), begun when the
    session starts (its request checked), beside the sandbox's making:
    bandit's start and imports then overlap the git work instead of coming
    after it, and the fix verification's re-run of bandit finds it imported
    (pygoat: one start of bandit less, about half a second). Same bandit,
    same arguments, same results, same policy while it starts as the
    editor's (qe/roles/_bandit_warm.py ``StartingBandit``); whatever it
    cannot serve runs the command. None without the security role, without
    bandit, or with ``SUPERQODE_RUN_BANDIT=command``."""
    from ..engine.runtime import adopt_spare_analyzer, drop_spare_analyzer, warm_analyzer

    if "security_tester" not in names or os.environ.get("SUPERQODE_RUN_BANDIT") == "command":
        drop_spare_analyzer()
        return None
    # The warm helper's, started ahead of this run (None in a new process).
    return adopt_spare_analyzer(runtime) or warm_analyzer(runtime)


def _terminal_asker():
    """Agent tools set to ``ask`` prompt on a terminal; piped runs deny."""
    from ..engine.runtime import terminal_asker

    return terminal_asker()


async def _run_with_signals(session) -> QualityReport:
    """Ctrl-C and SIGTERM cancel the session through its revert path."""
    loop = asyncio.get_running_loop()
    loop.set_default_executor(_DaemonExecutor())
    installed = []
    for sig in (signal.SIGINT, signal.SIGTERM, signal.SIGHUP):
        try:
            loop.add_signal_handler(sig, _stop, session)
            installed.append(sig)
        except (NotImplementedError, RuntimeError, ValueError):
            pass
    try:
        return await session.run()
    finally:
        for sig in installed:
            loop.remove_signal_handler(sig)


class _DaemonExecutor(concurrent.futures.ThreadPoolExecutor):
    """The CLI's executor for ``asyncio.to_thread``: daemon threads, not
    joined at exit. After Ctrl-C a role's parsing may still be running in a
    thread whose result nobody awaits any more (its coroutine was cancelled;
    the revert, the report and every sandbox operation were awaited to the
    end); a pool would hold the process until it finished, seconds on a large
    tree. Threads that touch the sandbox are always awaited, so none is cut."""

    def __init__(self):
        super().__init__(max_workers=1)  # asyncio wants this class; no pool thread is ever made
        self._closed = False

    def submit(self, fn, /, *args, **kwargs):
        if self._closed:
            raise RuntimeError("executor is shut down")
        future: concurrent.futures.Future = concurrent.futures.Future()

        def work() -> None:
            if not future.set_running_or_notify_cancel():
                return
            try:
                result = fn(*args, **kwargs)
            except BaseException as e:  # noqa: BLE001 - handed to the awaiting side
                future.set_exception(e)
            else:
                future.set_result(result)

        threading.Thread(target=work, name="superqe-worker", daemon=True).start()
        return future

    def shutdown(self, wait: bool = True, *, cancel_futures: bool = False) -> None:
        self._closed = True
        super().shutdown(wait=False)


def _stop(session) -> None:
    # The process ends soon: freeze what exists so the garbage collector does
    # not walk a large tree's findings again and again while the partial
    # report is written (and at exit) -- that alone took over a second.
    gc.freeze()
    session.cancel()


def cmd_roles(args: argparse.Namespace) -> int:
    path = Path(args.path).expanduser()
    if not path.is_dir():
        raise UsageError(f"not a folder: {args.path}")
    config = load_config(path)
    rows = roles.rows(config)
    if args.json:
        print(json.dumps(rows, indent=2))
        return EXIT_OK
    width = max(len(r["name"]) for r in rows)
    tool_width = max(len(r.get("tool") or "-") for r in rows)
    for r in rows:
        modes = "/".join(m for m in ("quick", "deep") if r[m]) or "-"
        state = "available" if r["available"] else f"unavailable: {r['reason']}"
        flags = []
        if r.get("executes_code"):
            flags.append("runs project code")
        if r.get("modifies_sandbox"):
            flags.append("edits sandbox")
        extra = f" [{', '.join(flags)}]" if flags else ""
        print(f"{r['name']:<{width}}  {r.get('tool') or '-':<{tool_width}}  default in: {modes:<10} "
              f"{state}{extra}")
        if r.get("description"):
            print(f"{'':<{width}}  {r['description']}")
    return EXIT_OK


_started_once = False


def _process_started() -> float | None:
    """``time.monotonic()`` when this process started (Linux): the session's
    budget then counts the CLI's own start (its imports, a second or two on
    a loaded machine) too. Only for the first run of a process that is the
    ``superqe`` command (not a test or a helper calling it in-process, which
    started long before); None otherwise or where it cannot be read."""
    global _started_once
    first, _started_once = not _started_once, True
    argv0 = Path(sys.argv[0]).name if sys.argv and sys.argv[0] else ""
    if not first or argv0 not in ("superqe", "__main__.py"):
        return None
    try:
        after_name = Path("/proc/self/stat").read_text().rsplit(")", 1)[1].split()
        ticks = int(after_name[19])  # field 22, starttime, in clock ticks since boot
        age = time.clock_gettime(time.CLOCK_BOOTTIME) - ticks / os.sysconf("SC_CLK_TCK")
    except (OSError, ValueError, IndexError, AttributeError):
        return None
    return time.monotonic() - age if 0 <= age < 60 else None
