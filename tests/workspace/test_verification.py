"""Attributive verification on real repositories: git's housekeeping is no
change, the user's own work during a session is named and kept when the
kernel barrier shut the session out, and objects gone from the store are
never verified."""

from __future__ import annotations

import os
import subprocess
import threading
from pathlib import Path

import pytest

from superqode_ls.cli import main
from superqode_ls.config import Config
from superqode_ls.models import QualityReport, Verification, utcnow
from superqode_ls.qe.report.markdown import render_markdown
from superqode_ls.workspace import landlock, recovery
from superqode_ls.workspace.paths import working_root
from superqode_ls.workspace.records import read_record, write_record
from superqode_ls.workspace.session import IsolatedSession, load_record, verify_record

from ..conftest import run_git
from ..safety_helpers import crash_session, leftovers
from ..waiting import WaitTimeout, wait_for


def _session(repo: Path, barrier_abi: int | None = None) -> IsolatedSession:
    s = IsolatedSession.create_sync(repo, config=Config())
    # The barrier engineer's code sets this when Landlock confines the
    # session; here it stands for "the kernel shut the session out".
    s.barrier_abi = barrier_abi
    return s


def _user_git(repo: Path, *args: str) -> str:
    """The user's own git, as they type it: optional locks, hooks, auto gc."""
    return run_git(repo, *args)


@pytest.fixture
def repo(make_repo):
    r = make_repo({"a.py": "a = 1\n", "b/c.txt": "c\n"})
    for i in range(5):  # loose objects and history for gc to pack
        (r / f"f{i}.txt").write_text(f"{i}\n")
        run_git(r, "add", f"f{i}.txt")
        run_git(r, "commit", "-q", "-m", f"c{i}")
    return r


def test_the_user_edits_and_commits_during_a_session_with_the_barrier(repo):
    s = _session(repo, barrier_abi=7)
    (repo / "a.py").write_text("a = 2  # the user's edit\n")
    _user_git(repo, "commit", "-q", "-am", "user's own commit")
    (repo / "b/c.txt").write_text("typing...\n")  # unsaved-then-saved editor work
    v = s.close_sync()
    assert v.verified and v.differences == []
    assert "NOT verified" not in v.line
    assert "changed outside the session (kept)" in v.line
    assert "a.py" in v.line and "b/c.txt" in v.line
    branch = run_git(repo, "symbolic-ref", "HEAD").strip()
    assert any(branch in d for d in v.outside_changes), v.outside_changes
    # kept: the user's work is there, nothing was reverted
    assert (repo / "a.py").read_text() == "a = 2  # the user's edit\n"
    assert (repo / "b/c.txt").read_text() == "typing...\n"
    assert run_git(repo, "log", "-1", "--format=%s").strip() == "user's own commit"


def test_without_the_barrier_a_real_change_is_still_not_verified(repo):
    s = _session(repo)
    (repo / "a.py").write_text("a = 3  # longer\n")
    _user_git(repo, "branch", "made-during")
    v = s.close_sync()
    assert not v.verified and v.outside_changes == []
    assert "modified: a.py" in v.differences
    assert "created: ref refs/heads/made-during" in v.differences
    assert v.line.startswith("NOT verified")


