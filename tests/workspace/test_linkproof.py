"""Sandbox removal never follows a symlink and never deletes outside
$SUPERQODE_HOME (issue 13): a command that swaps its own sandbox for a link to
the user's repository must not make SuperQode delete that repository's .git."""

from __future__ import annotations

import hashlib
import os
import re
import shutil
import signal
import stat
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import pytest

from superqode_ls.workspace import landlock, namespaces, removal
from superqode_ls.workspace.errors import WorkspaceError
from superqode_ls.workspace.gitsnapshot import SnapshotStore
from superqode_ls.workspace.paths import store_dir, working_root
from superqode_ls.workspace.session import IsolatedSession

from ..conftest import run_git
from ..waiting import wait_for

SUPERQE = [sys.executable, "-m", "superqode_ls"]


def superqe(*args: str, env: dict | None = None) -> subprocess.CompletedProcess:
    return subprocess.run([*SUPERQE, *args], capture_output=True, text=True, timeout=120,
                          check=False, env={**os.environ, **(env or {})})


def everything(root: Path, skip: tuple[str, ...] = ()) -> dict[str, tuple]:
    """Every entry below ``root``, .git included: kind, mode, content or target
    (``skip``: top-level names left out)."""
    state: dict[str, tuple] = {}
    for dirpath, dirnames, filenames in os.walk(root):
        if dirpath == str(root):
            dirnames[:] = [d for d in dirnames if d not in skip]
            filenames = [f for f in filenames if f not in skip]
        for name in dirnames + filenames:
            p = os.path.join(dirpath, name)
            rel = os.path.relpath(p, root)
            st = os.lstat(p)
            if stat.S_ISLNK(st.st_mode):
                state[rel] = ("link", os.readlink(p))
            elif stat.S_ISDIR(st.st_mode):
                state[rel] = ("dir", stat.S_IMODE(st.st_mode))
            else:
                data = Path(p).read_bytes()
                state[rel] = ("file", stat.S_IMODE(st.st_mode), hashlib.sha256(data).hexdigest())
    return state


@pytest.fixture
def user_repo(make_repo):
    """A repository with history, a branch, a stash and uncommitted work."""
    repo = make_repo({"app.py": "x = 1\n", "lib/util.py": "def f():\n    return 1\n"})
    (repo / "app.py").write_text("x = 2\n")
    run_git(repo, "commit", "-qam", "second")
    run_git(repo, "branch", "feature")
    (repo / "app.py").write_text("x = 3\n")
    run_git(repo, "stash", "-q")
    (repo / "lib/util.py").write_text("def f():\n    return 2\n")  # unstaged
    (repo / "notes.txt").write_text("untracked\n")
    return repo


def git_facts(repo: Path) -> tuple[str, ...]:
    """What the user sees of their history; read without rewriting the index."""
    def out(*args: str) -> str:
        return subprocess.run(["git", *args], cwd=repo, capture_output=True, text=True,
                              check=True, env={**os.environ, "GIT_OPTIONAL_LOCKS": "0"}).stdout
    return (out("log", "--all", "--format=%H %s"), out("stash", "list"), out("show-ref"),
            out("status", "--porcelain"))


SWAP = 'S=$PWD; cd /; mv "$S" "$S.x"; ln -s "{target}" "$S"'


# -- the no-follow remover itself ------------------------------------------------

def test_remover_unlinks_links_and_never_enters_them(tmp_path):
    outside = tmp_path / "outside"
    (outside / "deep").mkdir(parents=True)
    (outside / "precious.txt").write_text("keep me\n")
    (outside / "deep" / "more.txt").write_text("me too\n")
    root = tmp_path / "root"
    tree = root / "a" / "tree"
    (tree / "sub" / "ro").mkdir(parents=True)
    (tree / "file.txt").write_text("x")
    (tree / "sub" / "ro" / "f").write_text("y")
    os.symlink(outside, tree / "dir-link")
    os.symlink(outside / "precious.txt", tree / "sub" / "file-link")
    os.symlink(outside / "deep", tree / "sub" / "ro" / "deep-link")
    os.symlink(tree / "nowhere", tree / "dangling")
    os.chmod(tree / "sub" / "ro", 0o500)  # read-only folder, as tools leave them
    os.chmod(tree / "sub", 0o000)  # and one we cannot even read
    before = everything(outside)

    assert removal.remove_tree(tree, root, expect=removal.identity(tree)) is True
    assert not os.path.lexists(tree) and (root / "a").is_dir()
    assert everything(outside) == before
    assert removal.remove_tree(tree, root) is False  # nothing left: a no-op


