"""One project's sessions cannot write another project's caches.

``$SUPERQODE_HOME/cache`` held every project's tool caches (``xdg``: ruff's,
pip's...; ``mypy/<repo>``; ``hypothesis/<repo>``) and every session's
processes could write all of it: a session of a hostile project could plant
a mypy cache entry (mypy trusts an entry whose source is unchanged) that
hides an error from the victim project's next type check. Each project now
has its own folder, ``cache/<repo-key>/``, and a session may write only its
own project's. Needs the kernel barrier (without it a session can write any
folder: the "guard only" level).
"""

from __future__ import annotations

import subprocess
import sys

import pytest

from superqode_ls.qe.roles.types import _cache_dir
from superqode_ls.workspace import landlock
from superqode_ls.workspace.paths import SessionPaths, project_cache
from superqode_ls.workspace.proc import supervise
from superqode_ls.workspace.session import IsolatedSession


def _as_session(s: IsolatedSession, script: str) -> subprocess.CompletedProcess:
    env = s.env()
    return subprocess.run(supervise([sys.executable, "-c", script], env), cwd=s.sandbox,
                          check=False, env=env, capture_output=True, text=True, timeout=60)


def _write(path) -> str:
    return (f"import os; os.makedirs({str(path.parent)!r}, exist_ok=True); "
            f"open({str(path)!r}, 'w').write('poisoned')")


def test_each_projects_caches_are_its_own(make_repo):
    victim = make_repo({"app.py": "x = 1\n"}, name="victim")
    other = make_repo({"app.py": "x = 1\n"}, name="other")
    assert project_cache(victim) != project_cache(other)
    with _cache_dir(victim) as mypy:
        assert mypy.startswith(str(project_cache(victim)))
    with IsolatedSession.create_sync(victim) as s:
        env = s.env()
        assert env["XDG_CACHE_HOME"] == str(SessionPaths(victim, s.id).xdg)
        # Nothing of its project's cache folder (mypy's: its process alone,
        # tests/redteam/test_mypy_cache.py; the tools' XDG cache is the
        # session's own, tests/redteam/test_session_xdg.py).
        assert not any(p.is_relative_to(project_cache(victim).parent) for p in s.writable())


@pytest.mark.skipif(landlock.abi() is None,
                    reason="no Landlock barrier (this kernel, or SUPERQODE_LANDLOCK=off): "
                    "a session can write any folder")
def test_a_session_cannot_plant_in_another_projects_mypy_or_tool_cache(make_repo):
    victim = make_repo({"app.py": "x: int = 'a'\n"}, name="victim")
    attacker = make_repo({"app.py": "x = 1\n"}, name="attacker")
    with _cache_dir(victim) as mypy:
        entry = project_cache(victim) / "mypy" / "3.11" / "app.data.json"
        entry.parent.mkdir(parents=True, exist_ok=True)
        entry.write_text("{}")
    assert mypy == str(entry.parent.parent)
    targets = [entry, entry.parent / "app.meta.json",
               project_cache(victim) / "xdg" / "ruff" / "planted",
               project_cache(victim) / "hypothesis" / "planted"]
    with IsolatedSession.create_sync(attacker) as a:
        for target in targets:
            res = _as_session(a, _write(target))
            assert res.returncode != 0, f"{target} was writable to another project's session"
        # Its own tools' cache it may write (tools need one).
        own = SessionPaths(attacker, a.id).xdg / "ruff" / "ok"
        assert _as_session(a, _write(own)).returncode == 0
    assert entry.read_text() == "{}"
    assert not (entry.parent / "app.meta.json").exists()
    assert not (project_cache(victim) / "xdg" / "ruff" / "planted").exists()
