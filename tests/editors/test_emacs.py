"""Emacs + eglot (Debian's emacs-nox and elpa-eglot) with editors/emacs and
the real superqode-ls: findings in flymake, a quick fix applied and saved."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from ..conftest import ROOT
from .conftest import (
    CATALOG_LINT,
    SERVER,
    artifact_dir,
    changed_files,
    plant_safe_fixes,
    require,
    run_editor,
)

pytestmark = pytest.mark.editor
HERE = Path(__file__).with_name("emacs")


def emacs(scenario: str, file: Path, repo: Path, env: dict, tmp_path: Path, timeout: float = 150) -> dict:
    """Run tests/editors/emacs/SCENARIO.el in Emacs --batch on ``file``; what
    it recorded (JSON), once it exited with success."""
    exe = require(shutil.which("emacs"), "emacs (apt-get install emacs-nox elpa-eglot)")
    result = tmp_path / f"emacs-{scenario}.json"
    env = {**env, "SQ_PACKAGE": str(ROOT / "editors" / "emacs"), "SQ_SERVER": str(SERVER),
           "SQ_FILE": str(file), "SQ_RESULT": str(result)}
    proc = run_editor([exe, "--batch", "-l", str(HERE / f"{scenario}.el")], cwd=repo, env=env,
                      timeout=timeout)
    (artifact_dir("emacs") / f"{scenario}.log").write_text(
        f"exit {proc.returncode}\n--- stdout\n{proc.stdout}\n--- stderr\n{proc.stderr}\n")
    data = json.loads(result.read_text()) if result.exists() else {}
    assert proc.returncode == 0 and data.get("exit") == 0, f"{data.get('error')}\n{proc.stderr[-3000:]}"
    return data


def test_flymake_shows_planted_findings_and_quick_fixes_apply(example_copy: Path, editor_env, tmp_path):
    catalog = example_copy / "shop" / "catalog.py"
    before = catalog.read_text()
    planted = plant_safe_fixes(example_copy)
    data = emacs("run_fix", catalog, example_copy, editor_env, tmp_path)

    # flymake shows what eglot got from the server: "superqode [CODE]: message".
    shown = {d["line"]: d["text"] for d in data["diagnostics"]}
    assert sorted(shown) == sorted(CATALOG_LINT.values())
    for code, line in CATALOG_LINT.items():
        assert shown[line].startswith(f"superqode [{code}]: ")
    # One message: ruff's words once after the code, no "(unused-import)" repeat.
    assert shown[CATALOG_LINT["F401"]] == "superqode [F401]: `os` imported but unused"
    # The end of the session reaches the echo area once, with its verdict
    # (eglot 1.9 shows no $/progress).
    (end,) = data["end-messages"]
    # The server's own end line, with the fix counts its report and end
    # message give (not a shorter line of the package's own).
    assert end.startswith("SuperQode: session qe-") and end.endswith(", conditional"), end
    assert ": 4 finding(s), 0 verified fix(es), " in end and "tool-verified only" in end, end
    assert end == f"SuperQode: {data['server-end']}"
    assert data["status"] == end
    assert data["actions"] == ["SuperQode (F401): Remove unused import: `os`"]
    assert data["line6"] == "from dataclasses import dataclass, field"
    assert data["disk-after-fix"] == before.replace("import os\n", "", 1)
    # The other finding is still shown, on its moved line.
    moved = CATALOG_LINT["F841"] - 1
    assert [(d["line"], d["text"][:17]) for d in data["after-fix"]] == [(moved, "superqode [F841]:")]
    # C-u M-x superqode-fix-all with the default settings: the safe fixes of
    # both files no buffer visits, named; the unsafe F841 one skipped, still shown.
    result = data["fix-all"]
    assert result["applied"] == 2 and sorted(Path(f).name for f in result["files"]) == ["pricing.py", "stats.py"]
    assert [(s["rule"], "unsafe" in s["reason"]) for s in result["skipped"]] == [("F841", True)], result
    (said,) = data["fix-all-messages"]
    assert said.startswith("SuperQode: applied 2 fixes (") and "Skipped 1: F841" in said, said
    assert ") in shop/pricing.py, shop/stats.py." in said, said
    assert "2 file(s) no editor has open: shop/pricing.py, shop/stats.py" in data["fix-all-asked"]
    assert said.endswith(" Unsaved: shop/pricing.py, shop/stats.py (C-x s saves them)."), said
    assert list(data["modified"]) == ["pricing.py", "stats.py"]  # (beside catalog.py) unsaved until saved
    assert [d["line"] for d in data["after-fix-all"]] == [moved]
    for rel, text in planted.items():
        assert (example_copy / rel).read_text() == text, rel
    # The unsafe fix is offered on its own, labelled; applied, it changes its line only.
    assert any(t.startswith("SuperQode (F841): ") and t.endswith("unsafe: review it)")
               for t in data["unsafe-actions"]), data["unsafe-actions"]
    assert catalog.read_text() == before.replace("import os\n", "", 1).replace(
        "        count = len(matches)\n", "        len(matches)\n", 1)
    assert changed_files(example_copy) == [" M shop/catalog.py"]


def test_a_quick_fix_that_removes_a_line_keeps_the_finding_below_it(example_copy: Path, editor_env, tmp_path):
    """An unused import planted right above B404 (`import subprocess`) and right
    above the hard-coded password: after each F401 fix flymake still shows every
    other finding, one line up where it was below the removed line."""
    storage = example_copy / "shop" / "storage.py"
    original = storage.read_text()
    storage.write_text(original.replace("import subprocess\n", "import sys\nimport subprocess\n", 1)
                       .replace("DB_PASSWORD =", "import os\nDB_PASSWORD =", 1))
    data = emacs("adjacent", storage, example_copy, editor_env, tmp_path, timeout=180)

    def shown(key: str) -> list[tuple[str, int]]:
        # "superqode [B105]: Possible hardcoded password: ..." -> ("B105", line)
        return sorted((d["text"].split("[", 1)[1].split("]", 1)[0], d["line"]) for d in data[key])

    before = shown("before")
    assert ("F401", 6) in before and ("B404", 7) in before, before
    assert ("F401", 12) in before and ("B105", 13) in before and ("secret-aws-access-key-id", 14) in before
    assert len(before) >= 8, before
    after_sys = sorted((c, ln - 1 if ln > 6 else ln) for c, ln in before if (c, ln) != ("F401", 6))
    assert shown("after-sys") == after_sys
    after_os = sorted((c, ln - 1 if ln > 11 else ln) for c, ln in after_sys if (c, ln) != ("F401", 11))
    assert shown("after-os") == after_os
    assert storage.read_text() == original


def test_run_roles_picks_with_completion_and_runs_those(example_copy: Path, editor_env, tmp_path):
    """M-x superqode-run-roles: the server's roles, each annotated with what
    it does or why it cannot run now, the settings' roles as the default; the
    session runs exactly the roles picked."""
    data = emacs("roles", example_copy / "shop" / "storage.py", example_copy, editor_env, tmp_path)
    assert data["prompt"] == "SuperQode roles (default lint_tester): "
    assert {"lint_tester", "security_tester", "agent_unit_tester"} <= set(data["names"])
    assert data["lint-annotation"].startswith("  ruff lint")
    assert data["agent-annotation"].startswith("  cannot run now: no provider configured")
    assert data["picked"] == ["security_tester"]
    assert data["worker-prompt"] == "Agent roles' worker (default builtin): "
    assert data["workers"] == ["builtin"] and data["worker"] == "builtin"
    (qr,) = (example_copy / ".superqode" / "qe-artifacts" / "qr").glob(f"qr-*-{data['session']}.json")
    assert [r["role"] for r in json.loads(qr.read_text())["roles"]] == ["security_tester"]
    assert changed_files(example_copy) == []


LIVE_TEXT = "import os\nimport subprocess\n\n\ndef run(cmd):\n    return subprocess.run(cmd, shell=True)\n"


def test_flymake_shows_findings_on_open_and_save_without_a_command(example_copy: Path, editor_env, tmp_path):
    """The default settings (no roles, no command): opening a file with an
    unused import and a shell=True call shows both in flymake; so does a
    second file opened while the server runs; a save that adds a third
    problem shows it."""
    first, second = example_copy / "shop" / "live_planted.py", example_copy / "shop" / "live_second.py"
    first.write_text(LIVE_TEXT)
    second.write_text(LIVE_TEXT)
    editor_env = {**editor_env, "SQ_SECOND": str(second)}
    data = emacs("live", first, example_copy, editor_env, tmp_path)

    def shown(key: str) -> set[tuple[str, int]]:
        return {(d["code"], d["line"]) for d in data[key]}

    assert {("F401", 1), ("B602", 6)} <= shown("on-open"), data["on-open"]
    assert {("F401", 1), ("B602", 6)} <= shown("on-open-second"), data["on-open-second"]
    assert {("F401", 1), ("F401", 2), ("B602", 7)} <= shown("after-save"), data["after-save"]
    assert second.read_text() == "import sys\n" + LIVE_TEXT and first.read_text() == LIVE_TEXT
    assert not (example_copy / ".superqode" / "qe-artifacts").exists()  # quiet: no report
