"""server/trust.py: which folders may run project code; fail-closed, remembered."""

from __future__ import annotations

import json
import os

from superqode_ls.server import trust


def test_trust_is_fail_closed_and_remembered(tmp_path):
    project = tmp_path / "proj"
    (project / "sub").mkdir(parents=True)
    assert not trust.is_trusted(project)
    assert trust.is_trusted(project / "sub", [str(project)])
    trust.remember(project)
    assert trust.is_trusted(project / "sub")
    data = json.loads(trust.store_path().read_text())
    assert data["folders"] == [os.path.realpath(project)]
    trust.store_path().write_text("{not json")
    assert not trust.is_trusted(project)  # a broken store trusts nothing
    assert not trust.is_trusted(tmp_path / "elsewhere", [str(project)])
