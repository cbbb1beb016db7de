"""A session's tools' cache (``XDG_CACHE_HOME``) is its own.

It was ``$SUPERQODE_HOME/cache/<repo-key>/xdg``, shared by every session of a
checkout and writable to their processes: a hostile branch's tests could
plant there what the next session of the same checkout's tools use inside
its sandbox (a wheel in pip's cache installs into the next environment it
builds; a linter's or pytest's cache entry hides a finding). Now each
session's is in its private folder (``SessionPaths.xdg``), removed with it,
and the shared folder is not writable to any session's process.
"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from superqode_ls.workspace import landlock
from superqode_ls.workspace.paths import SessionPaths, project_cache
from superqode_ls.workspace.proc import supervise
from superqode_ls.workspace.session import IsolatedSession

_PLANT = """
import os, pathlib
p = pathlib.Path(os.environ["XDG_CACHE_HOME"], "pip", "wheels", "ab", "evil-1.0-py3-none-any.whl")
p.parent.mkdir(parents=True, exist_ok=True)
p.write_text("planted")
"""

_LOOK = """
import os, pathlib
root = pathlib.Path(os.environ["XDG_CACHE_HOME"])
print("\\n".join(str(p.relative_to(root)) for p in root.rglob("*") if p.is_file()))
"""


def _as_session(s: IsolatedSession, script: str) -> subprocess.CompletedProcess:
    env = s.env()
    return subprocess.run(supervise([sys.executable, "-c", script], env), cwd=s.sandbox,
                          check=False, env=env, capture_output=True, text=True, timeout=60)


def test_a_planted_cache_entry_does_not_reach_the_next_session(make_repo):
    """Holds at every level (guard only included): the folder a session's
    tools are told to use is its own, whatever it could write elsewhere."""
    repo = make_repo({"app.py": "x = 1\n"})
    with IsolatedSession.create_sync(repo) as a:
        own = Path(a.env()["XDG_CACHE_HOME"])
        res = _as_session(a, _PLANT)
        assert res.returncode == 0, res.stderr
        assert any(own.rglob("evil-1.0-py3-none-any.whl"))
    assert not own.exists(), "a session's tools' cache outlived it"
    assert own == SessionPaths(repo, a.id).xdg
    # A second session at once and the next one alike see none of it.
    with IsolatedSession.create_sync(repo) as b, IsolatedSession.create_sync(repo) as c:
        for s in (b, c):
            assert s.env()["XDG_CACHE_HOME"] != str(own)
            res = _as_session(s, _LOOK)
            assert res.returncode == 0, res.stderr
            assert "evil" not in res.stdout, "a planted wheel reached another session's pip"
        # Nor does one of two sessions alive at once see the other's.
        assert _as_session(b, _PLANT).returncode == 0
        assert "evil" not in _as_session(c, _LOOK).stdout


@pytest.mark.skipif(landlock.abi() is None,
                    reason="no Landlock barrier (this kernel, or SUPERQODE_LANDLOCK=off): "
                    "a session can write any folder")
def test_the_projects_shared_cache_folder_is_not_writable_to_a_session(make_repo):
    repo = make_repo({"app.py": "x = 1\n"})
    shared = project_cache(repo) / "xdg" / "pip" / "wheels" / "evil.whl"
    with IsolatedSession.create_sync(repo) as a:
        script = (f"import os; os.makedirs({str(shared.parent)!r}, exist_ok=True); "
                  f"open({str(shared)!r}, 'w').write('planted')")
        res = _as_session(a, script)
        assert res.returncode != 0, "the project's shared cache folder was writable"
        assert not any(p.is_relative_to(project_cache(repo)) for p in a.writable())
    assert not shared.exists()
