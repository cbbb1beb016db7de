"""superqode.yaml <- user config <- overrides; one-line errors."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from superqode_ls.config import ConfigError, load_config


def test_layers_merge_user_project_overrides(tmp_path):
    home = Path(os.environ["SUPERQODE_HOME"])
    home.mkdir(parents=True, exist_ok=True)
    (home / "config.yaml").write_text("qe:\n  confidence_threshold: 0.5\n  fail_on: medium\n")
    proj = tmp_path / "p"
    proj.mkdir()
    (proj / "superqode.yaml").write_text("qe:\n  fail_on: critical\nworkspace:\n  max_size_mb: 10\n")
    cfg = load_config(proj, {"workspace": {"max_size_mb": 20}})
    assert cfg.qe.confidence_threshold == 0.5  # user
    assert cfg.qe.fail_on == "critical"  # project over user
    assert cfg.workspace.max_size_mb == 20  # overrides over project
    assert cfg.execution.max_parallel_roles == 3  # default


@pytest.mark.parametrize(
    "text, expect",
    [
        ("workspace:\n  isolaton: x\n", ["workspace.isolaton", "unknown key", "isolation"]),
        ("qe:\n  fail_on: sometimes\n", ["qe.fail_on", "critical"]),
        ("execution:\n  max_parallel_roles: 0\n", ["execution.max_parallel_roles"]),
        ("mode: [1\n", ["invalid YAML", "line"]),
        ("- a\n- b\n", ["top level must be a mapping"]),
        ("bogus: 1\n", ["bogus", "unknown key", "workspace"]),
    ],
)
def test_errors_name_file_key_and_what_is_allowed(tmp_path, text, expect):
    (tmp_path / "superqode.yaml").write_text(text)
    with pytest.raises(ConfigError) as e:
        load_config(tmp_path)
    msg = str(e.value)
    assert "\n" not in msg and str(tmp_path / "superqode.yaml") in msg
    for part in expect:
        assert part in msg


def test_non_utf8_config(tmp_path):
    (tmp_path / "superqode.yaml").write_bytes(b"mode: \xff\xfe\n")
    with pytest.raises(ConfigError, match="not valid UTF-8"):
        load_config(tmp_path)
