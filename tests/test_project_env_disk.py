"""A build step that fails on a full disk says so in one line that names the
disk, not uv's "Failed to extract archive" with the cause cut off. The full
disk is real: the step writes to /dev/full (ENOSPC), through the same
confined runner the build uses."""

from __future__ import annotations

import asyncio
import os
import sys
from pathlib import Path

import pytest

from superqode_ls.workspace.pyenv_build import _step
from superqode_ls.workspace.pyenv_disk import disk_full

# uv's layout: the error, then its causes; the last one is the full disk.
UV_LIKE = r"""
import sys
try:
    with open('/dev/full', 'w') as fh:
        fh.write('x' * 65536)
        fh.flush()
except OSError as e:
    print('error: Failed to install: idna-3.10-py3-none-any.whl (idna==3.10)', file=sys.stderr)
    print('  Caused by: Failed to extract archive: idna-3.10-py3-none-any.whl', file=sys.stderr)
    print('  Caused by: failed to write to file `idna/core.py`: ' + e.strerror
          + ' (os error %d)' % e.errno, file=sys.stderr)
    sys.exit(2)
"""

pytestmark = pytest.mark.skipif(not os.path.exists("/dev/full"), reason="needs /dev/full")


def test_full_disk_is_one_line_naming_the_disk(tmp_path, monkeypatch):
    monkeypatch.setenv("SUPERQODE_HOME", str(tmp_path / "home"))
    env_dir = tmp_path / "envs" / "k"
    script = tmp_path / "uv_like.py"
    script.write_text(UV_LIKE, encoding="utf-8")
    why = asyncio.run(_step([sys.executable, str(script), "install"], tmp_path,
                            dict(os.environ), [env_dir], 60, 60, None))
    assert why is not None
    assert "\n" not in why
    # The old line was uv's first two lines: the install and the archive, no cause.
    assert "no space left on the disk holding" in why
    assert str(env_dir) in why
    assert "free some space" in why


def test_a_broken_archive_with_room_keeps_uvs_own_words(tmp_path):
    out = ("error: Failed to install: x-1.0.whl (x==1.0)\n"
           "  Caused by: Failed to extract archive: x-1.0.whl\n"
           "  Caused by: invalid zip header\n")
    # This disk has room (the tests write here): not called full.
    assert disk_full(out, "uv pip install", [tmp_path]) is None
    assert disk_full("error: could not find a version of x", "uv pip install",
                     [tmp_path]) is None


def test_the_fullest_disk_is_named(tmp_path):
    line = disk_full("Caused by: No space left on device (os error 28)", "uv sync",
                     [tmp_path, Path("/dev/shm") if Path("/dev/shm").is_dir() else tmp_path])
    assert line is not None and line.startswith("uv sync: no space left on the disk holding ")
    assert "free now" in line
