"""The attack both results caches (the web checks', the noise filter's)
must stand: a session writing into, beside or over the cache file."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

from superqode_ls.workspace.proc import supervise
from superqode_ls.workspace.session import IsolatedSession


def _run(s: IsolatedSession, script: str) -> subprocess.CompletedProcess:
    env = s.env()
    return subprocess.run(supervise([sys.executable, "-c", script], env), cwd=s.sandbox,
                          env=env, capture_output=True, text=True, timeout=60, check=False)


def session_cannot_plant(repo: Path, path: Path, forged: bytes) -> None:
    """A session of ``repo`` cannot write ``forged`` into the cache file,
    a file beside it or another project's, nor rename one it wrote in its
    sandbox over it."""
    with IsolatedSession.create_sync(repo) as s:
        for target in (path, path.parent / "other.json",
                       path.parent.parent / "other-project" / path.name):
            res = _run(s, f"import os; os.makedirs({str(target.parent)!r}, exist_ok=True); "
                          f"open({str(target)!r}, 'wb').write({forged!r})")
            assert res.returncode != 0 and "Error" in res.stderr, (target, res.stderr)
        res = _run(s, f"open('planted.json', 'wb').write({forged!r}); import os; "
                      f"os.replace('planted.json', {str(path)!r})")
        assert res.returncode != 0, res.stderr
