"""What the user reads for an error is one line, the same in the editor and in
the terminal (``superqode_ls.errors.user_line``): ``superqe`` in a real
subprocess and the language server over pytest-lsp, on the same folders.

The CLI puts its name first (``superqe: LINE``), the editor its own
(``SuperQode: LINE``, and the session for a session that failed); the line
itself is the same.
"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

from lsprotocol import types
from pygls.exceptions import JsonRpcException
from pygls.uris import from_fs_path
from pytest_lsp import LanguageClient

from superqode_ls.errors import UsageError, user_line
from superqode_ls.server.errors import request_error
from tests.cli_helpers import TOY_CLI
from tests.conftest import ROOT

from .conftest import SERVER, run_qe, start, wait_for

APP = "def f():\n    return 1\n"


def _cli(folder: Path, *args: str, env: dict[str, str] | None = None) -> tuple[int, list[str], str]:
    """superqe's exit code, its ``superqe:`` lines (the prefix cut) and stdout."""
    proc = subprocess.run([sys.executable, "-c", TOY_CLI, "run", str(folder), *args], cwd=ROOT,
                          capture_output=True, text=True, timeout=300, check=False, env=env)
    said = [ln.removeprefix("superqe: ") for ln in proc.stderr.splitlines()
            if ln.startswith("superqe: ")]
    return proc.returncode, said, proc.stdout


async def _editor_run(lsp: LanguageClient, folder: Path, role: str) -> str | None:
    """Run QE on ``folder`` from the editor: the request's error line when it
    is refused, else the session id."""
    try:
        return await run_qe(lsp, {"uri": from_fs_path(str(folder)), "roles": [role]})
    except JsonRpcException as e:
        raise AssertionError(f"runQE refused: {e.message}") from None


def _shown(lsp: LanguageClient, prefix: str) -> list[str]:
    return [m.message.removeprefix(prefix) for m in lsp.messages
            if m.type == types.MessageType.Error and m.message.startswith(prefix)]


async def test_each_error_kind_reads_the_same_in_the_editor_and_the_terminal(
        lsp: LanguageClient, make_repo):
    bad_config = make_repo({"app.py": APP, "superqode.yaml": "qe:\n  fail_on: sometimes\n"})
    no_artifacts = make_repo({"app.py": APP})
    (no_artifacts / ".superqode").mkdir()
    (no_artifacts / ".superqode" / "qe-artifacts").write_text("not a folder\n")
    broken_tool = make_repo({"app.py": APP})

    # ConfigError: exit 2, nothing run.
    code, said, _ = _cli(bad_config, "-r", "toy_tester")
    assert code == 2 and len(said) == 1 and "fail_on" in said[0], said
    config_line = said[0]
    # SessionFailed: the artifacts cannot be written (exit 3, after the revert).
    code, said, _ = _cli(no_artifacts, "-r", "toy_tester")
    assert code == 3 and len(said) == 1 and said[0].startswith("cannot write the artifacts"), said
    failed_line = said[0]
    # ToolFailed: the role's tool gave nothing; its line is the role's reason.
    code, said, out = _cli(broken_tool, "-r", "toy_broken_tool")
    tool_line = "toytool failed: toytool: cannot read its profile"
    assert f"role toy_broken_tool: failed ({tool_line})" in out, out

    await start(lsp, [bad_config, no_artifacts, broken_tool])
    sid = await _editor_run(lsp, bad_config, "toy_tester")
    assert await wait_for(lambda: _shown(lsp, "SuperQode: "), what="the config error") == [
        config_line]
    sid = await _editor_run(lsp, no_artifacts, "toy_tester")
    prefix = f"SuperQode: session {sid}: "
    assert await wait_for(lambda: _shown(lsp, prefix), what="the session failure") == [failed_line]
    sid = await _editor_run(lsp, broken_tool, "toy_broken_tool")
    logged = await wait_for(
        lambda: [m.message for m in lsp.log_messages if "toy_broken_tool failed" in m.message],
        what="the tool failure")
    assert logged == [f"SuperQode toy_broken_tool failed: {tool_line}"]


def test_a_usage_error_reads_the_same_in_both(make_repo):
    """A bad SUPERQODE_NICE: superqe says it and exits 2 before anything
    starts; the language server refuses to start on it with the same line
    (before any editor talks to it), and a request meeting a usage error
    would answer with that line too."""
    import os

    repo = make_repo({"app.py": APP})
    env = {**os.environ, "SUPERQODE_NICE": "low"}
    code, said, _ = _cli(repo, "-r", "toy_tester", env=env)
    assert code == 2 and said == ["SUPERQODE_NICE='low' is not a whole number"]
    server = subprocess.run(SERVER, capture_output=True, text=True, timeout=60, check=False,
                            env=env, stdin=subprocess.DEVNULL)
    assert (server.returncode, server.stderr) == (2, f"superqode-ls: {said[0]}\n")
    assert request_error(UsageError(said[0])).message == said[0] == user_line(UsageError(said[0]))
