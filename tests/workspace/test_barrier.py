"""The kernel write barrier: hostile commands run by `superqe exec` in a real
session, each aimed at the user's repository or HOME by absolute path, with a
scrubbed environment, through links, or from a daemon that outlives the
command. The user's repository (files, .git, objects) and HOME must be exactly
as before, whatever the command's exit status."""

from __future__ import annotations

import hashlib
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import psutil
import pytest

from superqode_ls.workspace import landlock, namespaces

from ..conftest import run_git
from ..safety_helpers import content_fingerprint, leftovers, registrations
from ..waiting import wait_for

pytestmark = pytest.mark.skipif(
    landlock.abi() is None,
    reason="this kernel has no Landlock (needs Linux >= 5.13 with landlock in the LSM list)",
)

G = shutil.which("git")
SUPERQE = [sys.executable, "-m", "superqode_ls"]


def superqe(*args: str, env: dict[str, str] | None = None) -> subprocess.CompletedProcess:
    return subprocess.run([*SUPERQE, *args], capture_output=True, text=True, timeout=120,
                          env=env)


def _tree(root: Path, skip: tuple[str, ...] = ()) -> dict[str, str]:
    out = {}
    for dirpath, dirnames, filenames in os.walk(root):
        dirnames[:] = [d for d in dirnames if os.path.join(dirpath, d) not in skip]
        for name in filenames:
            p = os.path.join(dirpath, name)
            if os.path.islink(p):
                out[p] = "l " + os.readlink(p)
            else:
                with open(p, "rb") as fh:
                    out[p] = hashlib.sha256(fh.read()).hexdigest()
    return out


def _objects(repo: Path) -> dict[str, str]:
    return _tree(repo / ".git" / "objects")


def _state(repo: Path, home: Path) -> dict[str, object]:
    return {
        "repo": content_fingerprint(repo),
        "objects": _objects(repo),
        "refs": run_git(repo, "for-each-ref", "--format=%(refname) %(objectname)"),
        "log": run_git(repo, "log", "--all", "--format=%H"),
        "stash": run_git(repo, "stash", "list"),
        "home": _tree(home, skip=(str(home / ".superqode"),)),
    }


@pytest.fixture
def user_repo(make_repo):
    repo = make_repo({"tracked.txt": "one\n", "data.txt": "data\n", "src/app.py": "x = 1\n"},
                     name="user repo")
    run_git(repo, "tag", "v1")
    (repo / "tracked.txt").write_text("stashed\n")
    run_git(repo, "stash")
    (repo / "src/app.py").write_text("x = 2\n")
    run_git(repo, "add", "src/app.py")
    (repo / "tracked.txt").write_text("unstaged\n")
    os.symlink(repo / "data.txt", repo / "abs-link")  # absolute, into the user's tree
    return repo


def _head_object(repo: Path) -> Path:
    h = run_git(repo, "rev-parse", "HEAD").strip()
    return repo / ".git" / "objects" / h[:2] / h[2:]


ATTACKS = {
    "scrubbed env, absolute git": "env -i {G} -C {U} commit --allow-empty -qm evil",
    "scrubbed env, hooks off": "env -i {G} -c core.hooksPath=/dev/null -C {U} branch evil",
    "--git-dir": "{G} --git-dir={U}/.git branch evil-2",
    "work tree by path": "cd {U} && {G} add -A && {G} checkout -- tracked.txt",
    "user config": "{G} -C {U} config core.hooksPath /tmp",
    "rewritten .git file": "printf 'gitdir: {U}/.git\\n' > .git && {G} branch evil-3 && "
                           "{G} commit --allow-empty -qm evil",
    "python absolute write": "python3 -c \"open('{U}/tracked.txt', 'a').write('x')\"; "
                             "python3 -c \"import os; os.remove('{U}/data.txt')\"",
    "absolute symlink": "echo through-link >> abs-link",
    "global git config": "{G} config --global user.name evil",
    "home dotfile": "echo evil >> \"$HOME/.gitconfig\"; echo x > \"$HOME/.bashrc\"",
    "objects through alternates": "rm -f {OBJ}; "
                                  "find {U}/.git/objects -type f -exec rm -f {{}} +",
    "stash": "cd {U} && {G} stash",
}


@pytest.mark.parametrize("name", list(ATTACKS))
def test_attack_leaves_repo_and_home_unchanged(user_repo, isolated_home, name):
    line = ATTACKS[name].format(G=G, U=user_repo, OBJ=_head_object(user_repo))
    before = _state(user_repo, isolated_home)
    proc = superqe("exec", str(user_repo), "--", "sh", "-c", line)
    assert "Verified" in proc.stderr, proc.stderr
    assert _state(user_repo, isolated_home) == before, proc.stderr
    assert run_git(user_repo, "cat-file", "-t", "HEAD").strip() == "commit"
    assert leftovers() == [] and not [r for r in registrations(user_repo) if r.startswith("qe-")]