@pytest.mark.parametrize("housekeeping", [
    ["gc", "-q"],
    ["-c", "gc.auto=1", "-c", "gc.autoPackLimit=1", "-c", "gc.autoDetach=false", "gc", "--auto", "-q"],
    ["pack-refs", "--all"],
    ["maintenance", "run", "--task=gc", "--task=commit-graph", "--quiet"],
    ["update-server-info"],
    ["update-ref", "refs/prefetch/remotes/origin/main", "HEAD"],
])
def test_gits_housekeeping_during_a_session_is_verified(repo, housekeeping):
    if "--auto" in housekeeping:  # two packs: over gc.autoPackLimit=1
        run_git(repo, "repack", "-q")
        run_git(repo, "commit", "-q", "--allow-empty", "-m", "c4")
        run_git(repo, "repack", "-q")
    s = _session(repo)
    objects_before = sorted(os.listdir(repo / ".git/objects"))
    packed_before = (repo / ".git/packed-refs").exists()
    _user_git(repo, *housekeeping)
    (repo / ".git/gc.log").write_text("warning: there are too many unreachable loose objects\n")
    (repo / ".git/gc.pid").write_text("12345 somehost\n")
    (repo / ".git/FETCH_HEAD").write_text("0" * 40 + "\t\tbranch 'x' of elsewhere\n")
    changed = (sorted(os.listdir(repo / ".git/objects")) != objects_before
               or (repo / ".git/packed-refs").exists() != packed_before
               or (repo / ".git/info/refs").exists()
               or (repo / ".git/refs/prefetch").exists())
    assert changed, "the housekeeping did nothing; the test would prove nothing"
    v = s.close_sync()
    assert v.verified, v.differences
    assert v.outside_changes == [] and v.line.startswith("Verified: the project is exactly")
    assert run_git(repo, "log", "--format=%s").splitlines()[0] == "c4"


def test_a_split_index_freshened_by_reads_is_verified(repo):
    _user_git(repo, "update-index", "--split-index")
    (repo / "a.py").write_text("a = 1  # unstaged\n")
    _user_git(repo, "add", "b/c.txt")
    shared = sorted((repo / ".git").glob("sharedindex.*"))
    assert shared, "git made no shared index"
    stamps = {p: p.stat().st_mtime_ns for p in shared}
    s = _session(repo)
    for p in shared:  # what each read of the split index does, made visible
        os.utime(p, ns=(p.stat().st_atime_ns, p.stat().st_mtime_ns + 5_000_000_000))
    _user_git(repo, "status", "--porcelain")
    _user_git(repo, "diff", "--stat")
    run_git(repo, "update-index", "-q", "--refresh", check=False)  # 1: a.py is modified
    assert any(p.exists() and p.stat().st_mtime_ns != stamps[p] for p in shared)
    v = s.close_sync()
    assert v.verified, v.differences
    assert v.outside_changes == []


def test_a_staged_change_in_a_split_index_is_seen(repo):
    _user_git(repo, "update-index", "--split-index")
    s = _session(repo)
    (repo / "a.py").write_text("a = 5\n")
    _user_git(repo, "add", "a.py")
    v = s.close_sync()
    assert not v.verified
    assert any(d.startswith("staged: index a.py") for d in v.differences), v.differences


@pytest.mark.parametrize("barrier", [None, 7])
def test_heads_object_deleted_through_the_alternates_is_never_verified(repo, barrier):
    head = run_git(repo, "rev-parse", "HEAD").strip()
    s = _session(repo, barrier_abi=barrier)
    objects = next(p for p in _alternates_path_all(s) if (p / head[:2] / head[2:]).exists())
    os.chmod(objects / head[:2] / head[2:], 0o644)
    (objects / head[:2] / head[2:]).unlink()  # as a command in the sandbox could
    v = s.close_sync()
    assert not v.verified
    assert any(head in d and "HEAD" in d for d in v.differences), v.differences
    assert "NOT verified" in v.line and head in v.line


def _alternates_path_all(s: IsolatedSession) -> list[Path]:
    """Every object dir the sandbox's git reads through its alternates."""
    found: list[Path] = []
    todo = [s.private / "git" / "common" / "objects"]
    while todo:
        d = todo.pop()
        alt = d / "info" / "alternates"
        if not alt.exists():
            continue
        for ln in alt.read_text().splitlines():
            if ln.strip():
                p = Path(ln.strip()) if os.path.isabs(ln.strip()) else (d / ln.strip()).resolve()
                found.append(p)
                todo.append(p)
    return found


def test_an_index_blob_deleted_is_named(repo):
    (repo / "staged.txt").write_text("staged only, no commit has it\n")
    run_git(repo, "add", "staged.txt")
    blob = run_git(repo, "rev-parse", ":staged.txt").strip()
    s = _session(repo)
    os.unlink(repo / ".git/objects" / blob[:2] / blob[2:])
    v = s.close_sync()
    assert not v.verified
    assert f"missing object: {blob} (index staged.txt)" in v.differences


