"""``superqe COMMAND`` imports the module of that command only (cli/__init__.py)."""

from __future__ import annotations

import importlib
import subprocess
import sys

import pytest

from superqode_ls import cli


def _registered(module: str) -> set[str]:
    parser = cli._Parser(prog="x")
    sub = parser.add_subparsers(dest="command")
    importlib.import_module(f"superqode_ls.cli.{module}").register(sub)
    return set(sub.choices)


def test_the_map_names_every_command_and_its_module():
    mapped: dict[str, str] = {}
    for module in cli.COMMAND_MODULES:
        for command in _registered(module):
            mapped[command] = module
    assert mapped == cli.COMMAND_MODULE


def test_a_command_line_imports_its_module_alone():
    code = ("import sys; from superqode_ls import cli; cli.build_parser('run');"
            "print(sorted(m for m in sys.modules if m.startswith('superqode_ls.cli.')))")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "['superqode_ls.cli.run']"


def test_without_a_known_command_every_command_is_listed(capsys):
    parser = cli.build_parser("nonsense")
    assert {"run", "exec", "worktree", "status", "guard"} <= set(
        parser._subparsers._group_actions[0].choices)  # type: ignore[union-attr]
    with pytest.raises(SystemExit) as ended:
        cli.main(["nonsense"])
    assert ended.value.code == cli.EXIT_USAGE
    assert "invalid choice" in capsys.readouterr().err


# What a session needs only after it has started: a new ``superqe run``
# reaches ``session_start`` (which begins its warm bandit) without them.
LATER = ("superqode_ls.qe.finish", "superqode_ls.qe.noise", "superqode_ls.qe.verify_step",
         "superqode_ls.qe.role_runs", "superqode_ls.qe.covering",
         "superqode_ls.qe.report.markdown", "superqode_ls.qe.report.sarif")

_AT_START = """
import json, sys
from superqode_ls import events
from superqode_ls.cli import main
later = {later!r}
seen = []
publish = events.EventBus.publish
def watch(self, event):
    if event.type == "session_start" and not seen:
        seen.append(sorted(m for m in later if m in sys.modules))
    return publish(self, event)
events.EventBus.publish = watch
code = main(["run", {repo!r}, "-r", "lint_tester", "--jsonl"])
print(json.dumps({{"at_start": seen, "after": sorted(m for m in later if m in sys.modules),
                  "code": code}}), file=sys.stderr)
"""


def test_a_run_reaches_session_start_before_the_session_s_later_imports(make_repo):
    """A real run in a new process: at ``session_start`` none of the modules
    of the sandbox's roles, filter, verification and report writing is
    imported yet; by the end the run has used them (so the list names
    modules a run does need, only later)."""
    import json

    repo = make_repo({"app.py": "import os\nx = 1\n"})
    code = _AT_START.format(later=LATER, repo=str(repo))
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         timeout=300, check=False)
    line = [x for x in out.stderr.splitlines() if x.startswith('{"at_start"')]
    assert line, out.stderr[-2000:]
    got = json.loads(line[-1])
    assert got["at_start"] == [[]]
    assert set(got["after"]) == set(LATER) - {"superqode_ls.qe.report.sarif"}  # no --sarif


def test_the_server_s_prewarm_imports_what_the_pipeline_imports_late():
    """The language server imports the pipeline's late modules ahead of its
    first run (engine.roles.prewarm): that run does not stall on them."""
    assert _late_modules_missing_after("from superqode_ls.engine import roles; roles.prewarm()") == "[]"


def test_the_warm_helper_imports_what_the_pipeline_imports_late():
    """The warm helper's runs (forked from it) find the pipeline's late
    modules imported, as they found them when the pipeline imported them at
    its top."""
    assert _late_modules_missing_after(
        "from superqode_ls.cli import warm_server; warm_server.warm_up()") == "[]"


def _late_modules_missing_after(warm: str) -> str:
    """In a new interpreter, after the statement ``warm``: the pipeline's late
    modules (and LATER) not imported, as a printed sorted list."""
    code = (f"import sys; {warm};"
            "from superqode_ls.qe import pipeline;"
            f"want = set(pipeline.AFTER_START) | set({LATER!r});"
            "print(sorted(m for m in want if m not in sys.modules))")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    return out.stdout.strip()


# What a run never needs unless there is something to reap (the reaper, the
# recovery and its scan) and what the warm bandit's modules no longer bring
# before the session starts (the roles' base: the project's environment, the
# sandbox's records and locks).
NOT_AT_START = ("superqode_ls.workspace.reaper", "superqode_ls.workspace.recovery",
                "superqode_ls.workspace.recovery_scan", "superqode_ls.qe.roles.base",
                "superqode_ls.workspace.pyenv", "superqode_ls.workspace.records")

