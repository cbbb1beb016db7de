"""Branch worktrees on real repositories: creation paths, names, concurrency,
removal, the reaper (idle, saved patches, orphans) and promote."""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import threading
import time
from datetime import UTC, datetime
from pathlib import Path

import pytest

from superqode_ls.config import Config
from superqode_ls.workspace import branches as br
from superqode_ls.workspace.errors import WorkspaceError
from superqode_ls.workspace.paths import repo_key
from superqode_ls.workspace.slug import clean_llm_name, folder_name, task_slug

from .conftest import run_git
from .waiting import wait_for

DAY = 86400


def user_state(repo: Path) -> dict:
    """What must not change in the user's repository (besides the intended branch)."""
    git_dir = repo / ".git"
    return {
        "status": run_git(repo, "status", "--porcelain=v1", "--untracked-files=all"),
        "head": (git_dir / "HEAD").read_bytes(),
        "head_commit": run_git(repo, "rev-parse", "HEAD"),
        "index": (git_dir / "index").read_bytes(),
        "config": (git_dir / "config").read_bytes(),
        "stash": run_git(repo, "stash", "list"),
        "files": sorted(
            (str(p.relative_to(repo)), p.read_bytes())
            for p in repo.rglob("*")
            if p.is_file() and ".git" not in p.relative_to(repo).parts
        ),
    }


def branches_of(repo: Path) -> set[str]:
    return set(run_git(repo, "for-each-ref", "--format=%(refname:short)", "refs/heads").split())


def registered(repo: Path) -> list[Path]:
    out = run_git(repo, "worktree", "list", "--porcelain")
    return [Path(line[9:]) for line in out.splitlines() if line.startswith("worktree ")][1:]


def commit_file(wt: Path, rel: str, text: str, msg: str) -> str:
    (wt / rel).parent.mkdir(parents=True, exist_ok=True)
    (wt / rel).write_text(text, encoding="utf-8")
    run_git(wt, "add", rel)
    run_git(wt, "commit", "-q", "-m", msg)
    return run_git(wt, "rev-parse", "HEAD").strip()


# ------------------------------------------------------------------ names


def test_task_slug_is_deterministic_and_short():
    text = "Refactor auth logic in app/models.py"
    assert task_slug(text) == "refactor-auth-logic-app-models-py"
    assert task_slug(text) == task_slug(text)
    assert task_slug("Réparer le café: ß") == "reparer-le-cafe-ss"
    assert len(task_slug("word " * 50)) <= 40
    assert re.fullmatch(r"task-[0-9a-f]{6}", task_slug("!!! ???"))


def test_folder_names_and_llm_answers():
    assert folder_name("feature/login") == "feature-login"
    assert folder_name("feat/ünïcödé/x") == "feat-ünïcödé-x"
    long = folder_name("x/" * 100)
    assert len(long) <= 64 and long != folder_name("x/" * 101)
    assert clean_llm_name("Branch: `feat/Auth Refactor`\nbecause...") == "feat/auth-refactor"
    assert clean_llm_name("   ") is None


# ------------------------------------------------------------------ new


def test_new_branch_from_current_commit_changes_nothing_else(make_repo):
    repo = make_repo({"a.py": "x = 1\n"})
    (repo / "dirty.txt").write_text("user's uncommitted work\n")
    before = user_state(repo)
    head = run_git(repo, "rev-parse", "HEAD").strip()

    rec = br.new_worktree(repo, "feature/login")

    home = Path(os.environ["SUPERQODE_HOME"])
    expected = home / "working" / repo_key(repo) / "branches" / "feature-login"
    assert rec.path == expected and expected.is_dir()
    assert rec.branch == "feature/login" and rec.created_branch and rec.origin == "new"
    assert run_git(expected, "symbolic-ref", "--short", "HEAD").strip() == "feature/login"
    assert run_git(expected, "rev-parse", "HEAD").strip() == head
    assert not (expected / "dirty.txt").exists()  # a real branch: committed state only
    data = json.loads((expected.parent / "feature-login.json").read_text())
    assert data["owner"] == "superqode-ls" and data["kind"] == "branch"
    assert data["repo"] == str(repo) and data["branch"] == "feature/login"
    assert data["state"] == "ready" and data["last_used"]
    assert user_state(repo) == before
    assert branches_of(repo) == {"main", "feature/login"}
    assert registered(repo) == [expected]


