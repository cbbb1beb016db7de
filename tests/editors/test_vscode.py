"""VS Code: the packaged .vsix installed into code-server, driven in Debian's
Chromium by Playwright like a user (command palette, Problems, Ctrl+.), with
the real superqode-ls. Screenshots go to the test artifacts; with
SUPERQODE_UPDATE_DOC_IMAGES=1 the ones in docs/editors.md are refreshed too."""

from __future__ import annotations

import io
import json
import os
import re
import shutil
import socket
import subprocess
import time
import tomllib
import urllib.request
import zipfile
from pathlib import Path

import pytest

from ..conftest import ROOT
from .conftest import (
    CATALOG_LINT,
    EXPECTED,
    PLANTED_IMPORTS,
    SERVER,
    artifact_dir,
    changed_files,
    kill_tree,
    plant_safe_fixes,
    publish,
    require,
    run_editor,
)

pytestmark = pytest.mark.editor
TOOLS = ROOT / "build" / "editor-tools" / "node_modules"
VSIX = ROOT / "editors" / "vscode" / "superqode.vsix"
SCENARIO = Path(__file__).with_name("vscode") / "scenario.cjs"


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def wait_healthy(url: str, proc: subprocess.Popen, timeout: float = 60) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            pytest.fail(f"code-server exited with {proc.returncode}")
        try:
            with urllib.request.urlopen(f"{url}/healthz", timeout=2) as r:
                if r.status == 200:
                    return
        except OSError:
            time.sleep(0.2)
    pytest.fail(f"code-server did not answer {url}/healthz in {timeout} s")


def user_settings(data: Path, extra: dict | None = None) -> None:
    settings = {
        "superqode.server.path": str(SERVER),
        "superqode.roles": ["lint_tester"],
        "workbench.startupEditor": "none",
        "workbench.tips.enabled": False,
        "workbench.enableExperiments": False,
        "security.workspace.trust.enabled": False,
        "telemetry.telemetryLevel": "off",
        "update.mode": "none",
        "extensions.autoUpdate": False,
        "extensions.autoCheckUpdates": False,
        "extensions.ignoreRecommendations": True,
        "chat.commandCenter.enabled": False,
        "chat.disableAIFeatures": True,
        "editor.minimap.enabled": False,
        "files.autoSave": "off",
        # Enter typed by the scenario is a new line: under load the word
        # suggestions' widget came up first and Enter took "import" from it.
        "editor.acceptSuggestionOnEnter": "off",
        "git.enabled": False,
        **(extra or {}),
    }
    settings = {k: v for k, v in settings.items() if v is not None}  # None: leave the setting out
    (data / "User").mkdir(parents=True)
    (data / "User" / "settings.json").write_text(json.dumps(settings, indent=2))


