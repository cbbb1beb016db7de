"""unit_tester: the project's own pytest suite, run in the sandbox.

Each failing test becomes a finding at the failing line of the test file, with
evidence at the deepest frame in the project's non-test code (where the bug
most likely is) and the assertion message. A small recorder plugin, copied to
a private temporary directory (never into the sandbox), collects failures as
they happen. Bytecode and pytest's cache are not written into the sandbox.

Interpreter: ``roles.unit_test_command`` from the configuration (a pytest
invocation such as ``[".venv/bin/python", "-m", "pytest"]``) when set, else
the project's own interpreter (``_pyenv``: configured, editor, $VIRTUAL_ENV,
.venv, poetry/hatch/pdm, conda, or built from the declared dependencies) with
its own pytest plugins, the sandbox's sources first.

A run that did not run is not ok: collection, configuration and usage errors
(and pytest's internal errors) make the role fail with pytest's own message;
no test collected is "no tests" (skipped), never a pass.
"""

from __future__ import annotations

import asyncio
import json
import os
import re
import shutil
from pathlib import Path
from typing import Any

from ...models import Finding
from ...workspace import namespaces
from ...workspace.extras import needs
from ...workspace.paths import hypothesis_dir
from ...workspace.proc import ProcResult
from ...workspace.pyenv import ProjectPython
from ...workspace.pyprojects import loose_tests, python_projects
from . import _unit_django as django
from . import _unit_last as last
from ._common import (
    pytest_message,
    selected_files,
)
from ._failure_chain import CHAIN_MODULE
from ._pyenv import activated, isolate, project_python, pytest_argv, scm_pretend
from ._pytest_config import cache_args, missing_plugin_args, project_test_files, python_files
from ._unit_default import default_suite, left_out_line
from ._unit_env import environment_problem, only_environment
from ._unit_findings import failure_findings
from ._unit_last import durations_file as _durations_file  # noqa: F401 - tests read it
from ._unit_projects import ROOT, each_project, files_in, moved, sub_context
from ._unit_records import (
    progress_said,
    read_durations,
    read_progress,
    read_records,
    short_message,
)
from ._unit_rerun import rerun_failed
from ._unit_start import never_started, refuses_root
from .base import Role, RoleContext, RoleOutput, ToolFailed, reported

PLUGIN_MODULE = "superqode_pytest_recorder"
_PLUGIN_SOURCE = Path(__file__).with_name("_pytest_plugin.py")
_CHAIN_SOURCE = Path(__file__).with_name("_failure_chain.py")  # both recorders import it


def find_test_files(root: Path, files: list[str] | None = None) -> list[str]:
    """The test modules by the project's own ``python_files``/``testpaths``."""
    return project_test_files(root, selected_files(root, files, (".py",)))


def _missing_program(ctx: RoleContext) -> str | None:
    """Why roles.unit_test_command cannot start (its program is not there), or None."""
    configured = ctx.config.roles.unit_test_command
    if not configured:
        return None
    prog = configured[0]
    if "/" in prog or os.sep in prog:
        path = Path(prog).expanduser()
        found = (ctx.sandbox / path) if not path.is_absolute() else path
        if found.is_file() and os.access(found, os.X_OK):
            return None
    elif shutil.which(prog, path=ctx.env.get("PATH", os.defpath)):
        return None
    return f"roles.unit_test_command: program {prog!r} not found or not executable"


