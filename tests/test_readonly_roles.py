"""The read-only roles (lint, security) cannot edit the sandbox, even when the
project's own configuration asks its tools to (ruff ``fix = true``, as flask
sets it): lint counts equal ``ruff check --no-fix`` on the same tree, and
bandit, running beside ruff, sees the files as they are."""

from __future__ import annotations

import asyncio
import json
import subprocess
from pathlib import Path

from superqode_ls.cli import main
from superqode_ls.qe.roles.base import tool_path
from superqode_ls.qe.roles.lint import LintTester
from superqode_ls.qe.roles.security import SecurityTester
from tests.role_helpers import at, make_ctx, tree_state

# ruff would remove the unused imports above the subprocess call (moving it
# up two lines) if it were allowed to apply fixes.
FIXING_PROJECT = {
    "pyproject.toml": '[tool.ruff]\nfix = true\nunsafe-fixes = true\n\n'
                      '[tool.ruff.lint]\nselect = ["E", "F", "I"]\n',
    "pkg/__init__.py": "",
    "pkg/run.py": (
        "import os\nimport sys\nimport subprocess\n\n\n"
        "def go(arg):\n"
        "    unused = 1\n"
        "    return subprocess.call('ls ' + arg, shell=True)\n"
    ),
    "pkg/other.py": "import json\nimport re\n\nX = 1\n",
}


def _ruff_no_fix_count(root: Path) -> int:
    ruff = tool_path("ruff")
    assert ruff is not None
    proc = subprocess.run(
        [ruff, "check", "--no-fix", "--no-cache", "--output-format", "json", "--exit-zero", "."],
        cwd=root, capture_output=True, text=True, check=True,
    )
    return len(json.loads(proc.stdout))


def test_lint_and_security_in_parallel_leave_the_tree_byte_identical(make_repo):
    repo = make_repo(FIXING_PROJECT)
    before = tree_state(repo)

    async def both():
        # As the pipeline runs them: side by side on one sandbox.
        return await asyncio.gather(
            LintTester().run(make_ctx(repo)), SecurityTester().run(make_ctx(repo))
        )

    lint, security = asyncio.run(both())
    assert lint.status == "ok" and security.status == "ok"
    assert tree_state(repo) == before  # no fixes applied, no cache dirs

    # The project's fix = true changes nothing: same count as --no-fix.
    assert len(lint.findings) == _ruff_no_fix_count(repo) >= 5
    assert at(lint.findings, "F401", "pkg/run.py", 1)
    # bandit saw the unedited file: the shell call is still on line 8.
    assert at(security.findings, "B602", "pkg/run.py", 8)
    assert tree_state(repo) == before


def test_pipeline_lint_counts_match_ruff_no_fix(make_repo, capsys):
    repo = make_repo(FIXING_PROJECT)
    before = tree_state(repo)
    expected = _ruff_no_fix_count(repo)
    code = main(["run", str(repo), "--jsonl", "--fail-on", "never",
                 "-r", "lint_tester", "-r", "security_tester"])
    out = capsys.readouterr().out
    assert code == 0, out[-2000:]
    events = [json.loads(line) for line in out.splitlines()]
    report = json.loads(Path(events[-1]["data"]["report"]).read_text())
    lint_run = next(r for r in report["roles"] if r["role"] == "lint_tester")
    assert lint_run["findings"] == expected
    b602 = [f for f in report["findings"] if f["rule_id"] == "B602"]
    assert [f["range"]["start_line"] for f in b602] == [8]
    after = {k: v for k, v in tree_state(repo).items() if not k.startswith(".superqode")}
    assert after == {k: v for k, v in before.items() if not k.startswith(".superqode")}