def run_scenario(folder: Path, editor_env: dict[str, str], tmp_path: Path, *, name: str,
                 settings: dict | None = None, timeout: float = 240,
                 workspace_trust: bool = False, open_file: str = "catalog.py") -> dict:
    """Install the .vsix into a fresh code-server, open ``folder`` and run the
    Playwright scenario ``name``; what it saw, as a dict."""
    node = require(shutil.which("node"), "node")
    entry = require(TOOLS / "code-server" / "out" / "node" / "entry.js", "code-server")
    playwright = require(TOOLS / "playwright-core", "playwright-core")
    chromium = require(shutil.which("chromium"), "chromium")
    vsix = require(VSIX, "editors/vscode/superqode.vsix")
    user_data, exts = tmp_path / "code-data", tmp_path / "code-ext"
    bench_server = os.environ.get("SQ_BENCH_SERVER")  # bench/editors.py --baseline: the superqode-ls timed
    if bench_server:
        settings = {**(settings or {}), "superqode.server.path": bench_server}
    trace = os.environ.get("SQ_VSCODE_TRACE")  # bench/editors.py --trace: a folder for both sides' logs
    if trace:
        traced = tmp_path / "superqode-ls-traced"
        traced.write_text(f'#!/bin/sh\nexec "{SERVER}" -v --log-file "{trace}/server.log" "$@"\n')
        traced.chmod(0o755)
        settings = {**(settings or {}), "superqode.server.path": str(traced), "superqode.trace.server": "messages"}
    user_settings(user_data, settings)
    cache = os.environ.get("SQ_BENCH_CODE_CACHE")  # bench/editors.py: a second start's code cache
    if cache:
        run_dir = Path(editor_env["SUPERQODE_HOME"]) / "run"
        run_dir.mkdir(mode=0o700, parents=True, exist_ok=True)
        shutil.copy2(cache, run_dir / Path(cache).name)
    base = [node, entry, "--user-data-dir", str(user_data), "--extensions-dir", str(exts)]
    shots = artifact_dir("vscode" if name == "main" else f"vscode-{name}")
    log = shots / "code-server.log"

    installed = run_editor([*base, "--install-extension", vsix], cwd=tmp_path, env=editor_env, timeout=120)
    assert installed.returncode == 0, installed.stdout + installed.stderr
    assert "superqode.superqode" in run_editor([*base, "--list-extensions", "--show-versions"],
                                               cwd=tmp_path, env=editor_env, timeout=60).stdout

    # superqode-ls must come from the superqode.server.path setting, not from PATH.
    code_env = {**editor_env, "PATH": os.pathsep.join(
        d for d in editor_env["PATH"].split(os.pathsep) if d and Path(d) != SERVER.parent)}
    port = free_port()
    url = f"http://127.0.0.1:{port}"
    with log.open("w") as out:
        server = subprocess.Popen(
            [*base, "--bind-addr", f"127.0.0.1:{port}", "--auth", "none", "--disable-telemetry",
             "--disable-update-check", *([] if workspace_trust else ["--disable-workspace-trust"]),
             "--disable-getting-started-override",
             str(folder)],
            cwd=tmp_path, env=code_env, stdout=out, stderr=subprocess.STDOUT, start_new_session=True,
        )
        try:
            wait_healthy(url, server)
            result = tmp_path / "vscode.json"
            env = {**editor_env, "SQ_PLAYWRIGHT": playwright, "SQ_URL": url, "SQ_FOLDER": str(folder),
                   "SQ_RESULT": str(result), "SQ_SHOTS": str(shots), "SQ_CHROMIUM": chromium,
                   "SQ_SCENARIO": name, "SQ_OPEN": open_file}
            proc = run_editor([node, str(SCENARIO)], cwd=tmp_path, env=env, timeout=timeout)
        finally:
            kill_tree(server, grace=10)
    (shots / "scenario.log").write_text(f"exit {proc.returncode}\n{proc.stdout}\n{proc.stderr}")
    if trace:
        for n, ext_log in enumerate(user_data.rglob("*SuperQode*.log")):
            shutil.copy(ext_log, Path(trace) / f"extension-{n}.log")
    data = json.loads(result.read_text()) if result.exists() else {}
    assert proc.returncode == 0 and data.get("exit") == 0, (
        f"{data.get('error')}\nsteps: {data.get('steps')}\n{proc.stderr[-3000:]}\nsee {shots}")
    data["shots"] = str(shots)
    return data


