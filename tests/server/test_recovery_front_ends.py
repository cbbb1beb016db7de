"""One recovery, two front ends: a session whose process was killed is
recovered and resumed once through the CLI (``superqe status``, ``superqe
recover ID --resume`` in a subprocess) and once through the language server
(the prompt at start, answered "Resume"); both end the same way: the same
patch name and content, the sandbox kept with the same files, the project
untouched."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

from pytest_lsp import LanguageClient

from superqode_ls.engine import sessions

from ..safety_helpers import content_fingerprint, crash_session
from .conftest import start, wait_for

EDITS = {"src/calc.py": "def add(a, b):\n    return a + b\n",
         "tests/test_calc.py": "def test_add():\n    pass\n"}


def superqe(repo: Path, *argv: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "superqode_ls", *argv], cwd=repo,
                          capture_output=True, text=True, timeout=120, env=os.environ.copy())


def outcome(repo: Path, sid: str) -> dict:
    """What recovering left: the patch (name relative to its session, text),
    the session's state, and the edited files in its sandbox."""
    patches = repo / ".superqode" / "qe-artifacts" / "patches"
    mine = sorted(p.name.replace(sid, "ID") for p in patches.glob(f"{sid}-*"))
    info = sessions.find(sid)
    return {
        "patches": mine,
        "patch": (patches / f"{sid}-recovered.patch").read_text(encoding="utf-8"),
        "state": info.state,
        "sandbox": {rel: (info.sandbox / rel).read_text(encoding="utf-8") for rel in EDITS},
    }


async def test_recover_and_resume_are_the_same_in_the_cli_and_the_editor(
    lsp: LanguageClient, make_repo
):
    repo = make_repo({"src/calc.py": "def add(a, b):\n    return a - b\n", "README.md": "r\n"})
    before = content_fingerprint(repo)
    by_cli = crash_session(repo, edits=EDITS)
    by_editor = crash_session(repo, edits=EDITS)

    # The CLI: the session shows as interrupted, then recover --resume.
    listed = superqe(repo, "status", "--json")
    assert listed.returncode == 0, listed.stderr
    states = {s["id"]: s["state"] for s in json.loads(listed.stdout)}
    assert states == {by_cli: "interrupted", by_editor: "interrupted"}
    resumed = superqe(repo, "recover", by_cli, "--resume")
    assert resumed.returncode == 0, resumed.stderr
    assert f"resumed {by_cli}" in resumed.stdout and "-recovered.patch (2 file(s))" in resumed.stdout

    # The editor: only the other session is still interrupted; "Resume" on its prompt.
    lsp.editor.replies = [(by_editor, "Resume")]
    await start(lsp, repo)
    prompts = await wait_for(lambda: lsp.editor.prompts, 30, "recovery prompt")
    assert [p for p in prompts if "was interrupted" in p.message and by_cli in p.message] == []
    said = await wait_for(
        lambda: [m.message for m in lsp.log_messages if by_editor in m.message and "kept" in m.message],
        60, "the editor's resume")
    assert "-recovered.patch" in said[0]
    shown = await wait_for(lambda: lsp.shown_documents, 30, "the saved changes shown")
    assert shown[0].uri.endswith(f"{by_editor}-recovered.patch")

    cli, editor = outcome(repo, by_cli), outcome(repo, by_editor)
    assert cli == editor
    assert cli["patches"] == ["ID-recovered.patch"] and cli["state"] == "kept"
    assert "+    return a + b" in cli["patch"] and "tests/test_calc.py" in cli["patch"]
    assert cli["sandbox"] == EDITS
    assert content_fingerprint(repo) == before  # neither front end touched the project

    report = sessions.revert(sessions.list_sessions(repo), force=True)
    assert sorted(s.id for s in report.removed) == sorted([by_cli, by_editor])
