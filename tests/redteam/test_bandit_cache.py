"""A session cannot plant bandit results that SuperQode takes as its own.

SuperQode keeps bandit's results per file between runs
(``qe/roles/_bandit_cache.py``) and answers a later session's scan of an
unchanged file from them: an entry saying "no findings" planted by a hostile
branch's tests would hide a flaw from every later session of the checkout.
Only SuperQode's own process writes that folder; a session's processes see
SuperQode's home read-only."""

from __future__ import annotations

import subprocess
import sys

import pytest

from superqode_ls.config import superqode_home
from superqode_ls.qe.roles._bandit_cache import cache_dir
from superqode_ls.workspace import landlock
from superqode_ls.workspace.proc import supervise
from superqode_ls.workspace.session import IsolatedSession


@pytest.mark.skipif(landlock.abi() is None,
                    reason="no Landlock barrier (this kernel, or SUPERQODE_LANDLOCK=off): "
                    "a session can write any folder")
def test_a_session_cannot_write_the_bandit_results_superqode_keeps(make_repo):
    repo = make_repo({"app.py": "import subprocess\nsubprocess.call('ls', shell=True)\n"})
    folder = cache_dir(repo)
    assert not folder.is_relative_to(superqode_home() / "cache")
    folder.mkdir(parents=True)  # as after an earlier run: the attack is on existing entries
    existing = folder / "ab" / ("ab" + "0" * 62 + ".json")
    existing.parent.mkdir()
    existing.write_text("{}")
    with IsolatedSession.create_sync(repo) as s:
        for target in (folder / "00" / ("0" * 64 + ".json"), existing,
                       folder.parent / "other-project" / "00" / "x.json"):
            script = (f"import os; os.makedirs({str(target.parent)!r}, exist_ok=True); "
                      f"open({str(target)!r}, 'w').write('{{\"results\": []}}')")
            env = s.env()
            res = subprocess.run(supervise([sys.executable, "-c", script], env), cwd=s.sandbox,
                                 env=env, capture_output=True, text=True, timeout=60, check=False)
            assert res.returncode != 0 and "Error" in res.stderr, (target, res.stderr)
        assert not (folder / "00").exists()
        assert existing.read_text() == "{}"