@pytest.mark.slow
def test_run_qe_from_the_palette_squiggles_problems_and_a_quick_fix(
    example_copy: Path, editor_env, tmp_path
):
    # Default settings: Fix All takes the safe fixes only. Besides catalog.py's
    # F401 (safe) and F841 (unsafe), an unused import in two files no editor opens.
    planted = plant_safe_fixes(example_copy)
    data = run_scenario(example_copy, editor_env, tmp_path, name="main")
    shots = Path(data["shots"])

    assert data["squiggles"] == sorted(CATALOG_LINT.values())  # lines 6 and 37
    # Problems rows read "Warning: `os` imported but unused at line 6 and character 8.
    # generated by superqode" and show "superqode(F401)" beside the message.
    for code, line in CATALOG_LINT.items():
        assert any(code in row["text"] and f" at line {line} " in row["label"]
                   and row["label"].endswith("generated by superqode")
                   for row in data["problems"]), (code, data["problems"])
    # One message per diagnostic: ruff's words once, no "title: F401 (unused-import): title".
    (f401_row,) = [r["label"] for r in data["problems"] if "`os` imported" in r["label"]]
    # A Warning, as ruff's own server shows F401.
    assert f401_row.startswith("Warning: `os` imported but unused at line 6 "), f401_row
    assert f401_row.count("imported but unused") == 1 and "(unused-import)" not in f401_row, f401_row
    # The hover is VS Code's diagnostic hover alone: the text once, not again from the server.
    assert data["hover"].count("imported but unused") == 1, data["hover"]
    # The end of the session is a notification with the verdict line.
    assert data["end"]["message"].startswith("SuperQode: session qe-"), data["end"]
    assert "4 finding(s)" in data["end"]["message"] and data["end"]["message"].endswith("conditional")
    assert data["end"]["buttons"] == ["Show Report", "Show Problems"]
    assert any("SuperQode (F401): Remove unused import" in o for o in data["offered"])
    assert data["status_running"].startswith("SuperQode qe-")  # the running session's id
    assert data["status"] == "SuperQode 0 4 0"  # 0 errors, 4 warnings (ruff lint, as ruff shows it)

    # After the F401 quick fix the other finding is still listed and squiggled, on its moved line.
    moved = CATALOG_LINT["F841"] - 1
    assert not any("`os` imported" in r["label"] for r in data["problems_after"])
    assert any("F841" in r["text"] and f" at line {moved} " in r["label"] for r in data["problems_after"]), \
        data["problems_after"]
    assert data["squiggles_after"] == [moved]
    # Fix All in Workspace: both safe fixes, in the two unopened files, named; the
    # unsafe one skipped with the reason; its finding still listed.
    said = data["fix_all"]["message"]
    assert "2 file(s) no editor has open: shop/pricing.py, shop/stats.py" in data["fix_all_asked"]
    assert said.startswith("SuperQode: applied 2 fixes ("), said  # the count in the report's words
    assert "shop/pricing.py" in said and "shop/stats.py" in said and "Skipped 1: F841 (ruff marks the fix unsafe" in said, said
    # The files it edited but no editor had open are named as unsaved, and the
    # message's own button writes them (checked on disk below).
    # By workspace path, as the server names them (not bare names that two folders share).
    assert said.endswith(" Unsaved: shop/pricing.py, shop/stats.py.") \
        or said.endswith(" Unsaved: shop/stats.py, shop/pricing.py."), said
    assert data["fix_all_save_button"] is True
    (left,) = [r for r in data["problems_after_fix_all"] if r["level"] == 2]
    assert "F841" in left["text"] and f" at line {moved} " in left["label"], left
    assert data["fix_all_status"] == "SuperQode 0 1 0"
    for rel, text in planted.items():
        assert (example_copy / rel).read_text() == text, rel  # File: Save All wrote exactly the fix
    # The unsafe fix is its own, labelled action; taken, nothing is left.
    assert any(o.startswith("SuperQode (F841): ") and "unsafe" in o for o in data["unsafe_offered"]), data["unsafe_offered"]
    assert data["fixed_all"] == "SuperQode 0 0 0"

    # Sessions lists the run; Show Report opened its Quality Report (window/showDocument).
    session_id = data["session_item"]["label"]
    assert session_id in data["status_running"]
    assert data["session_item"]["description"] == "done · quick · 4 finding(s) · conditional"
    # ... rendered: VS Code's Markdown preview, not the Markdown text.
    assert data["report_tab"].startswith("Preview qr-") and session_id in data["report_tab"]
    assert data["report_rendered"] == {"heading": "SuperQode quality report: CONDITIONAL", "tag": "H1"}

    catalog = example_copy / "shop" / "catalog.py"
    before = (ROOT / "examples" / "shop" / "shop" / "catalog.py").read_text()
    assert catalog.read_text() == before.replace("import os\n", "", 1).replace(
        "        count = len(matches)\n", "        len(matches)\n", 1)
    assert changed_files(example_copy) == [" M shop/catalog.py"]

    for name in ("vscode-quick-fix.png", "vscode-run-qe.png", "vscode-hover.png", "vscode-report.png",
                 "vscode-fix-all.png"):
        shot = shots / name
        assert shot.stat().st_size > 10_000, name
        publish(shot)


LIVE_TEXT = "import os\nimport subprocess\n\n\ndef run(cmd):\n    return subprocess.run(cmd, shell=True)\n"