def test_existing_branch_is_checked_out_as_is(make_repo):
    repo = make_repo()
    run_git(repo, "branch", "pr-42")
    wt0 = br.new_worktree(repo, "scratch")
    tip = commit_file(wt0.path, "fix.py", "fixed\n", "wip on scratch")
    run_git(repo, "branch", "-f", "pr-42", tip)
    br.remove_worktree(repo, "scratch", delete_branch=True)

    rec = br.new_worktree(repo, "pr-42")
    assert rec.origin == "existing" and not rec.created_branch
    assert run_git(rec.path, "rev-parse", "HEAD").strip() == tip
    assert (rec.path / "fix.py").read_text() == "fixed\n"
    # An existing branch is the user's: removing the worktree keeps it.
    res = br.remove_worktree(repo, "pr-42")
    assert res.removed and not res.branch_deleted
    assert "pr-42" in branches_of(repo)


def test_branch_checked_out_in_main_tree_is_refused_cleanly(make_repo):
    repo = make_repo()
    before = user_state(repo)
    with pytest.raises(WorkspaceError) as e:
        br.new_worktree(repo, "main")
    msg = str(e.value)
    assert "already checked out at" in msg and str(repo) in msg
    assert "superqe worktree new main-2" in msg and "\n" not in msg
    assert registered(repo) == []
    bdir = br.branches_dir(repo)
    assert not bdir.exists() or [p.name for p in bdir.iterdir()] == [".lock"]
    assert user_state(repo) == before and branches_of(repo) == {"main"}


def test_branch_already_in_a_superqode_worktree_points_to_it(make_repo):
    repo = make_repo()
    first = br.new_worktree(repo, "topic")
    with pytest.raises(WorkspaceError, match="open it: superqe worktree open topic"):
        br.new_worktree(repo, "topic")
    assert registered(repo) == [first.path]


def test_new_branch_flag_refuses_existing_branch(make_repo):
    repo = make_repo()
    run_git(repo, "branch", "taken")
    with pytest.raises(WorkspaceError, match="'taken' already exists; to check it out as is: superqe worktree new taken"):
        br.new_worktree(repo, "taken", new_branch=True)
    with pytest.raises(WorkspaceError, match="--from starts a new branch"):
        br.new_worktree(repo, "taken", start="HEAD")
    assert registered(repo) == []


def test_task_creates_slug_branch_and_numbers_repeats(make_repo):
    repo = make_repo()
    task = "Refactor auth logic in app/models.py"
    a = br.new_worktree(repo, task=task)
    b = br.new_worktree(repo, task=task)
    assert a.branch == "refactor-auth-logic-app-models-py" and a.origin == "task"
    assert b.branch == "refactor-auth-logic-app-models-py-2"
    assert a.task == task and a.path != b.path


def test_task_namer_used_and_falls_back_to_slug(make_repo):
    repo = make_repo()
    named = br.new_worktree(repo, task="Fix the login bug", namer=lambda t: "fix/login-bug")
    assert named.branch == "fix/login-bug" and named.name == "fix-login-bug"

    def down(_t: str) -> str:
        raise ConnectionError("provider unreachable")

    assert br.new_worktree(repo, task="Speed up search", namer=down).branch == "speed-up-search"
    assert br.new_worktree(repo, task="Tidy docs", namer=lambda t: "bad name..").branch == "tidy-docs"
    assert br.new_worktree(repo, task="Add cache", namer=lambda t: None).branch == "add-cache"


def test_exploration_is_detached_at_current_commit(make_repo):
    repo = make_repo()
    head = run_git(repo, "rev-parse", "HEAD").strip()
    before = branches_of(repo)
    rec = br.new_worktree(repo)
    assert re.fullmatch(r"exploration-[0-9a-f]{8}", rec.name)
    assert rec.detached and rec.origin == "exploration"
    assert run_git(rec.path, "rev-parse", "HEAD").strip() == head
    assert run_git(rec.path, "symbolic-ref", "-q", "HEAD", check=False) == ""
    assert branches_of(repo) == before
    assert br.new_worktree(repo).name != rec.name


