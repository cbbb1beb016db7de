"""A warm bandit run reads its session, the standard library and the folders
bandit was loaded from: not the rest of the interpreter's prefix.

Each run's child was allowed to read beneath the interpreter's prefixes and
``sys.path``: for a system Python all of /usr, for a venv or pyenv Python in
HOME the folder around it (a venv made in HOME itself: all of HOME, with
``~/.ssh``). Now the set is computed once by the server from the modules it
loaded, and a set that cannot be computed, or that would hold HOME, starts
no server (the ``bandit`` command runs each run instead).
"""

from __future__ import annotations

import asyncio
import json
import shutil
import subprocess
import sys
import sysconfig
from pathlib import Path

import pytest

from superqode_ls.qe.roles import _bandit_warm
from superqode_ls.runtime import Runtime
from superqode_ls.workspace import landlock
from superqode_ls.workspace.session import IsolatedSession

FINDING = "import subprocess\nsubprocess.call('x', shell=True)\n"  # bandit's B602
OURS = Path(sysconfig.get_path("purelib"))  # where this environment's bandit lives
HAS_BANDIT = (Path(sys.executable).parent / "bandit").exists()
needs_landlock = pytest.mark.skipif(
    landlock.abi() is None or not HAS_BANDIT,
    reason="no Landlock (the warm bandit serves no run) or no bandit beside this Python")


def _venv(prefix: Path, *first: Path) -> Path:
    """A venv at ``prefix`` whose packages are this environment's (a .pth
    names them, after ``first``); its python."""
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(prefix)], check=True)
    (site,) = (prefix / "lib").glob("python3*/site-packages")
    (site / "ours.pth").write_text("".join(f"{p}\n" for p in (*first, OURS)))
    (prefix / "bin" / "bandit").symlink_to(Path(sys.executable).parent / "bandit")
    return prefix / "bin" / "python"


@needs_landlock
@pytest.mark.parametrize("layout", ["venv is HOME", "venv in HOME"])
def test_a_run_reads_neither_the_prefix_nor_home(layout, isolated_home, make_repo):
    home = isolated_home
    prefix = home if layout == "venv is HOME" else home / ".venv"
    python = _venv(prefix)
    (home / ".ssh").mkdir()
    planted = [home / ".ssh" / "id_rsa", home / "notes.py", prefix / "secret.py"]
    for f in planted:
        f.write_text(FINDING)
    warm = _bandit_warm.start(Runtime.background(), str(python))
    assert warm is not None, "the warm bandit did not start with a venv in HOME"
    try:
        repo = make_repo({"app.py": FINDING})
        with IsolatedSession.create_sync(repo) as s:
            # bandit still scans its session (and imports its formatter).
            res = asyncio.run(warm.run(["-f", "json", "-q", "app.py"], s.sandbox, s.env(), 60))
            assert res is not None and "B602" in res.stdout, res
            for target in planted:
                # Not read at all (not merely unparsed): refused or masked.
                assert "syntax" not in unread(warm, s, target)
    finally:
        warm.stop()


def unread(warm, s, target: Path) -> str:
    """Why a warm run of session ``s`` on ``target`` found nothing there
    (bandit's reason); fails when it was not served or read the file."""
    res = asyncio.run(warm.run(["-f", "json", "-q", str(target)], s.sandbox, s.env(), 60))
    assert res is not None, "not served"
    report = json.loads(res.stdout)
    assert not report["results"], f"a run read {target}"
    (error,) = report["errors"]
    return error["reason"]


@pytest.mark.skipif(not HAS_BANDIT, reason="no bandit beside this Python")
def test_a_read_set_holding_home_starts_no_server(isolated_home):
    """A .pth naming HOME, with a bandit there: its children would read all
    of HOME, so the server says it cannot serve and the command runs."""
    home = isolated_home
    shutil.copytree(OURS / "bandit", home / "bandit")
    python = _venv(home / ".venv", home)
    assert _bandit_warm.start(Runtime.background(), str(python)) is None
