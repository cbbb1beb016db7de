"""Each front end's ``Runtime`` reaches the roles it starts: ``superqe run``
runs tools at the user's priority and asks on the terminal; the language
server runs them below the editor and asks through it. Real processes: the
CLI in a subprocess (on a pseudo-terminal for the question), the server over
pytest-lsp."""

from __future__ import annotations

import json
import os
import pty
import select
import subprocess
import sys
from pathlib import Path

import pytest
from pytest_lsp import LanguageClient

from tests.cli_helpers import TOY_CLI
from tests.conftest import ROOT

from .conftest import run_and_wait, start

APP = "def f():\n    return 1\n"


def _reason(folder: Path, role: str) -> str:
    """The role's reason, from the (one) Quality Report saved in ``folder``."""
    [qr] = (folder / ".superqode/qe-artifacts/qr").glob("qr-*.json")
    [run] = [r for r in json.loads(qr.read_text())["roles"] if r["role"] == role]
    assert run["status"] == "ok", run
    return run["reason"]


def _own_nice() -> int:
    return os.getpriority(os.PRIO_PROCESS, 0)


@pytest.fixture
def no_nice_setting(monkeypatch):
    monkeypatch.delenv("SUPERQODE_NICE", raising=False)
    if _own_nice() > 9:
        pytest.skip("already at nice 10 or more: +10 would be cut at 19")


def test_superqe_runs_tools_at_the_users_priority(make_repo, no_nice_setting):
    repo = make_repo({"app.py": APP})
    proc = subprocess.run([sys.executable, "-c", TOY_CLI, "run", str(repo), "-r", "toy_nice"],
                          cwd=ROOT, capture_output=True, text=True, timeout=300, check=False)
    assert proc.returncode == 0, proc.stderr
    assert _reason(repo, "toy_nice") == "tool nice +0"


async def test_the_language_server_runs_tools_below_the_editor(
        lsp: LanguageClient, make_repo, no_nice_setting):
    repo = make_repo({"app.py": APP})
    await start(lsp, repo)
    await run_and_wait(lsp, {"roles": ["toy_nice"]})
    assert _reason(repo, "toy_nice") == "tool nice +10"


def _answer_on_a_terminal(repo: Path, answer: bytes) -> tuple[int, str]:
    """superqe run -r toy_asker with stdin and stderr on a pseudo-terminal;
    ``answer`` typed once the question is on it. (exit code, what it wrote)."""
    main, sub = pty.openpty()
    proc = subprocess.Popen([sys.executable, "-c", TOY_CLI, "run", str(repo), "-r", "toy_asker"],
                            cwd=ROOT, stdin=sub, stdout=subprocess.DEVNULL, stderr=sub)
    os.close(sub)
    seen = b""
    try:
        while b"[y/N]" not in seen:
            ready, _, _ = select.select([main], [], [], 120)
            assert ready, f"no question on the terminal: {seen!r}"
            try:
                chunk = os.read(main, 4096)
            except OSError:  # the child closed the terminal: it ended without asking
                break
            if not chunk:
                break
            seen += chunk
        if b"[y/N]" in seen:
            os.write(main, answer)
        code = proc.wait(timeout=120)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
        os.close(main)
    return code, seen.decode("utf-8", "replace")


@pytest.mark.parametrize(("answer", "outcome"), [(b"y\n", "granted"), (b"n\n", "denied")])
def test_superqe_asks_on_the_terminal(make_repo, answer, outcome):
    repo = make_repo({"app.py": APP})
    code, seen = _answer_on_a_terminal(repo, answer)
    assert "superqe: allow run_shell: pytest -x tests/? [y/N]" in seen
    assert code == 0 and _reason(repo, "toy_asker") == f"permission {outcome}"


def test_superqe_without_a_terminal_asks_nobody(make_repo):
    repo = make_repo({"app.py": APP})
    proc = subprocess.run([sys.executable, "-c", TOY_CLI, "run", str(repo), "-r", "toy_asker"],
                          cwd=ROOT, capture_output=True, text=True, timeout=300, check=False,
                          stdin=subprocess.DEVNULL)
    assert proc.returncode == 0 and "[y/N]" not in proc.stderr
    assert _reason(repo, "toy_asker") == "permission denied"