class UnitTester(Role):
    name = "unit_tester"
    tool = "pytest"
    description = "runs the project's pytest suite in the sandbox; each failing test is a finding"
    executes_code = True

    async def run(self, ctx: RoleContext) -> RoleOutput:
        subs = await _projects(ctx)
        if subs != [""]:  # a monorepo: each Python project from its own folder
            loose = await asyncio.to_thread(loose_tests, ctx.sandbox, subs)
            return await each_project(ctx, [ROOT, *subs] if loose else subs,
                                      self._run_project, root_files=loose)
        return await self._run_project(ctx)

    async def _run_project(self, ctx: RoleContext) -> RoleOutput:
        find = django.find_tests if _django(ctx) else find_test_files
        all_tests = find(ctx.sandbox)
        if not all_tests:
            return RoleOutput(status="skipped", tool="pytest", reason=(
                django.unrunnable_tests(ctx.sandbox)
                or f"no tests: no test files ({' / '.join(python_files(ctx.sandbox))})"))
        # Restricted to some files: run the test files among them; a source
        # file alone can be covered by any test, so then the whole suite runs.
        targets: list[str] = []
        if ctx.files is not None:
            targets = find(ctx.sandbox, ctx.files)
        # The whole suite as the developers run it by default (python-gitlab's
        # tox: tests/unit; its functional tests need a GitLab it starts).
        suite = None if targets or _django(ctx) or ctx.config.roles.unit_test_command else (
            await asyncio.to_thread(default_suite, ctx.sandbox, all_tests))
        scope = [*suite.paths, *suite.options] if suite else []  # (the record's key too)
        limit = None
        if ctx.mode == "quick" and not targets:
            # Quick mode runs what fits its cap (a run stopped there is
            # "incomplete", what ran stands).
            limit = ctx.config.qe.quick_unit_test_max_s
        missing = _missing_program(ctx)
        if missing:
            return RoleOutput(status="skipped", reason=missing, tool="pytest")
        py = await project_python(ctx)
        if py.setup and not ctx.config.roles.unit_test_command:
            # Without its environment the suite would fail on imports: a
            # setup problem to fix, not findings about the code.
            return RoleOutput(status="skipped", reason=f"setup: {py.setup}", tool="pytest")
        if py.own and not py.has_pytest and not ctx.config.roles.unit_test_command:
            # No project environment, and SuperQode's own has no pytest (a
            # lean install): one line naming the extra, nothing run.
            return RoleOutput(status="skipped", reason=needs("pytest"), tool="pytest")
        trace: dict[str, Any] = {}
        # What the run tests, hashed before its tests write in the sandbox
        # (a report, a cache file): the next quick run compares with it.
        key, hashes = (None, {}) if targets else await asyncio.to_thread(
            last.code_keys, ctx.sandbox)
        ordered = None
        if limit is not None and not last.fits(ctx.project, limit, scope):
            # Not all-or-nothing: the suite that did not fit last time runs
            # what matters first, as much as fits (a loaded machine once
            # made it slow; it is not switched off for it).
            trace["order"], ordered = last.quick_order(ctx.project, scope, hashes, all_tests)
        try:
            out, elapsed = await self._pytest(
                ctx, targets or list(suite.paths if suite else ()), limit,
                extra=list(suite.options) if suite and suite.options else None, trace=trace)
            if out.status == "ok" and out.findings:
                await rerun_failed(self._invoke, ctx, out, trace, elapsed)
        except OSError as e:  # not executable, bad interpreter line...
            prog = (ctx.config.roles.unit_test_command or [py.python])[0]
            return ToolFailed("pytest", f"cannot run {prog}: {e.strerror or e}").output()
        out.reason = _with_interpreter(out.reason, py, ctx)
        progress = next((r for r in trace.get("records") or [] if r.get("kind") == "progress"),
                        None)
        if (limit is not None and out.status == "timeout" and not targets and not _django(ctx)
                and not (progress or {}).get("done")):
            # The cap came before any test ended (a slow start, collection):
            # the tests were not run, never read as a pass.
            said = (f"{progress['collected']:,} test(s) collected" if progress
                    and progress.get("collected") else "no test collected yet")
            last.slow(ctx.project, elapsed, scope, trace.get("durations"))
            skip = await last.not_run(ctx, limit, scope, said)
            skip.findings = [*out.findings, *skip.findings]  # (a module that cannot import)
            skip.reason = _with_interpreter(skip.reason, py, ctx)
            return skip
        if not targets and out.status in ("ok", "timeout"):
            stopped = (progress_said(trace.get("records") or []) or ""
                       ) if limit is not None and out.status == "timeout" else None
            last.record(ctx.project, elapsed, stopped, found=out.findings, key=key, scope=scope,
                        modules=trace.get("durations"), files=hashes)
        if limit is not None and out.status == "timeout":
            # Quick mode's own cap, not the session's time: what ran stands,
            # the rest is deep mode's (a session out of time is exit 3).
            out.status = "incomplete"
            ran = progress_said(trace.get("records") or [])
            out.reason = (
                f"quick mode stops the test suite after {limit:.0f} s "
                f"({ran + ', ' if ran else ''}{len(out.findings)} failure(s) recorded); "
                "it runs fully in deep mode (`--mode deep`)"
            ) + "".join(f"; {len(tests)} failure(s) the environment's: {cause} ({_some(tests)})"
                        for cause, tests in _by_cause(out.findings).items())
        if ordered and out.status in ("ok", "incomplete"):
            out.reason = f"{out.reason}; {ordered}" if out.reason else ordered
        if suite is not None and (left := left_out_line(suite, all_tests, ctx.sandbox)):
            out.reason = f"{out.reason}; {left}"  # (whatever the outcome, the cap's included)
        return out

    async def recheck(self, ctx: RoleContext, files: list[str]) -> list[Finding]:
        subs = await _projects(ctx)
        if subs == [""]:
            return await self._recheck(ctx, files)
        found: list[Finding] = []
        for sub in [ROOT, *subs]:  # (ROOT: the loose tests among the files)
            mine = files_in(files, sub, subs)
            if sub == ROOT:  # only the loose tests named (a source file's would be every test)
                mine = find_test_files(ctx.sandbox, mine)
            if mine:
                sub_ctx = await sub_context(ctx, sub, mine)
                found += moved(await self._recheck(sub_ctx, mine), sub)
        return found

    async def _recheck(self, ctx: RoleContext, files: list[str]) -> list[Finding]:
        find = django.find_tests if _django(ctx) else find_test_files
        out, _ = await self._pytest(ctx, find(ctx.sandbox, files))
        return out.findings

    async def can_start(self, ctx: RoleContext, folders: list[str]) -> RoleOutput:
        """pytest configured with the conftests of ``folders`` loaded and no
        test module imported or run: whether the suite can start at all
        (covering.SuiteProbe). Status "failed" with pytest's usage or
        internal error when it cannot."""
        extra = ["--collect-only", "--ignore-glob=*.py"]
        subs = await _projects(ctx)
        if subs == [""]:
            return (await self._pytest(ctx, folders, extra=extra))[0]
        out = RoleOutput(status="skipped", reason="no tests: no test folder", tool="pytest")
        for sub in [*subs, ROOT]:  # a monorepo: each project's conftests, from its folder
            if mine := files_in(folders, sub, subs):
                out, _ = await self._pytest(await sub_context(ctx, sub, mine), mine, extra=extra)
                if out.status not in ("ok", "skipped") or (out.reason or "").startswith("setup:"):
                    return out  # (its reason as the probe reads it: "setup: ...")
        return out

    def _command(self, ctx: RoleContext, env: dict[str, str]) -> list[str]:
        assert ctx.python is not None
        if settings := django.pytest_settings(ctx.sandbox):
            env.setdefault("DJANGO_SETTINGS_MODULE", settings)
        return pytest_argv(ctx.python, ctx.config.roles.unit_test_command, env, ctx.sandbox)

    async def _pytest(
        self, ctx: RoleContext, targets: list[str], limit: float | None = None,
        extra: list[str] | None = None, trace: dict[str, Any] | None = None,
    ) -> tuple[RoleOutput, float]:
        """The run's output and how long the suite took; a suite that did not
        run (or not to its end) is ``_outcome``'s ``ToolFailed``, reported
        here, the entry of run, recheck and can_start alike. ``trace``, when
        given, receives the run's records and extra arguments (for a re-run)."""
        py = await project_python(ctx)
        trace = {} if trace is None else trace
        runner = "django" if _django(ctx, extra) else "pytest"
        res, records = await self._invoke(ctx, targets, limit, extra, trace)
        if only_environment(records, ctx.sandbox):
            # pytest stopped at modules the environment cannot import: the
            # rest of the suite runs, those modules counted as the setup's.
            extra = [*(extra or []), "--continue-on-collection-errors"]
            res, records = await self._invoke(ctx, targets, limit, extra, trace)
        trace.update(records=records, extra=list(extra or []))
        output = res.stdout + res.stderr
        if (
            res.returncode == 4
            and not records
            and not ctx.config.roles.unit_test_command
            and py.own
            and "unrecognized arguments" in output
        ):
            # The project's addopts name plugins SuperQode's interpreter does
            # not load (-n, --cov...): run once more without them.
            bad = next(
                (line for line in output.splitlines() if "unrecognized arguments" in line), ""
            )
            res, records = await self._invoke(ctx, targets, limit,
                                              [*(extra or []), "-o", "addopts="], trace)
            trace.update(records=records, extra=[*(extra or []), "-o", "addopts="])
            note = (
                f"ran without the project's addopts ({bad.split('error:', 1)[-1].strip()}); "
                "set roles.python to the project's interpreter to use its own environment"
            )
            try:
                out = await asyncio.to_thread(self._outcome, ctx, res, records, runner)
            except ToolFailed as e:
                return e.noted(note).output(), res.duration_s
            out.reason = f"{out.reason}; {note}" if out.reason else note
            return out, res.duration_s
        out = await reported(asyncio.to_thread(self._outcome, ctx, res, records, runner))
        if runner == "pytest" and (note := _plugin_args(ctx)[1]):
            out.reason = f"{out.reason}; {note}" if out.reason else note
        return out, res.duration_s

    async def _invoke(
        self,
        ctx: RoleContext,
        targets: list[str],
        limit: float | None,
        extra: list[str] | None = None,
        trace: dict[str, Any] | None = None,
    ) -> tuple[ProcResult, list[dict[str, Any]]]:
        """One run of the suite; ``trace``, when given, brings quick mode's
        module order (``order``) and receives each module's time
        (``durations``)."""
        private = ctx.mkdtemp("superqode-pytest-")
        try:
            shutil.copyfile(_PLUGIN_SOURCE, private / f"{PLUGIN_MODULE}.py")
            shutil.copyfile(_CHAIN_SOURCE, private / f"{CHAIN_MODULE}.py")
            with_django = _django(ctx, extra)
            if with_django:
                shutil.copyfile(django.RUNNER_SOURCE, private / f"{django.RUNNER_MODULE}.py")
            records_path = private / "records.jsonl"
            # The sandbox's code first, so an editable install of the user's
            # project cannot shadow it (pyisolate); the recorder beside it.
            shadowed = [ctx.project] if ctx.project != ctx.sandbox else []
            # The project's metadata when the interpreter lacks the project
            # (version() in its tests), after site-packages.
            py = ctx.python
            meta = [Path(py.metadata)] if py is not None and py.metadata else []
            env = isolate(activated(dict(ctx.env), py), private, ctx.sandbox, shadowed,
                          extra_paths=[private], tool_paths=meta)
            env["PYTHONDONTWRITEBYTECODE"] = "1"
            scm_pretend(env, ctx.project, ctx.sandbox)
            env["SUPERQODE_PYTEST_REPORT"] = str(records_path)
            env["SUPERQODE_PYTEST_PROGRESS"] = str(private / "progress")
            env["SUPERQODE_PYTEST_DURATIONS"] = str(private / "durations.json")
            if trace and trace.get("order"):
                (private / "order.json").write_text(json.dumps(trace["order"]), encoding="utf-8")
                env["SUPERQODE_PYTEST_ORDER"] = str(private / "order.json")
            # hypothesis keeps its example database (and a unicode table) in
            # the working directory: keep it outside, per session (paths.py).
            env.setdefault("HYPOTHESIS_STORAGE_DIRECTORY", hypothesis_dir(ctx.env, private))
            if with_django:  # manage.py's setdefault yields to the declared settings
                env.setdefault("DJANGO_SETTINGS_MODULE", with_django)
            assert ctx.python is not None
            cmd = django.argv(ctx.python.python, targets, ctx.sandbox) if with_django else [
                *self._command(ctx, env),
                "-p",
                PLUGIN_MODULE,
                *cache_args(ctx.sandbox, private / "cache", env),
                *_plugin_args(ctx)[0],
                "-q",
                "--color=no",
                "--tb=short",
                "-rN",
                *(extra or []),
                *(["--", *targets] if targets else []),
            ]
            res = await ctx.run(cmd, env=env, timeout=limit)
            records = read_records(records_path)
            # Stopped before its end: how far it got, for the role's line.
            if res.timed_out and (progress := read_progress(private / "progress")):
                records.append(progress)
            if trace is not None:
                done, running = read_durations(private / "durations.json")
                if res.timed_out and running and limit:
                    # Stopped in it: at least the cap's time (the next
                    # quick run puts it last).
                    done[running] = max(done.get(running, 0.0), float(limit))
                trace["durations"] = done
        finally:
            shutil.rmtree(private, ignore_errors=True)
        return res, records

    def _outcome(
        self, ctx: RoleContext, res: ProcResult, records: list[dict[str, Any]],
        runner: str = "pytest",
    ) -> RoleOutput:
        output = res.stdout + ("\n" + res.stderr if res.stderr else "")
        summary = next((r for r in reversed(records) if r.get("kind") == "summary"), None)
        setup = next((r for r in records if r.get("kind") == "setup"), None)
        tool = runner
        failed = [r for r in records if r.get("kind") not in ("summary", "setup", "progress")]
        findings = failure_findings(
            self.name, ctx.sandbox, failed, tool,
            offline=namespaces.active() and ctx.config.sandbox.network != "host")
        if res.timed_out:
            raise ToolFailed(
                "pytest",
                "the test suite did not finish in time ("
                + "".join(f"{ran}, " for ran in [progress_said(records)] if ran)
                + f"{len(findings)} failure(s) recorded so far)",
                status="timeout", findings=findings,
            )
        exit_code = summary["exitstatus"] if summary else res.returncode
        if summary is None and res.returncode != 0 and "No module named pytest" in output:
            return RoleOutput(
                status="skipped",
                reason="pytest is not installed for this interpreter; install it in the "
                "project's environment or set roles.python",
                tool="pytest",
            )
        if (summary is None and res.returncode == 0 and not res.timed_out
                and not ctx.config.roles.unit_test_command):
            # Exit 0 and the recorder saw no session: no test ran (a module
            # named pytest shadowed it). Not a pass.
            return RoleOutput(status="skipped", tool=tool,
                              reason=f"setup: {never_started(ctx.sandbox, tool)}")
        if summary is None and res.returncode != 0:
            if root := refuses_root(str((setup or {}).get("message") or "") + "\n" + output):
                return RoleOutput(status="skipped", reason=f"setup: {root}", tool=tool)
            # The suite could not start for want of something in its
            # environment (a service, a package, the settings): one line.
            problem = environment_problem({"message": (setup or {}).get("longrepr") or output},
                                          ctx.sandbox)
            if problem:
                return RoleOutput(status="skipped", reason=f"setup: {problem}", tool=tool)
            if setup is not None:
                raise ToolFailed(tool, "manage.py test stopped before running the tests: "
                                 f"{short_message(str(setup.get('message') or ''))}")
        if exit_code == 5:
            return RoleOutput(status="skipped", reason=f"no tests: {tool} collected no tests",
                              tool=tool)
        collect = [f for f in findings if f.rule_id == "collection-error"]
        ran = [f for f in findings if f.rule_id != "collection-error"]
        nothing_ran = exit_code == 2 or (summary is not None and not summary.get("collected"))
        if nothing_ran and collect and all(f.noise for f in collect) and not ran:
            # Only the environment kept the tests from being collected: a
            # setup problem, said once; the records stay, counted, as noise.
            causes = "; ".join(dict.fromkeys(f.noise.split(": ", 1)[-1] for f in collect))
            return RoleOutput(status="skipped", findings=findings, tool=tool, reason=(
                f"setup: {len(collect)} test module(s) cannot be imported here: {causes}"))
        tests_failed = summary is not None and summary.get("failed", 0) > 0
        if exit_code == 0 or (exit_code == 1 and (tests_failed or ran)):
            collected = summary.get("collected") if summary else None
            done = f"{collected} test(s) run" if collected is not None else None
            if done and summary and "passed" in summary:
                # How much of the suite really ran: a skip is often the
                # environment's (no network, running as root).
                # Django's runner goes on past a module it cannot import.
                broken = summary.get("collect_errors", 0)
                done += (f" ({summary['passed']} passed, {summary.get('failed', 0) - broken} "
                         f"failed, {summary.get('skipped', 0)} skipped"
                         + (f", {broken} test module(s) not imported)" if broken else ")"))
            # (a failure shown once for several tests is the code's, not a cause)
            causes = [f.noise.split(": ", 1)[-1] for f in findings
                      if f.noise and "environment" in f.tags]
            for cause, tests in _by_cause(findings).items():  # one line each, never a finding
                done = (f"{done}; " if done else "") + (
                    f"{len(tests)} failure(s) the environment's: {cause} ({_some(tests)})")
            if (summary and not summary.get("passed") and findings and len(causes) == len(findings)
                    and summary.get("failed", 0) > 0):
                # Not one test passed, every failure the environment's (the
                # database the suite needs is not running): the suite did
                # not run here, a setup problem and no pass.
                return RoleOutput(status="skipped", findings=findings, tool=tool,
                                  reason=f"setup: no test could run here; {done}")
            return RoleOutput(findings=findings, tool=tool, reason=done)
        if exit_code == 2 and tests_failed and all("environment" in f.tags for f in findings):
            # The suite stopped itself part way (jira's pytest.exit when its
            # server is not configured) and every failure before is the
            # environment's: a setup problem, said once, never a code finding.
            stop = re.search(r"!{3,} (?:_pytest\.outcomes\.Exit: )?(.{1,160}?) !{3,}", output)
            causes = "; ".join(f"{len(t)} failure(s) the environment's: {c} ({_some(t)})"
                               for c, t in _by_cause(findings).items())
            return RoleOutput(status="skipped", findings=findings, tool=tool, reason=(
                f"setup: {causes}; the suite stopped before its end"
                + (f" ({stop.group(1)})" if stop else "")
                + f", {summary.get('passed', 0)} test(s) passed"))
        # Exit 1 without a failed test (a warning turned error while pytest
        # configured itself), 2 interrupted (collection errors), 3 internal
        # error, 4 usage error: the suite did not run.
        if exit_code == 3 and (problem := environment_problem({"message": output}, ctx.sandbox)):
            # A session fixture or plugin reached for a service that is not
            # running (piccolo's PostgreSQL): the environment's, said once.
            return RoleOutput(status="skipped", findings=findings, tool=tool,
                              reason=f"setup: {problem}")
        what = {1: "pytest stopped before running the tests", 2: "pytest was interrupted",
                3: "pytest hit an internal error", 4: "pytest usage or configuration error"}
        head = what.get(exit_code, f"pytest exited with {exit_code}")
        if tool == "django":  # Django's runner exits 1 for any failure
            head = "manage.py test stopped before running the tests"
        n_collect = sum(1 for f in findings if f.rule_id == "collection-error")
        if n_collect:
            head += f" ({n_collect} collection error(s))"
        raise ToolFailed("pytest", f"{head}: {pytest_message(output)}", findings=findings)


