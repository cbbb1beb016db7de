"""The report's files: patch files, baseline and seals written beside the
revert (finish.save_patches), the JSON and Markdown after it; all of them
listed in the manifest (one entry each), in the report in their order."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path

import pytest

from superqode_ls.events import EventBus
from superqode_ls.qe import finish
from superqode_ls.qe.pipeline import QERequest, QESession
from tests import qe_testroles

APP = "def f():\n    x = 'PLANTED'\n    return x\n\n\ndef g():\n    return 'PLANTED'\n"


@pytest.fixture(autouse=True)
def toy_roles(monkeypatch):
    qe_testroles.register(monkeypatch)


def _run(repo: Path):
    session = QESession(QERequest(repo, roles=["toy_tester"], update_baseline=True), bus=EventBus())
    report = asyncio.run(session.run())
    manifest = json.loads((repo / ".superqode" / "qe-artifacts" / "manifest.json").read_text())
    mine = [a for a in manifest["artifacts"] if a.get("session_id") == session.id]
    return report, mine


def test_patch_files_are_written_beside_the_revert_and_all_listed(make_repo, monkeypatch):
    repo = make_repo({"app.py": APP, "b.py": "y = 1  # PLANTED\n"})
    early_calls = []
    real = finish.save_patches

    def counting(*a, **kw):
        early_calls.append(kw.get("stop") is not None)
        return real(*a, **kw)

    monkeypatch.setattr(finish, "save_patches", counting)
    report, listed = _run(repo)
    assert early_calls == [True]  # written beside the revert, once
    assert report.verification is not None and report.verification.verified
    keys = list(report.artifacts)
    patches = [k for k in keys if k.startswith("patch:")]
    assert patches and len(patches) == len(report.patches)
    assert keys == [*patches, "baseline", "json", "markdown"]
    for k in patches:
        assert Path(report.artifacts[k]).read_text() == next(
            p.diff for p in report.patches if f"patch:{p.id}" == k)
    kinds = sorted(a["kind"] for a in listed)
    assert kinds.count("report") == 2 and kinds.count("patch") == len(patches)
    saved = json.loads(Path(report.artifacts["json"]).read_text())
    assert saved["verification"]["verified"] and len(saved["patches"]) == len(patches)



def test_a_run_rewrites_the_manifest_once(make_repo, monkeypatch):
    """The manifest grows with every run kept and is rewritten whole: the
    patch files (written beside the revert) and the reports are listed in
    one update, not one each."""
    from superqode_ls.workspace import artifacts

    repo = make_repo({"app.py": APP, "b.py": "y = 1  # PLANTED\n"})
    _run(repo)  # a run before: the manifest has entries to carry
    updates: list[int] = []
    real = artifacts.update_manifest

    def counting(root, *entries, **kw):
        updates.append(len(entries))
        return real(root, *entries, **kw)

    monkeypatch.setattr(artifacts, "update_manifest", counting)
    report, listed = _run(repo)
    patches = [k for k in report.artifacts if k.startswith("patch:")]
    assert patches
    assert updates == [len(listed)] and len(listed) == len(patches) + 2  # + the JSON and Markdown
    assert sorted(a["kind"] for a in listed).count("patch") == len(patches)
