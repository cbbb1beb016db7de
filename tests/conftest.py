"""Shared fixtures. Every test runs with HOME, SUPERQODE_HOME and XDG_* in a
temp dir and git's global/system config neutralised; leftover child processes
fail the test that left them."""

from __future__ import annotations

import subprocess
from pathlib import Path

import psutil
import pytest

from tests.waiting import WaitTimeout, wait_for

ROOT = Path(__file__).resolve().parents[1]


@pytest.fixture(autouse=True)
def isolated_home(tmp_path_factory, monkeypatch):
    home = tmp_path_factory.mktemp("home")
    sq = home / ".superqode"
    for var, sub in (
        ("XDG_CONFIG_HOME", ".config"),
        ("XDG_DATA_HOME", ".local/share"),
        ("XDG_STATE_HOME", ".local/state"),
        ("XDG_CACHE_HOME", ".cache"),
    ):
        (home / sub).mkdir(parents=True, exist_ok=True)
        monkeypatch.setenv(var, str(home / sub))
    gitconfig = home / ".gitconfig"
    gitconfig.write_text(
        "[user]\n\tname = Test User\n\temail = test@example.com\n"
        "[init]\n\tdefaultBranch = main\n[core]\n\tautocrlf = false\n"
    )
    monkeypatch.setenv("HOME", str(home))
    monkeypatch.setenv("SUPERQODE_HOME", str(sq))
    monkeypatch.setenv("GIT_CONFIG_GLOBAL", str(gitconfig))
    monkeypatch.setenv("GIT_CONFIG_NOSYSTEM", "1")
    # The project environment a test sees is the one it sets up, not the
    # shell's activated one (workspace/pyenv.py reads these).
    for var in ("VIRTUAL_ENV", "CONDA_PREFIX"):
        monkeypatch.delenv(var, raising=False)
    for var in ("GIT_DIR", "GIT_WORK_TREE", "GIT_INDEX_FILE"):
        monkeypatch.delenv(var, raising=False)
    yield home


@pytest.fixture(autouse=True)
def no_leftover_processes():
    me = psutil.Process()
    before = {p.pid for p in me.children(recursive=True)}
    yield

    def leftovers() -> list[psutil.Process]:
        return [p for p in me.children(recursive=True) if p.pid not in before and _alive(p)]

    try:  # a process the test ended may take a moment to exit
        wait_for(lambda: not leftovers(), 5, "the test's processes to exit")
    except WaitTimeout:
        pass
    extra = leftovers()
    for p in extra:
        try:
            p.kill()
        except psutil.Error:
            pass
    assert not extra, f"test left processes running: {[_describe(p) for p in extra]}"


def _alive(p: psutil.Process) -> bool:
    try:
        return p.is_running() and p.status() != psutil.STATUS_ZOMBIE
    except psutil.Error:
        return False


def _describe(p: psutil.Process) -> str:
    try:
        return " ".join(p.cmdline())[:200]
    except psutil.Error:
        return str(p.pid)


def run_git(repo: Path, *args: str, check: bool = True) -> str:
    proc = subprocess.run(
        ["git", *args], cwd=repo, capture_output=True, text=True, check=False
    )
    if check and proc.returncode != 0:
        raise AssertionError(f"git {' '.join(args)} failed: {proc.stderr}")
    return proc.stdout


def write_files(root: Path, files: dict[str, str | bytes]) -> None:
    for rel, content in files.items():
        p = root / rel
        p.parent.mkdir(parents=True, exist_ok=True)
        if isinstance(content, bytes):
            p.write_bytes(content)
        else:
            p.write_text(content, encoding="utf-8")


@pytest.fixture
def make_repo(tmp_path):
    """make_repo(files, name="repo") -> a committed git repository."""
    counter = {"n": 0}

    def factory(files: dict[str, str | bytes] | None = None, name: str | None = None) -> Path:
        counter["n"] += 1
        repo = tmp_path / (name or f"repo{counter['n']}")
        repo.mkdir(parents=True)
        run_git(repo, "init", "-q")
        write_files(repo, files or {"README.md": "hello\n"})
        run_git(repo, "add", "-A")
        run_git(repo, "commit", "-q", "-m", "initial")
        return repo

    return factory


@pytest.fixture
def example_copy(tmp_path):
    """A fresh git copy of the bundled example ``examples/shop``: its sources,
    without what running it left there (``scripts/demo.sh`` writes artifacts
    into ``.superqode/``; tests then start from the state a clone has)."""
    import shutil

    dst = tmp_path / "shop"
    shutil.copytree(ROOT / "examples" / "shop", dst,
                    ignore=shutil.ignore_patterns(".superqode", "__pycache__", ".pytest_cache"))
    run_git(dst, "init", "-q")
    run_git(dst, "add", "-A")
    run_git(dst, "commit", "-q", "-m", "example")
    return dst
