"""`superqe status | revert | recover | clean | artifacts`."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time

import pytest

from superqode_ls.cli import main
from superqode_ls.cli.sessions import parse_duration
from superqode_ls.workspace import recovery
from superqode_ls.workspace.artifacts import Artifacts
from superqode_ls.workspace.records import write_record
from tests.conftest import run_git
from tests.safety_helpers import (
    LiveSession,
    content_fingerprint,
    crash_session,
    leftovers,
    lock_holders,
    registrations,
)


def _run(capsys, *argv):
    code = main(list(argv))
    out, err = capsys.readouterr()
    return code, out, err


@pytest.mark.parametrize("text,seconds", [("30m", 1800), ("12h", 43200), ("7d", 604800),
                                          ("45s", 45), ("2w", 1209600), ("1.5h", 5400)])
def test_parse_duration(text, seconds):
    assert parse_duration(text) == seconds


@pytest.mark.parametrize("bad", ["", "7", "d", "7x", "-1d", "7 days", "1e3h"])
def test_bad_duration_is_one_line_exit_2(capsys, bad):
    with pytest.raises(SystemExit) as e:
        main(["clean", f"--older-than={bad}"])
    assert e.value.code == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "invalid duration" in err and "7d" in err


def test_status_lists_this_project_or_all(capsys, make_repo, monkeypatch):
    a, b = make_repo(name="alpha"), make_repo(name="beta")
    sa, sb = crash_session(a, edits={"x.txt": "1"}), crash_session(b, mode="deep")
    monkeypatch.chdir(a)
    code, out, err = _run(capsys, "status")
    assert code == 0 and sa in out and sb not in out
    header, row = out.splitlines()[:2]
    assert header.split() == ["ID", "REPO", "MODE", "STATE", "AGE", "CHANGES"]
    assert row.split()[2:4] == ["quick", "interrupted"]
    assert "superqe recover ID" in err
    code, out, _ = _run(capsys, "status", "--all", "--json")
    data = {d["id"]: d for d in json.loads(out)}
    assert set(data) == {sa, sb}
    assert data[sb]["mode"] == "deep" and data[sb]["state"] == "interrupted"
    assert data[sb]["repo"] == str(b.resolve()) and data[sb]["owner_alive"] is False
    assert {"age_s", "changes", "sandbox"} <= set(data[sa])
    assert data[sa]["changes"] == 1 and data[sb]["changes"] == 0  # counted from the sandbox
    assert row.split()[-1] == "1"
    recovery.clean_sessions(recovery.scan(), force=True)
    monkeypatch.chdir(b)
    code, out, _ = _run(capsys, "status")
    assert code == 0 and out.startswith("no sessions")


def test_revert_all_of_this_project_verifies(capsys, make_repo, monkeypatch):
    repo, other = make_repo(), make_repo()
    (repo / "README.md").write_text("dirty\n")
    before = content_fingerprint(repo)
    s1, s2 = crash_session(repo), crash_session(repo, edits={"README.md": "agent\n"})
    s3 = crash_session(other)
    monkeypatch.chdir(repo)
    code, out, _ = _run(capsys, "revert")
    assert code == 0
    assert f"reverted {s1}" in out and f"reverted {s2}" in out and s3 not in out
    assert out.count("Verified: the project is exactly as before the session.") == 2
    assert registrations(repo) == [] and content_fingerprint(repo) == before
    assert [s.id for s in recovery.scan()] == [s3]
    code, out, _ = _run(capsys, "revert")
    assert code == 0 and "no sessions to revert" in out


def test_revert_reports_when_the_tree_changed_since(capsys, make_repo, monkeypatch):
    repo = make_repo()
    sid = crash_session(repo)
    # Without a kernel barrier nothing proves who changed it: NOT verified.
    # (With one, the change is the user's and kept: test_verification.py.)
    info = recovery.find_session(sid)
    write_record(info.record_path, info.record.model_copy(update={"barrier_abi": None}))
    (repo / "README.md").write_text("the user kept working\n")
    code, out, _ = _run(capsys, "revert", sid)
    assert code == 3 and "NOT verified" in out and "README.md" in out
    assert leftovers() == []


def test_revert_of_a_running_session_needs_force(capsys, make_repo):
    repo = make_repo()
    live = LiveSession(repo)
    try:
        code, _, err = _run(capsys, "revert", live.id)
        assert code == 2 and "still running" in err and "--force" in err
        assert err.count("\n") == 1
        code, out, _ = _run(capsys, "revert", "--force", live.id)
        assert code == 0 and f"reverted {live.id}" in out
        assert leftovers() == [] and lock_holders() == []
    finally:
        live.stop()


def test_unknown_session_is_one_line(capsys, make_repo):
    for argv in (["revert", "qe-20200101-000000-abcdef"], ["recover", "nope"]):
        code, _, err = _run(capsys, *argv)
        assert code == 2 and err.count("\n") == 1 and err.startswith("superqe: ")


def test_recover_extracts_a_patch_that_applies(capsys, make_repo):
    repo = make_repo({"src/calc.py": "def add(a, b):\n    return a - b\n", "README.md": "r\n"})
    sid = crash_session(repo, edits={"src/calc.py": "def add(a, b):\n    return a + b\n",
                                     "tests/test_calc.py": "def test_add(): pass\n"})
    before = content_fingerprint(repo)
    code, out, _ = _run(capsys, "recover", sid)
    assert code == 0, out
    patch = repo / ".superqode" / "qe-artifacts" / "patches" / f"{sid}-recovered.patch"
    assert f"patch: {patch}" in out and "Verified" in out
    text = patch.read_text()
    assert "+    return a + b" in text and "tests/test_calc.py" in text
    assert leftovers() == [] and content_fingerprint(repo) == before
    run_git(repo, "apply", "--check", str(patch))


def test_recover_keep_and_resume(capsys, make_repo):
    repo = make_repo()
    sid = crash_session(repo)
    code, out, _ = _run(capsys, "recover", sid, "--keep")
    assert code == 0 and "no changes to recover" in out and "kept: " in out
    assert recovery.find_session(sid).state == "kept"
    sid2 = crash_session(repo)
    code, out, _ = _run(capsys, "recover", sid2, "--resume")
    assert code == 0 and f"resumed {sid2}" in out
    info = recovery.find_session(sid2)
    assert info.state == "kept" and info.sandbox.is_dir()
    with pytest.raises(SystemExit) as e:
        main(["recover", sid2, "--resume", "--keep"])
    assert e.value.code == 2 and "not allowed with" in capsys.readouterr().err
    recovery.clean_sessions(recovery.scan(), force=True)


def test_clean_older_than_and_running(capsys, make_repo):
    repo = make_repo()
    old = crash_session(repo, session_id="qe-20200101-000000-aaaaaa")
    new = crash_session(repo)
    info = recovery.find_session(old)
    long_ago = time.time() - 10 * 86400
    for p in (info.heartbeat, info.record_path):
        os.utime(p, (long_ago, long_ago))
    gitdir = recovery._sandbox_gitdir(info.sandbox)
    for p in (gitdir / "index", gitdir / "logs" / "HEAD"):
        if p.exists():
            os.utime(p, (long_ago, long_ago))
    code, out, _ = _run(capsys, "clean", "--older-than", "7d")
    assert code == 0 and f"removed {old}" in out and "removed 1 session(s)" in out
    assert [s.id for s in recovery.scan()] == [new]
    kept = crash_session(repo)
    recovery.mark_kept(recovery.find_session(kept))
    live = LiveSession(repo)
    try:
        code, out, err = _run(capsys, "clean")
        assert code == 0 and f"removed {new}" in out
        assert "1 running session(s) left alone" in err
        assert f"kept {kept}: kept on purpose" in err
        assert sorted(s.id for s in recovery.scan()) == sorted([live.id, kept])
        code, out, _ = _run(capsys, "clean", "--force", "--json")
        data = json.loads(out)
        assert sorted(data["removed"]) == sorted([live.id, kept]) and data["errors"] == []
    finally:
        live.stop()
    assert leftovers() == [] and registrations(repo) == [] and lock_holders() == []


def test_clean_removes_folders_of_deleted_projects(capsys, make_repo):
    import shutil

    from superqode_ls.workspace.paths import repo_dir

    repo = make_repo()
    crash_session(repo)
    base = repo_dir(repo)
    shutil.rmtree(repo)
    code, out, _ = _run(capsys, "clean")
    assert code == 0 and "1 folder(s) of deleted projects" in out
    assert not base.exists()


def _old_and_new_artifacts(repo):
    """A patch eight days old and a fresh log, of two sessions."""
    arts = Artifacts(repo, "qe-20200101-000000-aaaaaa").prepare()
    old = arts.write_patch("old", "diff\n")
    new = Artifacts(repo, "qe-20260101-000000-bbbbbb").prepare().write_log("new", "log\n")
    week_ago = time.time() - 8 * 86400
    os.utime(old, (week_ago, week_ago))
    return old, new


def test_artifacts_clean_older_than(capsys, make_repo, monkeypatch):
    repo = make_repo()
    old, new = _old_and_new_artifacts(repo)
    monkeypatch.chdir(repo)
    code, out, _ = _run(capsys, "artifacts")
    assert code == 0 and "patches/qe-20200101-000000-aaaaaa-old.patch" in out
    code, _, err = _run(capsys, "artifacts", "--older-than", "7d")
    assert code == 2 and "--older-than goes with --clean" in err
    code, out, _ = _run(capsys, "artifacts", "--clean", "--older-than", "7d")
    assert code == 0 and "removed 1 artifact(s)" in out
    assert not old.exists() and new.exists()
    code, _, err = _run(capsys, "artifacts", str(repo / "missing"), "--clean")
    assert code == 2 and "no such directory" in err


def test_artifacts_list_and_clean_actions(capsys, make_repo, monkeypatch, tmp_path):
    repo = make_repo()
    old, new = _old_and_new_artifacts(repo)
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    monkeypatch.chdir(elsewhere)  # `list` is an action, not a folder named list
    code, out, err = _run(capsys, "artifacts", "list", str(repo))
    assert code == 0, err
    assert "patches/qe-20200101-000000-aaaaaa-old.patch" in out and "logs/" in out
    code, out2, _ = _run(capsys, "artifacts", "-C", str(repo), "list")
    assert code == 0 and out2 == out
    code, out, _ = _run(capsys, "artifacts", "list", str(repo), "--json")
    data = json.loads(out)
    assert code == 0 and len(data["artifacts"]) == 2
    assert {e["session_id"] for e in data["artifacts"]} == {
        "qe-20200101-000000-aaaaaa", "qe-20260101-000000-bbbbbb"}
    for argv, message in [
        (("artifacts", "list", str(repo), "--older-than", "7d"), "--older-than goes with --clean"),
        (("artifacts", "list", str(repo), "--clean"), "does not take --clean"),
        (("artifacts", "list", str(repo), str(repo)), "one project only"),
        (("artifacts", "clean", str(repo), "--json"), "--json goes with artifacts list"),
        (("artifacts", "list", str(elsewhere / "nope")), "no such directory"),
    ]:
        code, out, err = _run(capsys, *argv)
        assert code == 2 and message in err and err.count("\n") == 1, (argv, err)
    assert old.exists()  # refused commands changed nothing
    code, out, _ = _run(capsys, "artifacts", "clean", str(repo), "--older-than", "7d")
    assert code == 0 and "removed 1 artifact(s)" in out
    assert not old.exists() and new.exists()


def test_cli_entry_point_runs_status(make_repo):
    repo = make_repo()
    proc = subprocess.run([sys.executable, "-m", "superqode_ls", "status", "--all", "--json"],
                          cwd=repo, capture_output=True, text=True)
    assert proc.returncode == 0 and json.loads(proc.stdout) == []
