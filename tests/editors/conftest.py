"""Real editors driving the real server: Neovim, Emacs + eglot, VS Code
(code-server). What each needs is installed by scripts/setup-editors.sh; a
missing editor fails its tests with the command to run, never skips them."""

from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
import sys
import tempfile
from pathlib import Path

import psutil
import pytest

from ..conftest import ROOT, run_git

BIN = Path(sys.executable).parent
SERVER = BIN / "superqode-ls"
ARTIFACTS = Path(os.environ.get("SUPERQODE_TEST_ARTIFACTS", ROOT / "build" / "test-artifacts")) / "editors"
SETUP_HINT = "run scripts/setup-editors.sh (scripts/test.sh does) to install the editors"
SETUP_FAILED = ROOT / "build" / "editor-tools" / "SETUP-FAILED"

# The planted problems the fast lint_tester finds in shop/catalog.py (1-based lines).
EXPECTED = json.loads((ROOT / "tests" / "data" / "shop_expected.json").read_text())["problems"]
CATALOG_LINT = {p["rule_id"]: p["line"] for p in EXPECTED
                if p["role"] == "lint_tester" and p["file"] == "shop/catalog.py"}


def require(path: Path | str | None, what: str) -> str:
    if not path or not Path(path).exists():
        pytest.fail(f"{what} not found ({path}); {SETUP_HINT}", pytrace=False)
    return str(path)


@pytest.fixture
def editor_env(isolated_home):
    """The environment an editor runs in: HOME/XDG/SUPERQODE_HOME from the
    autouse fixture (already in os.environ) and a TMPDIR of its own. That one
    has a short path: Unix sockets (Chromium's, code-server's) allow ~100 bytes."""
    if SETUP_FAILED.exists():
        pytest.fail(f"scripts/setup-editors.sh failed: {SETUP_FAILED.read_text().strip()}", pytrace=False)
    tmp = Path(tempfile.mkdtemp(prefix="sqe-"))
    env = dict(os.environ)
    env["TMPDIR"] = str(tmp)
    env["PATH"] = f"{BIN}{os.pathsep}{env.get('PATH', '')}"
    require(SERVER, "superqode-ls")
    yield env
    shutil.rmtree(tmp, ignore_errors=True)


def kill_tree(proc: subprocess.Popen, grace: float = 0.0) -> None:
    """End ``proc`` and everything it started, even what left its process group."""
    try:
        family = [psutil.Process(proc.pid), *psutil.Process(proc.pid).children(recursive=True)]
    except psutil.Error:
        family = []
    if grace and proc.poll() is None:
        proc.terminate()
        try:
            proc.wait(grace)
        except subprocess.TimeoutExpired:
            pass
    try:
        os.killpg(proc.pid, signal.SIGKILL)
    except (ProcessLookupError, PermissionError):
        pass
    for p in family:
        try:
            p.kill()
        except psutil.Error:
            pass
    proc.wait()


def run_editor(cmd: list[str], *, cwd: Path, env: dict[str, str], timeout: float) -> subprocess.CompletedProcess:
    """Run an editor in its own process group; everything it started dies with it."""
    proc = subprocess.Popen(cmd, cwd=cwd, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                            text=True, start_new_session=True)
    try:
        out, err = proc.communicate(timeout=timeout)
    except subprocess.TimeoutExpired:
        kill_tree(proc)
        out, err = proc.communicate()
        pytest.fail(f"{cmd[0]} timed out after {timeout} s\nstdout:\n{out[-3000:]}\nstderr:\n{err[-3000:]}")
    finally:
        kill_tree(proc)  # the server, if the editor left it behind
    return subprocess.CompletedProcess(cmd, proc.returncode, out, err)


def changed_files(repo: Path) -> list[str]:
    """``git status`` of the repository: every tracked or untracked change."""
    return sorted(run_git(repo, "status", "--porcelain", "--untracked-files=all").splitlines())


def no_sandboxes_left(home: Path) -> list[Path]:
    return [p for p in (home / ".superqode" / "working").glob("*/qe/*") if p.exists()]


def artifact_dir(name: str) -> Path:
    d = ARTIFACTS / name
    d.mkdir(parents=True, exist_ok=True)
    return d


DOC_IMAGES = ROOT / "docs" / "img"


def publish(shot: Path) -> None:
    """With SUPERQODE_UPDATE_DOC_IMAGES=1, refresh docs/img/<name> from a test's screenshot."""
    if os.environ.get("SUPERQODE_UPDATE_DOC_IMAGES"):
        DOC_IMAGES.mkdir(parents=True, exist_ok=True)
        shutil.copy2(shot, DOC_IMAGES / shot.name)


def html_screenshot(html: Path, png: Path, env: dict[str, str], size: str = "1000,760") -> None:
    """Render an editor's own HTML export with headless Chromium."""
    chromium = require(shutil.which("chromium"), "chromium")
    proc = run_editor(
        [chromium, "--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
         "--disable-background-networking", "--disable-component-update", "--disable-sync",
         "--disable-dev-shm-usage", "--hide-scrollbars", f"--window-size={size}",
         f"--screenshot={png}", html.as_uri()],
        cwd=html.parent, env=env, timeout=60)
    assert png.exists() and png.stat().st_size > 5000, proc.stderr[-2000:]


# Fix-all with the default settings takes only the fixes ruff calls safe. Beside
# catalog.py's F401 (safe) and F841 (unsafe), one more unused import in each of
# two files no editor opens, planted as uncommitted edits (a dirty copy):
# (file, the line it goes after, the import, its 1-based line).
PLANTED_IMPORTS = [
    ("shop/pricing.py", "from typing import Iterable\n", "import sys\n", 6),
    ("shop/stats.py", '"""Sales statistics for the shop\'s reports."""\n', "import json\n", 2),
]


def plant_safe_fixes(repo: Path) -> dict[str, str]:
    """Plant PLANTED_IMPORTS in ``repo``; the files' texts before, by path."""
    before = {}
    for rel, after, line, _ in PLANTED_IMPORTS:
        path = repo / rel
        before[rel] = text = path.read_text()
        assert text.count(after) == 1, (rel, after)
        path.write_text(text.replace(after, after + line, 1))
    return before


@pytest.fixture
def example_copy(example_copy: Path) -> Path:
    """The bundled example in the old view (``qe.default_view: all``): these
    tests drive each editor's squiggles and quick fixes over the example's
    unused import, which the default view makes an advisory (a hint, left
    out of a workspace fix-all); tests/server covers the default view."""
    (example_copy / "superqode.yaml").write_text("qe:\n  default_view: all\n", encoding="utf-8")
    run_git(example_copy, "add", "superqode.yaml")
    run_git(example_copy, "commit", "-q", "-m", "the old view")
    return example_copy
