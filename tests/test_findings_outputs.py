"""Recall on real vulnerable code, and every output of one run agreeing.

A miniature of DVPWA (tests/data/dvpwa_mini: its flawed files as they are)
through ``superqe run``: each documented flaw at its line, worth acting on
(not noise) and at least medium, the verdict resting on them. Then the JSONL
``finding`` events, the JSON report, SARIF, Markdown and the CLI's list carry
the same findings, with the same ids and severities, most important first
(also on the bundled example)."""

from __future__ import annotations

import json
import re
import shutil
from pathlib import Path

import pytest

from superqode_ls.cli import main
from superqode_ls.models import Severity
from superqode_ls.qe.roles.base import tool_path
from tests.conftest import ROOT, run_git

pytestmark = pytest.mark.skipif(tool_path("bandit") is None or tool_path("ruff") is None,
                                reason="bandit and ruff needed")

MINI = ROOT / "tests" / "data" / "dvpwa_mini"
# (file, line, rule, least severity): DVPWA's README and code.
FLAWS = [
    ("sqli/dao/student.py", 42, "sql-injection", Severity.high),
    ("sqli/app.py", 33, "template-autoescape-off", Severity.high),  # stored XSS
    ("sqli/dao/user.py", 41, "weak-password-hash", Severity.high),  # MD5 passwords
    ("sqli/app.py", 23, "debug-mode", Severity.medium),
    ("sqli/middlewares.py", 20, "insecure-cookie", Severity.medium),  # JS-readable session
    ("config/dev.yaml", 3, "secret-config-password", Severity.medium),
]


def _repo(src: Path, dest: Path) -> Path:
    shutil.copytree(src, dest, ignore=shutil.ignore_patterns(".superqode", "__pycache__"))
    if not (dest / ".git").exists():
        run_git(dest, "init", "-q")
        run_git(dest, "add", "-A")
        run_git(dest, "commit", "-q", "-m", "initial")
    return dest


def _run(repo: Path, capsys, *extra: str):
    sarif = repo.parent / f"{repo.name}.sarif"
    argv = ["run", str(repo), "-r", "security_tester", "-r", "lint_tester", "--jsonl",
            "--sarif", str(sarif), *extra]
    code = main(argv)
    events = [json.loads(line) for line in capsys.readouterr().out.splitlines()]
    report = json.loads(Path(events[-1]["data"]["report"]).read_text())
    md = Path(events[-1]["data"]["markdown"]).read_text()
    return code, events, report, json.loads(sarif.read_text()), md


def _agree(events, report, sarif, md):
    want = [(f["id"], f["severity"], f.get("noise")) for f in report["findings"]]
    assert want, "nothing to compare"
    streamed = [(e["data"]["finding"]["id"], e["data"]["finding"]["severity"],
                 e["data"]["finding"].get("noise")) for e in events if e["type"] == "finding"]
    assert streamed == want  # once each, final severities, the report's order
    results = [(r["properties"]["findingId"], r["properties"]["severity"],
                r["properties"].get("noise")) for run in sarif["runs"] for r in run["results"]]
    assert sorted(results, key=str) == sorted(want, key=str)
    ids = re.findall(r"^- \*\*Id\*\* `([^`]+)`", md, re.MULTILINE)
    assert ids == [f[0] for f in want]  # Markdown: the same order
    # most important first: nothing worth acting on after noise, severities descending
    ranks = [(f[2] is not None, -Severity(f[1]).rank) for f in want]
    assert ranks == sorted(ranks)


def test_dvpwa_flaws_found_at_their_lines_and_decide_the_verdict(tmp_path, capsys):
    repo = _repo(MINI, tmp_path / "dvpwa")
    code, events, report, sarif, md = _run(repo, capsys)
    worth = [f for f in report["findings"] if f.get("noise") is None]
    for file, line, rule, least in FLAWS:
        hits = [f for f in worth if f["file"] == file and f["range"]["start_line"] == line
                and (f["rule_id"] == rule or rule in f["related_rules"])]
        assert hits, f"missed {rule} at {file}:{line}"
        assert Severity(hits[0]["severity"]).at_least(least), hits[0]
    assert code == 1 and report["verdict"] == "fail"
    deciding = {(f["file"], f["range"]["start_line"]) for f in worth
                if Severity(f["severity"]).at_least(Severity.high)}
    flaws = {(file, line) for file, line, _, _ in FLAWS}
    assert deciding and deciding <= flaws, deciding - flaws  # nothing else fails the run
    _agree(events, report, sarif, md)


def test_every_output_agrees_on_the_example(tmp_path, capsys):
    repo = _repo(ROOT / "examples" / "shop", tmp_path / "shop")
    code, events, report, sarif, md = _run(repo, capsys, "--fail-on", "never")
    assert code == 0
    _agree(events, report, sarif, md)
    # the CLI's own list: the same order, noise left for --show-noise
    main(["run", str(repo), "-r", "security_tester", "-r", "lint_tester", "--fail-on", "never"])
    printed = capsys.readouterr().out.splitlines()
    listed = [line for line in printed if re.match(r"^[\w./-]+:\d+:\d+: ", line)]
    worth = [f for f in report["findings"] if f.get("noise") is None]
    assert [(line.split(": ")[0], line.split()[1]) for line in listed] == [
        (f"{f['file']}:{f['range']['start_line']}:{f['range']['start_col']}", f["severity"])
        for f in worth]
