"""Sandboxes hold exactly the user's state, and the user's tree never changes."""

from __future__ import annotations

import os
import shutil
import subprocess
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from superqode_ls.config import Config
from superqode_ls.workspace.errors import WorkspaceError
from superqode_ls.workspace.fingerprint import compare, take_fingerprint
from superqode_ls.workspace.session import IsolatedSession

from ..conftest import run_git, write_files
from .helpers import porcelain, tree_state, worktree_paths

BASE = {
    "README.md": "hello\n",
    "pkg/__init__.py": "",
    "pkg/core.py": "def f(x):\n    return x + 1\n",
    "pkg/data.bin": bytes(range(256)) * 4,
    "scripts/run.sh": "#!/bin/sh\necho run\n",
    "dir with space/ünïcode name.txt": "unicode\n",
    "noeol.txt": "no newline at end",
    ".gitignore": "*.log\nbuild/\n",
}


@pytest.fixture
def repo(make_repo):
    r = make_repo(BASE, name="my repo ü")
    os.chmod(r / "scripts/run.sh", 0o755)
    os.symlink("pkg/core.py", r / "link-to-core")
    run_git(r, "add", "-A")
    run_git(r, "commit", "-q", "-m", "exec bit and symlink")
    return r


def dirty_everything(r: Path) -> None:
    (r / "README.md").write_text("hello\nstaged line\n")
    run_git(r, "add", "README.md")
    (r / "README.md").write_text("hello\nstaged line\nunstaged line\n")  # staged + unstaged
    (r / "pkg/core.py").write_text("def f(x):\n    return x + 2\n")  # unstaged
    (r / "new_untracked.py").write_text("print('new')\n")  # untracked
    (r / "staged_new.py").write_text("x = 1\n")
    run_git(r, "add", "staged_new.py")  # staged addition
    run_git(r, "rm", "-q", "noeol.txt")  # staged deletion
    (r / "pkg/__init__.py").unlink()  # unstaged deletion
    run_git(r, "mv", "dir with space/ünïcode name.txt", "renamed ü.txt")  # rename
    os.chmod(r / "scripts/run.sh", 0o644)  # exec bit removed
    (r / "pkg/data.bin").write_bytes(bytes(reversed(range(256))) * 3)  # binary change
    os.unlink(r / "link-to-core")
    os.symlink("README.md", r / "link-to-core")  # symlink retargeted
    os.symlink("pkg", r / "new-dir-link")  # new symlink to a dir
    (r / "debug.log").write_text("ignored\n")  # ignored: stays out
    (r / "build").mkdir()
    (r / "build/out.o").write_bytes(b"\x7fELF")


async def test_every_dirty_kind_is_carried_exactly(repo):
    dirty_everything(repo)
    before = take_fingerprint(repo)
    async with await IsolatedSession.create(repo, config=Config()) as s:
        assert s.isolation == "worktree"
        assert tree_state(s.sandbox) == tree_state(repo)
        assert porcelain(s.sandbox) == porcelain(repo)  # same index: staged vs unstaged kept
        assert not (s.sandbox / "debug.log").exists()
        assert not (s.sandbox / "build").exists()
        assert str(s.sandbox) in worktree_paths(repo)
    assert s.verification and s.verification.verified, s.verification.differences
    assert compare(before, take_fingerprint(repo)) == []
    assert str(s.sandbox) not in worktree_paths(repo)
    assert not s.sandbox.exists()


DESTRUCTIVE = [
    "rm -rf ./* ./.gitignore",
    "git reset --hard -q",
    "git checkout -- .",
    "chmod -x scripts/run.sh; chmod -R a-w pkg",
    "head -c 20000000 /dev/urandom > huge.bin; truncate -s 3G sparse.img",
    "git commit -qam hack && git branch evil && git tag v666 && git config user.name evil",
    "git stash -q; git stash list",
    "echo 'exit 1' > .git/hooks/pre-commit 2>/dev/null; git config core.hooksPath /tmp",
    "git update-ref refs/heads/main HEAD~0 && git gc -q --prune=now",
    "ln -sf /etc/passwd README.md; mv pkg pkg2",
]