def test_denied_writes_fail_with_eacces_and_sandbox_writes_work(user_repo):
    script = (
        "import errno, os, sys\n"
        f"u = {str(user_repo)!r}\n"
        "codes = []\n"
        "for f in (lambda: open(os.path.join(u, 'tracked.txt'), 'a'),\n"
        "          lambda: os.mkdir(os.path.join(u, 'new')),\n"
        "          lambda: os.unlink(os.path.join(u, 'data.txt'))):\n"
        "    try:\n"
        "        f()\n"
        "        codes.append('ok')\n"
        "    except OSError as e:\n"
        "        codes.append(errno.errorcode[e.errno])\n"
        "open('made-here.txt', 'w').write('fine')\n"
        "import tempfile; tempfile.NamedTemporaryFile().write(b'tmp ok')\n"
        "print(codes, file=sys.stderr)\n"
    )
    proc = superqe("exec", str(user_repo), "--", sys.executable, "-c", script)
    assert proc.returncode == 0, proc.stderr
    # Landlock says EACCES; the namespace sandbox's read-only bind, in front
    # of it, says EROFS.
    code = "EROFS" if namespaces.active() else "EACCES"
    assert f"['{code}', '{code}', '{code}']" in proc.stderr
    assert re.search(r"^patch: .*1 file\(s\) changed", proc.stderr, re.M)
    assert "Verified" in proc.stderr


def test_setsid_daemon_is_ended_with_the_session(user_repo, isolated_home):
    marker = "sq-daemon-marker-71"
    line = (f"setsid sh -c 'sleep 3; echo late >> {user_repo}/tracked.txt; "
            f"echo late > $HOME/late.txt; exec sleep 30 # {marker}' "
            "</dev/null >/dev/null 2>&1 & echo started")
    before = _state(user_repo, isolated_home)
    proc = superqe("exec", str(user_repo), "--", "sh", "-c", line)
    assert proc.returncode == 0 and "Verified" in proc.stderr, proc.stderr

    def alive() -> list[psutil.Process]:
        return [p for p in psutil.process_iter(["cmdline"]) if marker in " ".join(p.info["cmdline"] or [])]

    # Once the daemon (the shell that would write after 3 s) is gone, its
    # write can never come: no need to sleep past it.
    wait_for(lambda: not alive(), 10, "the session's daemon to be ended")
    assert _state(user_repo, isolated_home) == before


def test_a_killed_exec_leaves_no_process_behind(user_repo):
    marker = "sq-orphan-marker-83"
    proc = subprocess.Popen(
        [*SUPERQE, "exec", str(user_repo), "--", "sh", "-c",
         f"setsid sh -c 'exec sleep 60 # {marker}' & echo up; exec sleep 60"],
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)

    def running() -> list[psutil.Process]:
        return [p for p in psutil.process_iter(["cmdline"])
                if marker in " ".join(p.info["cmdline"] or [])]

    wait_for(running, 30, "the command's daemon to start")
    proc.kill()  # kill -9 of superqe: no revert, no cleanup of its own
    proc.communicate()
    wait_for(lambda: not running(), 5, "the orphaned daemon to be ended")
    clean = superqe("clean", "--force")
    assert clean.returncode == 0, clean.stderr
    assert leftovers() == []


def test_status_and_exec_name_the_protection_level(user_repo):
    status = superqe("status")
    assert f"protection: {namespaces.protection_level()}" in status.stdout
    assert namespaces.protection_level() in (namespaces.LEVEL_FULL, namespaces.LEVEL_DIRECT,
                                            namespaces.LEVEL_LANDLOCK)


def test_require_barrier_refuses_without_landlock(user_repo):
    (user_repo / "superqode.yaml").write_text("workspace:\n  require_barrier: true\n")
    run_git(user_repo, "add", "superqode.yaml")
    env = {**os.environ, "SUPERQODE_LANDLOCK": "off"}
    before = content_fingerprint(user_repo)
    proc = superqe("exec", str(user_repo), "--", "true", env=env)
    assert proc.returncode == 2
    lines = proc.stderr.strip().splitlines()
    assert len(lines) == 1 and "require_barrier" in lines[0] and "guard only" in lines[0]
    assert content_fingerprint(user_repo) == before and leftovers() == []
    status = superqe("status", env=env)
    assert "protection: guard only" in status.stdout