def _by_cause(findings: list[Finding]) -> dict[str, list[str]]:
    """The environment's failures by cause: cause -> the tests' ids."""
    out: dict[str, list[str]] = {}
    for f in findings:
        if f.noise and "environment" in f.tags:
            out.setdefault(f.noise.split(": ", 1)[-1], []).append(f.title.split(": ", 1)[-1])
    return out


_NAMED = 2  # test ids a setup note names


def _some(tests: list[str]) -> str:
    more = f" and {len(tests) - _NAMED} more" if len(tests) > _NAMED else ""
    return ", ".join(t[:120] for t in tests[:_NAMED]) + more


async def _projects(ctx: RoleContext) -> list[str]:
    """The Python projects whose suites the role runs (workspace/pyprojects;
    ``[""]``: the repository's). A configured ``roles.unit_test_command``
    is how the user runs the tests: from the root, as it always was."""
    if ctx.config.roles.unit_test_command:
        return [""]
    return await asyncio.to_thread(python_projects, ctx.sandbox)


def _django(ctx: RoleContext, extra: list[str] | None = None) -> str | None:
    """The settings module when this run is Django's own runner: a Django
    project without pytest-django, no unit_test_command configured, and not
    a pytest-only probe (``extra``: can_start's collect-only)."""
    if ctx.config.roles.unit_test_command or extra:
        return None
    return django.django_runner(ctx.sandbox)


def _plugin_args(ctx: RoleContext) -> tuple[list[str], str | None]:
    """missing_plugin_args for the project's own environment (SuperQode's
    interpreter loads only the plugins it names: its own re-run below)."""
    py = ctx.python
    if ctx.config.roles.unit_test_command or py is None or py.own:
        return [], None
    return missing_plugin_args(ctx.sandbox, py.prefix)


def _with_interpreter(reason: str | None, py: ProjectPython, ctx: RoleContext) -> str:
    where = (f"ran {' '.join(ctx.config.roles.unit_test_command[:3])}"
             if ctx.config.roles.unit_test_command else py.label(ctx.project))
    parts = [reason, where]
    if settings := _django(ctx):
        parts.append(f"Django's runner ({django.runner_label(ctx.sandbox)}, {settings})")
    if py.note and not ctx.config.roles.unit_test_command:
        parts.append(py.note)
    return "; ".join(p for p in parts if p)