@pytest.mark.parametrize("command", DESTRUCTIVE)
async def test_destructive_commands_leave_the_user_tree_alone(repo, command):
    dirty_everything(repo)
    before = take_fingerprint(repo)
    refs_before = run_git(repo, "for-each-ref")
    async with await IsolatedSession.create(repo, config=Config()) as s:
        subprocess.run(["bash", "-c", command], cwd=s.sandbox, env=s.env(),
                       capture_output=True, timeout=120)
    assert s.verification.verified, s.verification.differences
    assert compare(before, take_fingerprint(repo)) == []
    assert run_git(repo, "for-each-ref") == refs_before
    assert worktree_paths(repo) == [str(repo)]


async def test_changes_and_patch_apply_to_the_user_tree(repo, tmp_path):
    dirty_everything(repo)
    async with await IsolatedSession.create(repo, config=Config()) as s:
        sb = s.sandbox
        (sb / "pkg/core.py").write_text("def f(x):\n    return x * 3\n")
        (sb / "added file ü.py").write_text("y = 2")  # no newline at EOF
        (sb / "pkg/data.bin").write_bytes(b"\x00\x01\x02binary")
        os.chmod(sb / "scripts/run.sh", 0o755)
        os.rename(sb / "staged_new.py", sb / "moved_new.py")
        (sb / "new_untracked.py").unlink()
        changes = await s.changes()
        expected = tree_state(sb)
    kinds = {c.path: c.kind for c in changes.changes}
    assert kinds["pkg/core.py"] == "modified"
    assert kinds["added file ü.py"] == "created"
    assert kinds["new_untracked.py"] == "deleted"
    assert kinds["moved_new.py"] == "renamed"
    assert next(c for c in changes.changes if c.path == "pkg/data.bin").binary
    core = next(c for c in changes.changes if c.path == "pkg/core.py")
    assert (core.additions, core.deletions) == (1, 1) and core.old_hash and core.new_hash
    # The diff applies to the user's tree as it is and reproduces the sandbox.
    copy = tmp_path / "copy"
    shutil.copytree(repo, copy, symlinks=True)
    patch = tmp_path / "p.diff"
    patch.write_text(changes.diff, encoding="utf-8", errors="surrogateescape")
    run_git(repo, "apply", "--check", str(patch))
    run_git(copy, "apply", str(patch))
    got = tree_state(copy)
    # moved_new.py was staged in the user's index, so ls-files also reports the
    # deleted index entry's path: compare what exists on disk.
    assert {k: v for k, v in got.items() if (copy / k).exists() or (copy / k).is_symlink()} == {
        k: v for k, v in expected.items()
    }


async def test_base_ref_tests_another_commit_without_dirty_state(repo):
    first = run_git(repo, "rev-parse", "HEAD").strip()
    (repo / "later.py").write_text("later = True\n")
    run_git(repo, "add", "later.py")
    run_git(repo, "commit", "-q", "-m", "later")
    (repo / "README.md").write_text("dirty\n")
    async with await IsolatedSession.create(repo, config=Config(), base_ref="HEAD~1") as s:
        assert s.base_commit == first
        assert not (s.sandbox / "later.py").exists()
        assert (s.sandbox / "README.md").read_text() == "hello\n"
        head = subprocess.run(["git", "rev-parse", "HEAD"], cwd=s.sandbox, capture_output=True,
                              text=True).stdout.strip()
        assert head == first
    assert s.verification.verified


async def test_copy_uncommitted_false_uses_the_commit_only(repo):
    (repo / "README.md").write_text("dirty\n")
    cfg = Config.model_validate({"workspace": {"copy_uncommitted": False}})
    async with await IsolatedSession.create(repo, config=cfg) as s:
        assert (s.sandbox / "README.md").read_text() == "hello\n"


