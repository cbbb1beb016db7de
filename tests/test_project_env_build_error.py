"""A failed build step is said by its error, not by the deprecation warning
a build backend prints first: sqlalchemy's setup line showed setuptools'
"... to avoid build errors in the future" (the first line containing
"error") and hid why the build failed. The step is real: a program that
writes what uv relays from setuptools, run through the build's confined
runner."""

from __future__ import annotations

import asyncio
import os
import sys

from superqode_ls.workspace.pyenv_build import _step
from superqode_ls.workspace.pyenv_disk import failure_words

# What uv prints for a source build that fails after setuptools' warnings.
UV_BUILD = r"""
import sys
sys.stderr.write('''  x Failed to build `sqlalchemy @ file:///src`
  |-> The build backend returned an error
      [stderr]
      /tmp/setuptools/dist.py:759: SetuptoolsDeprecationWarning: License classifiers are deprecated.
      !!
      This deprecation is overdue, please update your project and remove deprecated calls
      to avoid build errors in the future.
      !!
      error: command '/usr/bin/gcc' failed with exit code 1
      hint: This usually indicates a problem with the package or the build environment.
''')
sys.exit(1)
"""


def test_the_build_error_is_said_not_the_warning_before_it(tmp_path, monkeypatch):
    monkeypatch.setenv("SUPERQODE_HOME", str(tmp_path / "home"))
    script = tmp_path / "uv_like.py"
    script.write_text(UV_BUILD, encoding="utf-8")
    why = asyncio.run(_step([sys.executable, str(script), "pip", "install"], tmp_path,
                            dict(os.environ), [tmp_path / "env"], 60, 60, None))
    assert why is not None and "\n" not in why
    # Before: "... remove deprecated calls to avoid build errors in the future."
    assert "error: command '/usr/bin/gcc' failed with exit code 1" in why
    assert "deprecat" not in why.lower() and "future" not in why


def test_uvs_own_error_and_resolver_cause_stay_as_they_were():
    assert failure_words("error: Failed to parse: `x==`\n  Caused by: Expected version\n") == (
        "error: Failed to parse: `x==` Caused by: Expected version")
    # uv's resolver failure has no "error" word: its last two lines.
    said = failure_words("  × No solution found when resolving dependencies:\n"
                         "  ╰─▶ Because nosuch was not found in the package registry and you "
                         "require nosuch, we can conclude that your requirements are "
                         "unsatisfiable.\n")
    assert said.startswith("No solution found when resolving dependencies: Because nosuch")
    assert failure_words("  × Failed to build `x`\n  ├─▶ The build backend returned an error\n"
                         "  ╰─▶ Call to `setuptools.build_meta.build_wheel` failed\n"
                         ).startswith("The build backend returned an error Call to")
