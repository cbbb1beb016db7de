"""The environment build asks git nothing of the sandbox.

Before resolving unpinned requirements, the build reads the date of the
project's last commit. Asked of the sandbox, git would find the session's
own git dir, and a session that wrote ``log.showSignature`` and a
``gpg.program`` of its own into its config and committed a signed-looking
commit would have that program run by SuperQode, outside the barrier. It is
asked of the user's project, with no signature checked. No barrier is
involved: this holds at every protection level.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from superqode_ls.workspace import landlock
from superqode_ls.workspace.pyenv_build import _last_commit

from ..conftest import run_git


def _planted(tmp_path: Path) -> tuple[Path, Path]:
    """A folder whose git (as a sandbox's private git dir would) runs a
    program of the session's on ``git log``."""
    marker = tmp_path / "outside" / "ran"
    marker.parent.mkdir(parents=True)
    tree = tmp_path / "sandbox"
    tree.mkdir()
    run_git(tree, "init", "-q")
    evil = tmp_path / "sandbox" / "gpg"
    evil.write_text(f"#!/bin/sh\necho ran >> '{marker}'\n")
    evil.chmod(0o755)
    empty = run_git(tree, "write-tree").strip()
    body = (f"tree {empty}\nauthor a <a@a> 1700000000 +0000\ncommitter a <a@a> 1700000000 +0000\n"
            "gpgsig -----BEGIN PGP SIGNATURE-----\n x\n -----END PGP SIGNATURE-----\n\nsigned\n")
    commit = subprocess.run(["git", "hash-object", "-t", "commit", "-w", "--stdin"], cwd=tree,
                            input=body.encode(), capture_output=True, check=True).stdout.decode().strip()
    run_git(tree, "update-ref", "HEAD", commit)
    run_git(tree, "config", "log.showSignature", "true")
    run_git(tree, "config", "gpg.program", str(evil))
    return tree, marker


def test_the_last_commit_date_runs_nothing_a_session_planted(tmp_path, isolated_home):
    tree, marker = _planted(tmp_path)
    # Live: plain git there runs the planted program.
    subprocess.run(["git", "log", "-1", "--format=%ct"], cwd=tree, capture_output=True,
                   env={**os.environ, "GIT_CONFIG_NOSYSTEM": "1"}, check=False)
    assert marker.exists(), "the plant is not live"
    marker.unlink()
    assert _last_commit(tree) == "2023-11-15T22:13:20Z"
    assert not marker.exists(), "SuperQode's git ran the session's gpg.program"


def test_the_build_dates_the_users_project_not_the_sandbox(monkeypatch, tmp_path, make_repo):
    """build_env passes the user's folder to the date, never the sandbox."""
    import asyncio

    from superqode_ls.workspace import pyenv_build
    from superqode_ls.workspace.pyenv_plan import make_plan

    project = make_repo({"requirements.txt": "sq-no-such-dist\n"}, name="user project")
    sandbox = tmp_path / "sandbox-copy"
    sandbox.mkdir()
    (sandbox / "requirements.txt").write_text("sq-no-such-dist\n")
    asked: list[Path] = []

    def dated(where: Path) -> None:
        asked.append(Path(where))
        raise RuntimeError("stop here")

    monkeypatch.setattr(pyenv_build, "_last_commit", dated)
    plan = make_plan(sandbox)
    assert plan is not None
    try:
        asyncio.run(pyenv_build.build_env(sandbox, plan, 120, lambda *a, **k: None,
                                          project=project))
    except RuntimeError:
        pass
    assert asked == [project.resolve()]


def test_a_python_version_that_names_a_program_is_never_run(tmp_path, monkeypatch):
    """``.python-version`` is the project's (and a session can rewrite the
    sandbox's): ``./tools/python`` or an absolute path there made ``uv python
    find`` run that program, outside the barrier, to ask what it is."""
    from superqode_ls.workspace.pyenv_build import _uv, pick_interpreter

    uv = _uv()
    if uv is None:
        pytest.skip("uv is not installed (the [deep] extra)")
    marker = tmp_path / "outside" / "ran"
    marker.parent.mkdir()
    tools = tmp_path / "project" / "tools"
    tools.mkdir(parents=True)
    fake = tools / "python"
    fake.write_text(f"#!/bin/sh\necho ran >> '{marker}'\nexec {sys.executable} \"$@\"\n")
    fake.chmod(0o755)
    monkeypatch.chdir(tmp_path / "project")
    # Live: uv itself runs it.
    subprocess.run([uv, "python", "find", "--system", "--no-project", "--no-python-downloads",
                    "./tools/python"], capture_output=True, check=False, timeout=60)
    assert marker.exists(), "the plant is not live"
    marker.unlink()
    for request in ("./tools/python", str(fake), "===./tools/python", "tools/python"):
        python, _version, note = pick_interpreter(request, uv)
        assert not marker.exists(), f"{request!r}: the project's program ran"
        assert note and python != str(fake)


@pytest.mark.skipif(landlock.abi() is None,
                    reason="no Landlock barrier (this kernel, or SUPERQODE_LANDLOCK=off): "
                    "nothing confines the probe")
def test_an_interpreter_the_repository_ships_is_probed_confined(tmp_path, isolated_home):
    """A repository can ship ``.venv/bin/python`` (or a ``.pdm-python`` naming
    a script of its own): discovery runs it to learn what it is, before any
    session exists. It runs behind the barrier: it cannot write HOME."""
    from superqode_ls.workspace.pyenv import discover

    marker = isolated_home / ".bashrc-planted"
    project = tmp_path / "cloned"
    (project / ".venv" / "bin").mkdir(parents=True)
    (project / ".venv" / "pyvenv.cfg").write_text("home = /usr/bin\n")
    fake = project / ".venv" / "bin" / "python"
    fake.write_text(f"#!/bin/sh\necho ran >> '{marker}' 2>/dev/null\nexec {sys.executable} \"$@\"\n")
    fake.chmod(0o755)
    found, _tried = discover(project, environ={"PATH": os.environ.get("PATH", "")})
    assert found is not None and found.python == str(fake)  # it still answers...
    assert not marker.exists(), "the repository's interpreter wrote HOME, unconfined"  # ...confined
