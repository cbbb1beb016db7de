"""The sparse sandbox (workspace/sparse.py): a run of static roles on a few
files of a repository gets a sandbox holding just those files and their
analyzers' configuration, with real ruff and bandit, real git, and the same
revert and verification as any session."""

from __future__ import annotations

import asyncio
import json
import os
import time
from pathlib import Path

import pytest

from superqode_ls.qe.pipeline import QERequest, QESession
from superqode_ls.qe.request import resolve_request
from superqode_ls.qe.roles import REGISTRY, role_class
from superqode_ls.workspace import landlock, session_fingerprint, sparse
from superqode_ls.workspace.fingerprint import take_fingerprint
from superqode_ls.workspace.paths import repo_dir
from superqode_ls.workspace.session import IsolatedSession
from tests.cli_helpers import superqe
from tests.conftest import run_git

STATIC = ["lint_tester", "security_tester"]
# F401 (unused import) is ignored by the project; F841 (unused variable) is not.
PYPROJECT = '[tool.ruff.lint]\nselect = ["F"]\nignore = ["F401"]\n'
APP = (
    "import os\n"
    "import subprocess\n"
    "\n"
    "\n"
    "def run(cmd):\n"
    "    unused = 1\n"
    "    return subprocess.call(cmd, shell=True)\n"
)
FILES = {
    "pyproject.toml": PYPROJECT,
    "setup.cfg": "[metadata]\nname = demo\n",
    ".gitignore": "*.log\n",
    "README.md": "demo\n",
    "pkg/__init__.py": "",
    "pkg/app.py": APP,
    "pkg/util.py": "def helper():\n    return 1\n",
    "pkg/sub/__init__.py": "",
    "pkg/sub/deep.py": "import os\n\n\ndef g():\n    value = 2\n    return 3\n",
    "pkg/sub/.ruff.toml": 'extend = "../../pyproject.toml"\n',
    "other/__init__.py": "",
    "other/mod.py": "x = 1\n",
    "tests/test_app.py": "def test_ok():\n    assert True\n",
}


@pytest.fixture
def repo(make_repo):
    return make_repo(FILES)


def _run(repo: Path, files: list[str] | None, roles=STATIC, **kw):
    """(report, files the sandbox held while the roles ran, its isolation)."""
    seen: dict = {}
    session = QESession(QERequest(project=repo, roles=roles, files=files, **kw))

    def on(event) -> None:
        if event.type == "workspace.snapshot":
            seen["isolation"] = event.data["isolation"]
            seen["listing"] = sparse.listing(Path(event.data["sandbox"]))

    session.bus.subscribe(on)
    report = asyncio.run(session.run())
    return report, seen.get("listing"), seen.get("isolation")


def _left_behind(repo: Path) -> list[str]:
    """Sessions' sandboxes still on disk, and worktrees the user's git knows."""
    qe = repo_dir(repo) / "qe"
    left = sorted(os.listdir(qe)) if qe.is_dir() else []
    if (repo / ".git" / "worktrees").exists():
        left += [f".git/worktrees/{n}" for n in os.listdir(repo / ".git" / "worktrees")]
    return left


def test_a_file_run_holds_exactly_the_file_and_its_configuration(repo):
    status = run_git(repo, "status", "--porcelain")
    before = take_fingerprint(repo).digest
    report, listing, isolation = _run(repo, ["pkg/app.py"])
    assert isolation == report.isolation == "sparse"
    # The file, its package marker, and the configuration on the way down:
    # nothing of the other 9 files.
    assert listing == [".gitignore", "pkg/__init__.py", "pkg/app.py", "pyproject.toml", "setup.cfg"]
    got = sorted((f.file, f.range.start_line, f.rule_id) for f in report.findings)
    assert ("pkg/app.py", 6, "F841") in got  # the project's select honoured
    assert not any(rule == "F401" for _, _, rule in got)  # and its ignore
    assert any(f == "pkg/app.py" and line == 7 and rule.startswith("B60") for f, line, rule in got)
    assert {f for f, _, _ in got} == {"pkg/app.py"}
    assert report.verification is not None and report.verification.verified
    assert run_git(repo, "status", "--porcelain") == status
    assert take_fingerprint(repo).digest == before
    assert _left_behind(repo) == []


