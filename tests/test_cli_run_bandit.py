"""``superqe run``'s own warm bandit (cli/run.py ``_warm_bandit``): begun
beside the sandbox's making, it serves the security role's scan and the fix
verification's re-run, with the same results as the command. Its policy
while it starts is the language server's (tests/test_warm_bandit_start.py)."""

from __future__ import annotations

import json
import shutil
import sys
from pathlib import Path

import psutil
import pytest

from superqode_ls.cli import run as cli_run
from superqode_ls.qe import verify_kept
from superqode_ls.qe.roles._bandit_cache import cache_dir
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
    # the first run's bandit results are kept (_bandit_cache): the command must run again
    shutil.rmtree(cache_dir(repo), ignore_errors=True)
    # and the verification step's kept verdicts would spare it the re-check (verify_kept.py)
    verify_kept.cache_file(repo).unlink(missing_ok=True)
    events2, report2 = _run(capsys, repo)
    calls2 = [e["data"] for e in events2 if e["type"] == "tool_call" and e["data"]["tool"] == "bandit"]
    assert len(calls2) == 2 and not any(c.get("warm") for c in calls2)
    assert _verdicts(report2) == _verdicts(report)


def test_only_a_run_with_the_security_role_gets_one(monkeypatch):
    monkeypatch.delenv("SUPERQODE_RUN_BANDIT", raising=False)
    warm = cli_run._warm_bandit(Runtime.foreground(), ["security_tester", "lint_tester"])
    if Path(BANDIT).exists() and landlock.abi() is not None:
        assert warm is not None and not warm.serves(BANDIT)  # not begun: the session has not started
        warm.stop()
    else:  # no bandit, or guard only (it would serve no run): none started
        assert warm is None
    assert cli_run._warm_bandit(Runtime.foreground(), ["lint_tester"]) is None
    monkeypatch.setenv("SUPERQODE_RUN_BANDIT", "command")
    assert cli_run._warm_bandit(Runtime.foreground(), ["security_tester"]) is None
