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