async def test_unsaved_buffers_are_laid_over(repo):
    async with await IsolatedSession.create(
        repo, config=Config(), overlays={"pkg/core.py": b"UNSAVED = 1\n", "brand/new.py": b"n=1\n"}
    ) as s:
        assert (s.sandbox / "pkg/core.py").read_bytes() == b"UNSAVED = 1\n"
        assert (s.sandbox / "brand/new.py").exists()
        assert (await s.changes()).empty  # the buffers are the baseline, not a change
    assert (repo / "pkg/core.py").read_text().startswith("def f")


@pytest.mark.parametrize("bad", ["../outside.py", "/etc/passwd", "a/../../x"])
async def test_overlay_outside_the_project_is_refused(repo, bad):
    with pytest.raises(WorkspaceError, match="outside the project"):
        await IsolatedSession.create(repo, config=Config(), overlays={bad: b"x"})
    assert worktree_paths(repo) == [str(repo)]


async def test_keep_gitignored_caches_are_copied(repo):
    (repo / ".gitignore").write_text("*.log\nbuild/\n.venv/\n")
    (repo / ".venv/bin").mkdir(parents=True)
    (repo / ".venv/bin/tool").write_text("#!/bin/sh\n")
    cfg = Config.model_validate({"workspace": {"keep_gitignored": [".venv"]}})
    before = take_fingerprint(repo)
    async with await IsolatedSession.create(repo, config=cfg) as s:
        assert (s.sandbox / ".venv/bin/tool").read_text() == "#!/bin/sh\n"
        assert not (s.sandbox / ".venv").is_symlink()
        (s.sandbox / ".venv/bin/tool").write_text("changed in sandbox")
        assert (await s.changes()).empty  # ignored caches are not changes
    assert compare(before, take_fingerprint(repo)) == []


async def test_warm_sandbox_is_reused_and_reset_to_the_new_state(repo):
    cfg = Config.model_validate({"workspace": {"warm_sandboxes": True, "keep_gitignored": [".venv"]}})
    (repo / ".gitignore").write_text("*.log\nbuild/\n.venv/\n")
    (repo / ".venv").mkdir()
    (repo / ".venv/marker").write_text("cache")
    async with await IsolatedSession.create(repo, config=cfg) as first:
        assert not first.reused
        (first.sandbox / "junk.py").write_text("left behind")
        (first.sandbox / "README.md").write_text("scribbled")
        (first.sandbox / "pkg/core.py").unlink()
        (first.sandbox / "out.log").write_text("ignored junk")
    assert first.verification.verified
    dirty_everything(repo)
    before = take_fingerprint(repo)
    async with await IsolatedSession.create(repo, config=cfg) as second:
        assert second.reused
        assert tree_state(second.sandbox) == tree_state(repo)
        assert porcelain(second.sandbox) == porcelain(repo)
        assert not (second.sandbox / "junk.py").exists()
        assert not (second.sandbox / "out.log").exists()
        assert (second.sandbox / ".venv/marker").read_text() == "cache"
        assert (await second.changes()).empty
    assert second.verification.verified
    assert compare(before, take_fingerprint(repo)) == []


async def test_snapshot_isolation_for_plain_folders(tmp_path):
    proj = tmp_path / "plain folder ü"
    write_files(proj, {"a.py": "a = 1\n", "sub/b.txt": "b\n", "big/data.bin": b"0" * 10,
                       "secret.key": "k", ".superqodeignore": "big/\n*.key\n"})
    os.symlink("a.py", proj / "link")
    before = take_fingerprint(proj)
    async with await IsolatedSession.create(proj, config=Config()) as s:
        assert s.isolation == "snapshot"
        assert (s.sandbox / "a.py").read_text() == "a = 1\n"
        assert os.readlink(s.sandbox / "link") == "a.py"
        assert not (s.sandbox / "big").exists()
        assert not (s.sandbox / "secret.key").exists()
        (s.sandbox / "a.py").write_text("a = 2\n")
        (s.sandbox / "sub/b.txt").unlink()
        changes = await s.changes()
    assert {c.path: c.kind for c in changes.changes} == {"a.py": "modified", "sub/b.txt": "deleted"}
    assert "-a = 1\n+a = 2" in changes.diff
    assert s.verification.verified
    assert compare(before, take_fingerprint(proj)) == []
    assert not s.sandbox.exists()