@pytest.mark.slow
def test_squiggles_and_problems_on_open_and_save_without_a_command(example_copy: Path, editor_env, tmp_path):
    """The default settings (no superqode.roles, no command run): opening a
    file with an unused import and a shell=True call squiggles both and lists
    them in Problems; a second file opened likewise; a save that adds a third
    problem shows it."""
    first, second = example_copy / "shop" / "live_planted.py", example_copy / "shop" / "live_second.py"
    first.write_text(LIVE_TEXT)
    second.write_text(LIVE_TEXT)
    data = run_scenario(example_copy, editor_env, tmp_path, name="live", open_file="live_planted.py",
                        settings={"superqode.roles": None})
    assert {1, 6} <= set(data["on_open_squiggles"]), data["on_open_squiggles"]
    rows = [r["label"] for r in data["on_open_problems"] if r["level"] == 2]
    assert any(r.startswith("Warning: `os` imported but unused at line 1 ") for r in rows), rows
    assert any("shell=True" in r and " at line 6 " in r and r.startswith("Error: ") for r in rows), rows
    assert data["no_command_ran"] is True
    assert {1, 6} <= set(data["on_open_second_squiggles"]), data["on_open_second_squiggles"]
    assert {1, 2, 7} <= set(data["after_save_squiggles"]), data["after_save_squiggles"]
    saved = [r["label"] for r in data["after_save_problems"] if r["level"] == 2]
    assert any("`sys` imported but unused at line 1 " in r for r in saved), saved
    # The fix is titled by what it does, the first entry of Ctrl+.'s menu
    # (under its "Quick Fix" heading); ignoring is further down, by ruff's own comment.
    assert data["live_offered"][:2] == ["Quick Fix", "SuperQode (F401): Remove unused import: `sys`"], \
        data["live_offered"]
    assert "SuperQode: ignore F401 on this line (# noqa: F401)" in data["live_offered"]
    assert second.read_text() == "import sys\n" + LIVE_TEXT and first.read_text() == LIVE_TEXT
    assert not (example_copy / ".superqode" / "qe-artifacts").exists()  # quiet: no session report
    for name in ("vscode-live.png", "vscode-live-quick-fix.png"):
        publish(Path(data["shots"]) / name)


@pytest.mark.slow
def test_a_workspace_run_lists_the_findings_of_files_never_opened_in_problems(
    example_copy: Path, editor_env, tmp_path
):
    """VS Code pulls diagnostics: the findings of files it has not opened reach
    the Problems panel through workspace/diagnostic, listed like an open file's."""
    plant_safe_fixes(example_copy)  # a dirty copy: uncommitted edits
    data = run_scenario(example_copy, editor_env, tmp_path, name="problems",
                        settings={"superqode.roles": ["lint_tester", "security_tester"]}, timeout=360)
    rows = data["problems"]
    # Only catalog.py was ever opened.
    assert [t for t in data["opened_tabs"] if t.endswith(".py") or ".py" in t] == ["catalog.py"], data["opened_tabs"]

    def under(name: str) -> list[dict]:
        """The finding rows below the file row of ``name``."""
        out, inside = [], False
        for r in rows:
            if r["level"] == 1:  # "1 problems in file keys.py of folder shop"
                inside = f" in file {name} of folder " in r["label"]
            elif inside and r["level"] == 2:  # (3: a finding's related location)
                out.append(r)
        return out

    # The critical private key in keys.py, never opened: one row, as an error.
    (key,) = under("keys.py")
    assert "private key" in key["label"].lower() and " at line 3 " in key["label"], key
    assert key["label"].startswith("Error: ") and key["label"].endswith("generated by superqode"), key
    # storage.py, never opened: every planted security finding, on its line.
    storage = under("storage.py")
    for p in EXPECTED:
        # (noise is a hint: VS Code shows it in the file, not in Problems)
        if p["file"] == "shop/storage.py" and p["role"] == "security_tester" and not p.get("noise"):
            assert any(f" at line {p['line']} " in r["label"] for r in storage), (p, storage)
    # The planted unused imports of the other unopened files, and the open file's two.
    for rel, _, line, lineno in PLANTED_IMPORTS:
        name = rel.rsplit("/", 1)[1]
        (row,) = under(name)
        assert f"`{line.split()[1]}` imported but unused at line {lineno} " in row["label"], row
    assert len(under("catalog.py")) == 2
    assert "finding(s)" in data["end"]["message"]
    n = int(data["end"]["message"].split(": ")[-1].split(" finding")[0])
    # Every finding is listed but the two that are noise, bandit's B404 (import
    # subprocess, an advisory) and B324 (md5 with no input traced to it in the
    # example's code): noise is an LSP Hint, which VS Code shows in the file,
    # not in Problems.
    assert len([r for r in rows if r["level"] == 2]) == n - 2, (n, rows)
    assert not any(" at line 6 " in r["label"] for r in storage), storage
    assert changed_files(example_copy) == sorted(f" M {rel}" for rel, *_ in PLANTED_IMPORTS)
    publish(Path(data["shots"]) / "vscode-problems-unopened.png")


