"""What runs before a session honours the user's own ``sandbox.hide``.

The interpreter probe runs a program the repository may ship
(``.venv/bin/python``, a ``.pdm-python``), and the environment build runs
the project's own build code; both run behind the session's layers, but
both were given the default mask list only: a folder the user added to
``sandbox.hide`` (``~/corp``) was hidden from every session and readable to
the probe and the build. They now mask the user's list too (the network
stays off for the probe whatever ``sandbox.network`` says).

Needs the namespace sandbox: below it (Landlock only, guard only) nothing
hides a file from what runs.
"""

from __future__ import annotations

import asyncio
import os
import sys

import pytest

from superqode_ls.config import Config, SandboxConfig
from superqode_ls.workspace import envcache, namespaces
from superqode_ls.workspace.pyenv_build import resolve_python

pytestmark = pytest.mark.skipif(
    not namespaces.active(),
    reason="no namespace sandbox (this system, SUPERQODE_NAMESPACES=off or "
    "SUPERQODE_LANDLOCK=off): no layer hides files, sandbox.hide included")

SECRET = "corp-token-0451"


@pytest.fixture
def corp_secret(isolated_home):
    folder = isolated_home / "corp"
    folder.mkdir()
    (folder / "token").write_text(SECRET)
    return folder / "token"


def test_the_interpreter_probe_cannot_read_what_the_user_hid(tmp_path, corp_secret):
    """A shipped ``.venv/bin/python`` reads ``~/corp/token`` and answers it
    as its version: the probe's result is what it could read."""
    project = tmp_path / "cloned"
    (project / ".venv" / "bin").mkdir(parents=True)
    (project / ".venv" / "pyvenv.cfg").write_text("home = /usr/bin\n")
    fake = project / ".venv" / "bin" / "python"
    fake.write_text(
        "#!/bin/sh\n"
        f"s=$(cat '{corp_secret}' 2>/dev/null || echo hidden)\n"
        'echo "{\\"version\\": \\"$s\\", \\"prefix\\": \\"/\\", \\"pytest\\": true}"\n')
    fake.chmod(0o755)
    config = Config(sandbox=SandboxConfig(hide=["~/corp"]))
    found = asyncio.run(resolve_python(project, project, config, build=False))
    assert found.python == str(fake), found.note  # it answered...
    assert found.version != SECRET, "the probe read a file the user's sandbox.hide masks"
    assert found.version == "hidden"
    # Without the user's entry it is readable (the plant is live).
    found = asyncio.run(resolve_python(project, project, Config(), build=False))
    assert found.version == SECRET


def test_the_environment_build_cannot_read_what_the_user_hid(tmp_path, corp_secret):
    """The build's confined steps (``uv venv``, ``uv sync``: the project's
    build backend runs there) mask the user's list as a session does."""
    scratch = tmp_path / "scratch"
    cmd = [sys.executable, "-I", "-c",
           (f"import sys\ntry: print(open({str(corp_secret)!r}).read())\n"
            "except OSError as e: print('refused', e.errno)")]
    env = dict(os.environ)
    res = asyncio.run(envcache.run_confined(cmd, tmp_path, env, [scratch], timeout=60,
                                            hide=["~/corp"]))
    assert res.returncode == 0, res.stderr
    assert SECRET not in res.stdout, "the build read a file the user's sandbox.hide masks"
    res = asyncio.run(envcache.run_confined(cmd, tmp_path, env, [scratch], timeout=60))
    assert SECRET in res.stdout  # the plant is live without the entry