def test_an_extended_ruff_config_comes_along_and_decides(repo):
    report, listing, _ = _run(repo, ["pkg/sub/deep.py"], roles=["lint_tester"])
    assert listing == [".gitignore", "pkg/__init__.py", "pkg/sub/.ruff.toml", "pkg/sub/__init__.py",
                       "pkg/sub/deep.py", "pyproject.toml", "setup.cfg"]
    rules = sorted((f.range.start_line, f.rule_id) for f in report.findings)
    assert rules == [(5, "F841")]  # F401 on line 1 ignored through the extended base


def test_unsaved_buffers_are_what_is_analysed_and_only_the_requested_ones_come(repo):
    buffer = b"import subprocess\n\n\ndef run(cmd):\n    return subprocess.call(cmd, shell=True)\n"
    report, listing, _ = _run(repo, ["pkg/util.py"], overlays={
        "pkg/util.py": buffer, "other/mod.py": b"y = 2\n", "new_unsaved.py": b"z = 3\n"})
    assert listing == [".gitignore", "pkg/__init__.py", "pkg/util.py", "pyproject.toml", "setup.cfg"]
    assert [(f.file, f.range.start_line) for f in report.findings if f.rule_id.startswith("B60")] \
        == [("pkg/util.py", 5)]
    assert (repo / "pkg/util.py").read_text() == FILES["pkg/util.py"]


def test_two_files_in_different_folders(repo):
    report, listing, _ = _run(repo, ["pkg/sub/deep.py", "other/mod.py"], roles=["lint_tester"])
    assert listing == [".gitignore", "other/__init__.py", "other/mod.py", "pkg/__init__.py",
                       "pkg/sub/.ruff.toml", "pkg/sub/__init__.py", "pkg/sub/deep.py",
                       "pyproject.toml", "setup.cfg"]
    assert [(f.file, f.rule_id) for f in report.findings] == [("pkg/sub/deep.py", "F841")]


def test_a_role_that_needs_the_whole_tree_never_gets_a_sparse_sandbox(repo):
    for name in sorted(REGISTRY):
        cls = role_class(name)
        req = QERequest(project=repo, roles=["lint_tester", name], files=["pkg/app.py"])
        res = resolve_request(req)
        # A role that cannot run here (an agent without a provider) runs nowhere.
        expected = cls.file_local or cls().unavailable(res.config) is not None
        assert QESession(req)._sparse(res) is expected, name
    assert sum(role_class(n).file_local for n in REGISTRY) == 2  # lint and security
    # A real run with the type checker (it follows imports): the full tree.
    report, listing, isolation = _run(repo, ["pkg/app.py"], roles=["lint_tester", "type_tester"])
    assert isolation == report.isolation == "worktree"
    assert "pkg/util.py" in listing and "other/mod.py" in listing
    assert _left_behind(repo) == []


def test_when_the_run_is_not_sparse(repo):
    def sparse_for(**kw) -> bool:
        req = QERequest(project=repo, roles=STATIC, **kw)
        return QESession(req)._sparse(resolve_request(req))

    assert sparse_for(files=["pkg/app.py"])
    assert not sparse_for(files=None)  # the whole project
    assert not sparse_for(files=["pkg"])  # a folder: its files are the CLI's to list
    assert not sparse_for(files=["pkg/app.py"], isolation="worktree")  # the user's choice
    assert not sparse_for(files=["pkg/app.py"], base_ref="HEAD")
    assert not sparse_for(files=["pkg/app.py"], config_overrides={"workspace": {"isolation": "snapshot"}})
    # The sandbox is to hold HEAD's files, not the user's current ones.
    assert not sparse_for(files=["pkg/app.py"],
                          config_overrides={"workspace": {"copy_uncommitted": False}})
    assert not sparse_for(files=[f"f{i}.py" for i in range(sparse.MAX_FILES + 1)])
    # A role that runs code, skipped in an untrusted folder, does not stop it.
    req = QERequest(project=repo, roles=[*STATIC, "unit_tester"], files=["pkg/app.py"], trusted=False)
    assert QESession(req)._sparse(resolve_request(req))
    req = QERequest(project=repo, roles=[*STATIC, "unit_tester"], files=["pkg/app.py"], trusted=True)
    assert not QESession(req)._sparse(resolve_request(req))


