"""A finding on a line whose own pylint disable names the same thing
(coverage.py's ``eval(...)  # pylint: disable=eval-used``): noise with the
reason; a disable of another message, or none, leaves it shown. Real bandit
and ruff output on real files."""

from __future__ import annotations

from tests.test_noise_idioms import _noise
from tests.test_noise_project import _kept, _lint, _security

CODE = """import os


def constant(name):
    if name in ["True", "False", "None"]:
        return eval(name)  # pylint: disable=eval-used
    return None


def run(text):
    return eval(text)  # pylint: disable=line-too-long


def other(text):
    return eval(text)
"""

COMPAT = """from os.path import *  # pylint: disable=wildcard-import
from json import *
"""


def test_a_finding_the_lines_own_pylint_disable_names_is_noise_others_stay(make_repo):
    repo = make_repo({"pyproject.toml": '[tool.ruff.lint]\nselect = ["F403"]\n',
                      "lib/code.py": CODE, "lib/compat.py": COMPAT})
    found = _security(repo)
    _noise(found, "lib/code.py", 6, "B307", "pylint: disable=eval-used")
    _kept(found, "lib/code.py", 11, "B307")  # another message's disable
    _kept(found, "lib/code.py", 15, "B307")
    linted = _lint(repo)
    _noise(linted, "lib/compat.py", 1, "F403", "pylint: disable=wildcard-import")
    _kept(linted, "lib/compat.py", 2, "F403")
