"""One run, one report, one verdict (issue 29), through a real client over
stdio: a run on a folder not yet trusted (answered "Trust folder") and a
file run are each made of two engine sessions, yet the run writes one
report under its own id, that report lists each role once with its final
outcome, and the report, the session list and the end message name the
same findings and verdict."""

from __future__ import annotations

import json
import re
from pathlib import Path

from lsprotocol import types
from pygls.uris import from_fs_path
from pytest_lsp import LanguageClient

from superqode_ls.engine import suggestions

from .conftest import plant, progress_ended, run_qe, sessions, start, wait_for

PLANTED = "import os\n\nx = 1  # PLANTED\n"
END = re.compile(r"^session (\S+): (\d+) finding\(s\), .*, (pass|fail|conditional)")


def reports(folder: Path) -> list[Path]:
    qr = folder / ".superqode" / "qe-artifacts" / "qr"
    return sorted(qr.iterdir()) if qr.is_dir() else []


async def one_run_one_report(lsp: LanguageClient, folder: Path, sid: str) -> dict:
    """The run's end, its entry in the session list and its one report agree."""
    end = await wait_for(lambda: progress_ended(lsp, sid), 120, "the run's end")
    said = END.match(end.message or "")
    assert said and said.group(1) == sid, end.message
    # One report (JSON + Markdown) in the artifacts: none of a follow-up session.
    files = reports(folder)
    assert [p.suffix for p in files] == [".json", ".md"], files
    assert all(sid in p.name for p in files), files
    whole = json.loads(files[0].read_text(encoding="utf-8"))
    assert whole["session_id"] == sid
    names = [r["role"] for r in whole["roles"]]
    assert len(names) == len(set(names)), names  # each role once: its final outcome
    assert all(r["status"] == "ok" for r in whole["roles"]), whole["roles"]
    listed = [s for s in await sessions(lsp) if s["sessionId"] == sid]
    assert len(listed) == 1 and len(await sessions(lsp)) == 1
    n = len(whole["findings"])
    assert int(said.group(2)) == n == listed[0]["findings"]
    assert said.group(3) == whole["verdict"] == listed[0]["verdict"]
    # The end line in the list is the end message word for word (Emacs,
    # which takes no progress, shows it: the same fix counts everywhere).
    assert listed[0]["end"] == end.message
    md = files[1].read_text(encoding="utf-8")
    for f in whole["findings"]:
        assert f["rule_id"] in md
    return whole


async def test_an_untrusted_then_trusted_run_writes_one_report(lsp: LanguageClient, shop: Path):
    await start(lsp, shop)
    plant(shop, text=PLANTED)
    lsp.editor.replies = [("this repository's code", "Trust folder")]
    sid = await run_qe(lsp, {"roles": ["lint_tester", "toy_exec"]})
    whole = await one_run_one_report(lsp, shop, sid)
    assert sorted(r["role"] for r in whole["roles"]) == ["lint_tester", "toy_exec"]
    # "Not now" first: eglot pre-fills the first action, and a bare Enter must
    # not let the repository's code run (a red-team check: it did, in Emacs).
    (asked,) = [p for p in lsp.editor.prompts if "this repository's code" in p.message]
    assert [a.title for a in asked.actions] == ["Not now", "Trust folder"]
    rules = {f["rule_id"] for f in whole["findings"]}
    assert {"F401", "TOY1"} <= rules
    # toy_exec, asked for by name, ran after the answer: its "skipped" of the
    # first phase is gone (it would make the verdict at least conditional).
    assert next(r for r in whole["roles"] if r["role"] == "toy_exec")["status"] == "ok"
    # Nor was it logged as skipped while it waited for the answer.
    assert not [m.message for m in lsp.log_messages if "toy_exec skipped" in m.message]


async def test_a_file_run_on_an_untrusted_folder_writes_one_report(lsp: LanguageClient, shop: Path):
    await start(lsp, shop)
    target = plant(shop, text=PLANTED)
    lsp.editor.replies = [("this repository's code", "Trust folder")]
    sid = await run_qe(lsp, {"uri": from_fs_path(str(target)), "roles": ["lint_tester", "toy_exec"]})
    whole = await one_run_one_report(lsp, shop, sid)
    assert sorted(r["role"] for r in whole["roles"]) == ["lint_tester", "toy_exec"]
    assert sorted(f["rule_id"] for f in whole["findings"]) == ["F401", "TOY1"]
    # The later phase's fix, listed in the run's report, is sealed under the
    # run's id: `superqe suggestions apply` takes it from that report.
    toy = [s for s in suggestions.suggestions(shop) if any(f.rule_id == "TOY1" for f in s.findings)]
    assert toy and all(s.session_id == sid for s in toy)
    for s in toy:
        suggestions.check_sealed(shop, s)


async def test_a_file_run_on_a_trusted_folder_writes_one_report(lsp: LanguageClient, shop: Path):
    await start(lsp, shop, settings={"trustedFolders": [str(shop)]})
    target = plant(shop, text=PLANTED)
    sid = await run_qe(lsp, {"uri": from_fs_path(str(target)), "roles": ["lint_tester", "toy_exec"]})
    whole = await one_run_one_report(lsp, shop, sid)
    assert whole["isolation"] == "sparse"  # where the first phase ran
    assert sorted(f["rule_id"] for f in whole["findings"]) == ["F401", "TOY1"]
    showed = await lsp.workspace_execute_command_async(
        types.ExecuteCommandParams(command="superqode.showReport", arguments=[{"sessionId": sid}]))
    assert sid in showed["uri"]