NOBODY = 65534


@pytest.mark.skipif(os.geteuid() != 0 or not shutil.which("setpriv"),
                    reason="needs root to hand a tree to another user (as non-root, the "
                           "test above already meets real permissions)")
def test_remover_makes_unreadable_folders_removable_as_an_ordinary_user():
    # Root ignores permissions: run the remover as 'nobody' on nobody's tree.
    base = Path(tempfile.mkdtemp(dir="/tmp"))
    try:
        os.chmod(base, 0o755)
        root = base / "root"
        tree = root / "tree"
        (tree / "locked" / "inner").mkdir(parents=True)
        (tree / "locked" / "inner" / "f").write_text("x")
        (tree / "ro").mkdir()
        (tree / "ro" / "g").write_text("y")
        for dirpath, dirnames, filenames in os.walk(root):
            for n in [dirpath, *(os.path.join(dirpath, f) for f in filenames)]:
                os.chown(n, NOBODY, NOBODY)
        os.chmod(tree / "ro", 0o500)
        os.chmod(tree / "locked" / "inner", 0o000)
        os.chmod(tree / "locked", 0o000)
        code = (f"import sys; sys.path.insert(0, {str(Path(__file__).parents[2])!r}); "
                "from superqode_ls.workspace import removal; "
                f"print(removal.remove_tree({str(tree)!r}, {str(root)!r}))")
        proc = subprocess.run(["setpriv", f"--reuid={NOBODY}", f"--regid={NOBODY}",
                               "--clear-groups", sys.executable, "-c", code],
                              capture_output=True, text=True, timeout=60, check=False)
        assert proc.stdout.strip() == "True", proc.stderr
        assert not os.path.lexists(tree) and root.is_dir()
    finally:
        shutil.rmtree(base, ignore_errors=True)


def test_remover_refuses_links_swaps_and_paths_outside_its_root(tmp_path):
    root = tmp_path / "root"
    target = tmp_path / "elsewhere"
    target.mkdir()
    (target / "data.txt").write_text("data\n")
    made = root / "qe" / "sandbox"
    made.mkdir(parents=True)
    was = removal.identity(made)
    # The folder renamed away and a link put in its place.
    os.rename(made, root / "qe" / "sandbox.x")
    os.symlink(target, made)
    with pytest.raises(removal.UnsafeRemoval, match=r"sandbox is a symlink"):
        removal.remove_tree(made, root, expect=was)
    assert os.path.islink(made) and (target / "data.txt").read_text() == "data\n"
    # A real folder swapped in: another inode, also left alone.
    os.unlink(made)
    made.mkdir()
    (made / "theirs.txt").write_text("t")
    with pytest.raises(removal.UnsafeRemoval, match="device/inode differ"):
        removal.remove_tree(made, root, expect=was)
    assert (made / "theirs.txt").exists()
    # A folder on the way is a link: never walked through.
    os.rename(root / "qe", root / "qe.real")
    os.symlink(target, root / "qe")
    (target / "sandbox").mkdir()
    with pytest.raises(removal.UnsafeRemoval, match=r"through a symlink \(qe\)"):
        removal.remove_tree(root / "qe" / "sandbox", root)
    assert (target / "sandbox").is_dir()
    with pytest.raises(removal.UnsafeRemoval, match="outside"):
        removal.remove_tree(target, root)
    with pytest.raises(removal.UnsafeRemoval, match="outside"):
        removal.remove_tree(root / "qe.real" / ".." / ".." / "elsewhere", root)
    assert (target / "data.txt").exists()


# -- the attack, through the real CLI -----------------------------------------------