def test_the_fingerprint_comes_first_without_the_kernel_barrier(repo, monkeypatch):
    s = IsolatedSession.create_sync(repo, isolation="sparse", files=["pkg/app.py"])
    try:
        beside = s.fingerprint.thread is not None
        assert beside == (landlock.abi() is not None)
    finally:
        v = s.close_sync()
    assert v.verified
    monkeypatch.setattr(landlock, "abi", lambda: None)
    s = IsolatedSession.create_sync(repo, isolation="sparse", files=["pkg/app.py"])
    try:
        # Taken (and stored for recovery) before the sandbox was made.
        assert s.fingerprint.thread is None and s.fingerprint.before is not None
        assert json.loads((s.private / "fingerprint.json").read_text())["files"]
        assert s.record is not None and s.record.isolation == "sparse"
    finally:
        v = s.close_sync()
    assert v.verified and _left_behind(repo) == []


def test_a_session_closed_while_its_fingerprint_is_taken_leaves_nothing(repo, monkeypatch):
    """The fingerprint beside the sandbox writes into the private folder: a
    close that removed the folder under it left it behind."""
    if landlock.abi() is None:
        pytest.skip("the fingerprint is taken beside the sandbox only with the kernel barrier")
    real = session_fingerprint.files_part

    def slow(fp):
        time.sleep(0.5)
        return real(fp)

    monkeypatch.setattr(session_fingerprint, "files_part", slow)
    s = IsolatedSession.create_sync(repo, isolation="sparse", files=["pkg/app.py"])
    assert s.fingerprint.thread is not None and s.fingerprint.thread.is_alive()
    v = s.close_sync()
    assert v.verified and _left_behind(repo) == []


def test_a_write_to_the_users_tree_during_a_sparse_session_is_caught(repo):
    s = IsolatedSession.create_sync(repo, isolation="sparse", files=["pkg/app.py"])
    if s.fingerprint.thread is not None:
        s.fingerprint.thread.join()  # the state the session started from, then a write
    (repo / "pkg" / "util.py").write_text("changed\n")
    v = s.close_sync()
    assert "pkg/util.py" in " ".join(v.differences + v.outside_changes)


def test_a_sparse_session_needs_its_files(repo):
    from superqode_ls.workspace.errors import WorkspaceError

    with pytest.raises(WorkspaceError, match="needs the files"):
        IsolatedSession.create_sync(repo, isolation="sparse")
    assert _left_behind(repo) == []


def test_superqe_run_on_files_uses_the_sparse_sandbox(repo, capsys, monkeypatch):
    monkeypatch.chdir(repo / "pkg")
    code, out, _ = superqe(capsys, "run", "app.py", "sub/deep.py", "-r", "lint_tester",
                           "-r", "security_tester", "--jsonl", "--fail-on", "never")
    assert code == 0
    events = [json.loads(line) for line in out.splitlines()]
    snap = next(e for e in events if e["type"] == "workspace.snapshot")["data"]
    assert snap["isolation"] == "sparse"
    found = sorted({(e["data"]["finding"]["file"], e["data"]["finding"]["rule_id"])
                    for e in events if e["type"] == "finding"})
    assert ("pkg/app.py", "F841") in found and ("pkg/sub/deep.py", "F841") in found
    assert {f for f, _ in found} == {"pkg/app.py", "pkg/sub/deep.py"}
    done = events[-1]["data"]
    assert done["verification"].startswith("Verified")
    assert _left_behind(repo) == []


def test_layout_is_a_pure_listing(tmp_path):
    (tmp_path / "a" / "b").mkdir(parents=True)
    (tmp_path / "ruff.toml").write_text('extend = "shared/base.toml"\n')
    (tmp_path / "shared").mkdir()
    (tmp_path / "shared" / "base.toml").write_text('extend = "../outside/../../x.toml"\n')
    (tmp_path / "a" / "tox.ini").write_text("[flake8]\n")
    (tmp_path / "a" / "b" / "c.py").write_text("x = 1\n")
    assert sparse.layout(tmp_path, ["a/b/c.py"], {}) == [
        "a/b/c.py", "a/tox.ini", "ruff.toml", "shared/base.toml"]
    # A buffer counts as the file being there; a base outside the project does not come.
    assert sparse.layout(tmp_path, ["a/b/c.py"], {"a/b/pyproject.toml": b""}) == [
        "a/b/c.py", "a/b/pyproject.toml", "a/tox.ini", "ruff.toml", "shared/base.toml"]


