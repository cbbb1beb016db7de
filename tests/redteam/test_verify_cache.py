"""A session cannot plant fix verdicts that SuperQode takes as its own.

SuperQode keeps the verdicts of a warm quick run's fixes between runs
(``qe/verify_cache.py``) and answers a later run over an unchanged tree from
them: a verdict planted by a hostile branch's tests ("verified, tests re-run"
on a fix that breaks the code) would be shown, and applied with fix-all, in
every later session of the checkout. Only SuperQode's own process writes that
folder; a session's processes see SuperQode's home read-only."""

from __future__ import annotations

import pytest

from superqode_ls.config import superqode_home
from superqode_ls.qe import verify_cache, verify_kept
from superqode_ls.qe.roles.base import tool_path
from superqode_ls.workspace import landlock
from tests.redteam.cache_attacks import session_cannot_plant
from tests.test_verified_fixes import FILES as TESTED_FILES
from tests.test_verify_cache import _run, _verdicts
from tests.test_verify_early import FILES
from tests.test_verify_kept import _run as _run_tested


@pytest.mark.skipif(landlock.abi() is None,
                    reason="no Landlock barrier (this kernel, or SUPERQODE_LANDLOCK=off): "
                    "a session can write any folder")
@pytest.mark.skipif(not tool_path("ruff"), reason="needs ruff")
def test_a_session_cannot_write_the_fix_verdicts_superqode_keeps(make_repo, monkeypatch):
    # The early verdicts' file alone: the step's own (verify_kept.py, below)
    # would answer the later runs first.
    monkeypatch.setattr(verify_kept.StepKey, "read", lambda self: {})
    repo = make_repo(FILES)
    first, _ = _run(repo)
    path = verify_cache.cache_file(repo)
    assert not path.is_relative_to(superqode_home() / "cache")
    kept = path.read_bytes()
    # what a forged file would say: every fix verified by the tests
    forged = kept.replace(b'"verified":false', b'"verified":true').replace(b'"level":"tool"',
                                                                          b'"level":"tests"')
    assert forged != kept
    session_cannot_plant(repo, path, forged)
    assert path.read_bytes() == kept
    again, ruff = _run(repo)
    assert ruff == 1  # the kept verdicts taken: SuperQode's own
    assert _verdicts(again) == _verdicts(first)
    assert not any(p.verified_by == "tests" for p in again.patches)
    # The forged file is one the cache would take (the barrier is what stops it):
    # written by this process, the next run shows its verdicts.
    path.write_bytes(forged)
    planted, ruff = _run(repo)
    assert ruff == 1 and any(p.verified_by == "tests" for p in planted.patches)


@pytest.mark.skipif(landlock.abi() is None,
                    reason="no Landlock barrier (this kernel, or SUPERQODE_LANDLOCK=off): "
                    "a session can write any folder")
@pytest.mark.skipif(not tool_path("ruff"), reason="needs ruff")
def test_a_session_cannot_write_the_step_verdicts_superqode_keeps(make_repo, monkeypatch):
    """The verification step's kept verdicts (verify_kept.py) are read the
    same way: a tool-verified fix planted as verified by the tests would be
    shown, and applied with fix-all, in every later run of the tree."""
    repo = make_repo(TESTED_FILES)
    first, _ = _run_tested(repo, monkeypatch)
    path = verify_kept.cache_file(repo)
    assert not path.is_relative_to(superqode_home() / "cache")
    kept = path.read_bytes()
    forged = kept.replace(b'"verified":false', b'"verified":true').replace(
        b'"verified_by":"tool"', b'"verified_by":"tests"')
    assert forged != kept
    session_cannot_plant(repo, path, forged)
    assert path.read_bytes() == kept
    again, ran = _run_tested(repo, monkeypatch)
    assert ran == [] and {k: p.verified_by for k, p in again.items()} == {
        k: p.verified_by for k, p in first.items()}
