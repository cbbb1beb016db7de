"""server/settings.py: the editor's superqode.* settings, checked and layered."""

from __future__ import annotations

import pytest

from superqode_ls.server import settings


def test_settings_accept_section_or_bare_and_reject_bad_values():
    s = settings.parse({"superqode": {"mode": "deep", "runOnSave": True}})
    assert s.mode == "deep" and s.runOnSave
    layered = settings.parse({"roles": ["lint_tester"]}, s)
    assert layered.mode == "deep" and layered.roles == ["lint_tester"]
    with pytest.raises(settings.SettingsError, match="superqode.mode"):
        settings.parse({"mode": "fast"})
    with pytest.raises(settings.SettingsError):
        settings.parse(["not", "an", "object"])
