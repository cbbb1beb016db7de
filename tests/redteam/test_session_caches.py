"""Bytecode a session plants is never loaded by another session.

The mutation tester and the test generator run Python with
``PYTHONPYCACHEPREFIX``, whose entries mirror absolute paths: the standard
library's, the environment's packages', the copies'. A session's processes
write that prefix; were it shared (``$SUPERQODE_HOME/cache/pycache``, which
every session may write), a session could plant an unchecked-hash ``.pyc``
for ``/usr/lib/python3.X/colorsys.py`` that a later session of any project
imports instead of the source. The prefix is the session's own, in its
private scratch folder, which no other session can write."""

from __future__ import annotations

import importlib.util
import os
import subprocess
import sys
from pathlib import Path

import pytest

from superqode_ls.config import superqode_home
from superqode_ls.qe.roles import _mutation_cache, _scratch, unit
from superqode_ls.workspace import landlock
from superqode_ls.workspace.paths import SessionPaths
from superqode_ls.workspace.proc import supervise
from superqode_ls.workspace.session import IsolatedSession

MODULE = "colorsys"  # stdlib, pure Python, imported by nothing at startup


def _plant_script(prefix: Path) -> str:
    """Python, run by the attacking session: an unchecked-hash .pyc (loaded
    without looking at the source) for MODULE, at its mirror under ``prefix``."""
    src = os.path.realpath(importlib.util.find_spec(MODULE).origin)
    tag = sys.implementation.cache_tag
    pyc = prefix / Path(src).parent.relative_to("/") / f"{MODULE}.{tag}.pyc"
    evil_source = "print('PWNED')\n"
    return (
        "import os, py_compile, tempfile\n"
        f"os.makedirs({str(pyc.parent)!r}, exist_ok=True)\n"
        "d = tempfile.mkdtemp()\n"
        "evil = os.path.join(d, 'evil.py')\n"
        f"open(evil, 'w').write({evil_source!r})\n"
        f"py_compile.compile(evil, cfile={str(pyc)!r}, doraise=True,\n"
        f"    invalidation_mode=py_compile.PycInvalidationMode.UNCHECKED_HASH)\n"
    )


def _as_session(s: IsolatedSession, script: str) -> subprocess.CompletedProcess:
    env = s.env()
    return subprocess.run(supervise([sys.executable, "-c", script], env), cwd=s.sandbox, check=False,
                          env=env, capture_output=True, text=True, timeout=60)


def _imports(s: IsolatedSession, prefix: Path) -> bool:
    """A role's Python run in ``s`` with ``prefix`` as its bytecode cache:
    whether it ran the planted code (which can only print: it runs confined)."""
    env = {**s.env(), "PYTHONPYCACHEPREFIX": str(prefix)}
    env.pop("PYTHONDONTWRITEBYTECODE", None)
    res = subprocess.run(supervise([sys.executable, "-c", f"import {MODULE}"], env),
                         cwd=s.sandbox, env=env, capture_output=True, text=True, timeout=60,
                         check=False)
    return "PWNED" in res.stdout


def test_each_session_has_its_own_prefix_in_its_private_scratch(make_repo):
    repo = make_repo({"app.py": "x = 1\n"})
    with IsolatedSession.create_sync(repo) as a, IsolatedSession.create_sync(repo) as b:
        pa = _scratch.pycache_dir(_scratch.scratch_root(repo, a.id, "mutation"))
        pb = _scratch.pycache_dir(_scratch.scratch_root(repo, b.id, "testgen"))
        assert pa != pb
        assert pa.is_relative_to(SessionPaths(repo, a.id).private / "scratch")
        assert pb.is_relative_to(SessionPaths(repo, b.id).private / "scratch")
        assert not pa.is_relative_to(superqode_home() / "cache")


@pytest.mark.skipif(landlock.abi() is None,
                    reason="no Landlock barrier (this kernel, or SUPERQODE_LANDLOCK=off): "
                    "a session can write any folder")
def test_bytecode_planted_by_one_session_is_not_loaded_by_the_next(make_repo):
    repo = make_repo({"app.py": "x = 1\n"})
    other = make_repo({"b.py": "y = 2\n"}, name="other")
    with IsolatedSession.create_sync(repo) as a, IsolatedSession.create_sync(other) as b:
        mine = _scratch.pycache_dir(_scratch.scratch_root(repo, a.id, "mutation"))
        theirs = _scratch.pycache_dir(_scratch.scratch_root(other, b.id, "mutation"))
        # Live: what a shared, session-writable prefix allowed.
        shared = SessionPaths(repo, a.id).xdg / "pycache"  # (a folder session a writes)
        assert _as_session(a, _plant_script(shared)).returncode == 0
        assert _imports(b, shared), "a planted unchecked .pyc should load from a shared prefix"
        # Its own prefix: it may write (its runs' cache)...
        assert _as_session(a, _plant_script(mine)).returncode == 0
        # ...another session's it may not, and that one loads the real module.
        res = _as_session(a, _plant_script(theirs))
        assert res.returncode != 0 and "Error" in res.stderr, res.stderr
        assert not _imports(b, theirs), "bytecode planted by another session was loaded"
    # The next session of the first project does not inherit it either.
    with IsolatedSession.create_sync(repo) as c:
        assert not _imports(c, _scratch.pycache_dir(_scratch.scratch_root(repo, c.id, "mutation")))


@pytest.mark.skipif(landlock.abi() is None,
                    reason="no Landlock barrier (this kernel, or SUPERQODE_LANDLOCK=off): "
                    "a session can write any folder")
def test_a_session_cannot_plant_verdicts_superqode_reads_later(make_repo):
    """What SuperQode's own process keeps between sessions and reads back as
    data: mutation verdicts (a forged "killed" hides a surviving mutant of any
    later session with the same file and tests) and the test suite's last
    duration. Both live outside the sessions' writable cache folder."""
    repo = make_repo({"app.py": "x = 1\n"})
    targets = [_mutation_cache.cache_dir() / ("0" * 16 + ".json"), unit._durations_file(repo)]
    with IsolatedSession.create_sync(repo) as s:
        for target in targets:
            assert not target.is_relative_to(superqode_home() / "cache")
            script = (f"import os; os.makedirs({str(target.parent)!r}, exist_ok=True); "
                      f"open({str(target)!r}, 'w').write('{{}}')")
            res = _as_session(s, script)
            assert res.returncode != 0 and "Error" in res.stderr, (target, res.stderr)
            assert not target.exists()