async def test_snapshot_refuses_above_max_size(tmp_path):
    proj = tmp_path / "p"
    write_files(proj, {"blob.bin": b"x" * (2 * 1024 * 1024)})
    cfg = Config.model_validate({"workspace": {"max_size_mb": 1}})
    with pytest.raises(WorkspaceError, match="above workspace.max_size_mb=1"):
        await IsolatedSession.create(proj, config=cfg)
    home = Path(os.environ["SUPERQODE_HOME"])
    leftovers = list(home.glob("working/*/qe/*"))
    assert leftovers == []


async def test_worktree_isolation_refused_outside_git(tmp_path):
    proj = tmp_path / "p"
    write_files(proj, {"a.py": "a = 1\n"})
    with pytest.raises(WorkspaceError, match="not a git repository"):
        await IsolatedSession.create(proj, config=Config(), isolation="worktree")


async def test_repo_without_commits_falls_back_to_snapshot(tmp_path):
    proj = tmp_path / "fresh"
    proj.mkdir()
    run_git(proj, "init", "-q")
    (proj / "a.py").write_text("a = 1\n")
    async with await IsolatedSession.create(proj, config=Config()) as s:
        assert s.isolation == "snapshot"
        assert (s.sandbox / "a.py").exists()
    assert s.verification.verified


async def test_checkpoint_and_restore(repo):
    async with await IsolatedSession.create(repo, config=Config()) as s:
        cp = await s.checkpoint()
        (s.sandbox / "pkg/core.py").write_text("broken(")
        (s.sandbox / "extra.py").write_text("x")
        os.chmod(s.sandbox / "scripts/run.sh", 0o644)
        await s.restore(cp)
        assert (s.sandbox / "pkg/core.py").read_text() == BASE["pkg/core.py"]
        assert not (s.sandbox / "extra.py").exists()
        assert os.access(s.sandbox / "scripts/run.sh", os.X_OK)
        assert (await s.changes()).empty


# -- a hypothesis-generated mix of dirty states --------------------------------
NAMES = st.sampled_from(["a.py", "b c.txt", "ü/ñ.py", "deep/x/y.txt", "exe.sh", "bin.dat"])
OPS = st.lists(
    st.tuples(st.sampled_from(["write", "stage", "delete", "chmod", "symlink", "rm-cached"]),
              NAMES, st.binary(max_size=40)),
    min_size=1, max_size=12,
)


@settings(max_examples=12, deadline=None, suppress_health_check=list(HealthCheck))
@given(ops=OPS)
def test_generated_dirty_states(make_repo, ops):
    import asyncio

    r = make_repo({"a.py": "a\n", "deep/x/y.txt": "y\n", "exe.sh": "#!/bin/sh\n"})
    for op, name, data in ops:
        p = r / name
        if op == "write":
            p.parent.mkdir(parents=True, exist_ok=True)
            if p.is_symlink():
                p.unlink()
            p.write_bytes(data)
        elif op == "stage" and (p.exists() or p.is_symlink()):
            run_git(r, "add", "--", name)
        elif op == "delete" and (p.is_file() or p.is_symlink()):
            p.unlink()
        elif op == "chmod" and p.is_file() and not p.is_symlink():
            os.chmod(p, p.stat().st_mode ^ 0o111)
        elif op == "symlink" and not p.exists() and not p.is_symlink():
            p.parent.mkdir(parents=True, exist_ok=True)
            os.symlink("a.py", p)
        elif op == "rm-cached":
            run_git(r, "rm", "-q", "--cached", "--ignore-unmatch", "--", name)
    before = take_fingerprint(r)

    async def check():
        async with await IsolatedSession.create(r, config=Config()) as s:
            assert tree_state(s.sandbox) == tree_state(r)
            assert porcelain(s.sandbox) == porcelain(r)
            subprocess.run(["bash", "-c", "rm -rf ./*; git reset -q --hard"], cwd=s.sandbox,
                           env=s.env(), capture_output=True)
        return s

    s = asyncio.run(check())
    assert s.verification.verified, s.verification.differences
    assert compare(before, take_fingerprint(r)) == []
    shutil.rmtree(r)


