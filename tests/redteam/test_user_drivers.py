"""The user's own git drivers are never run by SuperQode on a sandbox.

The user defines a filter (clean, smudge, a long-running ``process``), a
diff driver (``textconv``, ``command``) and a merge driver — in the
repository's config, in ``~/.gitconfig`` (where ``git lfs install`` puts
git-lfs), or both — and selects none of them: their commands name no file of
the project. A session plants a ``.gitattributes`` selecting every one of
them for every file (and writes files it chose) in its sandbox. SuperQode
then hashes, checkpoints, restores, refreshes, parks and reuses the sandbox
outside the barrier: the user's drivers would run there, unconfined, on the
session's bytes. Each driver writes a marker outside the sandbox; it must
never appear. Each variant first shows the plant is live (plain git in the
sandbox runs the driver), for a worktree sandbox and a directory copy.
Run at every protection level: what SuperQode's own git runs does not
depend on the barrier (without one a session has no need of a deputy, but
SuperQode still must not be one)."""

from __future__ import annotations

import os
import shlex
import subprocess

import pytest

from superqode_ls.workspace.session import IsolatedSession

from ..safety_helpers import content_fingerprint
from .test_git_deputy import _home, _two_sessions, as_session, exercise, never_ran

def _drivers(world: dict) -> list[tuple[str, str]]:
    """Every kind of driver git may run, each doing ``evil`` (and passing data on)."""
    evil = world["evil"]
    cat = f"sh -c {shlex.quote(evil + '; cat')}"
    conv = "sh -c " + shlex.quote(evil + '; cat "$0"')
    return [("filter.u.clean", cat), ("filter.u.smudge", cat), ("filter.u.required", "true"),
            ("filter.p.process", f"sh -c {shlex.quote(evil + '; exit 1')}"),
            ("diff.u.textconv", conv), ("diff.u.command", f"sh -c {shlex.quote(evil)}"),
            ("diff.external", f"sh -c {shlex.quote(evil)}"),
            ("merge.u.driver", f"sh -c {shlex.quote(evil)}")]


def _define(world: dict, scope: str) -> None:
    for key, value in _drivers(world):
        subprocess.run(["git", "config", scope, key, value], cwd=world["repo"], check=True)


PLANT = ("printf '* filter=u diff=u merge=u\\n*.bin filter=p\\n' > .gitattributes; "
         "mkdir -p sub; printf '* filter=u diff=u\\n' > sub/.gitattributes; "
         "echo changed > app.py; echo new > sub/new.txt; echo data > blob.bin")


@pytest.mark.parametrize("scope", ["--local", "--global"])
def test_the_users_drivers_selected_by_planted_attributes_never_run(world, scope):
    _define(world, scope)
    _two_sessions(world, lambda s: PLANT, ("add", "-A"), expect_tampered=False,
                  users_drivers=True)


def test_planted_attributes_inside_a_copy_sandbox(world):
    """A directory copy (snapshot isolation) is hashed with the store's own git
    dir: the user's global drivers are not read there either."""
    _define(world, "--global")
    repo = world["repo"]
    before_repo, before_home = content_fingerprint(repo), _home(world["home"])
    s = IsolatedSession.create_sync(repo, isolation="snapshot")
    try:
        as_session(s, PLANT)
        subprocess.run(["git", "init", "-q"], cwd=s.sandbox, check=True)
        demo = {**os.environ, "SQ_DEMO_BASHRC": str(s.private / "tmp" / "demo-bashrc")}
        subprocess.run(["git", "add", "-A"], cwd=s.sandbox, env=demo, capture_output=True,
                       check=False)
        assert world["marker"].exists(), "the user's global driver should be live for plain git"
        world["marker"].unlink()
        subprocess.run(["rm", "-rf", str(s.sandbox / ".git")], check=True)
        exercise(s)
        paths = {c.path for c in s.changes_sync().changes}
        assert {"app.py", "sub/new.txt", "blob.bin", ".gitattributes"} <= paths
    finally:
        s.close_sync()
    never_ran(world, before_repo, before_home)


def test_the_own_git_config_holds_no_program(world):
    """What SuperQode's git reads on a sandbox: the user's settings that decide
    hashing (core.autocrlf, from every scope), no driver, no command."""
    _define(world, "--local")
    _define(world, "--global")
    repo = world["repo"]
    for scope, key, value in [("--global", "core.autocrlf", "input"),
                              ("--local", "core.sshCommand", world["evil"]),
                              ("--global", "core.pager", world["evil"]),
                              ("--local", "alias.st", f"!{world['evil']}"),
                              ("--local", "credential.helper", f"!{world['evil']}")]:
        subprocess.run(["git", "config", scope, key, value], cwd=repo, check=True)
    with IsolatedSession.create_sync(repo) as s:
        own = (s.private / "own-git" / "config").read_text()
        assert "autocrlf" in own
        assert str(world["marker"]) not in own
        for word in ("filter", "diff", "merge", "sshcommand", "pager", "alias", "credential"):
            assert word not in own.lower(), own
