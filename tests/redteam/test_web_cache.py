"""A session cannot plant pattern and web check results that SuperQode takes
as its own.

SuperQode keeps the security role's pattern and web checks' hits per module
between runs (``qe/roles/_web_cache.py``) and answers a later run's check
of an unchanged module from them: a file saying "no hits" planted by a
hostile branch's tests would hide a flaw from every later session of the
checkout. Only SuperQode's own process writes that folder; a session's
processes see SuperQode's home read-only."""

from __future__ import annotations

import subprocess
import sys

import pytest

from superqode_ls.config import superqode_home
from superqode_ls.qe.roles._common import SourceCache
from superqode_ls.qe.roles._security_scan import scan_files
from superqode_ls.qe.roles._web_cache import cache_file, open_cache
from superqode_ls.workspace import landlock
from superqode_ls.workspace.proc import supervise
from superqode_ls.workspace.session import IsolatedSession

SETTINGS = "DEBUG = True\n"


@pytest.mark.skipif(landlock.abi() is None,
                    reason="no Landlock barrier (this kernel, or SUPERQODE_LANDLOCK=off): "
                    "a session can write any folder")
def test_a_session_cannot_write_the_web_check_results_superqode_keeps(make_repo):
    repo = make_repo({"settings.py": SETTINGS})
    path = cache_file(repo)
    assert not path.is_relative_to(superqode_home() / "cache")
    # an earlier run's file: the attack is on what is there
    scan_files("security_tester", repo, SourceCache(repo), ["settings.py"], [],
               cache=open_cache(repo))
    kept = path.read_bytes()
    assert b"debug-mode" in kept
    with IsolatedSession.create_sync(repo) as s:
        forged = '{"version": 1, "local": {}}'
        for target in (path, path.parent / "other.json",
                       path.parent.parent / "other-project" / "hits.json"):
            script = (f"import os; os.makedirs({str(target.parent)!r}, exist_ok=True); "
                      f"open({str(target)!r}, 'w').write({forged!r})")
            env = s.env()
            res = subprocess.run(supervise([sys.executable, "-c", script], env), cwd=s.sandbox,
                                 env=env, capture_output=True, text=True, timeout=60, check=False)
            assert res.returncode != 0 and "Error" in res.stderr, (target, res.stderr)
        # nor swap the file for a link to one it wrote in its sandbox
        script = (f"import os; open('planted.json', 'w').write('{{}}'); "
                  f"os.replace('planted.json', {str(path)!r})")
        env = s.env()
        res = subprocess.run(supervise([sys.executable, "-c", script], env), cwd=s.sandbox,
                             env=env, capture_output=True, text=True, timeout=60, check=False)
        assert res.returncode != 0, res.stderr
    assert path.read_bytes() == kept
    assert not (path.parent / "other.json").exists()
    assert "settings.py" in open_cache(repo).local