def test_a_users_nested_superqode_folder_and_qe_named_worktree_are_compared(repo, tmp_path):
    (repo / "sub/.superqode").mkdir(parents=True)
    (repo / "sub/.superqode/file").write_text("the user's\n")
    run_git(repo, "add", "sub")
    run_git(repo, "commit", "-q", "-m", "sub")
    s = _session(repo)
    (repo / "sub/.superqode/file").write_text("changed during the session\n")
    _user_git(repo, "worktree", "add", "-q", "--detach", str(tmp_path / "qe-mine"))
    v = s.close_sync()
    assert not v.verified
    assert "modified: sub/.superqode/file" in v.differences
    assert any(d.startswith("created: .git/worktrees/qe-mine/") for d in v.differences), v.differences


def test_a_session_for_a_folder_skips_that_folders_artifacts_only(repo):
    (repo / "sub").mkdir()
    (repo / "sub/x.py").write_text("x = 1\n")
    s = IsolatedSession.create_sync(repo / "sub", config=Config())
    assert s.project == repo and s.own == [".superqode", "sub/.superqode"]
    (repo / "sub/.superqode/qe-artifacts").mkdir(parents=True)
    (repo / "sub/.superqode/qe-artifacts/r.json").write_text("{}")
    (repo / ".superqode").mkdir()
    (repo / ".superqode/baseline.json").write_text("{}")
    v = s.close_sync()
    assert v.verified, v.differences


def test_the_record_carries_the_barrier_to_a_revert_after_a_crash(repo):
    s = _session(repo, barrier_abi=None)
    try:
        rec = load_record(repo, s.id)
        assert rec is not None and rec.barrier_abi == landlock.abi()  # what the session ran under
        (repo / "a.py").write_text("the user, while the session ran\n")
        rec.barrier_abi = None
        assert not verify_record(rec).verified
        rec.barrier_abi = 5
        v = verify_record(rec)
        assert v.verified and v.barrier_abi == 5 and "a.py" in v.line
        assert v.outside_changes == ["modified: a.py"]
    finally:
        s.close_sync()


def test_superqe_revert_of_a_crashed_barrier_session_keeps_the_users_work(repo, capsys, monkeypatch):
    sid = crash_session(repo)
    info = recovery.find_session(sid)
    rec = read_record(info.record_path)
    rec.barrier_abi = 6
    write_record(info.record_path, rec)
    (repo / "a.py").write_text("a = 42\n")
    _user_git(repo, "commit", "-q", "-am", "mine")
    monkeypatch.chdir(repo)
    code = main(["revert", sid])
    out, _ = capsys.readouterr()
    assert code == 0, out
    assert "NOT verified" not in out and "changed outside the session (kept): a.py" in out
    assert (repo / "a.py").read_text() == "a = 42\n" and leftovers() == []


def test_superqe_exec_keeps_what_the_user_changed_meanwhile(repo, capsys, monkeypatch, tmp_path):
    """The command waits while "the user" (a thread of this test, outside
    the barrier) edits their file; the session ends verified, exit 0."""
    if landlock.abi() is None:  # no kernel here: the attribution is what is tested
        real_init = IsolatedSession.__init__

        def with_barrier(self, *a, **kw):
            real_init(self, *a, **kw)
            self.barrier_abi = 4

        monkeypatch.setattr(IsolatedSession, "__init__", with_barrier)
    go = tmp_path / "go"

    def user() -> None:
        try:
            wait_for(lambda: list(working_root().glob("*/qe/*/started")), 120, "the command to start")
            (repo / "a.py").write_text("a = 1\nedit\n")
        except WaitTimeout:
            pass  # the session then ends unchanged and the assertions below say so
        finally:
            go.write_text("")

    t = threading.Thread(target=user)
    t.start()
    try:
        wait = (f"touch started; i=0; while [ ! -e '{go}' ] && [ $i -lt 2400 ]; "
                "do sleep 0.05; i=$((i+1)); done")
        code = main(["exec", str(repo), "--", "sh", "-c", wait])
    finally:
        go.write_text("")
        t.join()
    _, err = capsys.readouterr()
    assert code == 0, err
    assert "changed outside the session (kept): a.py" in err and "NOT verified" not in err
    assert (repo / "a.py").read_text() == "a = 1\nedit\n"