def test_from_a_linked_worktree_uses_its_commit_and_the_main_repo(make_repo):
    repo = make_repo()
    feat = br.new_worktree(repo, "feat")
    tip = commit_file(feat.path, "f.txt", "f\n", "feat work")
    sub = feat.path / "pkg"
    sub.mkdir()
    child = br.new_worktree(sub, "feat-child")
    assert child.repo == str(repo)  # grouped under the main repository
    assert child.path.parent == feat.path.parent
    assert run_git(child.path, "rev-parse", "HEAD").strip() == tip


def test_non_git_folder_is_refused_and_nothing_created(tmp_path):
    plain = tmp_path / "plain"
    plain.mkdir()
    with pytest.raises(br.NotARepository) as e:
        br.new_worktree(plain, "x")
    assert str(e.value) == "Error: worktrees can only be used within a Git repository."
    assert not Path(os.environ["SUPERQODE_HOME"]).exists()
    assert list(plain.iterdir()) == []


def test_unborn_repository_is_refused(tmp_path):
    repo = tmp_path / "empty"
    repo.mkdir()
    run_git(repo, "init", "-q")
    with pytest.raises(WorkspaceError, match="no commits yet"):
        br.new_worktree(repo, "x")


# ------------------------------------------------------------------ names on disk


def test_slashes_unicode_and_spaces(make_repo):
    repo = make_repo({"é.txt": "ü\n"}, name="my répo ünï")
    rec = br.new_worktree(repo, "feat/ünïcode/naïve")
    assert rec.name == "feat-ünïcode-naïve"
    assert (rec.path / "é.txt").read_text() == "ü\n"
    assert rec.path.parent.parent.name.startswith("my-répo-ünï-")
    assert br.open_worktree(repo, "feat/ünïcode/naïve") == rec.path

    # Two branches that sanitise to one folder get two folders.
    a = br.new_worktree(repo, "a/b")
    b = br.new_worktree(repo, "a-b")
    assert a.name == "a-b" and b.name == "a-b-2"
    assert br.open_worktree(repo, "a/b") == a.path and br.open_worktree(repo, "a-b") == a.path
    assert br.open_worktree(repo, "a-b-2") == b.path

    with pytest.raises(WorkspaceError, match=r"'my feature' is not a valid branch name \(try 'my-feature'\)"):
        br.new_worktree(repo, "my feature")
    with pytest.raises(WorkspaceError, match="not a valid branch name"):
        br.new_worktree(repo, "-rf")
    assert len(registered(repo)) == 3


def test_worktree_root_override_and_reaper_still_finds_it(make_repo, tmp_path, monkeypatch):
    repo = make_repo()
    root = tmp_path / "wt root"
    monkeypatch.setenv(br.ENV_ROOT, str(root))
    rec = br.new_worktree(repo, "elsewhere")
    assert rec.path == root / repo_key(repo) / "branches" / "elsewhere"
    monkeypatch.delenv(br.ENV_ROOT)
    assert [i.name for i in br.list_worktrees(repo)] == ["elsewhere"]
    results = br.reap_branch_worktrees(now=time.time() + 100 * DAY)
    assert [(r.name, r.action) for r in results] == [("elsewhere", "removed")]
    assert not rec.path.exists() and registered(repo) == []


def test_parallel_creation_of_eight_worktrees(make_repo):
    repo = make_repo()
    before = user_state(repo)
    names = [f"par/{i}" for i in range(4)] + [None] * 4
    results: list = []
    errors: list = []

    def make(name):
        try:
            results.append(br.new_worktree(repo, name))
        except Exception as e:  # noqa: BLE001 - collected and asserted below
            errors.append(e)

    threads = [threading.Thread(target=make, args=(n,)) for n in names]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert errors == []
    assert len({r.path for r in results}) == 8
    assert sorted(registered(repo)) == sorted(r.path for r in results)
    assert branches_of(repo) == {"main", "par/0", "par/1", "par/2", "par/3"}
    assert len(br.list_worktrees(repo)) == 8
    assert all(i.dirty == 0 for i in br.list_worktrees(repo))
    assert user_state(repo) == before


# ------------------------------------------------------------------ list / open / remove


