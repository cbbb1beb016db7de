"""Big projects under a deadline: bandit's work goes in batches, product
code first and the code the report demotes (tests, docs) after; a batch
that runs out of time costs only its own files, and the role says which
(status incomplete) instead of losing every finding."""

from __future__ import annotations

import pytest

from superqode_ls.config import DEFAULT_PATH_CLASSES
from superqode_ls.qe.noise import path_class
from superqode_ls.qe.roles import _batches
from superqode_ls.qe.roles import security as security_mod
from superqode_ls.qe.roles.base import ToolFailed, tool_path
from superqode_ls.qe.roles.security import SecurityTester
from tests.role_helpers import make_ctx, run_role

needs_bandit = pytest.mark.skipif(tool_path("bandit") is None, reason="bandit not installed")

PRODUCT = "import pickle\n\n\ndef load(blob):\n    return pickle.loads(blob)\n" + "x = 1\n" * 400
TEST = "import subprocess\n\n\ndef test_it(cmd):\n    subprocess.call(cmd, shell=True)\n" + "y = 2\n" * 400


def _project(make_repo, n=24):
    files = {f"pkg/mod{i:02d}.py": PRODUCT for i in range(n)}
    files.update({f"tests/test_mod{i:02d}.py": TEST for i in range(n)})
    return make_repo(files)


def _demoted(rel):
    return path_class(rel, DEFAULT_PATH_CLASSES) is not None


def test_product_code_is_batched_before_tests(make_repo, monkeypatch):
    repo = _project(make_repo)
    monkeypatch.setattr(_batches, "PIECE_BYTES", 8_000)  # several pieces per CPU
    files = sorted(p.relative_to(repo).as_posix() for p in repo.rglob("*.py"))
    plan = _batches.plan_batches(repo, files, 2, _demoted)
    assert plan is not None and len(plan.batches) > 4
    first = plan.batches[: len(plan.batches) - plan.later]
    later = plan.batches[len(plan.batches) - plan.later:]
    assert first and later
    assert all(f.startswith("pkg/") for b in first for f in b)
    assert all(f.startswith("tests/") for b in later for f in b)
    assert sorted(f for b in plan.batches for f in b) == files  # each file once
    # a project that fits a piece: one run over it, as before
    monkeypatch.setattr(_batches, "PIECE_BYTES", 1_500_000)
    assert _batches.plan_batches(repo, files, 2, _demoted) is None


@needs_bandit
def test_a_batch_out_of_time_keeps_the_others_findings(make_repo, monkeypatch):
    repo = _project(make_repo)
    monkeypatch.setattr(_batches, "PIECE_BYTES", 8_000)
    monkeypatch.setattr(security_mod, "worker_count", lambda config, runtime: 2)
    real = SecurityTester._bandit_run

    async def slow_tests(self, ctx, argv, shard, timeout=None):
        # the test folder's batches hit the deadline; everything else is real bandit
        if any(a.startswith("./tests/") for a in argv):
            raise ToolFailed("bandit", "bandit ran out of time", status="timeout")
        return await real(self, ctx, argv, shard, timeout)

    monkeypatch.setattr(SecurityTester, "_bandit_run", slow_tests)
    out = run_role(SecurityTester(), make_ctx(repo))
    assert out.status == "incomplete"
    assert "24 files not scanned (tests/ 24)" in out.reason and "product code" in out.reason
    pickles = [f for f in out.findings if f.rule_id == "B301"]
    assert sorted(f.file for f in pickles) == [f"pkg/mod{i:02d}.py" for i in range(24)]

    async def all_slow(self, ctx, argv, shard, timeout=None):
        raise ToolFailed("bandit", "bandit ran out of time", status="timeout")

    monkeypatch.setattr(SecurityTester, "_bandit_run", all_slow)
    out = run_role(SecurityTester(), make_ctx(repo))
    assert out.status == "timeout"  # nothing finished: no silent pass
