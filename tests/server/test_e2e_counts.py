"""One count of a run's findings everywhere: its progress while the
findings stream in, its end message and its report, through a real client
over stdio with the real analyzers."""

from __future__ import annotations

import glob
import json
import re
from pathlib import Path

from pytest_lsp import LanguageClient

from .conftest import run_and_wait, start
from .test_e2e_sessions import progress_messages

SHELL = "import os\nimport subprocess\n\n\ndef run(cmd):\n    return subprocess.run(cmd, shell=True)\n"


def report_findings(folder: Path, sid: str) -> list[dict]:
    for path in glob.glob(str(folder / ".superqode" / "qe-artifacts" / "**" / f"*{sid}*.json"),
                          recursive=True):
        data = json.loads(Path(path).read_text(encoding="utf-8"))
        if isinstance(data, dict) and "findings" in data and "roles" in data:
            return data["findings"]
    raise AssertionError(f"no report for {sid}")


async def test_progress_counts_a_problem_two_tools_report_once_as_the_end_and_report_do(
    lsp: LanguageClient, shop: Path
):
    # ruff's flake8-bandit rules on: ruff S602 and bandit B602 report the one
    # shell=True call, ruff S404 and bandit B404 the one import (the report
    # merges each pair); F401 is ruff's alone.
    pyproject = shop / "pyproject.toml"
    pyproject.write_text(pyproject.read_text().replace('select = ["E", "F"]', 'select = ["E", "F", "S"]'))
    (shop / "shop" / "shell.py").write_text(SHELL, encoding="utf-8")
    await start(lsp, shop)
    sid = await run_and_wait(lsp, {"roles": ["lint_tester", "security_tester"]}, timeout=180)
    findings = report_findings(shop, sid)
    shell = [f for f in findings if f["file"] == "shop/shell.py"]
    # Each pair was streamed twice and merged once (the test would prove
    # nothing if the tools had not both reported the line).
    assert any("also:" in t for f in shell for t in f["tags"]), shell
    end = next(v for v in lsp.progress_reports[f"superqode/{sid}"] if type(v).__name__ == "WorkDoneProgressEnd")
    assert end.message.startswith(f"session {sid}: {len(findings)} finding(s), "), end.message
    counts = [int(m.group(1)) for msg in progress_messages(lsp, sid)
              if (m := re.search(r"(\d+) finding\(s\)$", msg))]
    assert counts and counts[-1] == len(findings), (counts, len(findings))
    assert counts == sorted(counts)  # never more than the end said, then fewer