def test_list_shows_branch_dirty_state_and_open_marks_use(make_repo):
    repo = make_repo()
    rec = br.new_worktree(repo, "listed")
    (rec.path / "new.txt").write_text("n\n")
    (rec.path / "README.md").write_text("changed\n")
    [info] = br.list_worktrees(repo)
    assert info.branch == "listed" and info.dirty == 2 and not info.orphan
    # Listing is read-only: the worktree's index is not refreshed (idle stays idle).
    index = Path(run_git(rec.path, "rev-parse", "--git-path", "index").strip())
    index = index if index.is_absolute() else rec.path / index
    mtime = index.stat().st_mtime_ns
    br.list_worktrees(repo)
    assert index.stat().st_mtime_ns == mtime

    old = rec.last_used
    wait_for(lambda: datetime.now(UTC) > old, 5, "the clock to pass the worktree's last use")
    assert br.open_worktree(repo, "listed") == rec.path
    _, again = br.find_worktree(repo, "listed")
    assert again.last_used > old
    with pytest.raises(WorkspaceError, match="no worktree 'nope'"):
        br.open_worktree(repo, "nope")


def test_remove_refuses_dirty_then_force_saves_patch(make_repo):
    repo = make_repo({"a.txt": "one\n"})
    rec = br.new_worktree(repo, "work")
    (rec.path / "a.txt").write_text("two\n")
    (rec.path / "untracked.bin").write_bytes(b"\0\1binary")
    (rec.path / "latin1.txt").write_bytes("café\n".encode("latin-1"))
    with pytest.raises(WorkspaceError, match="3 uncommitted change"):
        br.remove_worktree(repo, "work")
    assert rec.path.is_dir()

    res = br.remove_worktree(repo, "work", force=True)
    assert res.removed and not rec.path.exists() and registered(repo) == []
    [patch] = res.patches
    assert patch.parent == repo / ".superqode" / "qe-artifacts" / "patches"
    assert patch.name.startswith(rec.id)
    # The saved patch restores the work on the base commit.
    check = br.new_worktree(repo, "check")
    run_git(check.path, "apply", "--binary", str(patch))
    assert (check.path / "a.txt").read_text() == "two\n"
    assert (check.path / "untracked.bin").read_bytes() == b"\0\1binary"
    assert (check.path / "latin1.txt").read_bytes() == "café\n".encode("latin-1")
    # The branch had no commits of its own: gone, no leftovers.
    assert "work" not in branches_of(repo)
    manifest = json.loads((repo / ".superqode/qe-artifacts/manifest.json").read_text())
    assert manifest["artifacts"][0]["session_id"] == rec.id


def test_remove_keeps_created_branch_with_commits_unless_asked(make_repo):
    repo = make_repo()
    rec = br.new_worktree(repo, "keepme")
    commit_file(rec.path, "k.txt", "k\n", "real work")
    res = br.remove_worktree(repo, "keepme")
    assert res.removed and not res.branch_deleted and "1 commit(s)" in res.branch_kept_reason
    assert "keepme" in branches_of(repo) and not rec.path.exists()

    rec2 = br.new_worktree(repo, "keepme")  # now an existing branch: checked out as is
    assert rec2.origin == "existing"
    br.remove_worktree(repo, "keepme")
    assert "keepme" in branches_of(repo)

    rec3 = br.new_worktree(repo, "dropme")
    commit_file(rec3.path, "d.txt", "d\n", "throwaway")
    res3 = br.remove_worktree(repo, "dropme", delete_branch=True)
    assert res3.branch_deleted and "dropme" not in branches_of(repo)
    assert any("branch" in p.name for p in res3.patches)
    assert "Subject: [PATCH] throwaway" in res3.patches[0].read_text()


def test_remove_detached_with_commits_needs_force(make_repo):
    repo = make_repo()
    rec = br.new_worktree(repo)
    commit_file(rec.path, "e.txt", "e\n", "exploring")
    with pytest.raises(WorkspaceError, match="1 commit\\(s\\) on no branch"):
        br.remove_worktree(repo, rec.name)
    res = br.remove_worktree(repo, rec.name, force=True)
    assert res.removed and "Subject: [PATCH] exploring" in res.patches[0].read_text()
    assert not br.branches_dir(repo).exists()  # no clutter left behind


# ------------------------------------------------------------------ reaper


def age(rec: br.BranchRecord, days: float) -> None:
    """Make a worktree look idle for ``days``: record and git's own stamps."""
    stamp = time.time() - days * DAY
    rec.last_used = datetime.fromtimestamp(stamp, UTC)
    br.write_branch_record(rec)
    gd = br._gitdir(rec.path)
    for p in (gd / "index", gd / "logs" / "HEAD"):
        if p.exists():
            os.utime(p, (stamp, stamp))


