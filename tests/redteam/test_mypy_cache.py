"""A session cannot plant a mypy cache entry for a later session of its own
project.

mypy trusts an entry whose source is unchanged: an entry planted over a file
with a type error hides the error from every later type check of that file.
The project's mypy cache (``$SUPERQODE_HOME/cache/<repo-key>/mypy``) was
writable to every process of every session of the project, so a hostile
branch's tests could plant one for the next session of the same checkout.
Now only the types role's mypy process may write it, and only when nothing
of the project's runs in that process: the project's interpreter is asked
for its search path beforehand (its ``.pth`` files run there, not in mypy's
process tree), and a configuration that names plugins gets a private copy.
hypothesis' example database is per session.

Needs the kernel barrier (at "guard only" a session can write any folder).
"""

from __future__ import annotations

import asyncio
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from superqode_ls.qe.roles.base import RoleContext
from superqode_ls.qe.roles.types import TypeTester, _cache_dir
from superqode_ls.workspace import landlock
from superqode_ls.workspace.artifacts import Artifacts
from superqode_ls.workspace.paths import hypothesis_dir, project_cache
from superqode_ls.workspace.proc import BARRIER_ENV, supervise
from superqode_ls.workspace.pyenv import ProjectPython
from superqode_ls.workspace.session import IsolatedSession

pytestmark = pytest.mark.skipif(
    landlock.abi() is None,
    reason="no Landlock barrier (this kernel, or SUPERQODE_LANDLOCK=off): "
    "a session can write any folder, its project's caches included")

BAD = {"app.py": "x: int = 'a'\n"}


def _as_session(s: IsolatedSession, script: str) -> subprocess.CompletedProcess:
    env = s.env()
    return subprocess.run(supervise([sys.executable, "-c", script], env), cwd=s.sandbox,
                          check=False, env=env, capture_output=True, text=True, timeout=60)


def _shared_mypy(repo: Path) -> Path:
    with _cache_dir(repo) as path:
        return Path(path)


def _types(s: IsolatedSession, python: ProjectPython | None = None):
    ctx = RoleContext(session_id=s.id, project=s.project, sandbox=s.sandbox, config=s.config,
                      mode="deep", env=s.env(), artifacts=Artifacts(s.project, s.id),
                      trusted=True, python=python)
    return asyncio.run(TypeTester().run(ctx))


def _entries(folder: Path) -> set[str]:
    return {str(p.relative_to(folder)) for p in folder.rglob("*") if p.is_file()}


def test_a_sessions_processes_cannot_write_their_projects_mypy_cache(make_repo):
    repo = make_repo(BAD, name="victim")
    shared = _shared_mypy(repo)
    entry = shared / "3.11" / "app.meta.json"
    entry.parent.mkdir(parents=True, exist_ok=True)
    entry.write_text("{}")
    with IsolatedSession.create_sync(repo) as s:
        assert project_cache(repo) not in s.writable()
        for script in (
            f"open({str(entry)!r}, 'w').write('planted')",
            f"open({str(entry.parent / 'app.data.json')!r}, 'w').write('planted')",
            f"import os; os.unlink({str(entry)!r})",
            f"import os; os.makedirs({str(project_cache(repo) / 'hypothesis' / 'x')!r})",
            # A hard link into a writable folder, then a write through it,
            # would change the shared inode.
            f"import os; os.link({str(entry)!r}, 'linked'); open('linked', 'w').write('planted')",
        ):
            res = _as_session(s, script)
            assert res.returncode != 0, f"a session's process could: {script}"
        assert entry.read_text() == "{}"
        # hypothesis' database is the session's own.
        env = s.env()
        db = hypothesis_dir(env, s.private)
        assert db.startswith(env["TMPDIR"]) and not db.startswith(str(project_cache(repo)))
        # The tools' XDG cache stays writable (pip, ruff... keep theirs).
        assert _as_session(s, "import os; open(os.environ['XDG_CACHE_HOME'] + '/ok', 'w')"
                              ".write('x')").returncode == 0


def test_the_projects_interpreter_never_runs_where_mypys_cache_is_writable(
        make_repo, tmp_path):
    """A project's interpreter runs its environment's ``.pth`` files: as
    mypy's ``--python-executable`` it ran inside mypy's process, which may
    write the cache."""
    repo = make_repo(BAD, name="victim")
    shared = _shared_mypy(repo)
    planted = shared / "planted-by-interpreter"
    fake = tmp_path / "env" / "bin" / "python"
    fake.parent.mkdir(parents=True)
    fake.write_text(f"#!/bin/sh\necho x > '{planted}' 2>/dev/null\nexec {sys.executable} \"$@\"\n")
    fake.chmod(0o755)
    py = ProjectPython(python=str(fake), source=".venv", version="3.11", prefix=str(fake.parent))
    with IsolatedSession.create_sync(repo) as s:
        out = _types(s, py)
    assert not planted.exists(), "the project's interpreter wrote the shared mypy cache"
    assert [f.rule_id for f in out.findings] == ["assignment"], out.reason
    # The role's own mypy still keeps the shared cache warm, and leaves
    # nothing of the run beside it.
    assert _entries(shared), out.reason
    left = project_cache(repo) / "mypy-python"
    assert not left.exists() or not any(left.iterdir())


def test_a_plugin_the_configuration_names_gets_a_private_cache(make_repo):
    """mypy imports the plugins its configuration names, in its own process:
    a plugin of the session's may write what that process may."""
    repo = make_repo(BAD, name="victim")
    shared = _shared_mypy(repo)
    planted = shared / "planted-by-plugin"
    with IsolatedSession.create_sync(repo) as s:
        (s.sandbox / "plug.py").write_text(
            f"try:\n    open({str(planted)!r}, 'w').write('x')\nexcept OSError:\n    pass\n"
            "from mypy.plugin import Plugin\n\n\ndef plugin(version):\n    return Plugin\n")
        (s.sandbox / "mypy.ini").write_text("[mypy]\nplugins = plug.py\n")
        before = _entries(shared)
        out = _types(s)
    assert not planted.exists(), "a plugin of the session's wrote the shared mypy cache"
    assert _entries(shared) == before  # the run wrote its private copy only
    assert [f.rule_id for f in out.findings] == ["assignment"], out.reason
    assert os.path.isdir(shared)



def test_mypys_path_keeps_no_folder_a_session_may_write(make_repo):
    """mypy looks ``python3.X`` up on PATH for a configuration's
    ``python_version`` that is not its own (mypy 2.4's compiled build was not
    seen doing it; older ones do), and the git guard's shim folder, first on
    a session's PATH, is the session's to write."""
    from superqode_ls.qe.roles._mypy_cache import _outside

    repo = make_repo(BAD, name="victim")
    with IsolatedSession.create_sync(repo) as s:
        env = s.env()
        allow = json.loads(env[BARRIER_ENV])
        first = env["PATH"].split(os.pathsep)[0]
        assert any(first.startswith(a) for a in allow)  # (what makes it matter)
        kept = _outside(env["PATH"] + os.pathsep + "bin" + os.pathsep + str(s.sandbox), allow)
    assert first not in kept.split(os.pathsep)
    assert all(os.path.isabs(d) and not d.startswith(str(s.sandbox)) for d in kept.split(os.pathsep))
    assert "/usr/bin" in kept.split(os.pathsep) or "/bin" in kept.split(os.pathsep)
