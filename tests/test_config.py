"""superqode.yaml <- user config <- overrides; one-line errors."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from superqode_ls import config as config_mod
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


def _same(a, b, where="config"):
    """Field by field, types included, and nothing marked as given."""
    assert type(a) is type(b), where
    assert a.model_fields_set == b.model_fields_set == set(), where
    for name in type(a).model_fields:
        x, y = getattr(a, name), getattr(b, name)
        if isinstance(x, config_mod.Section):
            _same(x, y, f"{where}.{name}")
        else:
            assert type(x) is type(y) and x == y, f"{where}.{name}: {x!r} != {y!r}"


def test_the_defaults_without_validators_are_config_s_own(monkeypatch):
    """``load_config`` with no file and no override returns the defaults
    without building any validator: the same values, types and unset fields
    as ``Config()`` -- and an assignment is still validated."""
    monkeypatch.delenv(config_mod.WORKERS_ENV, raising=False)  # a layer of its own
    made = config_mod.defaults()
    _same(made, config_mod.Config())
    assert made == config_mod.Config()
    assert made.model_dump() == config_mod.Config().model_dump()
    _same(load_config(None), config_mod.Config())
    made.qe.fail_on = "low"
    assert made.qe.fail_on == "low"
    with pytest.raises(ValueError, match="fail_on"):
        made.qe.fail_on = "sometimes"
    # Each section is made anew: no two configurations share a list.
    other = config_mod.defaults()
    other.qe.quick_roles.append("type_tester")
    assert config_mod.defaults().qe.quick_roles == ["security_tester", "lint_tester", "unit_tester"]


def test_loading_defaults_builds_no_validator():
    code = ("from superqode_ls import config as c; c.load_config(None);"
            "print([m.__name__ for m in (c.Config, c.QEConfig, c.WorkspaceConfig)"
            " if m.__pydantic_complete__])")
    env = {k: v for k, v in os.environ.items() if k != config_mod.WORKERS_ENV}
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True,
                         env=env)
    assert out.stdout.strip() == "[]"