def test_reaper_thresholds_and_saved_patches(make_repo):
    repo = make_repo({"a.txt": "one\n"})
    explore = br.new_worktree(repo)
    commit_file(explore.path, "x.txt", "x\n", "detached experiment")
    (explore.path / "a.txt").write_text("dirty\n")
    young_explore = br.new_worktree(repo)
    branch_wt = br.new_worktree(repo, "long-lived")
    for rec, days in ((explore, 31), (young_explore, 29), (branch_wt, 60)):
        age(rec, days)
    # Folder mtimes are not activity.
    os.utime(explore.path, None)

    dry = br.reap_branch_worktrees(dry_run=True)
    assert [(r.name, r.action) for r in dry] == [(explore.name, "would-remove")]
    assert explore.path.is_dir() and not (repo / ".superqode").exists()

    [res] = br.reap_branch_worktrees()
    assert res.kind == "detached" and res.action == "removed" and "idle 31 days" in res.reason
    assert not explore.path.exists()
    assert sorted(registered(repo)) == sorted([young_explore.path, branch_wt.path])
    names = sorted(p.name.split(explore.id + "-")[1] for p in res.patches)
    assert names == [f"{explore.name}-commits.patch", f"{explore.name}-uncommitted.patch"]
    assert all(p.parent == repo / ".superqode/qe-artifacts/patches" for p in res.patches)
    commits = next(p for p in res.patches if p.name.endswith("commits.patch")).read_text()
    assert "detached experiment" in commits

    # Branch worktrees: 90 days by default, configurable.
    later = br.reap_branch_worktrees(now=time.time() + 20 * DAY)  # branch at 80 days stays
    assert [(r.name, r.patches) for r in later] == [(young_explore.name, [])]
    cfg = Config.model_validate({"workspace": {"branch_worktree_idle_days": 50}})
    [res2] = br.reap_branch_worktrees(config=cfg)
    assert res2.name == "long-lived" and res2.kind == "branch" and res2.branch_deleted
    assert res2.patches == []  # clean, nothing of its own: nothing to save
    assert "long-lived" not in branches_of(repo)


def test_reaper_recent_git_activity_counts(make_repo):
    repo = make_repo()
    rec = br.new_worktree(repo)
    age(rec, 40)
    commit_file(rec.path, "n.txt", "n\n", "recent")  # HEAD log and index are fresh
    assert br.reap_branch_worktrees() == []
    assert rec.path.is_dir()


def test_reaper_leaves_locked_worktrees(make_repo):
    repo = make_repo()
    rec = br.new_worktree(repo)
    run_git(repo, "worktree", "lock", str(rec.path))
    age(rec, 400)
    [res] = br.reap_branch_worktrees()
    assert res.action == "kept" and res.reason == "locked" and rec.path.is_dir()


def test_reaper_keeps_branch_with_unpushed_commits_and_saves_them(make_repo):
    repo = make_repo()
    rec = br.new_worktree(repo, "unpushed")
    commit_file(rec.path, "u.txt", "u\n", "not pushed yet")
    age(rec, 100)
    [res] = br.reap_branch_worktrees()
    assert res.action == "removed" and not res.branch_deleted
    assert "kept branch unpushed" in res.message
    [patch] = res.patches
    assert patch.name.endswith("-unpushed.patch") and "Subject: [PATCH] not pushed yet" in patch.read_text()
    assert "unpushed" in branches_of(repo)
    assert not rec.path.exists()


def test_orphan_after_repository_moved(make_repo, tmp_path):
    repo = make_repo({"a.txt": "a\n"})
    rec = br.new_worktree(repo, "moving")
    (rec.path / "a.txt").write_text("edited in worktree\n")
    (rec.path / "fresh.txt").write_text("new file\n")
    moved = tmp_path / "moved-away"
    shutil.move(str(repo), str(moved))

    [info] = br.list_worktrees(None)
    assert info.orphan

    [res] = br.reap_branch_worktrees()  # orphans go at once, idle or not
    assert res.kind == "orphan" and res.action == "removed"
    assert not rec.path.exists()
    assert not (rec.path.parent / f"{rec.name}.json").exists()
    [patch] = res.patches
    home = Path(os.environ["SUPERQODE_HOME"])
    assert patch.parent == home / "orphans" / rec.repo_key
    text = patch.read_text()
    assert "+edited in worktree" in text and "+new file" in text
    meta = json.loads(patch.with_suffix(".json").read_text())
    assert meta["repo"] == str(repo) and meta["branch"] == "moving"
    # The moved repository itself is untouched by the reaper and still has the branch.
    assert "moving" in branches_of(moved)