def test_the_report_shows_both_lists():
    v = Verification(verified=False, differences=["missing object: abc (HEAD)", "modified: x"],
                     outside_changes=["modified: a.py"], barrier_abi=3)
    report = QualityReport(session_id="qe-1", project="/p", mode="quick", isolation="worktree",
                           started_at=utcnow(), verification=v)
    again = QualityReport.model_validate_json(report.model_dump_json())
    assert again.verification == v
    md = render_markdown(report)
    assert "NOT verified: 2 difference(s)" in md
    assert "- `modified: a.py`" in md and "Changed outside the session (kept" in md
    ok = Verification(verified=True, outside_changes=["moved: ref refs/heads/main (a -> b)"],
                      barrier_abi=3)
    assert ok.line == ("Verified: nothing of the session wrote the project (kernel barrier, "
                       "Landlock ABI 3); changed outside the session (kept): ref refs/heads/main")


def test_housekeeping_files_written_by_hand_are_no_change(repo):
    """The same, without git: files git keeps for itself come and go."""
    from superqode_ls.workspace.fingerprint import compare, take_fingerprint

    before = take_fingerprint(repo)
    git_dir = repo / ".git"
    (git_dir / "ORIG_HEAD").write_text("0" * 40 + "\n")
    (git_dir / "COMMIT_EDITMSG").write_text("draft\n")
    (git_dir / "index.lock").write_text("")
    (git_dir / "info/refs").write_text("")
    (git_dir / "sharedindex.0123").write_text("")
    (git_dir / "logs/HEAD").write_text("rewritten reflog\n")
    (git_dir / "index.lock").unlink()
    subprocess.run(["git", "status"], cwd=repo, capture_output=True, check=True)
    assert compare(before, take_fingerprint(repo)) == []


def test_the_language_server_alarms_on_a_breach_and_only_logs_outside_changes():
    from types import SimpleNamespace

    from superqode_ls.server.runs import _tell_verification

    said: list[tuple[str, str]] = []
    ls = SimpleNamespace(notify_user=lambda m, t: said.append(("notify", m)),
                         log=lambda m: said.append(("log", m)))
    run = SimpleNamespace(id="qe-1")

    def report(v):
        return QualityReport(session_id="qe-1", project="/p", mode="quick", isolation="worktree",
                             started_at=utcnow(), verification=v)

    _tell_verification(ls, run, report(Verification(verified=True)))
    assert said == []
    _tell_verification(ls, run, report(Verification(
        verified=True, outside_changes=["modified: a.py"], barrier_abi=4)))
    assert said == [("log", "SuperQode: session qe-1: " + Verification(
        verified=True, outside_changes=["modified: a.py"], barrier_abi=4).line)]
    said.clear()
    _tell_verification(ls, run, report(Verification(verified=False, differences=["modified: x"])))
    assert said[0][0] == "notify" and "NOT verified" in said[0][1] and "x" in said[0][1]


def test_a_fingerprint_of_an_older_superqode_is_refused_with_the_reason(repo):
    """The old stat-based git section would differ everywhere: say why it
    cannot be compared instead of listing every git file as changed."""
    s = _session(repo)
    try:
        rec = load_record(repo, s.id)
        path = Path(rec.fingerprint_file)
        path.write_text('{"root": "%s", "files": {}, "git": {}}' % repo)
        v = verify_record(rec)
        assert not v.verified
        assert v.differences == ["the stored fingerprint is unreadable: "
                                 "the stored fingerprint is from another SuperQode version"]
    finally:
        s.close_sync()
