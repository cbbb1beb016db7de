"""Shared by the deep-mode role tests (mutation_tester, test_generator)."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

from superqode_ls.config import Config
from superqode_ls.qe.roles import _scratch
from superqode_ls.qe.roles.base import RoleContext
from superqode_ls.workspace.artifacts import Artifacts

from .conftest import ROOT

SID = "qe-20260101-000000-abcdef"
EXPECTED = json.loads((ROOT / "tests" / "data" / "shop_expected_deep.json").read_text())


@pytest.fixture(autouse=True)
def shared_pycache(tmp_path_factory, monkeypatch):
    # Each test has its own SUPERQODE_HOME; sharing the bytecode cache between
    # tests only saves recompiling pytest's plugins for every test.
    d = tmp_path_factory.getbasetemp() / "shared-pycache"
    monkeypatch.setattr(_scratch, "pycache_dir", lambda scratch: d)


def make_ctx(project: Path, **kw) -> RoleContext:
    args = {
        "session_id": SID,
        "project": project,
        "sandbox": project,
        "config": Config(),
        "mode": "deep",
        "env": os.environ.copy(),
        "artifacts": Artifacts(project, SID),
        "trusted": True,
    }
    args.update(kw)
    return RoleContext(**args)
