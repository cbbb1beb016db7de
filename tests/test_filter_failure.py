"""A bug in the noise filter (a rule raising on code it did not expect)
ends the run with its error, exit 3, and a report that claims nothing it
cannot: the roles' findings kept as they came, tagged ``unfiltered``, and a
verdict that is never ``pass``."""

from __future__ import annotations

import json
from pathlib import Path

from superqode_ls.cli import main
from superqode_ls.qe import noise
from tests.conftest import run_git


def _broken(*args, **kwargs):
    raise TypeError("'Call' object is not iterable")


def test_a_filter_that_raises_keeps_the_findings_and_never_claims_a_pass(
        make_repo, monkeypatch, capsys):
    repo = make_repo({"mod.py": "import os\n\n\ndef f():\n    return 1\n"})
    run_git(repo, "add", "-A")
    monkeypatch.setattr(noise, "filter_findings", _broken)
    code = main(["run", str(repo), "-r", "lint_tester", "--jsonl"])
    out = capsys.readouterr()
    assert code == 3, out.out[-2000:] + out.err[-2000:]
    events = [json.loads(line) for line in out.out.splitlines() if line.startswith("{")]
    done = [e for e in events if e["type"] == "session_complete"][-1]["data"]
    assert "not iterable" in (done.get("error") or "")
    assert done["verdict"] != "pass"
    report = json.loads(Path(done["report"]).read_text())
    assert report["verdict"] != "pass"
    f401 = [f for f in report["findings"] if f["rule_id"] == "F401"]
    assert f401 and "unfiltered" in f401[0]["tags"]