def test_orphan_after_repository_deleted_and_missing_folder(make_repo):
    repo = make_repo()
    gone = br.new_worktree(repo, "by-hand")
    shutil.rmtree(gone.path)  # the user deleted the folder
    [res] = br.reap_branch_worktrees()
    assert res.kind == "missing" and res.action == "removed"
    assert registered(repo) == [] and "by-hand" not in branches_of(repo)

    rec = br.new_worktree(repo)
    shutil.rmtree(repo)
    [res2] = br.reap_branch_worktrees()
    assert res2.kind == "orphan" and not rec.path.exists()
    # Without the repository nobody can tell committed from new: every file is kept.
    [patch] = res2.patches
    assert "+hello" in patch.read_text()


# ------------------------------------------------------------------ promote


def test_promote_session_changes_into_a_branch(make_repo):
    from superqode_ls.workspace.session import IsolatedSession

    repo = make_repo({"calc.py": "def add(a, b):\n    return a - b\n"})
    (repo / "notes.txt").write_text("user's own uncommitted note\n")
    s = IsolatedSession.create_sync(repo, isolation="worktree")
    try:
        (s.sandbox / "calc.py").write_text("def add(a, b):\n    return a + b\n")
        (s.sandbox / "test_calc.py").write_text("from calc import add\n")
    finally:
        s.close_sync(keep=True)
    before = user_state(repo)

    rec = br.promote_session(s.id, "qe/fix-add")
    assert rec.branch == "qe/fix-add" and rec.origin == "promote" and rec.promoted_from == s.id
    assert (rec.path / "calc.py").read_text().endswith("return a + b\n")
    assert (rec.path / "test_calc.py").exists()
    assert run_git(rec.path, "status", "--porcelain") == ""
    log = run_git(rec.path, "log", "-1", "--format=%s%n%an")
    assert s.id in log and "Test User" in log  # the user's identity, not the tool's
    assert run_git(rec.path, "rev-parse", "HEAD~1").strip() == s.base_commit
    assert user_state(repo) == before

    with pytest.raises(WorkspaceError, match="already exists"):
        br.promote_session(s.id, "qe/fix-add")
    with pytest.raises(WorkspaceError, match="no QE session"):
        br.promote_session("qe-20200101-000000-abcdef", "x")


def test_promote_that_does_not_apply_leaves_nothing(make_repo):
    from superqode_ls.workspace.session import IsolatedSession

    repo = make_repo({"a.txt": "a\n"})
    s = IsolatedSession.create_sync(repo, isolation="worktree")
    s.close_sync(keep=True)
    bad = "diff --git a/zzz.txt b/zzz.txt\n--- a/zzz.txt\n+++ b/zzz.txt\n@@ -1 +1 @@\n-nope\n+x\n"
    with pytest.raises(WorkspaceError, match="do not apply"):
        br.promote_session(s.id, "wont-exist", patch=bad)
    assert "wont-exist" not in branches_of(repo)
    assert br.list_worktrees(repo) == []
    with pytest.raises(WorkspaceError, match="no changes to promote"):
        br.promote_session(s.id, "empty")
    assert "empty" not in branches_of(repo)


def test_full_cycle_leaves_no_trace(make_repo):
    repo = make_repo()
    before = user_state(repo)
    recs = [br.new_worktree(repo, "one"), br.new_worktree(repo), br.new_worktree(repo, task="Two things")]
    for r in recs:
        br.remove_worktree(repo, r.name)
    assert registered(repo) == [] and branches_of(repo) == {"main"}
    admin = repo / ".git" / "worktrees"
    assert not admin.exists() or list(admin.iterdir()) == []
    assert user_state(repo) == before
    assert not br.branches_dir(repo).exists()
    fsck = subprocess.run(["git", "fsck", "--no-dangling"], cwd=repo, capture_output=True, check=False)
    assert fsck.returncode == 0