@pytest.mark.slow
def test_a_fresh_code_server_with_only_the_vsix_starts_the_bundled_server(
    example_copy: Path, editor_env, tmp_path
):
    """No superqode.server.* setting and no superqode-ls on PATH: the extension
    installs the wheels it carries into a venv of its own and starts that."""
    data = run_scenario(example_copy, editor_env, tmp_path, name="bundled",
                        settings={"superqode.server.path": None}, timeout=480)
    assert data["status_ready"].startswith("SuperQode ")  # not "SuperQode: no server"
    assert data["squiggles"] == sorted(CATALOG_LINT.values())
    assert data["end"]["message"].startswith("SuperQode: session qe-")
    # The output channel names where the server came from: the bundled venv,
    # under the extension's global storage in this fresh user-data dir.
    logs = "\n".join(p.read_text(errors="replace")
                     for p in (tmp_path / "code-data").rglob("*SuperQode*.log"))
    (Path(data["shots"]) / "superqode-output.log").write_text(logs)
    started = [ln for ln in logs.splitlines() if "Starting " in ln]
    assert started and all("(from bundled server (" in ln for ln in started), logs[-3000:]
    venv = tmp_path / "code-data" / "User" / "globalStorage" / "superqode.superqode" / "server"
    assert any(venv.glob("superqode_ls-*/.superqode-bundle.json")), list(venv.glob("*"))
    assert changed_files(example_copy) == []
    publish(Path(data["shots"]) / "vscode-bundled-server.png")


@pytest.mark.slow
def test_the_trust_question_stays_visible_until_answered(example_copy: Path, editor_env, tmp_path,
                                                        isolated_home):
    """VS Code's workspace trust is off here, so SuperQode asks itself: the
    notification, and a status-bar item that outlives it and asks again."""
    data = run_scenario(example_copy, editor_env, tmp_path, name="trust",
                        settings={"superqode.roles": ["lint_tester", "unit_tester"]}, timeout=360)
    assert "unit_tester" in data["question"]["message"] and str(example_copy) in data["question"]["message"]
    assert data["question"]["buttons"] == ["Trust folder", "Not now"]
    assert data["trust_item"].endswith("SuperQode: trust this folder?")
    assert {"Trust folder", "Not now"} <= set(data["dialog"]["buttons"]), data["dialog"]
    assert "unit_tester" in data["dialog"]["text"], data["dialog"]
    assert data["item_gone"] is True
    # One run, one end: the static roles did not wait for the answer; trusted,
    # unit_tester ran the project's tests in the same run (two planted
    # failures), and the end names all four findings.
    assert data["end"]["message"].startswith("SuperQode: session qe-"), data["end"]
    assert "4 finding(s)" in data["end"]["message"], data["end"]
    assert changed_files(example_copy) == []
    publish(Path(data["shots"]) / "vscode-trust-question.png")


@pytest.mark.slow
def test_restricted_mode_answers_the_trust_question_with_not_now(example_copy: Path, editor_env, tmp_path,
                                                                 isolated_home):
    """VS Code's workspace trust on, the folder not trusted (Restricted Mode):
    the extension still runs, no SuperQode prompt appears, the roles that run
    the folder's code are skipped and the analyzers' findings come."""
    data = run_scenario(example_copy, editor_env, tmp_path, name="restricted", workspace_trust=True,
                        settings={"superqode.roles": ["lint_tester", "unit_tester"],
                                  "security.workspace.trust.enabled": True,
                                  "security.workspace.trust.startupPrompt": "never"}, timeout=300)
    assert data["restricted"]["message"] == (
        "SuperQode: roles that run this folder's code are skipped in Restricted Mode.")
    assert data["restricted"]["buttons"] == ["Manage Workspace Trust"]
    assert data["asked"] is False  # no "Trust folder" question of SuperQode's own
    assert data["status"] == "SuperQode 0 2 0"  # the two lint findings, Warnings as ruff shows them
    assert "2 finding(s)" in data["end"]["message"], data["end"]  # lint only: the tests never ran
    from superqode_ls.server.trust import remembered

    assert remembered() == []  # nothing trusted on disk
    assert changed_files(example_copy) == []