NO_BARRIER = {"SUPERQODE_LANDLOCK": "off"}  # as on a kernel without Landlock
# The command waits in its (by then renamed) folder until the test says go.
WAIT_FOR_SWAP = "touch ready; while [ ! -e go ]; do sleep 0.05; done"


def _swap_from_outside(sandbox: Path, target: Path) -> None:
    """What the command itself does without a kernel barrier, done by a
    process outside the session (a barrier cannot stop that)."""
    wait_for((sandbox / "ready").exists, 60, "the command to run")
    os.rename(sandbox, str(sandbox) + ".x")
    os.symlink(target, sandbox)


def _running_sandbox() -> Path:
    found = wait_for(lambda: [p for p in working_root().glob("*/qe/qe-*") if p.suffix == ""
                              and not p.name.endswith(".heartbeat")], 60, "a sandbox to appear")
    return found[0]


def _check_left_alone(stderr: str, sandbox: Path) -> None:
    assert re.search(rf"left alone: {re.escape(str(sandbox))} is a symlink", stderr), stderr
    assert "Traceback" not in stderr
    assert os.path.islink(sandbox)  # reported and left alone


def test_exec_swapping_its_sandbox_for_the_users_repo_deletes_nothing(user_repo):
    """The attack of issue 13 verbatim, on a system without the kernel barrier."""
    before, facts = everything(user_repo), git_facts(user_repo)
    proc = superqe("exec", str(user_repo), "--", "sh", "-c", SWAP.format(target=user_repo),
                   env=NO_BARRIER)
    assert proc.returncode == 3, proc.stderr  # docs/cli.md: the session failed
    sandbox = Path(re.search(r"^sandbox: (.+)$", proc.stderr, re.MULTILINE).group(1))
    _check_left_alone(proc.stderr, sandbox)
    assert "NOT verified" in proc.stderr
    assert everything(user_repo) == before  # .git byte for byte, registration gone again
    assert git_facts(user_repo) == facts


