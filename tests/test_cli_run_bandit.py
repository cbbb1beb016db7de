"""``superqe run``'s own warm bandit (cli/run.py ``_WarmBandit``): started
beside the sandbox's making, it serves the security role's scan and the fix
verification's re-run, with the same results as the command; the first run
asked of it while it starts waits for it, any other runs the command."""

from __future__ import annotations

import asyncio
import json
import sys
import threading
from pathlib import Path

import psutil
import pytest

from superqode_ls.cli import run as cli_run
from superqode_ls.runtime import Runtime
from superqode_ls.workspace import landlock
from tests.cli_helpers import superqe

UNSAFE_YAML = (
    "import yaml\n\n\n"
    "def load(path):\n"
    "    with open(path) as fh:\n"
    "        return yaml.load(fh, Loader=yaml.Loader)\n"
)
BANDIT = str(Path(sys.executable).parent / "bandit")


def _run(capsys, repo: Path) -> tuple[list[dict], dict]:
    code, out, _ = superqe(capsys, "run", str(repo), "-r", "security_tester", "--jsonl",
                           "--fail-on", "never")
    assert code == 0
    events = [json.loads(line) for line in out.splitlines()]
    report = json.loads(Path(events[-1]["data"]["report"]).read_text())
    return events, report


def _verdicts(report: dict) -> tuple:
    return (sorted((f["id"], f["rule_id"], f["file"], f["range"]["start_line"], f["severity"],
                    f.get("fix_patch_id")) for f in report["findings"]),
            sorted((p["id"], p.get("verified"), p.get("verified_by"), p.get("verification"))
                   for p in report["patches"]))


@pytest.mark.skipif(not Path(BANDIT).exists(), reason="bandit is not installed beside this Python")
@pytest.mark.skipif(landlock.abi() is None, reason="without Landlock the warm bandit serves no run")
def test_the_scan_and_the_fix_recheck_go_through_it_with_the_commands_results(
        make_repo, capsys, monkeypatch):
    repo = make_repo({"app.py": UNSAFE_YAML})
    events, report = _run(capsys, repo)
    calls = [e["data"] for e in events if e["type"] == "tool_call" and e["data"]["tool"] == "bandit"]
    # The scan and the verification's re-run of the fixed file, both warm.
    assert len(calls) == 2 and all(c.get("warm") for c in calls), calls
    b506 = [p for p in report["patches"] if p.get("verification")]
    assert b506 and b506[0]["verified_by"] == "tool", report["patches"]
    assert report["verification"]["verified"]
    # Nothing of it is left running (the helper server and its children).
    me = psutil.Process()
    assert not [p for p in me.children(recursive=True) if "_bandit_server" in " ".join(p.cmdline())]

    monkeypatch.setenv("SUPERQODE_RUN_BANDIT", "command")
    events2, report2 = _run(capsys, repo)
    calls2 = [e["data"] for e in events2 if e["type"] == "tool_call" and e["data"]["tool"] == "bandit"]
    assert len(calls2) == 2 and not any(c.get("warm") for c in calls2)
    assert _verdicts(report2) == _verdicts(report)


class _Fake:
    def __init__(self):
        self.runs: list[list[str]] = []

    def serves(self, tool: str) -> bool:
        return True

    async def run(self, argv, cwd, env, timeout):
        self.runs.append(argv)
        return "served"

    def stop(self) -> None:
        pass


def _starting(monkeypatch, made) -> threading.Event:
    """``start_warm_analyzer`` replaced by one that gives ``made`` once the
    returned event is set; the bandit beside this Python taken as there."""
    from superqode_ls.engine import runtime as engine_runtime

    release = threading.Event()

    def slow_start(rt):
        release.wait(30)
        return made

    monkeypatch.setattr(engine_runtime, "start_warm_analyzer", slow_start)
    monkeypatch.delenv("SUPERQODE_RUN_BANDIT", raising=False)
    monkeypatch.setattr(cli_run.Path, "exists", lambda self: True)
    return release


def test_while_it_starts_the_first_caller_waits_and_the_others_run_the_command(monkeypatch):
    fake = _Fake()
    release = _starting(monkeypatch, fake)
    warm = cli_run._WarmBandit.beside(Runtime.foreground(), ["security_tester", "lint_tester"])
    assert warm is not None
    assert cli_run._WarmBandit.beside(Runtime.foreground(), ["lint_tester"]) is None
    assert not warm.serves(BANDIT)  # not begun (the session has not started): the command
    warm.begin()

    async def scenario():
        assert warm.serves(BANDIT)
        first = asyncio.ensure_future(warm.run(["-r", "."], Path("."), {}, None))
        await asyncio.sleep(0)  # the first run has asked: it waits for the start
        assert not warm.serves(BANDIT)  # a second shard runs the command
        assert not warm.serves("/elsewhere/bin/bandit")
        release.set()
        return await first

    assert asyncio.run(scenario()) == "served"
    assert fake.runs == [["-r", "."]]
    warm.stop()


def test_a_run_that_ends_while_it_starts_does_not_wait_and_leaves_nothing(monkeypatch):
    fake = _Fake()
    stopped = []
    fake.stop = lambda: stopped.append(True)
    release = _starting(monkeypatch, fake)
    warm = cli_run._WarmBandit.beside(Runtime.foreground(), ["security_tester"])
    warm.begin()
    warm.stop()  # returns at once: an early error's line is not held back
    assert not stopped
    release.set()
    warm._thread.join(30)
    assert stopped == [True]  # what came up after the run ended is stopped
    warm.begin()  # never again once stopped
    assert not warm._thread.is_alive()


def test_a_start_that_fails_leaves_the_command(monkeypatch):
    from superqode_ls.engine import runtime as engine_runtime

    monkeypatch.setattr(engine_runtime, "start_warm_analyzer", lambda rt: None)
    monkeypatch.delenv("SUPERQODE_RUN_BANDIT", raising=False)
    monkeypatch.setattr(cli_run.Path, "exists", lambda self: True)
    warm = cli_run._WarmBandit.beside(Runtime.foreground(), ["security_tester"])
    assert warm is not None
    assert asyncio.run(warm.run(["-r", "."], Path("."), {}, None)) is None  # not begun
    warm.begin()
    assert asyncio.run(warm.run(["-r", "."], Path("."), {}, None)) is None  # did not come up
    assert not warm.serves(BANDIT)
    warm.stop()
    monkeypatch.setenv("SUPERQODE_RUN_BANDIT", "command")
    assert cli_run._WarmBandit.beside(Runtime.foreground(), ["security_tester"]) is None