def test_worktree_root_inside_the_repository_is_refused(make_repo, monkeypatch):
    repo = make_repo()
    before = user_state(repo)
    monkeypatch.setenv(br.ENV_ROOT, str(repo / "wts"))
    with pytest.raises(WorkspaceError, match="inside the repository"):
        br.new_worktree(repo, "x")
    assert user_state(repo) == before and registered(repo) == []


def test_half_created_worktree_is_reaped_after_a_day_not_before(make_repo):
    repo = make_repo()
    rec = br.new_worktree(repo, "crashed")
    rec.state = "creating"  # as if the process died between record and `git worktree add`
    br.write_branch_record(rec)
    assert br.reap_branch_worktrees() == []
    [res] = br.reap_branch_worktrees(now=time.time() + 2 * DAY)
    assert res.reason == "its creation never finished" and not rec.path.exists()
    assert "crashed" not in branches_of(repo)


def test_session_reaper_runs_the_branch_reaper(make_repo):
    from superqode_ls.workspace import reaper

    repo = make_repo()
    rec = br.new_worktree(repo)
    report = reaper.reap(now=time.time() + 31 * DAY)
    assert [(r.name, r.action) for r in report.branches] == [(rec.name, "removed")]
    assert not rec.path.exists() and registered(repo) == []


def test_branch_only_on_the_remote_becomes_a_tracking_branch(make_repo, tmp_path):
    upstream = make_repo(name="upstream")
    run_git(upstream, "checkout", "-q", "-b", "pr-7")
    tip = commit_file(upstream, "pr.txt", "pr\n", "the PR")
    run_git(upstream, "checkout", "-q", "main")
    clone = tmp_path / "clone"
    run_git(tmp_path, "clone", "-q", str(upstream), str(clone))
    assert "pr-7" not in branches_of(clone)

    rec = br.new_worktree(clone, "pr-7")
    assert rec.origin == "remote" and rec.created_branch and rec.base_commit == tip
    assert run_git(rec.path, "rev-parse", "HEAD").strip() == tip
    assert run_git(clone, "rev-parse", "--abbrev-ref", "pr-7@{upstream}").strip() == "origin/pr-7"
    # Nothing on it that the remote lacks: removing leaves no local branch behind.
    res = br.remove_worktree(clone, "pr-7")
    assert res.branch_deleted and "pr-7" not in branches_of(clone)


def test_moved_superqode_home_follows_the_records(make_repo, tmp_path, monkeypatch):
    repo = make_repo()
    rec = br.new_worktree(repo, "travels")
    (rec.path / "wip.txt").write_text("wip\n")
    home = Path(os.environ["SUPERQODE_HOME"])
    new_home = tmp_path / "new home"
    shutil.move(str(home), str(new_home))
    monkeypatch.setenv("SUPERQODE_HOME", str(new_home))
    [info] = br.list_worktrees(repo)
    assert info.path == new_home / "working" / repo_key(repo) / "branches" / "travels"
    assert info.dirty == 1 and not info.orphan
    res = br.remove_worktree(repo, "travels", force=True)
    assert res.removed and not info.path.exists() and registered(repo) == []
    assert "+wip" in res.patches[0].read_text()
    assert br.list_worktrees(repo) == []


def test_reaper_saves_only_commits_the_remote_lacks(make_repo, tmp_path):
    upstream = make_repo(name="upstream")
    run_git(upstream, "checkout", "-q", "-b", "pr-9")
    commit_file(upstream, "pr.txt", "pr\n", "already on the remote")
    run_git(upstream, "checkout", "-q", "main")
    clone = tmp_path / "clone"
    run_git(tmp_path, "clone", "-q", str(upstream), str(clone))
    run_git(clone, "branch", "-q", "--track", "pr-9", "origin/pr-9")  # the user's own branch

    rec = br.new_worktree(clone, "pr-9")
    assert rec.origin == "existing"
    commit_file(rec.path, "fix.txt", "fix\n", "local repair")
    age(rec, 100)
    [res] = br.reap_branch_worktrees()
    assert res.action == "removed" and not res.branch_deleted
    [patch] = res.patches
    text = patch.read_text()
    assert "Subject: [PATCH] local repair" in text and "already on the remote" not in text
    assert "pr-9" in branches_of(clone)  # not ours to delete