def test_exec_sandbox_swapped_from_outside_during_the_command(user_repo):
    """Barrier or not: the folder swapped while the command runs."""
    before, facts = everything(user_repo), git_facts(user_repo)
    proc = subprocess.Popen([*SUPERQE, "exec", str(user_repo), "--", "sh", "-c", WAIT_FOR_SWAP],
                            stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
    try:
        sandbox = _running_sandbox()
        _swap_from_outside(sandbox, user_repo)
        (Path(str(sandbox) + ".x") / "go").touch()
        _, stderr = proc.communicate(timeout=120)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.communicate()
    assert proc.returncode == 3, stderr
    _check_left_alone(stderr, sandbox)
    assert everything(user_repo) == before
    assert git_facts(user_repo) == facts


@pytest.mark.skipif(landlock.abi() is None, reason="no Landlock in this kernel")
def test_with_the_barrier_the_command_cannot_swap_its_sandbox(user_repo):
    before, facts = everything(user_repo), git_facts(user_repo)
    proc = superqe("exec", str(user_repo), "--", "sh", "-c", SWAP.format(target=user_repo))
    # Landlock says EACCES; the namespace sandbox's read-only bind, in front of it, EROFS.
    denied = "Read-only file system" if namespaces.active() else "Permission denied"
    assert "mv: cannot move" in proc.stderr and denied in proc.stderr
    assert proc.returncode == 0 and "Verified" in proc.stderr, proc.stderr
    assert "left alone" not in proc.stderr
    # The one folder SuperQode writes in the project: the patch of the symlink
    # that ln made inside the sandbox instead.
    assert everything(user_repo, skip=(".superqode",)) == before
    assert git_facts(user_repo) == facts


@pytest.mark.parametrize("who", ["command", "outside"])
def test_kill_9_mid_command_then_clean_force_deletes_nothing(user_repo, tmp_path, who):
    before, facts = everything(user_repo), git_facts(user_repo)
    if who == "command":  # no barrier: the command swaps its own folder
        script, env = SWAP.format(target=user_repo) + "; exec sleep 60", NO_BARRIER
    else:
        script, env = WAIT_FOR_SWAP, {}
    proc = subprocess.Popen([*SUPERQE, "exec", str(user_repo), "--", "sh", "-c", script],
                            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                            start_new_session=True, env={**os.environ, **env})
    try:
        sandbox = _running_sandbox()
        if who == "outside":
            _swap_from_outside(sandbox, user_repo)
        wait_for(sandbox.is_symlink, 60, "the sandbox to be swapped")
    finally:
        os.killpg(proc.pid, signal.SIGKILL)  # superqe and the command: no revert
        proc.wait()
    cleaned = superqe("clean", "--force")
    assert cleaned.returncode == 3, cleaned.stderr
    _check_left_alone(cleaned.stderr, sandbox)
    assert everything(user_repo) == before
    assert git_facts(user_repo) == facts
    # What was renamed away (inside $SUPERQODE_HOME) went with the session.
    assert not Path(str(sandbox) + ".x").exists()
    assert not list(sandbox.parent.glob("*.json"))


@pytest.mark.parametrize("isolation", ["worktree", "snapshot"])
def test_revert_leaves_a_folder_outside_home_untouched(make_repo, tmp_path, isolation):
    repo = make_repo({"a.txt": "a\n"})
    outside = tmp_path / "outside"
    (outside / "sub").mkdir(parents=True)
    (outside / "sub" / "keep.txt").write_text("keep\n")
    (outside / ".git").mkdir()
    (outside / ".git" / "HEAD").write_text("ref: refs/heads/main\n")
    before = everything(outside)
    session = IsolatedSession.create_sync(repo, isolation=isolation)
    sandbox = session.sandbox
    os.rename(sandbox, tmp_path / "moved-away")
    os.symlink(outside, sandbox)
    with pytest.raises(WorkspaceError, match="left alone"):
        session.changes_sync()  # nothing is hashed through the link either
    v = session.close_sync()
    assert not v.verified
    assert v.differences[0] == f"left alone: {sandbox} is a symlink now (the sandbox was swapped)"
    assert everything(outside) == before
    assert not session.paths.record.exists() and not session.private.exists()


def test_a_real_folder_swapped_in_is_not_the_sandbox(make_repo, tmp_path):
    repo = make_repo({"a.txt": "a\n"})
    session = IsolatedSession.create_sync(repo, isolation="worktree")
    rec = session.record
    assert rec is not None
    assert (rec.sandbox_dev, rec.sandbox_ino) == removal.identity(session.sandbox)
    os.rename(session.sandbox, tmp_path / "moved-away")
    session.sandbox.mkdir()
    (session.sandbox / "theirs.txt").write_text("t\n")
    v = session.close_sync()
    assert "device/inode differ" in v.differences[0]
    assert (session.sandbox / "theirs.txt").read_text() == "t\n"
    assert run_git(repo, "worktree", "list", "--porcelain").count("worktree ") == 1


def test_a_swapped_sandbox_is_never_parked_for_reuse(make_repo, tmp_path):
    repo = make_repo({"a.txt": "a\n"})
    (repo / "superqode.yaml").write_text("workspace:\n  warm_sandboxes: true\n")
    run_git(repo, "add", "superqode.yaml")
    run_git(repo, "commit", "-qm", "config")
    before = everything(repo)
    session = IsolatedSession.create_sync(repo)
    os.rename(session.sandbox, tmp_path / "moved-away")
    os.symlink(repo, session.sandbox)
    v = session.close_sync()
    assert not v.verified and "left alone" in v.differences[0]
    parked = store_dir(repo).parent / "parked"
    assert not parked.exists() or not [p for p in parked.iterdir() if not p.name.startswith(".")]
    assert everything(repo) == before
    # A next session starts cold, in a folder of its own.
    with IsolatedSession.create_sync(repo) as s2:
        assert not s2.reused and (s2.sandbox / "a.txt").read_text() == "a\n"
        assert not s2.sandbox.is_symlink()


# -- the smaller holes -------------------------------------------------------------

def test_superqode_home_inside_the_project_is_refused(make_repo):
    repo = make_repo()
    home = repo / ".sq-home"
    for args in (["exec", str(repo), "--", "true"], ["run", str(repo), "--role", "lint"]):
        proc = superqe(*args, env={"SUPERQODE_HOME": str(home)})
        assert proc.returncode == 2, proc.stderr
        line = proc.stderr.strip()
        assert "\n" not in line and "inside the project" in line and str(home) in line
    assert not home.exists()
    assert not (repo / ".superqode").exists()


def test_session_snapshots_leave_the_store_with_the_session(make_repo):
    repo = make_repo({"a.txt": "a\n"})
    big = os.urandom(256 * 1024)
    (repo / "big.bin").write_bytes(big)  # untracked: carried in via the store
    blob = run_git(repo, "hash-object", "big.bin").strip()
    loose = store_dir(repo) / "objects" / blob[:2] / blob[2:]
    session = IsolatedSession.create_sync(repo)
    (session.sandbox / "new.txt").write_text("new\n")
    session.tree.checkpoint()
    refs = run_git(store_dir(repo), "for-each-ref", "--format=%(refname)").split()
    assert len(refs) == 2 and all(r.startswith(f"refs/snapshots/{session.id}/") for r in refs)
    assert loose.is_file()
    session.close_sync()
    assert run_git(store_dir(repo), "for-each-ref") == ""
    # The prune right after the session kept the object: it is too young to
    # tell from one another session is writing right now.
    assert loose.is_file()
    old = loose.stat().st_mtime - 2 * 3600
    for obj in (store_dir(repo) / "objects").glob("??/*"):  # and what refers to it
        os.utime(obj, (old, old))
    store = SnapshotStore(store_dir(repo))
    assert store.prune() is False  # at most once per interval
    assert store.prune(every_s=0) is True
    assert not loose.exists()
    assert (repo / "big.bin").read_bytes() == big


def test_a_swapped_sandbox_is_not_resumed_or_read_by_recover(make_repo, tmp_path):
    from superqode_ls.workspace import recovery
    from superqode_ls.workspace.session import extract_patch

    repo = make_repo({"a.txt": "a\n"})
    session = IsolatedSession.create_sync(repo)
    os.rename(session.sandbox, tmp_path / "moved-away")
    os.symlink(repo, session.sandbox)
    info = recovery.find_session(session.id)
    with pytest.raises(WorkspaceError, match="left alone"):
        recovery.mark_kept(info)
    with pytest.raises(WorkspaceError, match="left alone"):
        extract_patch(info.record)
    v = session.close_sync()
    assert "left alone" in v.differences[0]
    assert (repo / ".git").is_dir() and (repo / "a.txt").read_text() == "a\n"


def test_a_parked_sandbox_swapped_for_a_link_is_not_claimed(make_repo, tmp_path):
    from superqode_ls.config import Config

    repo = make_repo({"a.txt": "a\n"})
    cfg = Config.model_validate({"workspace": {"warm_sandboxes": True}})
    with IsolatedSession.create_sync(repo, config=cfg):
        pass
    parked = store_dir(repo).parent / "parked"
    (slot,) = [p for p in parked.iterdir() if not p.name.startswith(".")]
    # Something still running from that session swaps the parked tree.
    os.rename(slot / "tree", tmp_path / "moved-away")
    os.symlink(repo, slot / "tree")
    before = everything(repo)
    with IsolatedSession.create_sync(repo, config=cfg) as s:
        assert not s.reused and not s.sandbox.is_symlink()
        assert (s.sandbox / "a.txt").read_text() == "a\n"
        s.changes_sync()
    assert (repo / ".git").is_dir()
    after = everything(repo)
    # Only the registration of the sandbox parked just now may differ.
    assert {k: v for k, v in after.items() if not k.startswith(".git/worktrees")} == \
        {k: v for k, v in before.items() if not k.startswith(".git/worktrees")}


def test_the_hourly_prune_also_drops_refs_of_sessions_no_longer_on_disk(make_repo):
    repo = make_repo({"a.txt": "a\n"})
    first = IsolatedSession.create_sync(repo)  # stays open: its refs must stay
    store = SnapshotStore(store_dir(repo))
    tree = run_git(repo, "rev-parse", "HEAD^{tree}").strip()
    # A ref of the older unnamed form, of a session long gone, and a named
    # ref of a session whose folder was removed by hand.
    old = store.commit(tree, None, "baseline qe-20200101-000000-abcdef").id
    gone = SnapshotStore(store_dir(repo), session="qe-20200101-000001-fedcba")
    gone_ref = f"refs/snapshots/qe-20200101-000001-fedcba/{gone.commit(tree, None, 'x').id}"
    (store_dir(repo) / "superqode-pruned").unlink(missing_ok=True)  # the prune is due
    with IsolatedSession.create_sync(repo) as second:
        pass
    refs = run_git(store_dir(repo), "for-each-ref", "--format=%(refname)").split()
    assert f"refs/snapshots/{old}" not in refs and gone_ref not in refs
    assert not any(second.id in r for r in refs)
    assert refs and all(r.startswith(f"refs/snapshots/{first.id}/") for r in refs)
    first.close_sync()
    assert run_git(store_dir(repo), "for-each-ref") == ""


def test_packed_snapshot_refs_go_with_the_next_prune(tmp_path):
    sid = "qe-20261123-000000-aaaaaa"
    store = SnapshotStore(tmp_path / "store.git", session=sid)
    empty = store._store_git(["hash-object", "-t", "tree", "-w", "--stdin"], input=b"")
    store.commit(empty, None, f"baseline {sid}")
    store.commit(empty, None, f"checkpoint {sid}")
    run_git(store.path, "pack-refs", "--all")
    assert store.drop_session(sid) == 0  # packed: not seen as loose files
    assert run_git(store.path, "for-each-ref") != ""
    assert store.prune(every_s=0, live={"qe-20261123-000001-bbbbbb"}) is True
    assert run_git(store.path, "for-each-ref") == ""


def test_the_reaper_leaves_a_swapped_sandbox_alone_and_says_so(user_repo, tmp_path):
    from superqode_ls.workspace import reaper
    from superqode_ls.workspace.records import read_record, write_record

    before, facts = everything(user_repo), git_facts(user_repo)
    session = IsolatedSession.create_sync(user_repo)
    rec = read_record(session.paths.record)
    rec.pid_start = 1.0  # its owner "died": another process has that pid now
    write_record(session.paths.record, rec)
    session.lock = None  # the dead owner's lock is cleared by the reaper, not by us
    os.rename(session.sandbox, tmp_path / "moved-away")
    os.symlink(user_repo, session.sandbox)
    report = reaper.reap(now=time.time() + 60, idle_hours=0)
    assert [(sid, msg) for sid, msg in report.errors] == [
        (session.id, f"left alone: {session.sandbox} is a symlink now (the sandbox was swapped)")]
    assert everything(user_repo) == before and git_facts(user_repo) == facts
    assert not session.paths.record.exists() and not session.private.exists()


def test_a_swapped_sandbox_does_not_make_the_revert_kill_the_users_processes(make_repo, tmp_path):
    repo = make_repo({"a.txt": "a\n"})
    users_shell = subprocess.Popen(["sleep", "60"], cwd=repo)  # the user, working in the repo
    try:
        session = IsolatedSession.create_sync(repo)
        os.rename(session.sandbox, tmp_path / "moved-away")
        os.symlink(repo, session.sandbox)
        v = session.close_sync()
        assert "left alone" in v.differences[0]
        assert users_shell.poll() is None
    finally:
        users_shell.kill()
        users_shell.wait()


def test_check_wants_the_very_folder(tmp_path):
    root = tmp_path / "root"
    (root / "qe").mkdir(parents=True)
    (root / "qe" / "file").write_text("x")
    with pytest.raises(removal.UnsafeRemoval, match="not a folder"):
        removal.check(root / "qe" / "file", root)
    with pytest.raises(removal.UnsafeRemoval, match="missing"):
        removal.check(root / "qe" / "nothing", root)
    removal.check(root / "qe", root, removal.identity(root / "qe"))  # the real one passes
