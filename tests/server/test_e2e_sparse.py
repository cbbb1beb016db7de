""""Run QE on this file" through a real client over stdio: the static roles
run in a sparse sandbox (workspace/sparse.py) and their diagnostics come
first; a role that needs the whole tree follows in a session of its own,
in a full sandbox."""

from __future__ import annotations

import glob
import json
from pathlib import Path

from lsprotocol import types
from pygls.uris import from_fs_path, to_fs_path
from pytest_lsp import LanguageClient

from .conftest import progress_ended, run_and_wait, run_qe, start, superqode_diags, wait_for

PLANTED = "import os\n\nx = 1  # PLANTED\n"


def report_of(folder: Path, sid: str) -> dict:
    for path in glob.glob(str(folder / ".superqode" / "qe-artifacts" / "**" / f"*{sid}*.json"),
                          recursive=True):
        data = json.loads(Path(path).read_text(encoding="utf-8"))
        if isinstance(data, dict) and "isolation" in data:
            return data
    raise AssertionError(f"no report for {sid}")


async def sessions(lsp: LanguageClient) -> list[dict]:
    res = await lsp.workspace_execute_command_async(
        types.ExecuteCommandParams(command="superqode.listSessions", arguments=[]))
    return res["sessions"]


async def test_a_file_run_of_static_roles_is_sparse(lsp: LanguageClient, shop: Path):
    await start(lsp, shop)
    target = shop / "shop" / "planted.py"
    target.write_text(PLANTED, encoding="utf-8")
    uri = from_fs_path(str(target))
    sid = await run_and_wait(lsp, {"uri": uri, "roles": ["lint_tester", "security_tester"]})
    assert report_of(shop, sid)["isolation"] == "sparse"
    await wait_for(lambda: superqode_diags(lsp, uri), 10, "the file's diagnostics")
    assert [(d.code, d.range.start.line) for d in superqode_diags(lsp, uri)] == [("F401", 0)]


async def test_a_role_that_needs_the_tree_follows_in_a_full_sandbox_as_one_run(lsp: LanguageClient, shop: Path):
    await start(lsp, shop, settings={"trustedFolders": [str(shop)]})
    target = shop / "shop" / "planted.py"
    target.write_text(PLANTED, encoding="utf-8")
    uri = from_fs_path(str(target))
    sid = await run_qe(lsp, {"uri": uri, "roles": ["lint_tester", "toy_exec"]})
    end = await wait_for(lambda: progress_ended(lsp, sid), 120, "the run's end")
    # One run to the user: one session listed, one end that counts both
    # phases' findings, one report (under the run's id) that holds them.
    assert [s["sessionId"] for s in await sessions(lsp)] == [sid]
    assert end.message.startswith(f"session {sid}: 2 finding(s), "), end.message
    assert "next" not in end.message
    whole = report_of(shop, sid)
    assert whole["isolation"] == "sparse"  # where the first phase ran
    assert [r["role"] for r in whole["roles"]] == ["lint_tester", "toy_exec"]
    assert sorted(f["rule_id"] for f in whole["findings"]) == ["F401", "TOY1"]
    # The whole-tree role ran in a full sandbox of its own, which wrote no
    # report of its own: nothing else claims the run.
    others = [p for p in glob.glob(str(shop / ".superqode" / "qe-artifacts" / "qr" / "*"))
              if sid not in p]
    assert others == [], "a report of the second phase alone"
    md = await lsp.workspace_execute_command_async(
        types.ExecuteCommandParams(command="superqode.showReport", arguments=[{"sessionId": sid}]))
    text = Path(to_fs_path(md["uri"])).read_text(encoding="utf-8")
    assert "F401" in text and "TOY1" in text
    # Each phase replaced only its own roles' findings: both stay.
    assert sorted(d.code for d in superqode_diags(lsp, uri)) == ["F401", "TOY1"]
