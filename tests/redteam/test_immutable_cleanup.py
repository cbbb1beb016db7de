"""Red team: a session running as root marks what it made immutable or
append-only (`chattr +i`/`+a`: an ioctl on a file opened for reading, which
the Landlock barrier does not govern). Cleanup clears the flags through the
files' own descriptors and removes everything; `superqe clean --force` is
not wedged."""

from __future__ import annotations

import os
import shutil
import subprocess
from pathlib import Path

import pytest

from superqode_ls.cli import main
from superqode_ls.config import Config
from superqode_ls.workspace import recovery
from superqode_ls.workspace.session import IsolatedSession

from ..safety_helpers import crash_session, leftovers

CHATTR = shutil.which("chattr")


def _chattr(flag: str, *paths: Path) -> None:
    subprocess.run([CHATTR, flag, *map(str, paths)], check=True, capture_output=True)


@pytest.fixture
def can_chattr(tmp_path):
    if CHATTR is None or os.geteuid() != 0:
        pytest.skip("needs root and chattr (CAP_LINUX_IMMUTABLE)")
    probe = tmp_path / "probe"
    probe.write_text("x")
    try:
        _chattr("+i", probe)
    except subprocess.CalledProcessError:
        pytest.skip("this file system keeps no immutable flag")
    _chattr("-i", probe)


def _stick(sandbox: Path) -> list[Path]:
    """What a hostile command would mark: a file, a folder (nothing inside
    can go), the sandbox folder itself, an append-only file."""
    (sandbox / "stuck").mkdir()
    (sandbox / "stuck" / "inner.txt").write_text("x")
    (sandbox / "frozen.txt").write_text("x")
    (sandbox / "log.txt").write_text("x")
    _chattr("+i", sandbox / "frozen.txt", sandbox / "stuck", sandbox)
    _chattr("+a", sandbox / "log.txt")
    return [sandbox / "frozen.txt", sandbox / "stuck", sandbox, sandbox / "log.txt"]


def _unstick_all(paths: list[Path]) -> None:
    for p in paths:
        if p.exists():
            subprocess.run([CHATTR, "-i", "-a", str(p)], check=False, capture_output=True)


def test_a_session_whose_sandbox_is_immutable_still_closes_clean(make_repo, can_chattr):
    repo = make_repo({"a.py": "a = 1\n"})
    s = IsolatedSession.create_sync(repo, config=Config())
    stuck = _stick(s.sandbox)
    try:
        v = s.close_sync()
        assert v.verified, v.line
        assert not s.sandbox.exists()
        assert leftovers() == []
    finally:
        _unstick_all(stuck)


def test_clean_force_is_not_wedged_by_immutable_files(make_repo, can_chattr, capsys, monkeypatch):
    repo = make_repo({"a.py": "a = 1\n"})
    sid = crash_session(repo)
    info = recovery.find_session(sid)
    assert info is not None and info.sandbox is not None
    stuck = _stick(Path(info.sandbox))
    try:
        monkeypatch.chdir(repo)
        code = main(["clean", "--force"])
        out, err = capsys.readouterr()
        assert code == 0, out + err
        assert leftovers() == [], out + err
        assert (repo / "a.py").read_text() == "a = 1\n"
    finally:
        _unstick_all(stuck)


def test_clean_force_unwedges_superqodes_own_state(make_repo, can_chattr, capsys, monkeypatch):
    """Lock files, the folders sessions go in, the store: `chattr +i` on them
    stops every later session of the repository until `clean --force`."""
    from superqode_ls.workspace.paths import repo_dir, working_root

    repo = make_repo({"a.py": "a = 1\n"})
    IsolatedSession.create_sync(repo, config=Config()).close_sync()
    base = repo_dir(repo)
    stuck = [*sorted((base / "locks").iterdir()), base / "locks", base / "qe", base,
             base / "store.git" / "config", working_root()]
    _chattr("+i", *stuck)
    try:
        with pytest.raises(OSError):  # wedged: the next session cannot even lock
            IsolatedSession.create_sync(repo, config=Config()).close_sync()
        monkeypatch.chdir(repo)
        code = main(["clean", "--force"])
        out, err = capsys.readouterr()
        assert code == 0, out + err
        assert "cleared the immutable/append-only flag" in err
        v = IsolatedSession.create_sync(repo, config=Config()).close_sync()
        assert v.verified, v.line
        assert leftovers() == []
    finally:
        _unstick_all(stuck)
