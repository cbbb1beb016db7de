"""The warm helper's probe of the namespace sandbox (a sandboxed ``true``)
is kept for the runs it forks whose client's environment reads the same
variables (workspace/namespaces.py ``keep``/``reuse_kept``): a run handed to
the helper no longer probes again on its critical path. Only a sandbox that
worked is kept; another environment probes anew, as a new process does."""

from __future__ import annotations

import os
import shutil
import stat

import pytest

from superqode_ls.qe.roles import _bandit_warm
from superqode_ls.runtime import Runtime
from superqode_ls.workspace import namespaces

from .warm_helpers import Warm, superqe

needs_sandbox = pytest.mark.skipif(not namespaces.active(), reason="no namespace sandbox here")


@pytest.fixture
def fresh():
    saved = (namespaces._kept, namespaces._detected)
    namespaces.forget()
    namespaces._kept = None
    yield
    namespaces._kept, namespaces._detected = saved


@needs_sandbox
def test_a_kept_detection_is_reused_only_with_the_same_variables(fresh, monkeypatch):
    found = namespaces.backend()
    assert found is not None
    namespaces.keep()
    namespaces.forget()
    assert namespaces.reuse_kept() is True
    assert namespaces._detected == (found, None)
    namespaces.forget()
    monkeypatch.setenv(namespaces.OFF_ENV, "off")  # the client turned the layer off
    assert namespaces.reuse_kept() is False
    assert namespaces.backend() is None  # detected anew, with the client's variables
    namespaces.forget()
    monkeypatch.delenv(namespaces.OFF_ENV)
    monkeypatch.setenv("PATH", "/nowhere:" + os.environ["PATH"])
    assert namespaces.reuse_kept() is False


def test_a_missing_sandbox_is_never_kept(fresh, monkeypatch):
    monkeypatch.setenv(namespaces.OFF_ENV, "off")
    assert namespaces.backend() is None
    namespaces.keep()
    assert namespaces._kept is None
    namespaces.forget()
    assert namespaces.reuse_kept() is False


@needs_sandbox
@pytest.mark.skipif(_bandit_warm.starting(Runtime.foreground()) is None or shutil.which("bwrap") is None,
                    reason="no spare bandit server (its start is where the helper probes), or no bwrap")
def test_a_run_handed_to_the_helper_does_not_probe_again(make_repo, tmp_path):
    """A ``bwrap`` in front of the real one, on the PATH of the helper and of
    its client, notes each probe (bwrap around ``true`` alone) and who made
    it: the helper probes as it starts its spare; the run it serves does not."""
    log = tmp_path / "probes.log"
    shim = tmp_path / "bin"
    shim.mkdir()
    real = shutil.which("bwrap")
    (shim / "bwrap").write_text(
        "#!/bin/sh\n"
        f'case "$*" in *" -- {shutil.which("true")}") echo "$Q32_WHO" >> {log} ;; esac\n'
        f'exec {real} "$@"\n')
    (shim / "bwrap").chmod(stat.S_IRWXU)
    path = f"{shim}:{os.environ['PATH']}"
    helper = Warm()
    started = superqe("warm", "start", "--idle", "10", env={**os.environ, "PATH": path, "Q32_WHO": "helper"})
    assert started.returncode == 0, started.stderr
    helper.pid = int(started.stdout.split("(pid ", 1)[1].split(",", 1)[0])
    try:
        from .test_warm_spare import ARGS, FILES, spare_pid

        spare_pid()
        assert log.read_text().split() == ["helper"]
        repo = make_repo(FILES)
        res = superqe("run", str(repo), *ARGS, env={**os.environ, "PATH": path, "Q32_WHO": "client"})
        assert res.returncode == 1, res.stderr  # its finding
        assert "client" not in log.read_text().split()
        # Another PATH: the run probes itself.
        other = f"{shim}:/usr/local/bin:{os.environ['PATH']}"
        res = superqe("run", str(repo), *ARGS, env={**os.environ, "PATH": other, "Q32_WHO": "other"})
        assert res.returncode == 1, res.stderr
        assert "other" in log.read_text().split()
    finally:
        helper.stop()
