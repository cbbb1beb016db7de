"""Red team: metadata writes by a session (chmod, chown, touch -d, setxattr)
on the user's files, folders and HOME's dotfiles. The Landlock barrier does
not govern them, so they are never credited to the user as "changed outside
the session (kept)" unless the protection level made them impossible (the
read-only namespace layer); below that they are "may have been the
session", NOT verified."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from superqode_ls.config import Config
from superqode_ls.workspace import landlock, namespaces
from superqode_ls.workspace.session import IsolatedSession
from superqode_ls.workspace.verification import MAYBE_SESSION, kernel_seals_metadata

LANDLOCK = "kernel barrier: Landlock ABI 7"
SEALED = "namespaces + Landlock ABI 7"


def _xattrs_supported(p: Path) -> bool:
    try:
        os.setxattr(p, "user.probe", b"1")
        os.removexattr(p, "user.probe")
        return True
    except OSError:
        return False


def _session(repo: Path, barrier_abi: int | None, protection: str | None) -> IsolatedSession:
    s = IsolatedSession.create_sync(repo, config=Config())
    # What the kernel did for this session (the barrier code sets both).
    s.barrier_abi, s.protection = barrier_abi, protection
    return s


def _chmod(p: Path) -> None:
    os.chmod(p, 0o700)  # from 0o644 (files) or 0o755 (folders)


def _touch_back(p: Path) -> None:
    os.utime(p, ns=(0, 1_000_000_000))  # `touch -d 1970-01-01`: mtime set back, size unchanged


def _setxattr(p: Path) -> None:
    os.setxattr(p, "user.superqode.test", b"planted")


def _chown(p: Path) -> None:
    os.chown(p, 4242, 4242, follow_symlinks=False)


ATTACKS = {"chmod": _chmod, "touch -d": _touch_back, "setxattr": _setxattr, "chown": _chown}


@pytest.fixture
def repo(make_repo):
    return make_repo({"a.py": "a = 1\n", "pkg/b.py": "b = 1\n"})


def _applicable(name: str, target: Path) -> None:
    if name == "touch -d" and target.is_dir():
        pytest.skip("a folder's times are not compared: they move with every entry added")
    if name == "setxattr" and not _xattrs_supported(target):
        pytest.skip("this file system keeps no user xattrs")
    if name == "chown" and os.geteuid() != 0:
        pytest.skip("chown to another user needs root")


@pytest.mark.parametrize("attack", sorted(ATTACKS))
@pytest.mark.parametrize("target", ["a.py", "pkg"])
def test_a_metadata_write_under_landlock_is_not_credited_to_the_user(repo, attack, target):
    path = repo / target
    _applicable(attack, path)
    s = _session(repo, 7, LANDLOCK)
    ATTACKS[attack](path)
    v = s.close_sync()
    assert not v.verified, v.line
    assert any(d.startswith(MAYBE_SESSION) and target in d for d in v.differences), v.differences
    assert not any(target in d for d in v.outside_changes), v.outside_changes
    assert "changed outside the session (kept)" not in v.line


@pytest.mark.parametrize("attack", sorted(ATTACKS))
def test_without_any_barrier_a_metadata_write_fails(repo, attack):
    _applicable(attack, repo / "a.py")
    s = _session(repo, None, "guard only")
    ATTACKS[attack](repo / "a.py")
    v = s.close_sync()
    assert not v.verified and any("a.py" in d for d in v.differences), v.differences


@pytest.mark.parametrize("attack", sorted(ATTACKS))
def test_where_the_kernel_made_it_impossible_it_is_the_users_and_kept(repo, attack):
    _applicable(attack, repo / "a.py")
    assert kernel_seals_metadata(SEALED) and not kernel_seals_metadata(LANDLOCK)
    s = _session(repo, 7, SEALED)
    ATTACKS[attack](repo / "a.py")
    v = s.close_sync()
    assert v.verified, v.differences
    assert any("a.py" in d for d in v.outside_changes)


def test_a_content_edit_under_landlock_is_still_the_users(repo):
    s = _session(repo, 7, LANDLOCK)
    (repo / "a.py").write_text("a = 2  # the user's edit, longer\n")
    v = s.close_sync()
    assert v.verified and v.outside_changes == ["modified: a.py"], v.line


@pytest.mark.parametrize("attack", sorted(ATTACKS))
def test_homes_dotfiles_are_verified(repo, isolated_home, attack):
    bashrc = isolated_home / ".bashrc"
    bashrc.write_text("# the user's\n")
    _applicable(attack, bashrc)
    s = _session(repo, 7, LANDLOCK)
    ATTACKS[attack](bashrc)
    v = s.close_sync()
    assert not v.verified
    assert any(d.startswith(MAYBE_SESSION) and "~/.bashrc" in d for d in v.differences), v.line


def test_home_dotfolders_are_taken_by_their_own_metadata(repo, isolated_home):
    cache = isolated_home / ".cache"
    s = _session(repo, None, "guard only")
    (cache / "some-tool").mkdir(parents=True, exist_ok=True)  # inside: not walked
    (cache / "some-tool" / "blob").write_bytes(b"x" * 100)
    v = s.close_sync()
    assert v.verified, v.differences
    s = _session(repo, None, "guard only")
    os.chmod(cache, 0o777)
    (isolated_home / ".evil_profile").write_text("curl | sh\n")
    v = s.close_sync()
    assert "mode changed: ~/.cache (0o755 -> 0o777)" in v.differences, v.differences
    assert "created: ~/.evil_profile" in v.differences


@pytest.mark.skipif(landlock.abi() is None, reason="this kernel has no Landlock")
def test_superqe_exec_chmod_of_a_user_file_under_the_real_barrier_is_not_verified(repo):
    """The real thing: the command reaches the user's file by absolute path.
    In the namespace sandbox the chmod, the utime and the write all fail
    (read-only bind) and the project is verified unchanged; with Landlock
    alone, Landlock refuses the write but not a chmod or a utime, and the
    session is NOT verified rather than crediting them to the user."""
    target = repo / "a.py"
    before = target.stat()
    cmd = (f"chmod 700 {target} && touch -d 2001-01-01 {target} && "
           f"echo x >> {target} || true")
    proc = subprocess.run([sys.executable, "-m", "superqode_ls", "exec", str(repo), "--",
                           "sh", "-c", cmd], capture_output=True, text=True, timeout=180,
                          check=False)
    assert target.read_text() == "a = 1\n"  # the write itself was refused
    out = proc.stdout + proc.stderr
    if namespaces.active():
        assert "Read-only file system" in out
        assert proc.returncode == 0, out
        after = target.stat()
        assert (after.st_mode, after.st_mtime_ns) == (before.st_mode, before.st_mtime_ns)
        assert "Verified: the project is exactly as before the session." in out
        return
    assert proc.returncode == 3, out
    assert "NOT verified" in out and "may have been the session" in out and "a.py" in out
    assert "changed outside the session (kept): a.py" not in out


def test_the_record_carries_the_protection_level_to_a_revert_after_a_crash(repo):
    from superqode_ls.workspace.session import load_record, verify_record

    s = _session(repo, 7, LANDLOCK)
    try:
        rec = load_record(repo, s.id)
        assert rec is not None and rec.protection == namespaces.protection_level(Config())
        os.chmod(repo / "a.py", 0o600)
        rec.barrier_abi, rec.protection = 7, LANDLOCK
        v = verify_record(rec)
        assert not v.verified and any(MAYBE_SESSION in d for d in v.differences)
        rec.protection = SEALED
        v = verify_record(rec)
        assert v.verified and v.outside_changes == ["mode changed: a.py (0o644 -> 0o600)"]
    finally:
        s.close_sync()


@pytest.mark.skipif(os.geteuid() != 0 or not __import__("shutil").which("chattr"),
                    reason="needs root and chattr")
def test_chattr_on_a_user_file_under_landlock_is_not_credited_to_the_user(repo):
    s = _session(repo, 7, LANDLOCK)
    flagged = subprocess.run(["chattr", "+a", str(repo / "a.py")], check=False,
                             capture_output=True).returncode == 0
    try:
        v = s.close_sync()
    finally:
        subprocess.run(["chattr", "-a", str(repo / "a.py")], check=False, capture_output=True)
    if not flagged:
        pytest.skip("this file system keeps no flags")
    assert not v.verified and any(MAYBE_SESSION in d and "a.py" in d for d in v.differences), \
        v.line