_START_COST = """
import json, sys
from superqode_ls import config, events, models
from superqode_ls.cli import main
watch_for = {watch!r}
seen = []
from superqode_ls.qe import ahead
started = []
import_ahead = ahead.import_ahead
def record(roles):
    thread = import_ahead(roles)
    started.append([sorted(roles), thread.name if thread else None])
    return thread
ahead.import_ahead = record  # before the pipeline binds it
publish = events.EventBus.publish
def watch(self, event):
    if event.type == "session_start" and not seen:
        seen.append({{"imported": sorted(m for m in watch_for if m in sys.modules),
                     "config_validator_built": config.Config.__pydantic_complete__,
                     "event_validator_built": models.Event.__pydantic_complete__}})
    return publish(self, event)
events.EventBus.publish = watch
code = main(["run", {repo!r}, "-r", "security_tester", "-r", "lint_tester", "--jsonl"])
print(json.dumps({{"at_start": seen, "code": code,
                  "after": sorted(m for m in watch_for if m in sys.modules),
                  "config_validator_built": config.Config.__pydantic_complete__,
                  "ahead": started}}), file=sys.stderr)
"""


def _start_cost(repo) -> dict:
    import json
    import os

    code = _START_COST.format(watch=NOT_AT_START, repo=str(repo))
    # $SUPERQODE_WORKERS (CI's forced worker counts) is a configuration layer.
    env = {k: v for k, v in os.environ.items() if k != "SUPERQODE_WORKERS"}
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         timeout=300, check=False, env=env)
    line = [x for x in out.stderr.splitlines() if x.startswith('{"at_start"')]
    assert line, out.stderr[-2000:]
    return json.loads(line[-1])


def test_a_new_run_process_starts_without_the_reaper_the_roles_base_or_config_validators(
        make_repo):
    """A new ``superqe run`` with no configuration file and no reap due: at
    ``session_start`` the reaper and the recovery modules are not imported
    (they never are in this run), nor the roles' base (it comes after, for
    the roles); the configuration's validators were never built (nothing
    to validate), nor the events' (an event is made, not validated). The old
    start imported all of them first and built both validators."""
    repo = make_repo({"app.py": "import os\nimport subprocess\nsubprocess.call('ls', shell=True)\n"})
    got = _start_cost(repo)
    assert got["code"] in (0, 1), got
    assert got["at_start"] == [{"imported": [], "config_validator_built": False,
                                "event_validator_built": False}]
    # The run did use the roles' base afterwards; the reaper, never.
    assert "superqode_ls.qe.roles.base" in got["after"]
    assert not {"superqode_ls.workspace.reaper", "superqode_ls.workspace.recovery"} & set(
        got["after"])
    assert got["config_validator_built"] is False
    # What comes after the sandbox is imported beside its making, in a thread
    # started after session_start (``at_start``: not imported before it).
    assert got["ahead"] == [[["lint_tester", "security_tester"], "superqode-imports"]]


def test_a_run_with_a_config_file_still_validates_it(make_repo):
    """The same run with a project file: its settings are validated (the
    validators are built) and a bad value is the one line, exit 2."""
    repo = make_repo({"app.py": "x = 1\n", "superqode.yaml": "qe:\n  fail_on: low\n"})
    got = _start_cost(repo)
    assert got["at_start"][0]["config_validator_built"] is True
    (repo / "superqode.yaml").write_text("qe:\n  fail_on: sometimes\n")
    out = subprocess.run([sys.executable, "-m", "superqode_ls", "run", str(repo)],
                         capture_output=True, text=True, timeout=120, check=False)
    assert out.returncode == 2, out.stderr
    assert out.stderr.strip().splitlines() == [(
        f"superqe: {repo / 'superqode.yaml'}: qe.fail_on: must be 'critical', 'high', 'medium', "
        "'low', 'info' or 'never' (got 'sometimes')")], out.stderr


def test_the_reaper_is_imported_only_when_a_reap_is_due(tmp_path):
    """``reap_if_due`` asks the stamp first: not due, the reaper's modules
    stay out; due, it reaps (and imports them)."""
    import json

    code = """
import json, sys, time
from superqode_ls.engine.sessions import reap_if_due
from superqode_ls.workspace.paths import working_root
root = working_root(); root.mkdir(parents=True)
(root / ".reaper-stamp").write_text(f"{time.time()}\\n")
first = reap_if_due()
before = "superqode_ls.workspace.reaper" in sys.modules
(root / ".reaper-stamp").write_text("0\\n")
second = reap_if_due()
print(json.dumps([first is None, before, type(second).__name__,
                  "superqode_ls.workspace.reaper" in sys.modules]))
"""
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         check=True)
    assert json.loads(out.stdout) == [True, False, "ReapReport", True]


def test_import_ahead_imports_the_session_s_later_modules_and_the_roles_in_a_thread():
    code = """
import sys
from superqode_ls.qe import ahead
thread = ahead.import_ahead(["security_tester", "no_such_role"])
thread.join()
print(thread.name, thread.daemon, all(m in sys.modules for m in ahead.AHEAD),
      "superqode_ls.qe.roles.security" in sys.modules, ahead.import_ahead(["security_tester"]))
"""
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.split() == ["superqode-imports", "True", "True", "True", "None"]
