"""Emacs + eglot (Debian's emacs-nox and elpa-eglot) with editors/emacs and
the real superqode-ls: findings in flymake, a quick fix applied and saved."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from ..conftest import ROOT
from .conftest import CATALOG_LINT, SERVER, artifact_dir, changed_files, require, run_editor

pytestmark = pytest.mark.editor
HERE = Path(__file__).with_name("emacs")


def test_flymake_shows_planted_findings_and_quick_fixes_apply(example_copy: Path, editor_env, tmp_path):
    emacs = require(shutil.which("emacs"), "emacs (apt-get install emacs-nox elpa-eglot)")
    catalog = example_copy / "shop" / "catalog.py"
    before = catalog.read_text()
    result = tmp_path / "emacs.json"
    env = {**editor_env, "SQ_PACKAGE": str(ROOT / "editors" / "emacs"), "SQ_SERVER": str(SERVER),
           "SQ_FILE": str(catalog), "SQ_RESULT": str(result)}
    proc = run_editor([emacs, "--batch", "-l", str(HERE / "run_fix.el")], cwd=example_copy, env=env,
                      timeout=150)
    (artifact_dir("emacs") / "run_fix.log").write_text(
        f"exit {proc.returncode}\n--- stdout\n{proc.stdout}\n--- stderr\n{proc.stderr}\n")
    data = json.loads(result.read_text()) if result.exists() else {}
    assert proc.returncode == 0 and data.get("exit") == 0, f"{data.get('error')}\n{proc.stderr[-3000:]}"

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
    assert end.startswith("SuperQode: session qe-") and end.endswith(": 2 finding(s), conditional"), end
    assert data["status"] == end
    assert data["actions"] == ["SuperQode: fix F401 (`os` imported but unused)"]
    assert data["line6"] == "from dataclasses import dataclass, field"
    assert data["disk-after-fix"] == before.replace("import os\n", "", 1)
    # superqode-fix-all then applied the F841 fix; nothing else changed anywhere.
    assert catalog.read_text() == before.replace("import os\n", "", 1).replace(
        "        count = len(matches)\n", "        len(matches)\n", 1)
    assert changed_files(example_copy) == [" M shop/catalog.py"]