def test_first_party_imports_stay_first_party(make_repo):
    # Sorted as ruff's isort wants it only when ``other`` is first-party:
    # stdlib, third-party, first-party, each its own group.
    main = "import os\n\nimport requests\n\nimport other\n\nprint(os, requests, other)\n"
    repo = make_repo({"pyproject.toml": '[tool.ruff.lint]\nselect = ["I"]\n', "main.py": main,
                      "other/__init__.py": "", "other/deep.py": "x = 1\n",
                      "unrelated/__init__.py": ""})
    report, listing, isolation = _run(repo, ["main.py"], roles=["lint_tester"])
    assert isolation == "sparse" and listing == ["main.py", "pyproject.toml"]
    assert report.findings == []
    # The same file with ``other`` grouped as third-party is a finding: ruff did look.
    (repo / "main.py").write_text("import os\n\nimport other\nimport requests\n\nprint(os, requests, other)\n")
    report, _, _ = _run(repo, ["main.py"], roles=["lint_tester"])
    assert [f.rule_id for f in report.findings] == ["I001"]


def test_a_sparse_session_stopped_while_being_made_is_verified_and_gone(repo):
    import threading

    from superqode_ls.workspace.errors import CreationAborted

    stop = threading.Event()
    stop.set()  # Ctrl-C before anything was made
    with pytest.raises(CreationAborted) as caught:
        IsolatedSession.create_sync(repo, isolation="sparse", files=["pkg/app.py"], abort=stop)
    v = caught.value.verification
    assert v is not None and v.verified, v
    assert _left_behind(repo) == []


def test_a_left_over_sparse_session_is_discarded_and_verified_by_recovery(repo):
    from superqode_ls.workspace import recovery

    s = IsolatedSession.create_sync(repo, isolation="sparse", files=["pkg/app.py"])
    if s.fingerprint.thread is not None:
        s.fingerprint.thread.join()
    s._release_lock()  # its owner "gone": what recovery finds after a crash
    info = recovery.find_session(s.id)
    assert info.sandbox.is_dir() and info.record is not None and info.record.isolation == "sparse"
    recovery.discard(info)
    verified, line = recovery.verify(info)
    assert verified, line
    assert _left_behind(repo) == [] and not s.sandbox.exists()


def test_fixes_are_checked_inside_the_sparse_sandbox_as_in_a_full_one(repo):
    (repo / "pkg" / "load.py").write_text("import yaml\n\n\ndef read(text):\n    return yaml.load(text)\n")
    report, listing, isolation = _run(repo, ["pkg/load.py"], roles=["security_tester"])
    assert isolation == "sparse" and "pkg/util.py" not in listing
    full, _, full_isolation = _run(repo, ["pkg/load.py"], roles=["security_tester"],
                                   isolation="worktree")
    assert full_isolation == "worktree"
    fixes = [p for p in report.patches if "safe_load" in p.diff]
    assert len(fixes) == 1 and fixes[0].files == ["pkg/load.py"]
    # The fix applied in the sandbox and the tool re-run on it: the same
    # outcome as in the full sandbox (no test imports the file there). The
    # project's tests are not in a sparse sandbox: it says so, never "no tests".
    assert fixes[0].verified_by == "tool"
    assert [(p.id, p.verified, p.verified_by) for p in report.patches] == \
        [(p.id, p.verified, p.verified_by) for p in full.patches]
    assert "the sandbox holds the selected files only" in (fixes[0].verification or "")
    assert "the sandbox holds" not in (full.patches[0].verification or "")
    assert (repo / "pkg" / "load.py").read_text().count("yaml.load(") == 1  # the user's file as it was


def test_a_folder_without_git_gets_one_too(tmp_path):
    from tests.conftest import write_files

    folder = tmp_path / "plain"
    write_files(folder, {"pyproject.toml": PYPROJECT, "app.py": APP, "other.py": "y = 2\n"})
    report, listing, isolation = _run(folder, ["app.py"], roles=["lint_tester"])
    assert isolation == "sparse" and listing == ["app.py", "pyproject.toml"]
    assert [(f.file, f.range.start_line, f.rule_id) for f in report.findings] == [("app.py", 6, "F841")]
    assert report.verification is not None and report.verification.verified
    assert _left_behind(folder) == []