async def test_project_tests_may_use_temporary_repositories(repo, tmp_path):
    """The git guard is scoped: a throwaway repo made by the project's own tests works,
    the user's repository stays guarded."""
    scratch = tmp_path / "scratch repo"
    async with await IsolatedSession.create(repo, config=Config()) as s:
        env = s.env()
        script = (f"git init -q '{scratch}' && cd '{scratch}' && echo x > f && git add f && "
                  "git -c user.name=t -c user.email=t@t commit -qm c && git branch side")
        proc = subprocess.run(["bash", "-c", script], cwd=s.sandbox, env=env,
                              capture_output=True, text=True)
        assert proc.returncode == 0, proc.stderr
        blocked = subprocess.run(["git", "commit", "--allow-empty", "-qm", "x"], cwd=s.sandbox,
                                 env=env, capture_output=True, text=True)
        assert blocked.returncode != 0 and "blocked" in blocked.stderr
        assert s.guard_events()
    assert "side" in run_git(scratch, "branch")
    assert s.verification.verified


async def test_sandbox_whose_git_became_a_repository_is_still_removed(repo):
    async with await IsolatedSession.create(repo, config=Config()) as s:
        subprocess.run(["bash", "-c", "rm -rf .git && git init -q && git add -A && "
                        "git -c user.name=a -c user.email=a@b commit -qm x"],
                       cwd=s.sandbox, env=s.env(), capture_output=True)
        assert (s.sandbox / ".git").is_dir()
    assert not s.sandbox.exists()
    assert worktree_paths(repo) == [str(repo)]
    assert s.verification.verified


def test_a_session_that_cannot_write_its_state_still_reverts(make_repo, monkeypatch):
    """Disk full (or $SUPERQODE_HOME read-only) after creation: every write of
    SuperQode's own state fails with ENOSPC; the session still kills, removes
    its sandbox and registration, and verifies from memory."""
    import errno

    from superqode_ls.workspace import session as session_mod
    from superqode_ls.workspace.coordinator import Coordinator
    from superqode_ls.workspace.fingerprint import compare, take_fingerprint
    from superqode_ls.workspace.session import IsolatedSession

    repo = make_repo({"a.py": "x = 1\n"})
    (repo / "a.py").write_text("x = 2\n")
    before = take_fingerprint(repo)
    s = IsolatedSession.create_sync(repo)
    (s.sandbox / "a.py").write_text("x = 3\n")
    events = []
    s.bus.subscribe(lambda e: events.append(e))

    def full(*a, **k):
        raise OSError(errno.ENOSPC, "No space left on device")

    monkeypatch.setattr(session_mod, "write_record", full)
    monkeypatch.setattr(Coordinator, "release", full)
    v = s.close_sync()
    assert v.verified, v.line
    assert not s.sandbox.exists()
    assert not (repo / ".git" / "worktrees").exists() or not any((repo / ".git" / "worktrees").iterdir())
    assert compare(before, take_fingerprint(repo)) == []
    failed = [e.data["step"] for e in events if e.type == "workspace.state_write_failed"]
    assert "full" in failed and "_release_lock" in failed  # the record write and the lock


def test_creation_aborted_between_steps_leaves_nothing(make_repo):
    import threading

    from superqode_ls.workspace.errors import CreationAborted
    from superqode_ls.workspace.paths import working_root

    repo = make_repo({"a.py": "x = 1\n"})
    (repo / "a.py").write_text("x = 2\n")  # dirty: the state capture runs too
    before = porcelain(repo)
    abort = threading.Event()
    abort.set()
    with pytest.raises(CreationAborted) as info:
        IsolatedSession.create_sync(repo, config=Config(), abort=abort)
    assert info.value.verification is not None and info.value.verification.verified
    assert not list(working_root().glob("*/qe/qe-*"))
    assert run_git(repo, "worktree", "list", "--porcelain").count("worktree ") == 1
    assert porcelain(repo) == before and (repo / "a.py").read_text() == "x = 2\n"
