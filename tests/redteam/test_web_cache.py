"""A session cannot plant pattern and web check results that SuperQode takes
as its own.

SuperQode keeps the security role's pattern and web checks' hits per module
between runs (``qe/roles/_web_cache.py``) and answers a later run's check
of an unchanged module from them: a file saying "no hits" planted by a
hostile branch's tests would hide a flaw from every later session of the
checkout. Only SuperQode's own process writes that folder; a session's
processes see SuperQode's home read-only."""

from __future__ import annotations

import pytest

from superqode_ls.config import superqode_home
from superqode_ls.qe.roles._common import SourceCache
from superqode_ls.qe.roles._security_scan import scan_files
from superqode_ls.qe.roles._web_cache import cache_file, open_cache
from superqode_ls.workspace import landlock
from tests.redteam.cache_attacks import session_cannot_plant

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
    session_cannot_plant(repo, path, b'{"version": 1, "local": {}}')
    assert path.read_bytes() == kept
    assert not (path.parent / "other.json").exists()
    assert "settings.py" in open_cache(repo).local