@pytest.mark.slow
def test_a_missing_server_is_said_once_with_the_way_to_fix_it(example_copy: Path, editor_env, tmp_path):
    missing = tmp_path / "nowhere" / "superqode-ls"
    data = run_scenario(example_copy, editor_env, tmp_path, name="missing",
                        settings={"superqode.server.path": str(missing)}, timeout=180)
    # One error notification naming the setting and the path, with the install hint.
    (toast,) = data["toasts"]
    assert f"superqode.server.path is set to {missing}, which is not an executable file." in toast
    assert "pip install superqode-ls" in toast
    assert data["buttons"] == ["Open Settings", "Show Log"]
    assert data["status"] == "SuperQode: no server"
    # "Open Settings" shows the server settings. They are machine-overridable:
    # code-server is a remote window, where only the Remote tab lists them.
    assert "Superqode › Server: Path" in data["settings"]
    assert "Superqode › Server: Python" in data["settings"]
    # ... as a text box to type the path into (on the Remote tab it is empty:
    # the bad path is in the User settings), not an "Edit in settings.json" link.
    assert data["path_box"] == "" and data["path_item_links"] is False
    # Run QE says the server is not running; nothing was touched.
    assert data["run"] == "SuperQode: the server is not running (see the SuperQode output)."
    assert changed_files(example_copy) == []


def test_the_extension_contributes_every_server_setting_and_the_commands():
    from superqode_ls.server.settings import FIELDS

    manifest = json.loads((ROOT / "editors" / "vscode" / "package.json").read_text())
    props = manifest["contributes"]["configuration"]["properties"]
    for name in sorted(FIELDS):
        prop = props[f"superqode.{name}"]
        assert prop.get("description") or prop.get("markdownDescription"), name
    titles = {f"{c['category']}: {c['title']}" for c in manifest["contributes"]["commands"]}
    assert {"SuperQode: Run QE", "SuperQode: Run QE (deep)", "SuperQode: Cancel", "SuperQode: Fix All",
            "SuperQode: Show Report", "SuperQode: Sessions",
            "SuperQode: New Worktree…", "SuperQode: Open Worktree"} <= titles
    # Every contributed command has a handler; the worktree ones open a new window.
    source = (ROOT / "editors" / "vscode" / "src" / "extension.ts").read_text()
    for c in manifest["contributes"]["commands"]:
        assert f'command("{c["command"]}"' in source, c["command"]
    assert '"vscode.openFolder"' in source and "forceNewWindow: true" in source
    assert '"superqode.newWorktree"' in source and '"superqode.openWorktree"' in source
    # The role names offered in settings are the server's roles.
    from superqode_ls.qe.roles import REGISTRY

    assert set(props["superqode.roles"]["items"]["enum"]) == set(REGISTRY)


def test_the_vsix_carries_the_server_and_the_server_settings_are_text_boxes():
    """What the bundled start needs is inside the .vsix: a wheel of this
    checkout's superqode-ls, pip, and every dependency the manifest lists;
    the server settings are plain strings (a text box in the Settings UI)."""
    with zipfile.ZipFile(require(VSIX, "editors/vscode/superqode.vsix")) as z:
        names = set(z.namelist())
        manifest = json.loads(z.read("extension/bundled/manifest.json"))
        server_wheel = z.read(f"extension/bundled/wheels/{manifest['server']}")
    assert manifest["server"].startswith("superqode_ls-") and manifest["pip"].startswith("pip-")
    assert {f"extension/bundled/wheels/{w}" for w in manifest["wheels"]} <= names
    wheel_deps = {w.split("-")[0].lower().replace("_", "-") for w in manifest["wheels"]}
    deps = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]["dependencies"]
    for dep in deps:
        name = re.split(r"[<>=!~\[ ;]", dep, maxsplit=1)[0].lower().replace("_", "-")
        assert name in wheel_deps, (name, sorted(wheel_deps))
    # The wheel is this checkout's server (the same convert.py the tests run).
    with zipfile.ZipFile(io.BytesIO(server_wheel)) as w:
        assert w.read("superqode_ls/server/convert.py") == (ROOT / "superqode_ls" / "server" / "convert.py").read_bytes()

    manifest_json = json.loads((ROOT / "editors" / "vscode" / "package.json").read_text())
    props = manifest_json["contributes"]["configuration"]["properties"]
    for key in ("superqode.server.path", "superqode.server.python"):
        assert props[key]["type"] == "string" and props[key]["default"] == "", key

